"""Snippets: the lines of a file that best match a query, with 1-based line numbers and
highlight spans in characters. Cut from the file itself, so `path:line:col` is exact."""

from __future__ import annotations

import bisect
import heapq
import re
from collections import Counter
from collections.abc import Callable
from operator import attrgetter

import msgspec

from ..store.index import CJK_RUN
from ..parse import decode
from .ranking import stem

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
    """1-based character column of the first match in the file's line (Emacs, LSP)."""
    byte_col: int
    """The same, a 1-based byte column, as `rg --vimgrep` and Vim give it."""
    heading: str | None = None
    """The heading the line sits under (None above the first heading)."""


class Matcher:
    """Finds query words in text: a Latin word or its stem at a word start (so `index`
    finds `indexes`), and the bigrams of a CJK run anywhere, overlapping, so that
    `가치관이` lights up all of `가치관` in `가치관은`. Uses str.find on lower-cased text
    (C speed); a regex only where lower-casing changes the text's length."""

    def __init__(self, words: list[str], stems: list[str], phrases: list[str] = ()):
        # a line holding a quoted phrase, word for word (any spaces or punctuation between),
        # is a better snippet than one holding its words apart (`"Version 3.1.0"`)
        self.phrases = [re.compile(r"(?<!\w)" + r"\W+".join(map(re.escape, ws)) + r"(?!\w)", re.IGNORECASE)
                        for ph in phrases if len(ws := re.findall(r"\w+", ph)) > 1]
        latin, self.grams = set(), set()
        for w in [*words, *stems]:
            if CJK_RUN.fullmatch(w):
                self.grams.update(w[i : i + 2] for i in range(len(w) - 1)) if len(w) > 1 else self.grams.add(w)
            elif w:
                latin.add(w.lower())
        self.latin = sorted(latin, key=len, reverse=True)
        # A word and its stem count as one term when lines are scored (`memory` and `memori`)
        self.keys = {w: stem(w) for w in self.latin} | {g: g for g in self.grams}
        # Byte forms for files searched as UTF-8 bytes: bytes.lower() lowers only ASCII, so
        # that way is taken only when every Latin term is ASCII.
        self.latin_b = [w.encode() for w in self.latin] if all(w.isascii() for w in self.latin) else None
        self.grams_b = [g.encode() for g in self.grams]
        self.keys |= {w.encode(): k for w, k in self.keys.items()}
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
                        if (i == 0 or not _in_word(low, i)) and i not in out:
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

    def terms(self, text: str, start: int = 0, end: int | None = None, low: str | None = None) -> set[str]:
        """The distinct query terms found in text[start:end] (`low`: `text` lower-cased, when
        the caller has it): those `find` gives, each found once. A term met only where a
        longer one starts (`index` in `indexes`) is not one of them, even past the
        MAX_PER_TERM matches after which `find` stops recording the longer one."""
        end = len(text) if end is None else end
        found = {g for g in self.grams if text.find(g, start, end) >= 0}
        if not self.latin:
            return found
        low = text.lower() if low is None else low
        if len(low) != len(text):
            return {t for *_, t in self.find(text[start:end])}
        for k, w in enumerate(self.latin):  # longest first
            i = low.find(w, start, end)
            while i >= 0:
                if (i == start or not _in_word(low, i)) and not (k and any(low.startswith(x, i, end) for x in self.latin[:k])):
                    found.add(w)
                    break
                i = low.find(w, i + 1, end)
        return found

    def spans(self, line: str) -> tuple[list[list[int]], int]:
        """(merged spans, number of distinct terms matched) in `line`."""
        found = self.find(line)
        return _merge([(a, b) for a, b, _ in found]), len({t for *_, t in found})


MAX_LINES = 50
"""Lines looked at per term and file: enough to find the best lines of a big note."""
RARITY = 1 << 13
"""Bytes of a file that judge which query term is rarest."""
HEADS = (1 << 14, 1 << 16)
"""A bigger file is searched in its first 16 KB first, then 64 KB, and whole only when
that is not enough."""
READ_FIRST = HEADS[0] + (1 << 12)
"""Bytes of a file read before its first head is searched (the rest only when needed)."""


_LINE = attrgetter("line")
_WORD_BYTES = frozenset(b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")


def _in_word(hay, i: int) -> bool:
    """Whether the character just before offset `i` is a letter, digit or underscore."""
    if isinstance(hay, str):
        return hay[i - 1].isalnum() or hay[i - 1] == "_"
    c = hay[i - 1]
    if c < 0x80:
        return c in _WORD_BYTES
    j = i - 1
    while j > 0 and hay[j] & 0xC0 == 0x80:  # back to the first byte of the UTF-8 character
        j -= 1
    return hay[j:i].decode("utf-8", "replace").isalnum()


def _has(hay, w, s: int, e: int, word_start: bool) -> bool:
    """Whether `w` stands in hay[s:e] (at a word start when `word_start`)."""
    i = hay.find(w, s, e)
    while i >= 0:
        if not (word_start and i and _in_word(hay, i)):
            return True
        i = hay.find(w, i + 1, e)
    return False


def _matching_lines(text, low, latin, grams, keys: dict, n: int, body: int = 0) -> tuple[dict[int, list], bool]:
    """Lines of `text` (str, or UTF-8 bytes) holding query terms, by start offset: [end,
    the terms in it, matches]. Terms are looked for rarest first, and a line found is
    checked for every term at once: the Python loop runs per line, not per occurrence,
    and the lines where all terms meet are among the first a rare term leads to. It stops
    once 3n lines from offset `body` on hold every term, and says whether it did; or once
    the terms passed over cannot change the best `n` (a line not yet found lacks every
    term looked for in full, so it holds fewer terms than each of `n` found).
    `low` is `text` lower-cased with the same offsets."""
    lines: dict[int, list] = {}
    nl = "\n" if isinstance(text, str) else b"\n"
    terms = sorted([(w, low, True) for w in latin] + [(g, text, False) for g in grams],
                   key=lambda t: t[1].count(t[0], 0, RARITY))  # how rare, judged by the first 8 KB
    unread = Counter(keys[w] for w, _, _ in terms)  # per key, its terms not yet looked for in full
    full, every, enough = 0, len(unread), 3 * n
    for w, hay, word_start in terms:
        most = sum(1 for c in unread.values() if c)  # the terms a line not found yet can hold
        if most < every and sum(len(t) > most for s, (_, t, _) in lines.items() if s >= body) >= n:
            break
        i, k = hay.find(w), 0
        while i >= 0 and k < MAX_LINES and full < enough:
            if word_start and i and _in_word(hay, i):
                i = hay.find(w, i + 1)
                continue
            s = hay.rfind(nl, 0, i) + 1
            e = hay.find(nl, i)
            e = len(hay) if e < 0 else e
            if s not in lines:
                there = [(x, h) for x, h, ws in terms if _has(h, x, s, e, ws)]
                found = {keys[x] for x, _ in there}
                lines[s] = [e, found, sum(h.count(x, s, e) for x, h in there)]
                full += len(found) == every and s >= body
            i, k = hay.find(w, e), k + 1
        if i < 0:  # every line holding `w` is in
            unread[keys[w]] -= 1
    return lines, full >= enough


def _exact_lines(text: str, matcher: Matcher) -> dict[int, list]:
    """As _matching_lines, from every exact match: for text whose lower-casing moves offsets."""
    lines: dict[int, list] = {}
    for a, _, term in matcher.find(text):
        s = text.rfind("\n", 0, a) + 1
        e = text.find("\n", a)
        entry = lines.setdefault(s, [len(text) if e < 0 else e, set(), 0])
        entry[1].add(matcher.keys.get(term, term))
        entry[2] += 1
    return lines


def _bytes_ok(text: bytes, matcher: Matcher) -> bool:
    """Whether `text` can be searched as bytes (see best_lines)."""
    return matcher.latin_b is not None and b"\r" not in text and b"\x00" not in text


def best_lines(text: str | bytes, matcher: Matcher, n: int = 3, skip: int = 0, headings=(),
               rest: Callable[[], bytes] | None = None) -> list[Snippet]:
    """The `n` lines with the most distinct matched terms (then most matches, then earliest),
    in line order, each with the heading it sits under (`headings`: the note's, in line
    order as parsing gives them).
    The first `skip` lines (front matter) count only when nothing else matches.

    `text` may be the file's bytes: UTF-8 is searched as it is (lower-casing 150 KB of
    non-ASCII text costs more than the rest of a search), and only the chosen lines are
    decoded. Bytes that need more (CR line ends, NULs, query words with non-ASCII letters)
    are decoded first. `rest`, when `text` is the first READ_FIRST bytes of a bigger file,
    reads the remainder: only if the head cannot settle the lines (a 4 MB note costs a
    millisecond to read)."""
    def start_of_body(t) -> int:
        i, nl = 0, "\n" if isinstance(t, str) else b"\n"
        for _ in range(skip):
            i = t.find(nl, i) + 1 or len(t)
        return i

    if rest is not None and (not _bytes_ok(text, matcher) or start_of_body(text) == len(text)):
        return best_lines(text + rest(), matcher, n, skip, headings)  # the head alone will not do
    if isinstance(text, bytes) and not _bytes_ok(text, matcher):
        text = decode(text)[0]
    body_start = start_of_body(text)
    if isinstance(text, bytes):
        def scan(b: bytes) -> tuple[dict[int, list], bool]:
            return _matching_lines(b, b.lower(), matcher.latin_b, matcher.grams_b, matcher.keys, n, body_start)

        # Most searches end in a head: lower-case (and read) only it first. Not a small one
        # for Hangul/Han/Kana: a line seldom holds every bigram of a query, so 16 KB seldom do.
        for cut in (*(HEADS[1:] if matcher.grams else HEADS), None):  # None: the whole file
            if rest is not None and (cut is None or len(text) <= cut):
                text, rest = text + rest(), None
                if not _bytes_ok(text, matcher):
                    return best_lines(text, matcher, n, skip, headings)
            if cut is None or len(text) <= cut:
                lines = scan(text)[0]
                break
            head = text.rfind(b"\n", 0, cut) + 1
            if head > RARITY:
                lines, done = scan(text[:head])
                if done:
                    break
    else:
        low = text.lower()
        lines = _matching_lines(text, low, matcher.latin, matcher.grams, matcher.keys, n, body_start)[0] \
            if len(low) == len(text) else _exact_lines(text, matcher)
    if not lines:
        return []
    nl = "\n" if isinstance(text, str) else b"\n"

    def phrased(s: int) -> bool:
        if not matcher.phrases:
            return False
        line = text[s : lines[s][0]]
        line = line.decode("utf-8", "replace") if isinstance(line, bytes) else line
        return any(r.search(line) for r in matcher.phrases)

    scored = [(s < body_start, not phrased(s), -len(terms), -count, s) for s, (_, terms, count) in lines.items()]
    if any(not sc[0] for sc in scored):
        scored = [sc for sc in scored if not sc[0]]
    out = []
    for *_, s in heapq.nsmallest(n, scored):  # only the chosen lines are cut and highlighted
        line = text[s : lines[s][0]]
        if isinstance(line, bytes):
            line = line.decode("utf-8", "replace")
            line = line[1:] if s == 0 and line.startswith("\ufeff") else line
        spans, _ = matcher.spans(line)
        if spans:
            out.append(_trim(text.count(nl, 0, s) + 1, line, spans))
    out.sort(key=lambda sn: sn.line)
    for sn in out:
        i = bisect.bisect_right(headings, sn.line, key=_LINE) - 1
        sn.heading = headings[i].text if i >= 0 else None
    return out


def tagged_lines(text: str, matcher: Matcher, tags: set[str], headings, n: int = 3, skip: int = 0) -> list[Snippet]:
    """Snippets of a note found by a tag (`tag:X`) that some of its headings carry (Org
    `* Heading :X:`): a tagged heading's line, its tag lit, and the best lines for the
    query's words under the tagged headings, sub-headings included (they inherit the
    tag, as in Org); only when none is there, the best lines of the whole note. Without
    words, the first `n` tagged headings. `text` is the whole file, decoded (heading
    lines count lines of the decoded text); `headings` the note's, in line order."""
    lines = text.split("\n")
    marks: list[tuple[int, int, object]] = []  # (first, last line of its subtree, heading)
    for i, h in enumerate(headings):
        if tags.intersection(h.tags):
            end = next((o.line - 1 for o in headings[i + 1 :] if o.level <= h.level), len(lines))
            marks.append((h.line, end, h))
    found: list[Snippet] = []
    if matcher:
        # the lines under tagged headings, once each, as one text; and the file line of each
        where = sorted({ln for a, b, _ in marks for ln in range(a, min(b, len(lines)) + 1)})
        found = best_lines("\n".join(lines[ln - 1] for ln in where), matcher, n - 1)
        for sn in found:
            sn.line = where[sn.line - 1]
        found = found or best_lines(text, matcher, n - 1, skip)
    if found:  # the innermost tagged heading over the first word line, else the first
        over = [h for a, b, h in marks if a <= found[0].line <= b]
        heads = over[-1:] or [marks[0][2]]
    else:
        heads = [h for _, _, h in marks[:n]]
    out = [_heading_snippet(h, lines[h.line - 1], matcher, tags) for h in heads if h.line <= len(lines)]
    taken = {sn.line for sn in out}
    out += [sn for sn in found if sn.line not in taken]
    out.sort(key=_LINE)
    for sn in out:
        k = bisect.bisect_right(headings, sn.line, key=_LINE) - 1
        sn.heading = headings[k].text if k >= 0 else None
    return out


def _heading_snippet(h, line: str, matcher: Matcher, tags: set[str]) -> Snippet:
    """A tagged heading's line, with its tags that are in `tags` and any query word lit."""
    low = line.lower()
    spans = [(k + 1, k + 1 + len(t)) for t in h.tags if t in tags and (k := low.rfind(":" + t + ":")) >= 0]
    if matcher:
        spans += [(a, b) for a, b in matcher.spans(line)[0]]
    if not spans:
        return Snippet(line=h.line, text=line[:MAX_WIDTH], highlights=[], col=1, byte_col=1)
    return _trim(h.line, line, _merge(spans))


def _trim(lineno: int, line: str, spans: list[list[int]]) -> Snippet:
    start = 0
    if len(line) > MAX_WIDTH:
        start = max(0, spans[0][0] - MAX_WIDTH // 4)
    end = start + MAX_WIDTH
    hl = [[a - start, min(b, end) - start] for a, b in spans if start <= a < end]
    byte_col = len(line[: spans[0][0]].encode()) + 1
    return Snippet(line=lineno, text=line[start:end], highlights=hl, col=spans[0][0] + 1, byte_col=byte_col)


def _merge(spans: list[tuple[int, int]]) -> list[list[int]]:
    out: list[list[int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out
