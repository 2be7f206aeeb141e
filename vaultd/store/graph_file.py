"""The link graph and the note table, saved beside the index so that a restart loads them
instead of parsing every note's links and resolving them again (on 100,000 notes: seconds,
not half a minute).

Derived data, never trusted blindly: the file names what it was saved from (the vault, the
index's instance and the opstamp of its last commit, this format, the code that resolves
links) and is used only when all of them are as they are now; its body carries a CRC32.
A file that is missing, unreadable, cut short, of another format or stale is ignored (a
log line says why) and the graph is built from the notes as before.

Layout: MAGIC, the body (msgpack: one record per note, their keys in the index, then the
graph: per note, arrays of numbers into the table of destinations and the table of words,
and the lookup tables), the trailer (msgpack: stamp, body length,
CRC32), the trailer's length (u32, little-endian). The body is written as it is encoded,
note by note, so saving holds neither the GIL nor a second copy of the table for long.
"""

from __future__ import annotations

import functools
import gc
import hashlib
import logging
import mmap
import os
import struct
import sys
import time
import weakref
import zlib
from array import array
from collections.abc import Callable
from collections import Counter
from itertools import accumulate, chain, repeat
from operator import add, mul, ne
from pathlib import Path

import msgspec

from .. import __version__
from ..note import EMPTY, NoteTable, StoredNote, shared
from .graph import NOWHERE, Column, Dest, Graph, Lazy, Snapshot, dep_code, key
from .index import path_key
from .state import fsync_dir, temp_name

logger = logging.getLogger("vaultd.graph")

FORMAT = 2
"""Bump when the layout below changes."""

MAGIC = b"vaultd-graph\n"
FILE_NAME = "graph.msgpack"


@functools.cache
def rules(terms: Callable[[str], list[str]]) -> str:
    """A digest of the code that resolves links (store/graph.py, the link syntaxes' units in
    parse/syntaxes.py, this file) and of the module whose `terms` cut anchor terms (the graph
    is handed it: query/ranking.py): a graph saved by other rules is stale (an upgrade
    rebuilds it once)."""
    h = hashlib.blake2b(__version__.encode(), digest_size=8)
    for mod in (sys.modules[Graph.__module__], sys.modules[Dest.__module__], sys.modules[terms.__module__],
                sys.modules[__name__]):
        try:
            h.update(Path(mod.__file__).read_bytes())
        except (OSError, TypeError):
            pass  # no source to read (a frozen build): the version alone says
    return h.hexdigest()


class Stamp(msgspec.Struct, array_like=True, frozen=True):
    """What a saved graph was saved from: it is used only when every field is as now."""

    format: int
    rules: str
    vault: str
    index: str
    """The index's instance (a random name it got when created)."""
    opstamp: int
    """The opstamp of the index's last commit."""


class _Trailer(msgspec.Struct, array_like=True):
    stamp: Stamp
    size: int
    crc: int


class _Dest(msgspec.Struct, array_like=True, omit_defaults=True, gc=False):
    target: int = -1
    """The target's position in the records, -1 for none."""
    line: int | None = None
    broken: str | None = None
    candidates: tuple[str, ...] = ()  # a list default: an empty list of its own per destination (8 MB at 100,000 notes)


class _Tables(msgspec.Struct, array_like=True):
    """The graph's lookup tables: saved, as working them out from the notes takes seconds."""

    keys: list[str | None]
    """Each record's path as looked up (see graph.key), None when the path itself."""
    stem: dict[str, bytes]
    alias: dict[str, bytes]
    id: dict[str, bytes]
    uuid: dict[str, bytes]
    """name -> the records of the notes that answer to it (int32s)."""


class _Column(msgspec.Struct, array_like=True):
    """One number array per record, one after another (see graph.Column). Loaded, both are
    views of the mapped file, not copies: the file's pages, not the daemon's own memory
    (27 MB of its own at 100,000 notes, as copies)."""

    data: memoryview
    """Every record's numbers (int32s or uint32s; native order: the file never leaves this machine)."""
    ends: memoryview
    """Where each record's end, as counts of numbers (int64s, a 0 first)."""


class _Graph(msgspec.Struct, array_like=True):
    """The graph as arrays of numbers, read as they are and decoded only when a query or an
    update asks for a note's part of them."""

    out: _Column
    """Where each note's links lead: positions in `dests`, in the order of its links."""
    deps: _Column
    """The codes of the lookup keys each note's links depend on (graph.dep_codes: uint32s;
    the keys themselves, 450,000 words on 100,000 notes, took 46 MB)."""
    anchor: _Column
    """Each note's links' anchor terms: (term's position in `words`, target's record) pairs."""
    back: _Column
    """The records of the notes that link to each."""
    anchor_text: dict[str, bytes]
    """An anchor term -> the notes link labels name with it and how many labels each:
    (record, count) pairs."""
    dests: list[_Dest]
    words: list[str]
    tables: _Tables
    counts: tuple[int, int]
    """(links, broken links)."""


class _Parts(msgspec.Struct):
    """Of a saved note, what load_over takes: its path, and its headings' and links' bytes."""

    path: str
    headings: msgspec.Raw = EMPTY
    links: msgspec.Raw = EMPTY


class _BodyParts(msgspec.Struct, array_like=True):
    notes: list[_Parts]
    keys: bytes
    graph: msgspec.Raw


class _Body(msgspec.Struct, array_like=True):
    notes: list[StoredNote]
    keys: bytes
    """Each note's key in the index (store.index.path_key; int64s): hashing 100,000 paths
    again at start took half a second."""
    graph: msgspec.Raw
    """A _Graph, decoded only by Saved.graph (the notes are wanted first)."""


_body_decoder = msgspec.msgpack.Decoder(_Body)
_parts_decoder = msgspec.msgpack.Decoder(_BodyParts)
_graph_decoder = msgspec.msgpack.Decoder(_Graph)
_trailer_decoder = msgspec.msgpack.Decoder(_Trailer)


def stamp_of(vault: str | Path, index, terms: Callable[[str], list[str]]) -> Stamp:
    """The stamp of `index` (a NoteIndex) as it is now, for the vault at `vault`, whose
    graph cuts anchor terms with `terms` (see rules)."""
    instance, opstamp = index.commit_stamp()
    return Stamp(FORMAT, rules(terms), os.path.realpath(vault), instance, opstamp)


def _ints(values) -> bytes:
    return array("i", values).tobytes()


def _column(parts: list[bytes]) -> _Column:
    return _Column(memoryview(b"".join(parts)), memoryview(array("q", [0, *accumulate(len(p) // 4 for p in parts)])))


class _Origin:
    """What a loaded graph's saved numbers refer to: the records, destinations and words of
    the file it was loaded from (a save remaps them to its own, see _Remap)."""

    __slots__ = ("paths", "dests", "words")

    def __init__(self, paths: list[str], dests: list[_Dest], words: list[str]) -> None:
        self.paths, self.dests, self.words = paths, dests, words


def _saved_part(table, k) -> tuple[object, memoryview | None]:
    """A snapshot table's value of `k`, as (the value, None), or as (None, its numbers as
    saved) while never decoded (the value then is `origin` of table.raw)."""
    if isinstance(table, Lazy):
        v = dict.get(table, k, _NONE)
        if v is not _NONE:
            return v, None
        if isinstance(table.raw, Column) and table.raw.origin is not None:
            nums = table.raw.get(k)
            return (None, nums) if nums is not None else ((), None)
    return table.get(k, ()), None


_NONE = object()


class _Numbered(dict):
    """Each key's number, given in order of first use (`table[key]` numbers a new key)."""

    def __missing__(self, k) -> int:
        n = self[k] = len(self)
        return n


def _by_target(to: array, frm: array, n: int) -> _Column:
    """The column of each record's sources, from (target, source) pairs in order of source."""
    ends = array("q", [0]) * (n + 1)
    for t in to:
        ends[t + 1] += 1
    for i in range(n):
        ends[i + 1] += ends[i]
    at = ends[:-1]
    data = array("i", [0]) * len(to)
    for t, f in zip(to, frm):
        data[at[t]] = f
        at[t] += 1
    return _Column(memoryview(data), memoryview(ends))


def save(path: Path, stamp: Stamp, snap: Snapshot) -> int:
    """Write `snap` to `path` atomically (temp file, fsync, rename, fsync of the folder),
    readable by its owner alone. Returns the bytes written. A loaded graph's parts never
    decoded are written from their saved numbers, remapped, not decoded (decoding every
    note's part to save it cost a 100,000-note daemon 400 MB it never gave back)."""
    graph = _graph_columns(snap)
    return _write(path, stamp, snap.notes, graph)


def _graph_columns(snap: Snapshot) -> _Graph:
    """The saved form of `snap`'s link graph: each note's links, dependencies and anchor
    words as columns over shared destinations and words, its backlinks, anchor texts and
    lookup tables. A loaded graph's parts never decoded are remapped from their saved
    numbers, not decoded."""
    notes = snap.notes
    pos = {p: i for i, p in enumerate(notes)}
    rows = len(notes)
    dests: list[_Dest] = []
    dest_to = array("i")  # each destination's target record (-1 for none)
    by_obj: dict[int, int] = {}  # id(Dest) -> its position (the snapshot holds every one alive)
    by_value: dict[tuple, int] = {}
    words = _Numbered()  # word -> its number, in order of first use
    codes: dict[str, int] = {}
    outs, deps, anchors = [], [], []
    back_to, back_from = array("i"), array("i")  # (target, source) per note pair linked
    named_words, named_targets = array("i"), array("i")  # per label's term naming a target: (word, target)
    remaps: dict[int, tuple] = {}  # id(origin) -> (old record -> new, old destination -> new, old word -> new)
    n_links = n_broken = 0

    def dest_id(t: int, line, broken, candidates) -> int:
        k = (t, line, broken, tuple(candidates))
        i = by_value.get(k)
        if i is None:
            i = by_value[k] = len(dests)
            dests.append(_Dest(t, line, broken, tuple(candidates)))
            dest_to.append(t)
        return i

    def remap(origin: _Origin) -> tuple:
        r = remaps.get(id(origin))
        if r is None:
            r = remaps[id(origin)] = (array("i", [pos.get(p, -1) for p in origin.paths]),
                                      array("i", [-1]) * len(origin.dests), array("i", [-1]) * len(origin.words))
        return r

    for s, src in enumerate(notes):
        v, nums = _saved_part(snap.out, src)
        if nums is None:
            ids = []
            for d in v:
                i = by_obj.get(id(d))
                if i is None:
                    t = -1 if d.target is None else pos[d.target]  # KeyError: not a note
                    i = by_obj[id(d)] = dest_id(t, d.line, d.broken, d.candidates)
                ids.append(i)
                n_broken += bool(d.broken)
        else:
            origin = snap.out.raw.origin
            rec, dmap, _ = remap(origin)
            ids = []
            for old in nums:
                i = dmap[old]
                if i == -1:
                    d = origin.dests[old]
                    t = -1 if d.target == -1 else rec[d.target]
                    if t == -1 and d.target != -1:
                        raise ValueError(f"{src} links to {origin.paths[d.target]}, no longer a note")
                    i = dmap[old] = dest_id(t, d.line, d.broken, d.candidates)
                ids.append(i)
                n_broken += bool(dests[i].broken)
        n_links += len(ids)
        outs.append(_ints(ids))
        for t in {dest_to[i] for i in ids}:
            if t != -1 and t != s:
                back_to.append(t)
                back_from.append(s)
        ds, nums = _saved_part(snap.deps, src)
        deps.append(nums.tobytes() if nums is not None else ds.tobytes() if isinstance(ds, memoryview) else array(
            "I", sorted(code if (code := codes.get(w)) is not None else codes.setdefault(w, dep_code(w))
                        for w in ds)).tobytes())
        pairs, nums = _saved_part(snap.anchor, src)
        if nums is None:
            ints = [0] * len(pairs)
            ints[::2] = map(words.__getitem__, pairs[::2])
            ints[1::2] = map(pos.__getitem__, pairs[1::2])
        else:
            origin = snap.anchor.raw.origin
            rec, _, wmap = remap(origin)
            ints = []
            for i, old in enumerate(nums):
                if i % 2:
                    ints.append(rec[old])
                    if rec[old] == -1:
                        raise ValueError(f"{src} names {origin.paths[old]}, no longer a note")
                else:
                    w = wmap[old]
                    if w == -1:
                        w = wmap[old] = words[origin.words[old]]
                    ints.append(w)
        anchors.append(_ints(ints))
        named_words.extend(ints[::2])
        named_targets.extend(ints[1::2])
    tables = _lookup_tables(notes, pos)
    word_list = list(words)
    anchor_text: dict[str, array] = {}
    stride = rows + 1  # word * stride + target: one int a pair, counted and sorted in C
    for code, count in sorted(Counter(map(add, map(mul, named_words, repeat(stride)), named_targets)).items()):
        w, t = divmod(code, stride)
        anchor_text.setdefault(word_list[w], array("i")).extend((t, count))  # the labels naming it so
    del named_words, named_targets
    return _Graph(_column(outs), _column(deps), _column(anchors), _by_target(back_to, back_from, rows),
                  {t: a.tobytes() for t, a in anchor_text.items()}, dests, word_list, tables, (n_links, n_broken))


def _lookup_tables(notes: dict[str, StoredNote], pos: dict[str, int]) -> _Tables:
    """The lookup tables (keys, stems, aliases, ids, uuids) as record numbers, worked out
    from `notes` rather than copied from the graph in use."""
    lookup = Graph()
    for n in notes.values():
        lookup._index(n)
    at = pos.__getitem__

    def table(t: dict[str, list[str]]) -> dict[str, bytes]:
        return {k: _ints(map(at, ps)) for k, ps in t.items() if ps}

    return _Tables([None if k == p else k for k, p in ((key(p), p) for p in notes)], table(lookup._by_stem),
                   table(lookup._by_alias), table(lookup._by_id), table(lookup._by_uuid))


def _write(path: Path, stamp: Stamp, notes: dict[str, StoredNote], graph: _Graph) -> int:
    """Write the note table and `graph` to `path` atomically (temp file, fsync, rename, fsync
    of the folder), readable by its owner alone, with its stamp in the trailer. Returns the
    bytes written."""
    enc = msgspec.msgpack.Encoder()
    tmp = temp_name(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        with open(fd, "wb", closefd=False) as f:
            buf = bytearray(MAGIC)
            crc, size = 0, 0

            def flush(final: bool = False) -> None:
                nonlocal crc, size, buf
                if len(buf) >= 1 << 22 or final:
                    body = memoryview(buf)[len(MAGIC):] if f.tell() == 0 else memoryview(buf)
                    crc, size = zlib.crc32(body, crc), size + len(body)
                    body.release()
                    f.write(buf)
                    buf = bytearray()

            buf += b"\x93\xdd" + struct.pack(">I", len(notes))  # _Body: [notes, keys, graph]
            for note in notes.values():
                buf += enc.encode(note)  # not encode_into(buf, -1): that resizes buf every time
                flush()
            buf += enc.encode(array("q", map(path_key, notes)).tobytes())
            buf += enc.encode(graph)
            flush(final=True)
            trailer = enc.encode(_Trailer(stamp, size, crc))
            f.write(trailer + struct.pack("<I", len(trailer)))
            f.flush()
            os.fsync(f.fileno())
            written = f.tell()
    except BaseException:
        os.close(fd)
        os.unlink(tmp)
        raise
    os.close(fd)
    os.replace(tmp, path)
    fsync_dir(path.parent)
    return written


class Saved:
    """A saved graph read whole and checked: its note table now, its graph when asked."""

    def __init__(self, path: Path, notes: dict[str, StoredNote], keys: bytes, graph: msgspec.Raw):
        self.path, self.notes, self._graph = path, notes, graph
        self._keys = keys

    def by_key(self) -> dict[int, StoredNote]:
        """The notes by their key in the index (see store.index.path_key)."""
        keys, self._keys = memoryview(self._keys).cast("q"), b""
        return dict(zip(keys, self.notes.values()))

    def graph(self, terms: Callable[[str], list[str]] | None) -> Graph | None:
        """The saved graph over `notes` (None, and a log line, should it not decode)."""
        t = time.perf_counter()
        raw, self._graph = self._graph, None  # and the file's bytes with it, once done
        was = gc.isenabled()
        gc.disable()  # a million objects made at once, none in a cycle: the collector walking
        try:          # them again and again as they grow tripled the time
            g = _restore(_graph_decoder.decode(raw), self.notes, terms)
        except Exception as e:  # whatever a damaged file may raise: never the daemon's end
            logger.warning("saved link graph %s cannot be read (%s: %s): building it anew", self.path,
                           type(e).__name__, e)
            return None
        finally:
            if was:
                gc.freeze()  # as the note table (see load)
                gc.enable()
        logger.info("link graph: %d links of %d notes loaded from %s in %.2f s", g.count()[0], len(g.notes),
                    self.path.name, time.perf_counter() - t)
        return g


_MAPS: weakref.WeakSet = weakref.WeakSet()
"""The saved graph files this process maps (see load): a note's headings and links, and
the parts of the graph not decoded yet, are slices of them."""


def release_pages() -> None:
    """This process's pages of the graph files it maps given back: read again (from the page
    cache) where next asked for. Queries that read headings, and `list`, which reads every
    note's, left up to the whole file resident (175 MB at 100,000 notes)."""
    for m in list(_MAPS) if hasattr(mmap, "MADV_DONTNEED") else ():
        try:
            m.madvise(mmap.MADV_DONTNEED)
        except (ValueError, OSError):  # closed meanwhile
            pass


def load(path: Path, stamp: Stamp) -> Saved | None:
    """The graph saved at `path` when its stamp is `stamp` and it reads whole (its note
    table decoded, its graph when asked), else None and a log line saying why (none when
    there is no file)."""
    return _load(path, stamp, None)


def load_over(path: Path, stamp: Stamp, notes: dict[str, StoredNote]) -> Saved | None:
    """As `load`, over the note table `notes` the file was saved from (a child process's
    save of this process's table, see ingest.update): its notes' headings and links made
    slices of the mapped file in place, no second table decoded. Reading the saved table
    and letting `notes` go after it left 100 MB of holes in Python's heap at 100,000 notes
    (its arenas are given back only when empty); letting it go first left the table empty
    for a moment, which every reader of it would have had to allow for. None, and a log
    line, when the file is not of those notes (their paths, in their order)."""
    return _load(path, stamp, notes)


def _load(path: Path, stamp: Stamp, over: dict[str, StoredNote] | None) -> Saved | None:
    t = time.perf_counter()
    for tmp in path.parent.glob(f".{path.name}.*.tmp"):  # a save cut short (killed at shutdown): never used
        tmp.unlink(missing_ok=True)
    try:
        with open(path, "rb") as f:
            # mapped, not read: the notes' headings and links stay in the file's pages (the
            # page cache's, not the daemon's own memory) until asked for. vaultd never writes
            # the file in place (a save makes a new one), so a mapped one never changes.
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if os.fstat(f.fileno()).st_size else b""
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        logger.warning("saved link graph %s cannot be read (%s): building it anew", path, e)
        return None
    was = gc.isenabled()
    gc.disable()
    try:
        why, body = _check(data, stamp)
        if why:
            logger.warning("saved link graph %s %s: building it anew", path, why)
            return None
        if over is None:
            saved = _body_decoder.decode(body)  # the headings and links: slices of the mapped file
            notes = NoteTable((n.path, shared(n)) for n in saved.notes)
            if len(notes) != len(saved.notes):
                raise ValueError("two records of one note")
        else:
            saved, notes = _parts_decoder.decode(body), over
            if len(saved.notes) != len(notes) or any(map(ne, notes, (r.path for r in saved.notes))):
                raise ValueError("not saved from these notes")
            for note, r in zip(notes.values(), saved.notes):  # the same bytes, now the file's
                note.headings, note.links = r.headings, r.links
        if len(saved.keys) != 8 * len(notes):
            raise ValueError(f"{len(saved.keys) // 8} keys for {len(notes)} notes")
    except Exception as e:  # whatever a damaged file may raise: never the daemon's end
        logger.warning("saved link graph %s cannot be read (%s: %s): building it anew", path, type(e).__name__, e)
        return None
    finally:
        if was:
            gc.freeze()  # the table lives as long as the daemon: walking its million objects, the
            gc.enable()  # collector's first passes after the load took 0.3 s at 100,000 notes
    if isinstance(data, mmap.mmap):
        _MAPS.add(data)
        release_pages()  # read once to decode: out of this process's pages until asked for
    logger.info("note table: %d notes loaded from %s in %.2f s", len(notes), path.name, time.perf_counter() - t)
    return Saved(path, notes, saved.keys, saved.graph)


def _check(data, stamp: Stamp) -> tuple[str | None, memoryview | None]:
    """(why the file cannot be used, or None; its body)."""
    if data[:len(MAGIC)] != MAGIC:
        return "is not a saved graph (no header)", None
    if len(data) < len(MAGIC) + 4:
        return "is cut short", None
    (n,) = struct.unpack("<I", data[-4:])
    if len(MAGIC) + n + 4 > len(data):
        return "is cut short", None
    try:
        trailer = _trailer_decoder.decode(data[-4 - n:-4])
    except msgspec.DecodeError:
        return "is cut short or of an older format", None
    if trailer.stamp.format != FORMAT:
        return f"is of format {trailer.stamp.format}, not {FORMAT}", None
    if trailer.stamp != stamp:
        what = [f for f in stamp.__struct_fields__ if getattr(stamp, f) != getattr(trailer.stamp, f)]
        if what == ["opstamp"]:
            return f"was saved at index commit {trailer.stamp.opstamp}, and the index is at {stamp.opstamp}", None
        names = {"rules": "by other link rules", "vault": f"for another vault ({trailer.stamp.vault})",
                 "index": "from another index (rebuilt or replaced since)"}
        return "was saved " + ", ".join(names.get(f, f"with another {f}") for f in what), None
    body = memoryview(data)[len(MAGIC):len(data) - 4 - n]
    if len(body) != trailer.size or zlib.crc32(body) != trailer.crc:
        return "does not match its checksum (cut short or changed)", None
    return None, body


def _restore(saved: _Graph, notes: dict[str, StoredNote], terms: Callable[[str], list[str]] | None) -> Graph:
    paths = list(notes)
    n = len(paths)
    pos = dict(zip(paths, range(n)))

    origin = _Origin(paths, saved.dests, saved.words)

    def column(c: _Column, typecode: str, empty: bool) -> Column:
        ends = memoryview(c.ends).cast("q")
        if len(ends) != n + 1 or ends[0] != 0 or ends[-1] * 4 != len(c.data):
            raise ValueError(f"a column of {len(ends) - 1} notes for {n} notes")
        return Column(pos, memoryview(c.data).cast(typecode), ends, empty, origin=origin)

    if len(saved.tables.keys) != n:
        raise ValueError(f"{len(saved.tables.keys)} notes' keys for {n} notes")
    words = saved.words
    dests: list[Dest | None] = [None] * len(saved.dests)  # each made when a link to it is first decoded

    def dest_at(i: int) -> Dest:
        dest = dests[i]
        if dest is None:
            d = saved.dests[i]
            if d.target == -1 and d.line is None and d.broken is None and not d.candidates:
                dest = NOWHERE
            else:
                dest = Dest(target=None if d.target == -1 else paths[d.target], line=d.line, broken=d.broken,
                            candidates=d.candidates)
            dests[i] = dest
        return dest

    if any(not -1 <= d.target < n for d in saved.dests):
        raise ValueError("a destination out of range")
    t = saved.tables
    word_at, path_at = words.__getitem__, paths.__getitem__

    def lazy(raw: dict, make: Callable, default: Callable | None = None) -> Lazy:
        return Lazy(raw, lambda saved: make(memoryview(saved).cast("i")), default)

    def paths_of(ids) -> list[str]:
        return list(map(path_at, ids))

    snap = Snapshot(
        notes,
        Lazy(column(saved.out, "i", True), lambda ids: list(map(dest_at, ids))),
        Lazy(column(saved.deps, "I", True), memoryview),  # kept as codes (see Graph._depending)
        Lazy(column(saved.anchor, "i", False),
             lambda ids: tuple(chain.from_iterable(zip(map(word_at, ids[::2]), map(path_at, ids[1::2]))))),
        lazy(saved.anchor_text, lambda ids: Counter(dict(zip(map(path_at, ids[::2]), ids[1::2]))), Counter),
        Lazy(column(saved.back, "i", False), lambda ids: set(map(path_at, ids)), set),
    )
    by_path = {p if k is None else k: p for k, p in zip(t.keys, paths)}
    tables = (by_path, *(lazy(x, paths_of, list) for x in (t.stem, t.alias, t.id, t.uuid)))
    return Graph.restore(snap, terms, (), saved.counts, tables)
