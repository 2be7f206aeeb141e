"""Snippets: the lines of a file that best match a query, with 1-based line numbers and
highlight spans in characters. Cut from the file itself, so `path:line:col` is exact."""

from __future__ import annotations

import bisect
import re

import msgspec

from .index import CJK_RUN

MAX_WIDTH = 240


class Snippet(msgspec.Struct):
    line: int
    """1-based line in the file."""
    text: str
    """The line (a window of it when long)."""
    highlights: list[list[int]]
    """[start, end) offsets in characters of `text`."""
    col: int
    """1-based byte column of the first match in the file's line, as `rg --vimgrep` gives it."""
    heading: str | None = None
    """The heading the line sits under (None above the first heading)."""


class Matcher:
    """Finds query words in a line: a Latin word or its stem at a word start (so `index`
    finds `indexes`), and the bigrams of a CJK run anywhere, overlapping, so that
    `가치관이` lights up all of `가치관` in `가치관은`."""

    def __init__(self, words: list[str], stems: list[str]):
        latin, self.grams = set(), set()
        for w in [*words, *stems]:
            if CJK_RUN.fullmatch(w):
                self.grams.update(w[i : i + 2] for i in range(len(w) - 1)) if len(w) > 1 else self.grams.add(w)
            elif w:
                latin.add(r"(?<!\w)" + re.escape(w))
        self.latin = re.compile("|".join(sorted(latin, key=len, reverse=True)), re.IGNORECASE) if latin else None

    def __bool__(self) -> bool:
        return bool(self.latin or self.grams)

    def terms(self, text: str) -> set[str]:
        """The distinct query terms found in `text`."""
        found = {m.group().lower() for m in self.latin.finditer(text)} if self.latin is not None else set()
        return found | {g for g in self.grams if g in text}

    def spans(self, line: str) -> tuple[list[list[int]], int]:
        """(merged spans, number of distinct terms matched) in `line`."""
        found: list[tuple[int, int]] = []
        terms = set()
        if self.latin is not None:
            for m in self.latin.finditer(line):
                found.append(m.span())
                terms.add(m.group().lower())
        for g in self.grams:
            i = line.find(g)
            if i >= 0:
                terms.add(g)
            while i >= 0:
                found.append((i, i + len(g)))
                i = line.find(g, i + 1)
        return _merge(found), len(terms)


def best_lines(text: str, matcher: Matcher, n: int = 3, skip: int = 0, headings=()) -> list[Snippet]:
    """The `n` lines with the most distinct matched terms (then most matches, then earliest),
    in line order, each with the heading it sits under (`headings`: the note's, by line).
    The first `skip` lines (front matter) count only when nothing else matches."""
    scored = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        spans, terms = matcher.spans(line)
        if spans:
            scored.append((lineno <= skip, -terms, -len(spans), lineno, line, spans))
    if any(not s[0] for s in scored):
        scored = [s for s in scored if not s[0]]
    scored.sort()
    out = [_trim(lineno, line, spans) for *_, lineno, line, spans in scored[:n]]
    out.sort(key=lambda s: s.line)
    if headings:
        lines = [h.line for h in headings]
        for sn in out:
            i = bisect.bisect_right(lines, sn.line) - 1
            sn.heading = headings[i].text if i >= 0 else None
    return out


def _trim(lineno: int, line: str, spans: list[list[int]]) -> Snippet:
    start = 0
    if len(line) > MAX_WIDTH:
        start = max(0, spans[0][0] - MAX_WIDTH // 4)
    end = start + MAX_WIDTH
    hl = [[a - start, min(b, end) - start] for a, b in spans if start <= a < end]
    col = len(line[: spans[0][0]].encode()) + 1
    return Snippet(line=lineno, text=line[start:end], highlights=hl, col=col)


def _merge(spans: list[tuple[int, int]]) -> list[list[int]]:
    out: list[list[int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out
