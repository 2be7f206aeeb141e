"""The values passed between stages: a parsed Note and its parts."""

from __future__ import annotations

import re
import struct
import sys
import weakref
from collections.abc import Iterable, Iterator
from typing import Literal

import msgspec


# gc=False on leaf values, which never form cycles: a big vault holds a million of them, each
# 16 bytes smaller untracked, and the cycle collector no longer walks them all.
class Heading(msgspec.Struct, array_like=True, gc=False):
    level: int
    text: str
    line: int
    """1-based line in the file."""
    anchor: str
    tags: tuple[str, ...] = ()
    """Org heading tags (`* Heading :a:b:`), lower-cased: the heading's own, not those it
    inherits (see `heading_tags`)."""


ID_ANCHOR = "id:"
"""Blocks named `id:UUID` are Org headings carrying that :ID: (so `id:` links find their line)."""


class Block(msgspec.Struct, array_like=True, gc=False):
    id: str
    """Obsidian `^block-id` (without the caret), Org `<<target>>`, or `id:UUID` (see ID_ANCHOR)."""
    line: int


Kind = Literal["wiki", "embed", "md", "file", "denote", "id", "internal", "url"]
"""What a link is, one kind per unit of parse/syntaxes.py (whose BY_KIND holds them):
- wiki: Obsidian's `[[name#anchor|alias]]` (Dendron's `[[label|note.name#anchor]]` too);
- embed: `![[name#anchor]]`;
- md: a Markdown `[label](path#anchor)` or `![alt](path)` to a file;
- file: Org's `[[file:path::search][description]]`;
- denote: `[[denote:ID::search]]`, or Denote's Markdown `[label](denote:ID)`;
- id: Org's `[[id:UUID::search]]` (a file's or a heading's :ID:);
- internal: a place in the same note: `[[#Heading]]`, `[x](#anchor)`, Org `[[*Heading]]`,
  `[[#custom-id]]`, `[[target]]` (its target empty, the place its anchor);
- url: a URL, bare or in either form, and any other scheme (`[[zk:1234]]`)."""


class Link(msgspec.Struct, kw_only=True, array_like=True, gc=False):
    line: int
    col: int
    """1-based line and column (in characters) where the link starts."""
    raw: str
    kind: Kind
    """Which syntax reads it (see Kind)."""
    target: str
    """What the link names, before resolution (a name, a relative path, an ID)."""
    anchor: str = ""
    """Heading, `^block` or custom-id the link points into, if any."""
    label: str = ""
    at: int = -1
    """Byte offset in the file of the line the link stands on, so that its text is read
    without reading the file up to it (a hub's backlinks sit deep in big files); -1 when
    the file's lines are not its bytes' lines (a CR in it), or the link is not a file's."""


class Note(msgspec.Struct, kw_only=True, omit_defaults=True):
    path: str
    """Vault-relative, POSIX separators. The primary key."""
    title: str
    title_from: str = "file name"
    """Where the title came from: front matter, #+title, Denote name or file name."""
    id: str | None = None
    """The Denote identifier: the file name's, else the `identifier` keyword's."""
    id_keyword: str | None = None
    """The `identifier` keyword, when it disagrees with the file name's (a problem: Denote
    follows the file name); a `denote:` link by it is broken, and says why."""
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
    ctime_ns: int = 0
    """The file's ctime when it was read: a stat scan compares it too, since an edit that
    puts the size and mtime back (or lands within a coarse timestamp) still changes it."""


EMPTY = msgspec.Raw(b"\x90")
"""An empty list, encoded: the one object a note without headings or links holds
(omit_defaults omits a Raw only when it is the default object itself)."""


class StoredNote(Note, kw_only=True, omit_defaults=True):
    """A note as the in-memory table keeps it: its headings and links as their msgpack
    bytes, decoded by `headings_of` and `links_of` where needed (a hit's snippets, the
    graph). A seed-scale vault has 527,000 headings and 569,000 links: so kept, its whole
    table takes 108 MB (links as objects alone took 300 MB) and loads in a third of the
    time it took with headings as objects. Encodes exactly like the Note it came from.

    Its lists are tuples, and its tags and title source interned (see `shared`): an empty
    list is an object of its own in each note, four of them per note, and a tag was a
    string of its own in each note that holds it (together 40 MB at 100,000 notes)."""

    uuids: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    blocks: tuple[Block, ...] = ()
    problems: tuple[str, ...] = ()
    headings: msgspec.Raw = EMPTY
    links: msgspec.Raw = EMPTY


_headings_decoder = msgspec.msgpack.Decoder(list[Heading])
_links_decoder = msgspec.msgpack.Decoder(list[Link])
_raws_decoder = msgspec.msgpack.Decoder(list[msgspec.Raw])
_link_decoder = msgspec.msgpack.Decoder(Link)
_encoder = msgspec.msgpack.Encoder()


def headings_of(note: Note) -> list[Heading]:
    hs = note.headings
    return _headings_decoder.decode(hs) if isinstance(hs, msgspec.Raw) else hs


class NoteTable(dict):
    """The note table: path -> StoredNote, replaced at each commit and never changed in
    place. It can be held weakly, so that what is worked out of it (PerTable) does not keep
    it alive once replaced: a big table freed after its successor was made leaves holes in
    Python's heap (its arenas are given back only when empty)."""

    __slots__ = ("__weakref__",)


class PerTable:
    """A value worked out of a note table once, until the table is replaced: `cache(notes)`.
    The table is held weakly (strongly only when it is a plain dict)."""

    def __init__(self, make):
        self._make = make
        self._held: tuple = (None, None)  # (a reference to the table, its value): swapped whole

    def __call__(self, notes: dict):
        of, value = self._held
        if of is None or of() is not notes:
            value = self._make(notes)
            self._held = (held(notes), value)
        return value


def held(notes: dict):
    """A reference to `notes`: called, it gives the table, or None once the table is gone."""
    try:
        return weakref.ref(notes)
    except TypeError:  # a plain dict (a test's, a library caller's)
        return lambda: notes


class _HeadingText(msgspec.Struct, array_like=True, gc=False):
    """A Heading's level and text, the rest of it left undecoded."""

    level: int
    text: str


_texts_decoder = msgspec.msgpack.Decoder(list[list[_HeadingText]])


def heading_texts(notes: Iterable[Note], size: int = 1 << 15, only: bytes | None = None) -> Iterator[str]:
    """The notes' headings' texts, a line each, in strings of about `size` bytes of stored
    headings: those bytes decoded in one call, and only as far as the text (every heading
    of 100,000 notes decoded whole, one note at a time, took 2 s). A small `size` lets a
    background caller give way often: each string is a fraction of a millisecond's work.
    `only`: a bytes pattern (re) a note's stored headings must hold to be read at all."""
    hold = re.compile(only).search if only else None
    raws: list[bytes] = []
    texts: list[str] = []
    taken = 0  # bytes of stored headings in this string so far
    for note in notes:
        hs = note.headings
        if isinstance(hs, msgspec.Raw):
            if hold is not None and not hold(hs):
                continue
            raws.append(hs)
            taken += len(hs)
        else:
            texts += [h.text for h in hs]
            taken += 64 * len(hs)
        if taken >= size:
            yield _joined(raws, texts)
            raws, texts, taken = [], [], 0
    if raws or texts:
        yield _joined(raws, texts)


def _joined(raws: list[bytes], texts: list[str]) -> str:
    if raws:  # one msgpack array of the notes' arrays
        texts += [h.text for hs in _texts_decoder.decode(b"\xdd" + struct.pack(">I", len(raws)) + b"".join(raws))
                  for h in hs]
    return "\n".join(texts)


_WORDS = re.compile(r"\w+")

NAMED = ("file name", "Denote name")
"""Title sources that are the file's name: the note has no title of its own."""


def first_h1(note: Note) -> str | None:
    """A Markdown note's first level-1 heading, when the note has no title of its own (its
    title is its file name) and the heading says something else: searched as a title
    (Foam shows it as the title; in Obsidian it is often the title written out), but
    never an alias, which would resolve links that Obsidian and Foam leave broken."""
    if note.title_from not in NAMED or not note.path.lower().endswith(".md"):
        return None
    h = next((h for h in headings_of(note) if h.level == 1), None)
    return h.text if h is not None and _words(h.text) != _words(note.title) else None


def _words(text: str) -> list[str]:
    return [w.casefold() for w in _WORDS.findall(text)]


def heading_tags(headings: list[Heading]) -> list[set[str]]:
    """Each heading's tags as Org counts them: its own and every ancestor's (tag
    inheritance). A note's file tags (#+filetags) apply to every heading as well; they are
    the note's, so they are not repeated here."""
    out: list[set[str]] = []
    stack: list[tuple[int, set[str]]] = []  # (level, tags) of the open ancestors
    for h in headings:
        while stack and stack[-1][0] >= h.level:
            stack.pop()
        tags = (stack[-1][1] if stack else set()) | set(h.tags)
        stack.append((h.level, tags))
        out.append(tags)
    return out


def links_of(note: Note) -> list[Link]:
    links = note.links
    return _links_decoder.decode(links) if isinstance(links, msgspec.Raw) else links


def links_at(note: Note, picked: list[int]) -> list[Link]:
    """The note's links at these places in links_of(note), the others not decoded: a
    source at seed scale holds 500 links, and decoding them all took 4x as long."""
    links = note.links
    if not isinstance(links, msgspec.Raw):
        return [links[i] for i in picked]
    raws = _raws_decoder.decode(links)
    return [_link_decoder.decode(raws[i]) for i in picked]


def _raw(values: list) -> msgspec.Raw:
    data = _encoder.encode(values)
    return EMPTY if data == b"\x90" else msgspec.Raw(data)


def compact(note: Note) -> StoredNote:
    """The table's form of `note`: no body; headings and links as bytes; lists as tuples."""
    if isinstance(note, StoredNote):
        # a decoded Raw holds on to the whole buffer it came from
        note.headings, note.links = note.headings.copy(), note.links.copy()
        return shared(note)
    fields = {f: getattr(note, f) for f in note.__struct_fields__ if f not in ("body", "headings", "links")}
    for f in _TUPLES:
        fields[f] = tuple(fields[f])
    return shared(StoredNote(**fields, headings=_raw(note.headings), links=_raw(note.links)))


_TUPLES = ("uuids", "tags", "aliases", "blocks", "problems")


def shared(note: StoredNote) -> StoredNote:
    """`note` with its tags and title source interned: a vault has few of either, and a
    decoder makes a string of its own for each note that holds one."""
    note.title_from = sys.intern(note.title_from)
    if note.tags:
        note.tags = tuple(map(sys.intern, note.tags))
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
