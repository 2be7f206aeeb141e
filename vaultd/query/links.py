"""The link graph's queries: find a note by name, resolve a link, backlinks, links, the notes
around one, broken links, orphans, tags. The Vault's links job (see vault.py)."""

from __future__ import annotations

import itertools
import os
import posixpath
from collections import Counter
from typing import TYPE_CHECKING
from pathlib import Path

from ..errors import AmbiguousNote, NoLink, NoteNotFound, QueryError
from ..note import Note, headings_of
from ..parse import decode
from ..parse.links import links_in
from ..paths import LINE, read_at, read_lines
from ..store.graph import Resolved

if TYPE_CHECKING:
    from ..store.vault_state import VaultState


class LinkGraph:
    """The Vault's link graph queries."""

    def __init__(self, core: VaultState):
        self.core = core

    def find_note(self, name: str) -> str:
        """The vault path of the note `name` means; raises NoteNotFound or AmbiguousNote."""
        found = self.core.ready_graph().find(name, self.core.root_str)
        if not found:
            raise NoteNotFound(name)
        if len(found) > 1:
            raise AmbiguousNote(name, found)
        return found[0]

    def resolve(self, text: str, source: str | None = None, col: int | None = None) -> dict:
        """Where a link leads. `text` is a link as written in a note (`[[Note#Heading]]`,
        `[t](x.md#a)`, `[[file:x.org::*H]]`, `denote:ID`, ...), else a name as a wikilink
        would say it (`Note#Heading`); with `col`, a line of text and the link at that
        1-based character column of it. `source` is the note it is written in (a name or a
        path, one the vault does not hold yet too): relative links, same-folder names and
        `[[#Heading]]` are read from there, else from the vault's top."""
        g = self.core.ready_graph()
        src = self._source(source)
        org = src.path.lower().endswith(".org")
        links = links_in(text, org)
        if col is not None:
            links = [ln for ln in links if ln.col <= col < ln.col + len(ln.raw)]
            if not links:
                raise NoLink(col)
        elif not links:  # a name, not a link: read as a wikilink's
            bare = text.strip()
            links = links_in(f"[[{bare}]]", False) if bare and "\n" not in bare else []
            if not links:
                raise QueryError(f"{text!r} is neither a link nor a note name")
        link = links[0]
        d = g.lookup(src, link)
        dest = g.notes.get(d.target) if d.target else None
        heading = None
        if dest is not None and d.line is not None:
            heading = next((h.text for h in headings_of(dest) if h.line == d.line), None)
        return {"link": link.raw, "col": link.col, "end_col": link.col + len(link.raw), "kind": link.kind,
                "target": link.target, "anchor": link.anchor, "from": source and src.path,
                "path": d.target, "title": dest.title if dest is not None else None, "line": d.line,
                "heading": heading, "broken": d.broken, "candidates": list(d.candidates),
                "url": link.target if link.kind == "url" else None}

    def _source(self, source: str | None) -> Note:
        """The note a link is written in: `source` found as a note, else taken as a path of the
        vault (an editor's new buffer), else the vault's top."""
        if source is None:
            return Note(path="", title="")
        try:
            return self.core.notes[self.find_note(source)]
        except NoteNotFound:
            pass
        rel = source.strip()
        if os.path.isabs(rel):
            rel = os.path.relpath(os.path.realpath(rel), os.path.realpath(self.core.root)).replace(os.sep, "/")
        rel = posixpath.normpath(rel)
        if rel == "." or rel.startswith("../") or rel == ".." or rel.startswith("/"):
            raise QueryError(f"from: {source!r} is outside the vault")
        return Note(path=rel, title="")

    def backlinks(self, name: str, window: slice = slice(None)) -> dict:
        """The links into a note, those in `window` of them (a page), with `total`: how many in all."""
        path = self.find_note(name)
        g = self.core.graph
        every = g.backlinks(path)
        items = [dict(path=src, **_link_json(r)) for src, r in every[window]]
        cap = self.core.config.index.max_file_mb << 20
        _add_context(self.core.root, items, cap, g.notes)  # only the page's lines read
        return {"note": path, "title": g.notes[path].title, "backlinks": items, "total": len(every)}

    def links(self, name: str, window: slice = slice(None)) -> dict:
        """The links out of a note, those in `window` of them (a page), with `total`: how many in all."""
        path = self.find_note(name)
        g = self.core.graph
        every = g.links(path)
        items = [dict(path=path, **_link_json(r)) for r in every[window]]
        _add_context(self.core.root, items, self.core.config.index.max_file_mb << 20, g.notes)
        for it in items:
            del it["path"]  # the note's own: `note`
        return {"note": path, "title": g.notes[path].title, "links": items, "total": len(every)}

    def neighbourhood(self, name: str, depth: int) -> dict:
        path = self.find_note(name)
        g = self.core.graph
        nodes, edges = g.neighbours(path, depth)
        return {
            "note": path,
            "depth": depth,
            "nodes": [{"path": p, "title": g.notes[p].title} for p in nodes],
            "edges": [list(e) for e in edges],
        }

    def broken(self) -> dict:
        g = self.core.ready_graph()
        items = [dict(path=src, **_link_json(r)) for src, r in g.broken()]
        _add_context(self.core.root, items, self.core.config.index.max_file_mb << 20, g.notes)
        return {"total": len(items), "broken": items}

    def orphans(self) -> dict:
        g = self.core.ready_graph()
        return {"orphans": [{"path": p, "title": g.notes[p].title} for p in g.orphans()]}

    def tags(self) -> dict:
        """Every tag with its count and the five tags most often beside it (ties: the one met first)."""
        counts: Counter[str] = Counter()
        pairs: Counter[tuple[str, str]] = Counter()  # one update a note, not one a tag: 4x faster
        for n in self.core.notes.values():
            counts.update(n.tags)
            # the pairs of a note's first RELATED_OF tags: all of them grow as their square
            # (4,000 tags in one note took 13 s and 2.9 GB)
            pairs.update(itertools.permutations(n.tags[:RELATED_OF], 2))
        related: dict[str, list[tuple[str, int]]] = {}
        for (t, o), k in pairs.items():  # in the order first met, as Counter.most_common breaks ties
            if t != o:
                related.setdefault(t, []).append((o, k))
        return {
            "tags": [
                {"tag": t, "count": c, "related": [[o, k] for o, k in sorted(related.get(t, ()), key=lambda x: -x[1])[:5]]}
                for t, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
            ]
        }



def _link_json(r: Resolved) -> dict:
    ln = r.link
    d = {"line": ln.line, "at": ln.at, "col": ln.col, "raw": ln.raw, "kind": ln.kind, "target": ln.target, "anchor": ln.anchor,
         "resolved": r.target, "resolved_line": r.line, "broken": r.broken}
    if r.candidates:
        d["candidates"] = list(r.candidates)
    return d


RELATED_OF = 50
"""A note's tags, at most, that count towards `tags`' related tags."""

MAX_TEXT = 1000
"""Characters of a link's line given with it: 8,000 links on one 112 KB line gave 900 MB."""


def _add_context(root: Path, items: list[dict], cap: int, notes: dict[str, Note]) -> None:
    """Give each item the text of the line it stands on and its `byte_col` (its `col` is in
    characters), read from its file: from where the line begins (its `at`, dropped here),
    else by reading the file as far as the line. Only the lines wanted are read and decoded:
    a hub note's backlinks come from hundreds of files, and at seed scale reading each as far
    as its link took 1.3 ms a file. Never past the size cap `cap`: a link is indexed only
    there. `notes`: the table the items come from (a file of another size changed since)."""
    by_path: dict[str, list[dict]] = {}
    for it in items:
        by_path.setdefault(it["path"], []).append(it)
    for path, its in by_path.items():
        lines = _lines_at(root, path, its, cap, n.size if (n := notes.get(path)) is not None else None)
        if lines is None:
            lines = _first_lines(root, path, max(it["line"] for it in its), cap)
        on_line: dict[int, list[dict]] = {}
        for it in its:
            del it["at"]
            on_line.setdefault(it["line"], []).append(it)
        for n, here in on_line.items():  # each line decoded once, however many links it holds
            line = lines.get(n, "")
            if isinstance(line, bytes):  # as decode() reads it: bad bytes replaced, the file's BOM dropped, NULs blanked
                line = line.decode("utf-8", "replace").replace("\x00", " ")
                line = line.removeprefix("\ufeff") if n == 1 else line
            at, byte = 0, 0
            for it in sorted(here, key=lambda it: it["col"]):
                col = max(1, it["col"])
                byte += len(line[at : col - 1].encode())  # the byte column, counted once along the line
                at = max(at, col - 1)
                it["byte_col"] = byte + 1
                start = max(0, col - 1 - MAX_TEXT // 4) if len(line) > MAX_TEXT else 0
                it["text"] = line[start : start + MAX_TEXT]  # a long line: the part around the link


def _lines_at(root: Path, path: str, its: list[dict], cap: int, size: int | None) -> dict[int, bytes] | None:
    """{line number: its bytes} of the items' lines, read from where each begins; None when
    one's start is not known or no longer begins a line, or reading as far as the last of
    them reads less (many lines of one file: a note's own links)."""
    starts = {it["at"]: it["line"] for it in its}
    if -1 in starts or len(starts) * LINE >= max(starts):
        return None
    try:
        got = read_at(str(root), path, list(starts), cap, size)
    except OSError:
        return {}
    if got is None or any(b"\r" in line for line in got.values()):  # a CR ends a line too (see decode)
        return None
    return {starts[at]: line for at, line in got.items()}


def _first_lines(root: Path, path: str, upto: int, cap: int) -> dict[int, bytes | str]:
    """{line number: its text} of the file's first `upto` lines, read and split only so far."""
    try:
        data = read_lines(str(root), path, cap, upto)
    except OSError:
        data = b""
    if b"\r" in data:  # a lone CR ends a line too (see decode): the slow way
        lines = decode(data)[0].split("\n", upto)
    else:
        lines = data.split(b"\n", upto)
    return dict(enumerate(lines[:upto], 1))
