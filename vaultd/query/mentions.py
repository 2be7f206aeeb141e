"""Plain mentions of notes' names in a line of text: what an editor offers to turn into links.

A mention is a run of whole words (a word's Korean particle aside: `가치관과 선택을` mentions
`가치관과 선택`) that equals a note's title or one of its aliases, case and spacing aside
(syntaxes.key, runs of blanks read as one). The names are looked up in a table of every
note's title and aliases by their key, made from the note table the first time it is asked
for and brought up to date at each later ask by the notes that changed since: the note
table is replaced at each batch, and a note that did not change keeps its object, so what
changed is found by identity (milliseconds at 100,000 notes) and no title is read again.
Asking costs a dictionary look-up per run of words around the cursor, however many notes.

The Vault's titles job (`Titles`); pure reading of the note table (VaultState.notes).
"""

from __future__ import annotations

import os
import posixpath
import re
import threading
from bisect import bisect_right
from itertools import chain, compress, filterfalse
from operator import is_not
from typing import TYPE_CHECKING

from ..note import Note
from ..parse.syntaxes import key
from .stopwords_ko import PARTICLES

if TYPE_CHECKING:
    from ..store.vault_state import VaultState

LONGEST = 200
"""Characters of the longest name looked for: a longer title is never a mention."""
SHORTEST_WORD = 3
"""A name of one word is a mention at the cursor only when it is at least this many characters
long (`Go`, `AI`: too many plain words are); a selection may name any note."""
LIMIT = 5
"""Mentions an answer holds by default."""

_TOKEN = re.compile(r"\w+|[^\w\s]")
"""What a mention starts and ends with: a whole word, or one mark (`C++`, `What now?`)."""
_HANGUL = re.compile(r"[\uac00-\ud7a3]")


def name_key(text: str) -> str:
    """The key a name is looked up by: syntaxes.key of it, its runs of blanks one space."""
    return key(" ".join(text.split()))


def _names(n: Note) -> dict[str, str | None]:
    """A note's names by key: its title (None) and each alias (the alias)."""
    out: dict[str, str | None] = {}
    for name, alias in ((n.title, None), *((a, a) for a in n.aliases)):
        k = name_key(name) if name and len(name) <= LONGEST else ""
        if k and k not in out:
            out[k] = alias
    return out


class Titles:
    """The names of the vault's notes by key, and the mentions of them in a line of text."""

    def __init__(self, core: VaultState):
        self.core = core
        self._lock = threading.Lock()
        self._notes: dict[str, Note] | None = None  # the note table the names were taken from
        self._by_key: dict[str, dict[str, str | None]] = {}  # name key -> path -> alias (None: the title)

    def _update(self, notes: dict[str, Note]) -> dict[str, dict[str, str | None]]:
        """The names brought to the note table `notes` (the lock held): those of the notes
        gone or changed since the table they were taken from dropped, the changed ones' added
        (the first time, every note's)."""
        old, self._notes = self._notes or {}, notes
        if notes is old:
            return self._by_key
        changed = list(compress(notes, map(is_not, notes.values(), map(old.get, notes))))  # in C: no loop here
        for p in chain(filterfalse(notes.__contains__, old), changed):
            if p in old:
                self._drop(p, old[p])
        for p in changed:
            for k, alias in _names(notes[p]).items():
                self._by_key.setdefault(k, {})[p] = alias
        return self._by_key

    def _drop(self, path: str, n: Note) -> None:
        for k in _names(n):
            paths = self._by_key.get(k)
            if paths is not None:
                paths.pop(path, None)
                if not paths:
                    del self._by_key[k]

    def mentions(self, text: str, col: int | None = None, end_col: int | None = None, source: str | None = None,
                 limit: int = LIMIT) -> dict:
        """The mentions of notes' names in `text` (a line): with `col` alone, those that hold
        the character at that 1-based column, longest first; with `end_col` too, the text
        between them (end exclusive, blanks around it aside) when it is a name, whole words
        or not (a selection); with neither, every mention, longest first. Each note once (at
        its longest mention), never the note `source` itself (the note the text is written
        in: a path, absolute or of the vault). At most `limit`, `more` saying whether there
        were more."""
        text = text.replace("\n", " ")
        if end_col is not None:
            spans = _selected(text, (col or 1) - 1, end_col - 1)
        else:
            spans = _runs(text, None if col is None else col - 1)
        own = self._source(source)
        with self._lock:  # the names and the notes of one table, however many batches come meanwhile
            notes = self.core.notes
            found = _found(self._update(notes), notes, text, spans, own, selected=end_col is not None)
        return {"mentions": found[:limit], "more": len(found) > limit, "from": own}

    def _source(self, source: str | None) -> str | None:
        """The vault path of the note `source` names (absolute or of the vault); None for none."""
        if not source:
            return None
        rel = source
        if os.path.isabs(rel):
            rel = os.path.relpath(os.path.realpath(rel), os.path.realpath(self.core.root)).replace(os.sep, "/")
        return posixpath.normpath(rel)


def _found(names: dict[str, dict[str, str | None]], notes: dict[str, Note], text: str, spans: list[tuple[int, int]],
           own: str | None, selected: bool) -> list[dict]:
    """The notes named by the `spans` of `text`, in their order, each once (at its first
    span), but for the note `own`; a name of one short word only when `selected`."""
    found: list[dict] = []
    seen: set[str] = set()
    for a, b in spans:
        written = text[a:b]
        named = names.get(name_key(written))
        if not named or (not selected and " " not in written and len(written) < SHORTEST_WORD):
            continue
        for path in sorted(named):
            if path != own and path not in seen:
                seen.add(path)
                n = notes[path]
                found.append({"col": a + 1, "end_col": b + 1, "text": written, "path": path, "title": n.title,
                              "alias": named[path], "id": n.id})
    return found


def _selected(text: str, a: int, b: int) -> list[tuple[int, int]]:
    """The span [a, b) of `text` less the blanks around it, as the one span to look up."""
    a, b = max(0, a), min(len(text), b)
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return [(a, b)] if a < b else []


def _runs(text: str, at: int | None) -> list[tuple[int, int]]:
    """Every run of whole tokens of `text` at most LONGEST characters long (that holds the
    character at index `at`, when given), longest first, then leftmost. A token ends where
    a Korean particle begins too (`선택을`: `선택`), as Korean is written."""
    lo, hi = (0, len(text)) if at is None else (max(0, at - LONGEST), min(len(text), at + LONGEST))
    starts, ends = [], []
    for m in _TOKEN.finditer(text, _word_start(text, lo)):
        a, b = m.span()
        if a >= hi:
            break
        if at is None or a <= at:
            starts.append(a)
        ends.append(b)
        ends.extend(b - len(p) for p in PARTICLES
                    if b - a > len(p) and text.endswith(p, a, b) and _HANGUL.match(text, b - len(p) - 1))
    ends = sorted(set(ends))
    runs = []
    for a in starts:
        first = bisect_right(ends, a if at is None else max(a, at))
        for b in ends[first : bisect_right(ends, a + LONGEST)]:
            runs.append((a, b))
    runs.sort(key=lambda r: (r[0] - r[1], r[0]))
    return runs


def _word_start(text: str, i: int) -> int:
    """Where the word that holds index `i` starts (`i` itself when none does)."""
    while 0 < i < len(text) and (text[i - 1].isalnum() or text[i - 1] == "_"):
        i -= 1
    return i
