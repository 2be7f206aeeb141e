"""Budgeted context for agents: the HOT notes' opening lines and the best-matching
sections of the top hits, never over the budget, every item naming the exact lines
of the file it holds.

Token estimate (documented in the README): ASCII text costs one token per 3.5
characters; each Hangul, Han or Kana character costs 1.3 tokens (BPE tokenizers
split CJK text into about one token per character, often more); other non-ASCII
characters cost 0.7. Counting characters/4 would undercount Korean text three- to
five-fold. Use `unit="bytes"` for an exact, tokenizer-free budget.
"""

from __future__ import annotations

import math

from .index import CJK_RUN
from .render import context_item as render

UNITS = ("tokens", "bytes")


def estimate_tokens(text: str) -> int:
    cjk = sum(len(r) for r in CJK_RUN.findall(text))
    ascii_ = sum(1 for c in text if c < "\x80")
    other = len(text) - cjk - ascii_
    return math.ceil(ascii_ / 3.5 + cjk * 1.3 + other * 0.7)


def cost(text: str, unit: str) -> int:
    return len(text.encode()) if unit == "bytes" else estimate_tokens(text)


def section(lines: list[str], headings: list, line: int, body_start: int) -> tuple[int, int]:
    """The innermost section holding `line`: from its heading to the line before the next
    heading; above the first heading, from the body's start. Trailing blank lines dropped."""
    hs = sorted(h.line for h in headings)
    first = max([h for h in hs if h <= line], default=body_start)
    last = min([h - 1 for h in hs if h > line], default=len(lines))
    while last > first and not lines[last - 1].strip():
        last -= 1
    return first, last


def fit(lines: list[str], first: int, last: int, focus: int, make, budget: int, unit: str) -> dict | None:
    """The item for lines first..last if it fits in `budget`; else the widest window of
    whole lines around `focus` that does; None if not even that line fits."""
    item = make(first, last)
    if cost(render(item), unit) <= budget:
        return item
    lo = hi = focus
    best = None
    while True:
        item = make(lo, hi)
        if cost(render(item), unit) > budget:
            return best
        best = item
        grew = False
        for side in ("down", "up"):
            if side == "down" and hi < last:
                cand = make(lo, hi + 1)
                if cost(render(cand), unit) <= budget:
                    hi, best, grew = hi + 1, cand, True
            elif side == "up" and lo > first:
                cand = make(lo - 1, hi)
                if cost(render(cand), unit) <= budget:
                    lo, best, grew = lo - 1, cand, True
        if not grew:
            return best
