"""Text forms shared by the daemon and its faces (vaultq, the MCP server, the LSP). Standard
library only (vaultq imports it).

Token estimate (documented in docs/agents.md): ASCII text costs one token per 3.5
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


# -- what the faces say of an answer (vaultq, the MCP server, the LSP) ------------------


def progress(res: dict) -> str:
    """How far the first index is, from an answer's `progress` (files read, files to read;
    no total while the vault's folders are still being walked)."""
    p = res.get("progress") or {}
    return "listing the vault's files" if p.get("total") is None else f"{p.get('done')} of {p['total']} files read"


def building(progress_words: str) -> str:
    """The first index is still being built, and how far it is (see `progress`)."""
    return f"vaultd is still building its first index of this vault ({progress_words})"


def still_indexing(res: dict) -> str:
    """What a face says of an answer given while the first index is being built (`indexing`)."""
    return f"{building(progress(res))}: this answer holds only the notes read so far"


def where(link: dict) -> str:
    """Where a link leads, as a line of `links` says it: `path[:line]`, BROKEN and why (with
    the notes an ambiguous link may name), or its kind (a URL, an attachment)."""
    if link.get("broken"):
        extra = f": {', '.join(link['candidates'])}" if link.get("candidates") else ""
        return f"BROKEN ({link['broken']}{extra})"
    if link.get("resolved"):
        return link["resolved"] + (f":{link['resolved_line']}" if link.get("resolved_line") else "")
    return link["kind"]


def changes(res: dict) -> tuple[str | None, list[str], str]:
    """A `changes` answer as lines: (what a reset says, or None; a line per path: `A path`
    added, `M` changed, `D` deleted, `R old -> new` moved; the generation it is now at)."""
    reset = f"generation {res['since']} is older than this daemon remembers: every note may have changed" \
        if res["reset"] else None
    rows = [f"{mark} {p}" for key, mark in (("added", "A"), ("changed", "M"), ("deleted", "D")) for p in res[key]]
    rows += [f"R {old} -> {new}" for old, new in res["moved"]]
    return reset, rows, f"now at generation {res['generation']}"
