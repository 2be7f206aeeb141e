"""Text forms shared by the daemon and vaultq. Standard library only (vaultq imports it).

Token estimate (documented in the README): ASCII text costs one token per 3.5
characters; each Hangul, Han or Kana character costs 1.3 tokens (BPE tokenizers
split CJK text into about one token per character, often more); other non-ASCII
characters cost 0.7. Counting characters/4 would undercount Korean text three- to
five-fold. Use `unit="bytes"` for an exact, tokenizer-free budget.
"""

from __future__ import annotations

import math

CJK = r"\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
"""Hangul, Kana and Han: indexed as bigrams (see store/index.py), and 1.3 tokens a character."""

_cjk_run = None


def context_item(item: dict) -> str:
    """How a context item is printed, and so what its cost counts: a provenance header
    (`## path:first-last title (why)`), then its lines."""
    why = f" ({item['why']})" if item.get("why") else ""
    return f"## {item['path']}:{item['first']}-{item['last']} {item['title']}{why}\n{item['text']}\n"


def estimate_tokens(text: str) -> int:
    global _cjk_run
    if _cjk_run is None:
        import re  # here: vaultq's quick search never counts tokens

        # [C][C]*, not [C]+: sre skips to a charset prefix at C speed (see index.CJK_RUN)
        _cjk_run = re.compile(f"[{CJK}][{CJK}]*")
    cjk = sum(len(r) for r in _cjk_run.findall(text))
    ascii_ = len(text) if text.isascii() else len(text.encode("ascii", "ignore"))  # in C, not a char at a time
    other = len(text) - cjk - ascii_
    return math.ceil(ascii_ / 3.5 + cjk * 1.3 + other * 0.7)


def cost(text: str, unit: str) -> int:
    """What `text` costs of a budget counted in `unit` (tokens, estimated; or bytes)."""
    return len(text.encode()) if unit == "bytes" else estimate_tokens(text)
