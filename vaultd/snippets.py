"""Snippets: the lines of a file that best match a query, with 1-based line numbers and
highlight spans in characters. Cut from the file itself, so `path:line:col` is exact."""

from __future__ import annotations

import bisect
import heapq
import re

import msgspec

from .index import CJK_RUN

MAX_WIDTH = 240
MAX_PER_TERM = 200
"""Occurrences of one term looked at per file: enough to find the best lines of a big note."""


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
    """Finds query words in text: a Latin word or its stem at a word start (so `index`
    finds `indexes`), and the bigrams of a CJK run anywhere, overlapping, so that
    `가치관이` lights up all of `가치관` in `가치관은`. Uses str.find on lower-cased text
    (C speed); a regex only where lower-casing changes the text's length."""

    def __init__(self, words: list[str], stems: list[str]):
        latin, self.grams = set(), set()
        for w in [*words, *stems]:
            if CJK_RUN.fullmatch(w):
                self.grams.update(w[i : i + 2] for i in range(len(w) - 1)) if len(w) > 1 else self.grams.add(w)
            elif w:
                latin.add(w.lower())
        self.latin = sorted(latin, key=len, reverse=True)
        self._regex = re.compile("|".join(r"(?<!\w)" + re.escape(w) for w in self.latin), re.IGNORECASE) \
            if self.latin else None

    def __bool__(self) -> bool:
        return bool(self.latin or self.grams)

    def find(self, text: str) -> list[tuple[int, int, str]]:
        """Every match: (start, end, the term), one term per start (the longest)."""
        out: dict[int, tuple[int, int, str]] = {}
        if self.latin:
            low = text.lower()
            if len(low) != len(text):
                for m in self._regex.finditer(text):
                    out[m.start()] = (m.start(), m.end(), m.group().lower())
            else:
                for w in self.latin:  # longest first: it keeps its start
                    i, n = low.find(w), 0
                    while i >= 0 and n < MAX_PER_TERM:
                        if (i == 0 or not (low[i - 1].isalnum() or low[i - 1] == "_")) and i not in out:
                            out[i] = (i, i + len(w), w)
                            n += 1
                        i = low.find(w, i + 1)
        found = list(out.values())
        for g in self.grams:
            i, n = text.find(g), 0
            while i >= 0 and n < MAX_PER_TERM:
                found.append((i, i + len(g), g))
                i, n = text.find(g, i + 1), n + 1
        return found

    def terms(self, text: str) -> set[str]:
        """The distinct query terms found in `text`."""
        return {t for *_, t in self.find(text)}

    def spans(self, line: str) -> tuple[list[list[int]], int]:
        """(merged spans, number of distinct terms matched) in `line`."""
        found = self.find(line)
        return _merge([(a, b) for a, b, _ in found]), len({t for *_, t in found})


def best_lines(text: str, matcher: Matcher, n: int = 3, skip: int = 0, headings=()) -> list[Snippet]:
    """The `n` lines with the most distinct matched terms (then most matches, then earliest),
    in line order, each with the heading it sits under (`headings`: the note's, by line).
    The first `skip` lines (front matter) count only when nothing else matches."""
    # Find every match in the whole text at once, then group by line, counting newlines
    # between matches (C speed): no per-line Python loop, no list of every line start.
    hits: dict[int, list[tuple[int, int, str]]] = {}
    idx = pos = 0
    for a, b, term in sorted(matcher.find(text)):
        idx += text.count("\n", pos, a)
        pos = a
        hits.setdefault(idx, []).append((a, b, term))
    if not hits:
        return []
    scored = [(idx + 1 <= skip, -len({t for *_, t in items}), -len(items), idx) for idx, items in hits.items()]
    if any(not s[0] for s in scored):
        scored = [s for s in scored if not s[0]]
    out = []
    for *_, idx in heapq.nsmallest(n, scored):  # only the chosen lines are cut and highlighted
        a = hits[idx][0][0]
        start = text.rfind("\n", 0, a) + 1
        end = text.find("\n", a)
        end = len(text) if end < 0 else end
        spans = _merge([(a - start, min(b, end) - start) for a, b, _ in hits[idx]])
        out.append(_trim(idx + 1, text[start:end], spans))
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
