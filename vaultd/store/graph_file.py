"""The link graph and the note table, saved beside the index so that a restart loads them
instead of parsing every note's links and resolving them again (on 100,000 notes: seconds,
not half a minute).

Derived data, never trusted blindly: the file names what it was saved from (the vault, the
index's instance and the opstamp of its last commit, this format, the code that resolves
links) and is used only when all of them are as they are now; its body carries a CRC32.
A file that is missing, unreadable, cut short, of another format or stale is ignored (a
log line says why) and the graph is built from the notes as before.

Layout: MAGIC, the body (msgpack: one record per note, then the table of destinations and
the table of words the records point into), the trailer (msgpack: stamp, body length,
CRC32), the trailer's length (u32, little-endian). The body is written as it is encoded,
note by note, so saving holds neither the GIL nor a second copy of the table for long.
"""

from __future__ import annotations

import functools
import gc
import hashlib
import logging
import os
import struct
import sys
import time
import zlib
from collections.abc import Callable
from collections import Counter
from itertools import chain
from operator import attrgetter
from pathlib import Path

import msgspec

from .. import __version__
from ..note import StoredNote, compact
from .graph import NOWHERE, Dest, Graph, Snapshot
from .state import fsync_dir

logger = logging.getLogger("vaultd.graph")

FORMAT = 1
"""Bump when the layout below changes."""

MAGIC = b"vaultd-graph\n"
_TARGET = attrgetter("target")
FILE_NAME = "graph.msgpack"


@functools.cache
def rules() -> str:
    """A digest of the code that resolves links and cuts anchor terms: a graph saved by other
    rules is stale (an upgrade rebuilds it once)."""
    h = hashlib.blake2b(__version__.encode(), digest_size=8)
    from ..query import ranking

    for mod in (sys.modules[Graph.__module__], ranking, sys.modules[__name__]):
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
    candidates: list[str] = []


class _Links(msgspec.Struct, array_like=True, gc=False):
    """A note's links as resolved (its note is the record at the same position)."""

    out: list[int]
    """Where each of its links leads: positions in `dests`, in the order of its links."""
    deps: list[int]
    """The lookup keys its links depend on: positions in `words`."""
    anchor: list[int]
    """Its links' anchor terms: (term's position in `words`, target's record) pairs, flat."""
    back: list[int]
    """The records of the notes that link to it."""


class _Term(msgspec.Struct, array_like=True, gc=False):
    """An anchor term, and the notes link labels name with it: how many labels each."""

    term: int
    targets: list[int]
    counts: list[int]


class _Graph(msgspec.Struct, array_like=True):
    links: list[_Links]
    anchor_text: list[_Term]
    dests: list[_Dest]
    words: list[str]
    counts: tuple[int, int]
    """(links, broken links)."""


class _Body(msgspec.Struct, array_like=True):
    notes: list[StoredNote]
    graph: msgspec.Raw
    """A _Graph, decoded only by Saved.graph (the notes are wanted first)."""


_body_decoder = msgspec.msgpack.Decoder(_Body)
_graph_decoder = msgspec.msgpack.Decoder(_Graph)
_trailer_decoder = msgspec.msgpack.Decoder(_Trailer)


def stamp_of(vault: str | Path, index) -> Stamp:
    """The stamp of `index` (a NoteIndex) as it is now, for the vault at `vault`."""
    instance, opstamp = index.commit_stamp()
    return Stamp(FORMAT, rules(), os.path.realpath(vault), instance, opstamp)


def save(path: Path, stamp: Stamp, snap: Snapshot) -> int:
    """Write `snap` to `path` atomically (temp file, fsync, rename, fsync of the folder),
    readable by its owner alone. Returns the bytes written."""
    notes = snap.notes
    pos = {p: i for i, p in enumerate(notes)}
    back: list[list[int]] = [[] for _ in notes]
    if snap.back is None:
        for src, dests in snap.out.items():
            for t in set(map(_TARGET, dests)):
                if t is not None and t != src:
                    back[pos[t]].append(pos[src])
    else:
        for t, srcs in snap.back.items():
            back[pos[t]] = list(map(pos.__getitem__, srcs))
    anchor_text = snap.anchor_text
    if anchor_text is None:
        counted: Counter[tuple[str, str]] = Counter()
        for pairs in snap.anchor.values():
            counted.update(zip(pairs[::2], pairs[1::2]))
        anchor_text = {}
        for (t, target), n in counted.items():
            anchor_text.setdefault(t, {})[target] = n
    dests: list[_Dest] = []
    by_obj: dict[int, int] = {}  # id(Dest) -> its position (the snapshot holds every one alive)
    by_value: dict[tuple, int] = {}
    words: dict[str, int] = {}
    enc = msgspec.msgpack.Encoder()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
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

            buf += b"\x92\xdd" + struct.pack(">I", len(notes))  # _Body: [notes, graph]
            for note in notes.values():
                buf += enc.encode(note)  # not encode_into(buf, -1): that resizes buf every time
                flush()
            buf += b"\x95\xdd" + struct.pack(">I", len(notes))  # _Graph: [links, anchor_text, dests, words, counts]
            n_links = n_broken = 0
            for src in notes:
                ids = []
                for d in snap.out.get(src, ()):
                    i = by_obj.get(id(d))
                    if i is None:
                        k = (d.target, d.line, d.broken, tuple(d.candidates))
                        i = by_value.get(k)
                        if i is None:
                            t = -1 if d.target is None else pos[d.target]  # KeyError: not a note
                            i = by_value[k] = len(dests)
                            dests.append(_Dest(t, d.line, d.broken, list(d.candidates)))
                        by_obj[id(d)] = i
                    ids.append(i)
                    n_broken += bool(d.broken)
                n_links += len(ids)
                deps = [words.setdefault(w, len(words)) for w in snap.deps.get(src, ())]
                pairs = snap.anchor.get(src, ())
                anchor = []
                for t, target in zip(pairs[::2], pairs[1::2]):
                    anchor += (words.setdefault(t, len(words)), pos[target])
                buf += enc.encode(_Links(ids, deps, anchor, sorted(back[pos[src]])))
                flush()
            buf += enc.encode([_Term(words.setdefault(t, len(words)), [pos[p] for p in c], list(c.values()))
                               for t, c in anchor_text.items()])
            buf += enc.encode(dests)
            buf += enc.encode(list(words))
            buf += enc.encode((n_links, n_broken))
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

    def __init__(self, path: Path, notes: dict[str, StoredNote], graph: msgspec.Raw):
        self.path, self.notes, self._graph = path, notes, graph

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
                gc.enable()
        logger.info("link graph: %d links of %d notes loaded from %s in %.2f s", g.count()[0], len(g.notes),
                    self.path.name, time.perf_counter() - t)
        return g


def load(path: Path, stamp: Stamp) -> Saved | None:
    """The graph saved at `path` when its stamp is `stamp` and it reads whole (its note
    table decoded, its graph when asked), else None and a log line saying why (none when
    there is no file)."""
    t = time.perf_counter()
    for tmp in path.parent.glob(f".{path.name}.*.tmp"):  # a save cut short (killed at shutdown): never used
        tmp.unlink(missing_ok=True)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        logger.warning("saved link graph %s cannot be read (%s): building it anew", path, e)
        return None
    was = gc.isenabled()
    gc.disable()
    try:
        why, body = _check(data, stamp)
        if why:
            logger.warning("saved link graph %s %s: building it anew", path, why)
            return None
        saved = _body_decoder.decode(body)
        notes = {n.path: n for n in map(compact, saved.notes)}  # compact: copied out of the file's bytes
        if len(notes) != len(saved.notes):
            raise ValueError("two records of one note")
    except Exception as e:  # whatever a damaged file may raise: never the daemon's end
        logger.warning("saved link graph %s cannot be read (%s: %s): building it anew", path, type(e).__name__, e)
        return None
    finally:
        if was:
            gc.enable()
    logger.info("note table: %d notes loaded from %s in %.2f s", len(notes), path.name, time.perf_counter() - t)
    return Saved(path, notes, saved.graph)


def _check(data: bytes, stamp: Stamp) -> tuple[str | None, memoryview | None]:
    """(why the file cannot be used, or None; its body)."""
    if not data.startswith(MAGIC):
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
    if len(saved.links) != len(notes):
        raise ValueError(f"{len(saved.links)} notes' links for {len(notes)} notes")
    paths = list(notes)
    words = list(map(sys.intern, saved.words))
    dests, plain = [], []
    for d in saved.dests:
        if d.target == -1 and d.line is None and d.broken is None and not d.candidates:
            dests.append(NOWHERE)
            continue
        if d.target < -1:
            raise ValueError(f"destination {d.target}")
        dest = Dest(target=None if d.target == -1 else paths[d.target], line=d.line, broken=d.broken,
                    candidates=d.candidates)
        dests.append(dest)
        if dest.target is not None and dest.line is None and dest.broken is None:
            plain.append(dest)
    dest_at, word_at, path_at = dests.__getitem__, words.__getitem__, paths.__getitem__
    links = saved.links  # at C speed below: a big vault has 600,000 links and 1,800,000 anchor terms
    out = dict(zip(paths, (list(map(dest_at, r.out)) for r in links)))
    deps = dict(zip(paths, (tuple(map(word_at, r.deps)) for r in links)))
    anchor = {p: tuple(chain.from_iterable(zip(map(word_at, r.anchor[::2]), map(path_at, r.anchor[1::2]))))
              for p, r in zip(paths, links) if r.anchor}
    back = {p: set(map(path_at, r.back)) for p, r in zip(paths, links) if r.back}
    anchor_text = {words[t.term]: dict(zip(map(path_at, t.targets), t.counts)) for t in saved.anchor_text}
    return Graph.restore(Snapshot(notes, out, deps, anchor, anchor_text, back), terms, plain, saved.counts)
