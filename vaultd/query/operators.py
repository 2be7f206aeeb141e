"""The query's field operators, one unit each (as whoosh's qparser plugins are): `tag:`,
`title:`, `path:`, `after:`, `before:`.

Each unit says how its value is read from what was typed, the Tantivy clause a note must
match (search), and, for the operators `list` and `grep` take too, the same selection as a
test of a note of the table (they go through the notes, not the index). Both sides of a unit
select the same notes: `tests/test_operators.py` runs every operator both ways against a real
daemon. Plain words, `+word`, `-word`, `"phrases"` and `OR` are the query's own syntax
(ranking.parse); everything written `name:value` is here.

Adding an operator: one unit below (in OPERATORS) and its rows in tests/test_operators.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Protocol

import tantivy

from ..errors import QueryError
from ..note import Note
from ..store.index import note_epoch, parse_date
from .analysis import bigrams, split

_Q, _O = tantivy.Query, tantivy.Occur


class Clauses(Protocol):
    """What a unit builds its clause with (ranking's query builder)."""

    schema: tantivy.Schema

    def term(self, fieldname: str, value: str, boost: float = 1.0) -> tantivy.Query: ...


class Operator:
    """One `name:value` operator. `many`: given twice, both must hold (else the last one
    given counts). `read` returns None for a value the operator cannot use: the token is then
    read as plain words (`after:lunch`)."""

    name = ""
    many = True

    def read(self, value: str, strict: bool = False) -> object | None:
        return value

    def clause(self, bld: Clauses, value) -> tantivy.Query | None:
        raise NotImplementedError

    def test(self, value) -> Callable[[Note], bool] | None:
        """The selection as a test of a note; None: the operator is the index's only."""
        return None


class Tag(Operator):
    """`tag:x` (or `tag:#x`): notes with the tag, or a tag nested under it (`tag:inline`
    holds `inline/nested`, as Obsidian's tag search has it). Case does not matter."""

    name = "tag"

    def read(self, value: str, strict: bool = False) -> str:
        return value.lstrip("#").lower()

    def clause(self, bld: Clauses, t: str) -> tantivy.Query:
        # "t/" as a prefix: an automaton made in a microsecond (a regex took 0.4-0.6 ms to
        # compile, each query)
        return _Q.boolean_query([(_O.Should, bld.term("tags", t)),
                                 (_O.Should, _Q.fuzzy_term_query(bld.schema, "tags", t + "/", 0, True, True))])

    def test(self, t: str) -> Callable[[Note], bool]:
        return lambda n: has_tag(n.tags, t)


class Title(Operator):
    """`title:x`: notes whose title holds every word of x (stems; Hangul/Han/Kana by bigrams).
    The index's only: list and grep do not take it."""

    name = "title"

    def clause(self, bld: Clauses, t: str) -> tantivy.Query | None:
        stems, cjk = split(t)
        parts = [bld.term("title", s) for s in stems] + [
            _Q.boolean_query([(_O.Should, bld.term("title_ko", g)) for g in bigrams(r)]) for r in cjk]
        return _Q.boolean_query([(_O.Must, q) for q in parts]) if parts else None


class Path(Operator):
    """`path:folder/sub`: a folder and everything below it, or the start of a file name in it
    (`path:journal/2025` holds `journal/2025-01-02.md`)."""

    name = "path"

    def read(self, value: str, strict: bool = False) -> str:
        return value.strip("/")

    def clause(self, bld: Clauses, path: str) -> tantivy.Query:
        return _Q.boolean_query([(_O.Should, bld.term("dirs", path)),
                                 (_O.Should, _Q.regex_query(bld.schema, "path", _regex_literal(path) + "[^/]*"))])

    def test(self, f: str) -> Callable[[Note], bool]:
        return lambda n: n.path.startswith(f + "/") or n.path.startswith(f) and "/" not in n.path[len(f):]


class After(Operator):
    """`after:YYYY[-MM[-DD]]`: notes dated on or after the start of that period (a note's
    date: its front matter's, else its Denote identifier's, else its file's time)."""

    name = "after"
    many = False

    def read(self, value: str, strict: bool = False) -> float | None:
        return date_bound(value, self.name, strict)

    def clause(self, bld: Clauses, lo: float) -> tantivy.Query:
        return _Q.range_query(bld.schema, "date", tantivy.FieldType.Integer, int(lo), None)

    def test(self, lo: float) -> Callable[[Note], bool]:
        return lambda n: note_epoch(n) >= int(lo)


class Before(After):
    """`before:YYYY[-MM[-DD]]`: notes dated before the start of that period."""

    name = "before"

    def clause(self, bld: Clauses, hi: float) -> tantivy.Query:
        return _Q.range_query(bld.schema, "date", tantivy.FieldType.Integer, None, int(hi) - 1)

    def test(self, hi: float) -> Callable[[Note], bool]:
        return lambda n: note_epoch(n) < int(hi)


OPERATORS: dict[str, Operator] = {o.name: o for o in (Tag(), Title(), Path(), After(), Before())}
"""Every operator, by the name typed before its colon."""

NAMES = "|".join(OPERATORS)
"""The operators' names as a regex alternation (the query's tokenizer)."""


def note_filter(tags: list[str] = (), paths: list[str] = (), after: str | None = None,
                before: str | None = None) -> Callable[[Note], bool]:
    """The operators `tag:`, `path:`, `after:` and `before:` as one test of a note of the
    table, for the operations that go through the notes themselves (list, grep): the notes the
    index's clauses for them keep. Every one given must hold; a date that is none is a
    QueryError."""
    given = [("tag", t) for t in tags] + [("path", p) for p in paths] + \
        [(name, v) for name, v in (("after", after), ("before", before)) if v]
    tests = [OPERATORS[name].test(OPERATORS[name].read(v, strict=True)) for name, v in given]
    return lambda n: all(t(n) for t in tests)


def has_tag(tags, tag: str) -> bool:
    """Whether a note with `tags` has `tag`, or a tag nested under it (`inline` holds
    `inline/nested`, as Obsidian's tag search has it)."""
    return tag in tags or any(t.startswith(tag + "/") for t in tags)


def date_bound(val: str, op: str, strict: bool = True) -> float | None:
    """The start of a YYYY, YYYY-MM or YYYY-MM-DD period: `after:2025-03` means from March
    on, `before:2025-03` before March. A value of that shape that is no such date (2025-13,
    2025-02-30): QueryError, rather than no filter at all; any other value (`after:lunch`,
    words of the query): an error when `strict`, else None."""
    day = val
    if re.fullmatch(r"\d{4}", val):
        day += "-01-01"
    elif re.fullmatch(r"\d{4}-\d{1,2}", val):
        y, m = val.split("-")
        day = f"{y}-{int(m):02d}-01"
    bound = parse_date(day) if re.fullmatch(r"\d{4}-\d{2}-\d{2}", day) else None
    if bound is None and (strict or re.fullmatch(r"\d{4}(-\d{1,2}(-\d{1,2})?)?", val)):
        raise QueryError(f"{op}: {val!r} is not a date: give YYYY, YYYY-MM or YYYY-MM-DD")
    return bound


def _regex_literal(text: str) -> str:
    """`text` matched literally by Tantivy's (Rust) regex syntax."""
    return "".join("\\" + c if c in "\\.+*?()|[]{}^$#&-~" else c for c in text)
