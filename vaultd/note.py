"""The values passed between stages: a parsed Note and its parts."""

from __future__ import annotations

import sys

import msgspec


# gc=False on leaf values, which never form cycles: a big vault holds a million of them, each
# 16 bytes smaller untracked, and the cycle collector no longer walks them all.
class Heading(msgspec.Struct, array_like=True, gc=False):
    level: int
    text: str
    line: int
    """1-based line in the file."""
    anchor: str


ID_ANCHOR = "id:"
"""Blocks named `id:UUID` are Org headings carrying that :ID: (so `id:` links find their line)."""


class Block(msgspec.Struct, array_like=True, gc=False):
    id: str
    """Obsidian `^block-id` (without the caret), Org `<<target>>`, or `id:UUID` (see ID_ANCHOR)."""
    line: int


class Link(msgspec.Struct, kw_only=True, array_like=True, gc=False):
    line: int
    col: int
    """1-based line and column (in characters) where the link starts."""
    raw: str
    kind: str
    """wiki, embed, md, file, id, denote, url."""
    target: str
    """What the link names, before resolution (a name, a relative path, an ID)."""
    anchor: str = ""
    """Heading, `^block` or custom-id the link points into, if any."""
    label: str = ""


class Note(msgspec.Struct, kw_only=True, omit_defaults=True):
    path: str
    """Vault-relative, POSIX separators. The primary key."""
    title: str
    id: str | None = None
    uuids: list[str] = []
    tags: list[str] = []
    aliases: list[str] = []
    date: str | None = None
    signature: str | None = None
    headings: list[Heading] = []
    links: list[Link] = []
    blocks: list[Block] = []
    body: str = ""
    """Searchable text: markup removed, one output line per file line."""
    problems: list[str] = []
    """What could not be parsed; the note is indexed as far as it goes."""
    mtime_ns: int = 0
    size: int = 0
    hash: str = ""


_INTS: dict[int, int] = {}
"""One int object per line number (Python caches only -5..256)."""


_NO_LINKS = msgspec.Raw(b"\x90")
"""An empty list, encoded: the one object a note without links holds (omit_defaults omits
a Raw only when it is the default object itself)."""


class StoredNote(Note, kw_only=True, omit_defaults=True):
    """A note as the in-memory table keeps it: its links as their msgpack bytes, decoded by
    `links_of` when the graph needs them. A seed-scale vault has 569,000 links: as objects
    they took 300 MB, as bytes 30 MB. Encodes exactly like the Note it came from."""

    links: msgspec.Raw = _NO_LINKS


_links_decoder = msgspec.msgpack.Decoder(list[Link])
_encoder = msgspec.msgpack.Encoder()


def links_of(note: Note) -> list[Link]:
    links = note.links
    return _links_decoder.decode(links) if isinstance(links, msgspec.Raw) else links


def compact(note: Note) -> StoredNote:
    """The table's form of `note` (no body; links as bytes; heading names and line numbers
    shared: a seed-scale vault has 527,000 headings but 66,000 names)."""
    if isinstance(note, StoredNote):
        note.links = note.links.copy()  # a decoded Raw holds on to the whole buffer it came from
    else:
        fields = {f: getattr(note, f) for f in note.__struct_fields__ if f not in ("body", "links")}
        links = _encoder.encode(note.links)
        note = StoredNote(**fields, links=_NO_LINKS if links == b"\x90" else msgspec.Raw(links))
    intern, num = sys.intern, _INTS.setdefault
    for h in note.headings:
        h.text = intern(h.text)
        h.anchor = intern(h.anchor)
        h.line = num(h.line, h.line)
    return note


class NoteHead(msgspec.Struct, kw_only=True):
    """What ranking and snippets need of a hit, decoded without its links (a big note has
    hundreds): the index's stored metadata, read partially."""

    path: str
    title: str
    id: str | None = None
    tags: list[str] = []
    aliases: list[str] = []
    date: str | None = None
    headings: list[Heading] = []
    mtime_ns: int = 0
    size: int = 0
