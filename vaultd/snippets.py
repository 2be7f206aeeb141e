"""Snippets: the lines of a file that best match a query, with 1-based line numbers and
highlight spans in characters. Cut from the file itself, so `path:line:col` is exact."""

from __future__ import annotations

import re

import msgspec

from .index import CJK_RUN

MAX_WIDTH = 240


class Snippet(msgspec.Struct):
    line: int
    """1-based line in the file."""
    text: str
    """The line (a window of it when long)."""
    highlights: list[tuple[int, int]]
    """[start, end) offsets in characters of `text`."""
    col: int
    """1-based byte column of the first match in the file's line, as `rg --vimgrep` gives it."""


def matcher(words: list[str], stems: list[str]) -> re.Pattern | None:
    """One regex that finds any query word: a Latin word or its stem at a word start
    (so `index` finds `indexes`), a CJK run or one of its bigrams anywhere."""
    alts = set()
    for w in [*words, *stems]:
        if CJK_RUN.fullmatch(w):
            alts.add(re.escape(w))
            alts.update(re.escape(w[i : i + 2]) for i in range(len(w) - 1))
        elif w:
            alts.add(r"(?<!\w)" + re.escape(w))
    if not alts:
        return None
    return re.compile("|".join(sorted(alts, key=len, reverse=True)), re.IGNORECASE)


def best_lines(text: str, pattern: re.Pattern, n: int = 3) -> list[Snippet]:
    """The `n` lines with the most distinct matched terms (then most matches, then earliest),
    returned in line order."""
    scored = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        spans = [m.span() for m in pattern.finditer(line)]
        if not spans:
            continue
        distinct = len({line[a:b].lower() for a, b in spans})
        scored.append((-distinct, -len(spans), lineno, line, spans))
    scored.sort()
    out = [_trim(lineno, line, spans) for _, _, lineno, line, spans in scored[:n]]
    out.sort(key=lambda s: s.line)
    return out


def _trim(lineno: int, line: str, spans: list[tuple[int, int]]) -> Snippet:
    start = 0
    if len(line) > MAX_WIDTH:
        start = max(0, spans[0][0] - MAX_WIDTH // 4)
    text = line[start : start + MAX_WIDTH]
    hl = [(a - start, min(b, start + MAX_WIDTH) - start) for a, b in _merge(spans) if a >= start and a < start + MAX_WIDTH]
    col = len(line[: spans[0][0]].encode()) + 1
    return Snippet(line=lineno, text=text, highlights=hl, col=col)


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out
