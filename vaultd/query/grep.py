"""grep: every line of every note that holds the words, each occurrence with its line and
columns, read from the files themselves. The Vault's grep job (see vault.py).

The rules, as `rg -i -F` has them for one word (`vaultq grep WORD` gives the lines
`rg --vimgrep -i WORD` gives on the same notes):
- a word is literal text, matched anywhere, inside longer words too (`split` in
  `splitter`); `word` asks for whole words (as rg -w: no word character either side);
- case is ignored, by Unicode simple case folding a character at a time (`É` finds `é`,
  `k` the Kelvin sign; `İ` only `İ`, as Python's own IGNORECASE does not), unless `case_sensitive`;
- several words: the lines that hold every one of them, a row for each occurrence of any;
  `"a phrase"` is one word, spaces and all;
- lines end at LF only (as rg and Vim read them; a lone CR is part of a line); a file's
  UTF-8 byte order mark is not part of its first line (as rg and Vim show it); a file over
  the size cap only as far as it is indexed;
- every note the filters keep, the COLD archive too; in path order, then line, then column.
"""

from __future__ import annotations

import os
import re
import time
from typing import TYPE_CHECKING
from functools import lru_cache

from ..errors import QueryError
from ..parse import BINARY
from ..paths import cut, open_note
from .operators import note_filter

if TYPE_CHECKING:
    from ..store.vault_state import VaultState

MAX_TEXT = 1000
"""Characters of a matching line given with each row: a longer line is given as the part
around its match (a minified 1 MB line with 5,000 matches would be 5 GB of rows)."""
_WORDS = re.compile(r'"([^"]*)"?|(\S+)')


def words_of(q: str) -> list[str]:
    """The words of a grep query: runs of non-space, or "quoted phrases" (an unclosed quote
    runs to the end), each once."""
    out = [m.group(1) if m.group(1) is not None else m.group(2) for m in _WORDS.finditer(q)]
    return list(dict.fromkeys(w for w in out if w))


def simple_fold(c: str) -> str:
    """A character's Unicode simple case folding (CaseFolding.txt, status C and S): its full
    folding when that is one character, else its lowercase when that is one (ẞ -> ß), else
    itself (İ, ß, ﬁ: their folding is more than one character, which rg -i does not match)."""
    f = c.casefold()
    if len(f) == 1:
        return f
    low = c.lower()
    return low if len(low) == 1 else c


@lru_cache(maxsize=1)
def _kin() -> dict[str, str]:
    """Every character that folds to another (simple folding) -> what it folds to, and the
    classes of characters that fold alike, by their folding (built once: about 0.1 s)."""
    out: dict[str, set[str]] = {}
    for cp in range(0x41, 0x1F000):
        c = chr(cp)
        f = simple_fold(c)
        if f != c:
            out.setdefault(f, {f}).add(c)
    return {f: "[" + "".join(re.escape(x) for x in sorted(cs)) + "]" for f, cs in out.items()}


def folded(w: str) -> str:
    """A regular expression for the literal `w` with case ignored as rg -i ignores it: each
    character matches those of the same simple case folding (K finds the Kelvin sign, İ finds
    only İ, not `i`; ß is not `ss`)."""
    kin = _kin()
    return "".join(kin.get(simple_fold(c), re.escape(c)) for c in w)


class Grepper:
    """The Vault's grep."""

    def __init__(self, core: VaultState):
        self.core = core

    def grep(self, q: str, tags: list[str] = (), paths: list[str] = (), after: str | None = None,
             before: str | None = None, case_sensitive: bool = False, word: bool = False,
             limit: int = 1000, offset: int = 0) -> dict:
        """Every occurrence of the words of `q` on the lines that hold all of them, in every
        note the filters keep (see the module's rules): path, line, col (characters), byte_col
        and the line's text, at most `limit` rows from the `offset`th (`more`, and `next`, the
        offset of the rows left, when there were more; `truncated` says `more` too)."""
        t0 = time.perf_counter()
        words = words_of(q)
        if not words:
            raise QueryError("grep needs words")
        lit = re.escape if case_sensitive else folded
        bound = (r"(?<!\w)", r"(?!\w)") if word else ("", "")
        alts = sorted(words, key=len, reverse=True)  # at one place, the longest word
        pattern = bound[0] + "(?:" + "|".join(map(lit, alts)) + ")" + bound[1]
        each = [re.compile(bound[0] + lit(w) + bound[1]) for w in words] if len(words) > 1 else []
        text_re = re.compile(pattern)
        ascii_q = all(w.isascii() for w in words)
        # ASCII text: an ASCII letter's only kin there is its other case
        bflags = 0 if case_sensitive else re.IGNORECASE
        esc = [re.escape(w) for w in alts]
        bytes_re = re.compile((bound[0] + "(?:" + "|".join(esc) + ")" + bound[1]).encode(), bflags) if ascii_q \
            else None
        bytes_each = [re.compile((bound[0] + re.escape(w) + bound[1]).encode(), bflags) for w in words] \
            if ascii_q and len(words) > 1 else []
        keep = note_filter(tags, paths, after, before)
        cap = self.core.config.index.max_file_mb << 20
        notes = self.core.notes  # replaced, never changed in place
        rows: list[dict] = []
        truncated = False
        for path in sorted(notes):
            n = notes[path]
            if not keep(n) or n.problems and any(x.startswith(BINARY) for x in n.problems):
                continue  # (a binary file's "lines" are no lines, as rg has it: see parse.binary)
            try:
                data = _read(self.core.root_str, path, cap)
            except OSError:
                continue
            if bytes_re is not None and data.isascii():  # bytes all through: offsets are columns
                found = _rows(data, bytes_re, bytes_each, path, ascii_data=True)
            else:
                try:
                    text, bad = data.decode("utf-8"), False
                except UnicodeDecodeError:  # bytes that are not UTF-8 kept as they are, to count columns by
                    text, bad = data.decode("utf-8", "surrogateescape"), True
                found = _rows(text, text_re, each, path, ascii_data=False, bad=bad)
            if found:
                rows += found
                if len(rows) > offset + limit:  # one row past the page: there are more
                    truncated = True
                    break
        rows = rows[offset : offset + limit]
        files = len({r["path"] for r in rows})
        return {"query": q, "words": words, "total": len(rows), "notes": files, "truncated": truncated,
                "offset": offset, "more": truncated, "next": offset + len(rows) if truncated else None,
                "took_ms": round((time.perf_counter() - t0) * 1000, 3), "generation": self.core.generation,
                "matches": rows}


def _read(root: str, path: str, cap: int) -> bytes:
    fd = open_note(root, path)
    try:
        size = os.fstat(fd).st_size
        chunks, got = [], 0
        while got <= cap:
            b = os.read(fd, min(max(size, 1 << 16), cap + 1 - got))
            if not b:
                break
            chunks.append(b)
            got += len(b)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    data = cut(data, cap) if len(data) > cap else data
    return data[3:] if data.startswith(b"\xef\xbb\xbf") else data


def _rows(text, rx: re.Pattern, each: list[re.Pattern], path: str, ascii_data: bool, bad: bool = False) -> list[dict]:
    """The rows of one file's text (str, or bytes that are all ASCII; `bad`: a str holding
    bytes that are not UTF-8 as surrogates, shown as U+FFFD)."""
    nl = b"\n" if ascii_data else "\n"
    out: list[dict] = []
    line_no, line_at = 1, 0  # the line the last match was on, and where it starts
    checked: dict[int, bool] = {}  # line start -> whether it holds every word
    for m in rx.finditer(text):
        pos = m.start()
        if pos >= line_at:
            k = text.count(nl, line_at, pos)
            if k:
                line_no += k
                line_at = text.rfind(nl, 0, pos) + 1
        end = text.find(nl, line_at)
        end = len(text) if end < 0 else end
        if each:
            ok = checked.get(line_at)
            if ok is None:
                ok = checked[line_at] = all(e.search(text, line_at, end) for e in each)
            if not ok:
                continue
        line = text[line_at:end]
        if ascii_data:
            line = line.decode("ascii")
            col = byte_col = pos - line_at + 1
        else:
            col = pos - line_at + 1
            byte_col = len(line[: col - 1].encode("utf-8", "surrogateescape")) + 1
            if bad:  # as shown: each bad byte one U+FFFD
                col = len(text[line_at:pos].encode("utf-8", "surrogateescape").decode("utf-8", "replace")) + 1
                line = line.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        if line.endswith("\r"):
            line = line[:-1]
        if len(line) > MAX_TEXT:
            start = max(0, col - 1 - MAX_TEXT // 4)
            line = line[start : start + MAX_TEXT]
        out.append({"path": path, "line": line_no, "col": col, "byte_col": byte_col, "text": line})
    return out
