"""Budgeted context for agents: the HOT notes' opening lines and the best-matching
sections of the top hits, never over the budget, every item naming the exact lines
of the file it holds.

Costs are counted by render.cost (the token estimate is documented there and in the
README).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math

from ..parse.markdown import split_front_matter
from ..render import context_item as render
from ..render import cost, estimate_tokens  # noqa: F401  (here too: context's callers count with them)

UNITS = ("tokens", "bytes")


def note_lines(text: str, path: str) -> tuple[list[str], int]:
    """A note's text as lines, and the line its body starts on: after the front matter (of
    Markdown), blank lines, Org keywords and drawers (the note's first real lines)."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    start = split_front_matter(lines) + 1 if path.endswith(".md") else 1
    while start <= len(lines) and (not lines[start - 1].strip() or lines[start - 1].lstrip().startswith(("#+", ":"))):
        start += 1
    return lines, start


def sections(lines: list[str], headings: list, body_start: int) -> list[tuple[int, int, str | None]]:
    """The note's heading sections in order: (first, last, heading), the part above the first
    heading (from `body_start`) with heading None; each from its heading to the line before
    the next one, trailing blank lines dropped. Context ranks them; semantic recall embeds them."""
    hs = sorted((h for h in headings if h.line >= body_start), key=lambda h: h.line)
    starts = [(body_start, None)] + [(h.line, h.text) for h in hs]
    out = []
    for i, (first, title) in enumerate(starts):
        last = starts[i + 1][0] - 1 if i + 1 < len(starts) else len(lines)
        while last > first and not lines[last - 1].strip():
            last -= 1
        if last >= first:
            out.append((first, last, title))
    return out


def ranked_sections(lines: list[str], headings: list, matcher, body_start: int,
                    limit: int = 2) -> list[tuple[int, int, int, str | None]]:
    """The note's best `limit` sections that hold query terms, best first: (first, last,
    focus line, heading). A term counts log(1 + sections / sections holding it), so a word
    the whole note is about weighs little and the rare one that names the section weighs
    much; terms in a heading count twice. The focus is the section's line with the most
    terms: found only for the sections returned, as it reads every line (a seed-scale
    note has hundreds of sections holding a common word)."""
    text = "\n".join(lines)
    low = text.lower() if matcher.latin else text  # once, not per section; bigrams match as written
    at = [0, *itertools.accumulate(len(line) + 1 for line in lines)]  # where each line starts in `text`
    secs = [(first, last, title, matcher.terms(title) if title else set(),
             matcher.terms(text, at[first - 1], at[last] - 1, low))
            for first, last, title in sections(lines, headings, body_start)]
    df: dict[str, int] = {}
    for *_, in_head, in_text in secs:
        for t in in_head | in_text:
            df[t] = df.get(t, 0) + 1
    weight = {t: math.log(1 + len(secs) / n) for t, n in df.items()}
    scored = []
    for first, last, title, in_head, in_text in secs:
        score = sum(2 * weight[t] for t in in_head) + sum(weight[t] for t in in_text)
        if score > 0:
            scored.append((-score, first, last, title))
    return [(first, last, _focus(lines, text, low, at, first, last, matcher), title)
            for _, first, last, title in heapq.nsmallest(limit, scored)]


def _focus(lines: list[str], text: str, low: str, at: list[int], first: int, last: int, matcher) -> int:
    """The line of first..last with the most distinct query terms (the first of those; `first`
    when none has any). Only lines where a term's letters stand are weighed, found by
    searching the section's text: a section can be a whole note of thousands of lines."""
    if len(low) != len(text):  # lower-casing moved offsets: weigh every line
        return max(range(first, last + 1), key=lambda n: (matcher.spans(lines[n - 1])[1], -n))
    lines_with = {first}
    end = at[last] - 1
    for w, hay in [(w, low) for w in matcher.latin] + [(g, text) for g in matcher.grams]:
        i = hay.find(w, at[first - 1], end)
        while i >= 0:
            n = bisect.bisect_right(at, i)  # the line `i` is on
            lines_with.add(n)
            i = hay.find(w, at[n], end)  # on from the next line
    return max(lines_with, key=lambda n: (matcher.spans(lines[n - 1])[1], -n))


def whole_section(lines: list[str], headings: list, first: int, last: int) -> int:
    """Where the section starting at heading line `first` ends with its subsections included
    (the line before the next heading of the same or a higher level); `last` if none starts there."""
    hs = sorted(headings, key=lambda h: h.line)
    head = next((h for h in hs if h.line == first), None)
    if head is None:
        return last
    end = next((h.line - 1 for h in hs if h.line > first and h.level <= head.level), len(lines))
    while end > first and not lines[end - 1].strip():
        end -= 1
    return max(end, last)


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
    whole lines around `focus` that does, grown a line below then a line above in turn
    while each fits (a side that no longer fits never will: the cost only grows); None if
    not even that line fits. Windows are found by doubling and bisection, not a line at a
    time: each try renders the whole window, and a budget of megabytes took hours that
    way; nor is a 40 MB section rendered whole to learn that 2,000 tokens will not hold it."""
    def fits(lo: int, hi: int) -> dict | None:
        cand = make(lo, hi)
        return cand if cost(render(cand), unit) <= budget else None

    def widest(ok, n: int) -> int:  # the largest k in 0..n with ok(k), given ok(0)
        good, bad = 0, 1  # doubling first, so no try renders much more than what fits
        while bad <= n and ok(bad):
            good, bad = bad, bad * 2
        bad = min(bad, n + 1)
        while bad - good > 1:
            mid = (good + bad) // 2
            good, bad = (mid, bad) if ok(mid) else (good, mid)
        return good

    best = fits(focus, focus)
    if best is None:
        return None
    # both sides in step while both fit (a side at its end stays there)
    k = widest(lambda k: fits(max(first, focus - k), min(last, focus + k)) is not None,
               max(focus - first, last - focus))
    lo, hi = max(first, focus - k), min(last, focus + k)
    if hi < last and fits(lo, hi + 1):  # the round that failed: below first, then above
        hi = hi + widest(lambda d: fits(lo, hi + d) is not None, last - hi)
    elif lo > first and fits(lo - 1, hi):
        lo = lo - widest(lambda d: fits(lo - d, hi) is not None, lo - first)
    return make(lo, hi)
