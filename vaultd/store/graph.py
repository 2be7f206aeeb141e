"""The link graph: every note's links resolved against the whole vault, and the reverse.

How each syntax resolves, and which lookup keys that depends on, is its unit's (DESIGN
"Link syntaxes"; parse/syntaxes.py): the graph is the `Lookup` they resolve against, the
vault's notes by path, file name, alias, Denote identifier and Org :ID:. A name (a
wikilink's, a Markdown link's bare name) is looked up as Obsidian does (`by_name`): a
path (relative to the note, then to the vault, then as a path suffix), else the file
name, unique, else the one in the note's own folder, else the single shallowest one,
else ambiguous; then aliases. Case-insensitive, extension optional. A link that cannot
be resolved records why. Links to non-note files (images, PDFs) and URLs are kept but
are not edges.
"""

from __future__ import annotations

import bisect
import contextlib
import heapq
import math
import operator
import os
import posixpath
import sys
import signal
import threading
import zlib
from array import array
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, KeysView
from itertools import chain, islice
from typing import NamedTuple

import msgspec

from ..note import Link, Note, links_at, links_of
from ..parse.syntaxes import (  # noqa: F401  Dest, NOWHERE, the reasons and the name forms: the graph's words too
    AMBIGUOUS, ATTACHMENT_EXTS, BY_ALIAS, BY_IDENT, BY_KIND, BY_NAME, BY_UUID, NO_BLOCK, NO_HEADING, NO_ID, NO_NOTE,
    NOT_NOTES, NOTE_EXTS, NOWHERE, OUTSIDE, WITHIN_SOURCE, Anchors, Dest, has_attachment_ext, key, loose, one_of,
    stem_of,
)

_TARGET = operator.attrgetter("target")


class Resolved(msgspec.Struct, frozen=True):
    """A link and where it leads."""

    link: Link
    dest: Dest

    target = property(lambda self: self.dest.target)
    line = property(lambda self: self.dest.line)
    broken = property(lambda self: self.dest.broken)
    candidates = property(lambda self: self.dest.candidates)


LABEL_CACHE = 100_000
"""Link labels whose terms one graph update keeps at most (a seed-scale vault has 512,000
labels, 20,700 of them distinct; the terms of each cost 6 us); a build apart (snapshot_of)
keeps them all (the 100,000-note vault's 116,000: its memory ends with its process)."""


SPLIT_MIN = 5_000
"""Notes from which a build apart (Graph.snapshot_of) resolves in two processes: a fork and
the child's answer cost milliseconds, its half of 100,000 notes' links 5 seconds."""

_parts_decoder = msgspec.msgpack.Decoder(list[tuple[str, list[Dest], bytes, tuple[str, ...]]])
"""What the child of Graph._resolve_in_two sends back: (source, its destinations, its lookup
key codes as saved, its anchor terms), per source."""

_NONE = object()
_TAKING = threading.Lock()


def _taking_anew() -> None:
    """In a child forked while another thread decoded a value (see Lazy._take), _TAKING is
    held for good: a child that decodes one (the graph's save is forked while queries run,
    see ingest update._apart) would hang on it. The child has one thread: a new lock is free."""
    global _TAKING
    _TAKING = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_taking_anew)


class Lazy(dict):
    """A table some of whose values are still as they were saved (graph_file.py): each is
    decoded when first asked for, so that a loaded graph is ready without first making the
    million objects a big vault's tables hold (most are never asked for). `raw`: key -> the
    saved value; `decode` makes the value of one; `default` (a type), when given, the value
    of a key in neither, as a defaultdict does. Listing its items decodes every value."""

    __slots__ = ("raw", "decode", "default")

    def __init__(self, raw: dict, decode: Callable, default: Callable | None = None) -> None:
        super().__init__()
        self.raw, self.decode, self.default = raw, decode, default

    def _take(self, k):
        with _TAKING:  # a reader without the graph's lock (find, resolve) may race another
            raw = self.raw.get(k, _NONE)
            if raw is _NONE:  # taken meanwhile
                return dict.__getitem__(self, k)
            v = self.decode(raw)
            dict.__setitem__(self, k, v)
            del self.raw[k]
            return v

    def __missing__(self, k):
        if k in self.raw:
            return self._take(k)
        if self.default is None:
            raise KeyError(k)
        v = self.default()
        dict.__setitem__(self, k, v)
        return v

    def get(self, k, default=None):
        v = dict.get(self, k, _NONE)
        if v is not _NONE:
            return v
        return self._take(k) if k in self.raw else default

    def __contains__(self, k) -> bool:
        return dict.__contains__(self, k) or k in self.raw

    def __setitem__(self, k, v) -> None:
        self.raw.pop(k, None)
        dict.__setitem__(self, k, v)

    def __delitem__(self, k) -> None:
        if self.raw.pop(k, _NONE) is _NONE:
            dict.__delitem__(self, k)
        else:
            dict.pop(self, k, None)

    def pop(self, k, *default):
        if k in self.raw:
            self._take(k)
        return dict.pop(self, k, *default)

    def __len__(self) -> int:
        return dict.__len__(self) + len(self.raw)

    def __iter__(self):
        return iter([*dict.keys(self), *self.raw])

    def keys(self):
        return list(self)

    def _all(self) -> None:
        for k in list(self.raw):
            self._take(k)

    def items(self):
        self._all()
        return dict.items(self)

    def values(self):
        self._all()
        return dict.values(self)

    def update(self, *args, **kw) -> None:
        for k, v in dict(*args, **kw).items():
            self[k] = v

    def copy(self) -> "Lazy":
        """A copy whose values still as saved stay so (decoded again, not shared, if asked for)."""
        c = Lazy(self.raw.copy(), self.decode, self.default)
        dict.update(c, dict.items(self))
        return c


class Column:
    """The saved values of a Lazy table, one after another in one array, found by key: no
    object per value until one is asked for (a big vault's tables hold 400,000).
    `at`: key -> its record; `data`: every record's numbers (int32s, or uint32s); `ends`:
    where each record's end (int64s, as counts of numbers). `empty`: whether a record with
    no numbers counts (else it is as if not there, as a table without an empty entry).
    `origin`: what the numbers refer to (graph_file's saved tables), so that a save writes
    the values still as saved as they are, without decoding them."""

    __slots__ = ("at", "data", "ends", "empty", "gone", "n", "origin", "_keys")

    def __init__(self, at: dict[str, int], data: memoryview, ends: memoryview, empty: bool,
                 gone: set[str] | None = None, n: int | None = None, origin: object = None) -> None:
        self.at, self.data, self.ends, self.empty, self.origin = at, data, ends, empty, origin
        self._keys: list[str] | None = None  # record -> its key, made at the first `holding`
        self.gone: set[str] = gone if gone is not None else set()
        """Keys taken out (decoded, replaced or deleted)."""
        self.n = n if n is not None else (len(at) if empty else
                                          sum(1 for i in range(len(at)) if ends[i + 1] > ends[i]))

    def _span(self, k) -> tuple[int, int] | None:
        i = self.at.get(k)
        if i is None or k in self.gone:
            return None
        a, b = self.ends[i], self.ends[i + 1]
        return (a, b) if b > a or self.empty else None

    def __contains__(self, k) -> bool:
        return self._span(k) is not None

    def get(self, k, default=None):
        span = self._span(k)
        return default if span is None else self.data[span[0]:span[1]]

    def pop(self, k, default=None):
        v = self.get(k, _NONE)
        if v is _NONE:
            return default
        self.gone.add(k)
        return v

    def __delitem__(self, k) -> None:
        if self.pop(k, _NONE) is _NONE:
            raise KeyError(k)

    def __len__(self) -> int:
        return self.n - len(self.gone)

    def __iter__(self):
        return (k for k in self.at if self._span(k) is not None)

    def items(self):
        return ((k, self.get(k)) for k in self)

    def copy(self) -> "Column":
        c = Column(self.at, self.data, self.ends, self.empty, set(self.gone), self.n, self.origin)
        c._keys = self._keys
        return c

    def holding(self, numbers: set[int]) -> set[str]:
        """The keys whose record holds one of `numbers` (of the records' own type): found by
        searching the records' bytes for each number (C speed), not record by record, which
        took a second for 100,000 records."""
        blob, width, ends = self.data.tobytes(), self.data.itemsize, self.ends
        places = []
        for x in numbers:
            try:
                pattern = array(self.data.format, [x]).tobytes()
            except OverflowError:  # no record can hold it
                continue
            i = blob.find(pattern)
            while i >= 0:
                if i % width == 0:  # a number's own bytes, not the end of one and the start of the next
                    places.append(i // width)
                i = blob.find(pattern, i + 1)
        if not places:
            return set()
        if self._keys is None:
            keys = [""] * (len(ends) - 1)
            for k, i in self.at.items():
                keys[i] = k
            self._keys = keys
        out = set()
        for place in places:
            k = self._keys[bisect.bisect_right(ends, place) - 1]
            if k not in self.gone:
                out.add(k)
        return out


def _copy(table: dict) -> dict:
    return table.copy() if isinstance(table, Lazy) else dict(table)


class AnchorMatch:
    """Graph.anchor_match's answer, worked out only where asked: a note's share, or the
    best notes by share (then path, last first) without visiting every note named. It
    reads the graph's own tables, under the graph's lock: an update never shows half done."""

    def __init__(self, sets: list[tuple[str, Counter[str], float]], order: Callable[[str], list[str]],
                 lock: threading.RLock) -> None:
        self._sets = sets  # (term, the notes named with it, its weight), commonest term first
        self._order = order
        self._lock = lock

    def __bool__(self) -> bool:
        return bool(self._sets)

    def get(self, target: str, default: float = 0.0) -> float:
        hit, m = False, 0.0
        with self._lock:
            for _, named, w in self._sets:
                if target in named:
                    hit, m = True, m + w
        return m if hit else default

    def best(self, k: int, least: float, skip: Callable[[str], bool]) -> list[tuple[float, str]]:
        """The `k` best (share, note) with share ≥ `least`, leaving out notes `skip` says:
        level by level, where a level is the notes named with exactly one subset of the terms."""
        with self._lock:
            return self._best(k, least, skip)

    def _best(self, k: int, least: float, skip: Callable[[str], bool]) -> list[tuple[float, str]]:
        sets = self._sets
        if len(sets) > 8:  # 255 subsets: visiting every note is quicker
            every: dict[str, float] = {}
            for _, named, w in sets:
                for t in named:
                    every[t] = every.get(t, 0.0) + w
            return heapq.nlargest(k, ((m, t) for t, m in every.items() if m >= least and not skip(t)))
        levels: dict[float, list[int]] = {}
        for mask in range(1, 1 << len(sets)):
            m = 0.0
            for i, (_, _, w) in enumerate(sets):
                if mask >> i & 1:
                    m += w
            if m >= least:
                levels.setdefault(m, []).append(mask)
        out: list[tuple[float, str]] = []
        for m in sorted(levels, reverse=True):
            found: set[str] | KeysView[str] = set()
            for mask in levels[m]:
                ins = [x for i, x in enumerate(sets) if mask >> i & 1]
                rarest = min(ins, key=lambda x: len(x[1]))
                if len(sets) == 1:  # one term: every note it names
                    found = rarest[1].keys()
                    break
                there = rarest[1].keys()
                for _, named, _ in ins:
                    if named is not rarest[1]:
                        there = there & named.keys()  # a view's & walks the smaller side only
                there = there if isinstance(there, set) else set(there)  # a copy: changed below
                for i, (_, named, _) in enumerate(sets):
                    if not mask >> i & 1:  # the smaller side walked: a Counter's difference walks all of it
                        there = {t for t in there if t not in named} if len(there) < len(named) \
                            else there.difference(named)
                found |= there
            # one subset of many notes: in the order kept for its rarest term (walked until k
            # are taken); else sorted here (walking that order to its end for a few notes took
            # 1-2 ms at 100,000 notes)
            order = self._order(rarest[0]) if len(levels[m]) == 1 and len(found) > 64 else None
            walk = (t for t in order if t in found) if order is not None and len(found) * 16 > len(order) \
                else sorted(found, reverse=True)
            out += [(m, t) for t in islice((t for t in walk if not skip(t)), k - len(out))]
            if len(out) >= k:
                break
        return out


class Snapshot(NamedTuple):
    """What a graph holds that is not worked out from its notes alone (see Graph.snapshot)."""

    notes: dict[str, Note]
    out: dict[str, list[Dest]]
    """Each note's links' destinations, in the order of its links."""
    deps: dict[str, tuple[str, ...]]
    """The lookup keys each note's links depend on."""
    anchor: dict[str, tuple[str, ...]]
    """Each note's anchor terms and their targets: (term, target, term, target, ...)."""
    anchor_text: dict[str, dict[str, int]] | None = None
    """term -> target -> the labels of links to it that use the term (worked out from
    `anchor` when None)."""
    back: dict[str, set[str]] | None = None
    """target -> the notes linking to it (worked out from `out` when None)."""


class Graph:
    """Every link of the vault resolved, and the reverse.

    Built whole at start; after each batch `update()` re-resolves only the links that
    the batch can have changed: those of the changed notes, those that pointed at
    them, and those that look up a name, alias, identifier or ID the batch added or
    removed. Queries and updates take a lock, so a reader never sees half a batch.
    """

    def __init__(self, notes: dict[str, Note] | None = None, terms: Callable[[str], list[str]] | None = None,
                 stop: Callable[[], bool] | None = None) -> None:
        """`terms` turns link labels into search terms for anchor text (none kept without it);
        `stop`, when it turns true, abandons the build (raising InterruptedError)."""
        self._lock = threading.RLock()
        self._terms = terms
        self._anchor_text: dict[str, Counter[str]] = defaultdict(Counter)  # term -> target -> labels using it
        self._src_anchor: dict[str, tuple[str, ...]] = {}  # src -> (term, target, term, target, ...)
        self._anchor_order: dict[str, list[str]] = {}  # term -> its targets by path, last first (see anchored_by)
        self.notes: dict[str, Note] = {}
        self._out: dict[str, list[Dest]] = {}  # parallel to note.links
        self._n_links = self._n_broken = 0  # over _out, kept as it changes: `status` asks each time
        self._back: dict[str, set[str]] = defaultdict(set)  # target -> the sources linking to it
        self._plain: dict[str, Dest] = {}  # target -> the one Dest(target) every plain link to it shares
        self._src_deps: dict[str, tuple[str, ...] | memoryview] = {}  # src -> the lookup keys its links depend on
        # (or, loaded, their codes: see dep_codes)
        self._anchor_index: dict[str, Anchors] = {}
        self._by_path: dict[str, str] = {}
        self._by_stem: dict[str, list[str]] = defaultdict(list)
        self._by_alias: dict[str, list[str]] = defaultdict(list)
        self._by_id: dict[str, list[str]] = defaultdict(list)
        self._by_uuid: dict[str, list[str]] = defaultdict(list)
        self._reverse = True
        """Whether backlinks and anchor texts are kept as links resolve (see snapshot_of)."""
        if notes:
            self.update(notes, notes.keys(), (), stop)

    @classmethod
    def snapshot_of(cls, notes: dict[str, Note], terms: Callable[[str], list[str]] | None = None,
                    stop: Callable[[], bool] | None = None) -> Snapshot:
        """`Graph(notes, terms, stop).snapshot()`, built only as far as a snapshot holds:
        each note's destinations, dependencies and anchor terms, never the backlinks and
        anchor texts (a save works them out again from those, graph_file._graph_columns).
        At 100,000 notes those two are 2 million set and counter updates of the build."""
        g = cls(terms=terms)
        g._reverse = False
        with g._lock:
            g.notes = notes
            for n in notes.values():
                g._index(n)
            sources = sorted((posixpath.dirname(p), p) for p in notes)
            if len(sources) >= SPLIT_MIN and hasattr(os, "fork") and threading.active_count() == 1:
                g._resolve_in_two(notes, sources, stop)
            else:
                g._resolve_sources(notes, sources, stop)
        return g.snapshot()

    def _resolve_in_two(self, notes: dict[str, Note], sources: list[tuple[str, str]],
                        stop: Callable[[], bool] | None) -> None:
        """_resolve_sources in two processes: the second half of `sources` in a child forked
        for it, which sends back what it resolved (each source's destinations, lookup key
        codes and anchor terms), while this one resolves the first; done here when the child
        fails or cannot be forked. Only where nothing else runs (a build apart): the child
        runs no thread."""
        half = len(sources) // 2
        r, w = os.pipe()
        try:
            pid = os.fork()
        except OSError:  # no process to be had (memory, a limit): all of it here
            os.close(r)
            os.close(w)
            self._resolve_sources(notes, sources, stop)
            return
        if pid == 0:  # the child: never returns
            code = 1
            try:
                os.close(r)
                parent = os.getppid()
                self._resolve_sources(notes, sources[half:], lambda: os.getppid() != parent)
                with open(w, "wb") as f:
                    f.write(self._parts(sources[half:]))
                code = 0
            finally:
                os._exit(code)
        os.close(w)
        data = b""
        with open(r, "rb") as f:
            try:
                self._resolve_sources(notes, sources[:half], stop)
                data = f.read()
            finally:
                if not data:  # stopped, or the child failed
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
                status = os.waitpid(pid, 0)[1]
        if status != 0:
            self._resolve_sources(notes, sources[half:], stop)
            return
        for src, dests, deps, pairs in _parts_decoder.decode(data):
            self._out[src] = dests
            self._n_links += len(dests)
            self._n_broken += sum(1 for d in dests if d.broken)
            self._src_deps[src] = memoryview(deps).cast("I")
            if pairs:
                self._src_anchor[src] = tuple(pairs)

    def _parts(self, sources: list[tuple[str, str]]) -> bytes:
        """What _resolve_in_two's child sends back of `sources` (see _parts_decoder)."""
        return msgspec.msgpack.encode([(src, self._out[src], self._src_deps[src], self._src_anchor.get(src, ()))
                                       for _, src in sources if src in self._out])

    def snapshot(self) -> Snapshot:
        """The graph as it is now, to save (graph_file.py): shallow copies of the tables the
        rest is worked out from, taken in milliseconds (their values are never changed in
        place, only replaced); backlinks and anchor text are left to the saver to work out."""
        with self._lock:
            return Snapshot(self.notes, _copy(self._out), _copy(self._src_deps), _copy(self._src_anchor))

    @classmethod
    def restore(cls, snap: Snapshot, terms: Callable[[str], list[str]] | None = None, plain: Iterable[Dest] = (),
                counts: tuple[int, int] | None = None, tables: tuple[dict, ...] | None = None) -> "Graph":
        """The graph a snapshot was taken of, without resolving a link. `plain`: destinations
        of the snapshot that links share (see _shared); `counts`: its (links, broken links),
        when known; `tables`: its lookup tables (by path, file name, alias, identifier, ID),
        else worked out from its notes. Tables given as Lazy ones are taken as they are."""
        g = cls(terms=terms)
        g.notes = snap.notes
        if tables is None:
            for n in snap.notes.values():
                g._index(n)
        else:
            g._by_path, g._by_stem, g._by_alias, g._by_id, g._by_uuid = tables
        g._out, g._src_deps, g._src_anchor = snap.out, snap.deps, snap.anchor
        if isinstance(snap.back, Lazy):
            g._back = snap.back
        elif snap.back is not None:
            g._back.update(snap.back)
        else:
            for src, dests in snap.out.items():
                for t in set(map(_TARGET, dests)):
                    if t is not None and t != src:
                        g._back[t].add(src)
        if counts is None:
            counts = (sum(map(len, snap.out.values())), sum(1 for ds in snap.out.values() for d in ds if d.broken))
        g._n_links, g._n_broken = counts
        g._plain.update((d.target, d) for d in plain)
        if terms is not None:
            if isinstance(snap.anchor_text, Lazy):
                g._anchor_text = snap.anchor_text
            elif snap.anchor_text is not None:
                g._anchor_text.update((t, Counter(c)) for t, c in snap.anchor_text.items())
            else:
                for pairs in snap.anchor.values():
                    for t, target in zip(pairs[::2], pairs[1::2]):
                        g._anchor_text[t][target] += 1
        return g

    def _depending(self, keys: set[str]) -> set[str]:
        """The notes whose links look up one of these keys (see syntaxes.LinkSyntax.deps): a scan, not a reverse
        index (that costs a big vault ~100 MB to save milliseconds); a loaded graph's saved
        entries hold the keys' codes (see dep_codes), and are scanned as such."""
        deps = self._src_deps
        codes = {dep_code(k) for k in keys}
        out = {src for src, ds in dict.items(deps)
               if not (codes.isdisjoint(ds) if isinstance(ds, memoryview) else keys.isdisjoint(ds))}
        saved = deps.raw if isinstance(deps, Lazy) else None
        if isinstance(saved, Column):
            out |= saved.holding(codes)
        elif saved:
            out |= {src for src, ds in saved.items() if not codes.isdisjoint(ds)}
        return out

    def update(self, notes: dict[str, Note], changed: Iterable[str], removed: Iterable[str],
               stop: Callable[[], bool] | None = None) -> None:
        """`notes` is the new note table; `changed` were added or modified, `removed` deleted."""
        with self._lock:
            old = self.notes
            changed, removed = set(changed), set(removed)
            touched: set[str] = set()  # lookup keys that gained or lost a note
            redo = set(changed)
            for p in removed:
                if p in old:
                    touched.update(_keys(old[p]))
                    self._unindex(old[p])
                redo.update(self._back.get(p, ()))
                self._plain.pop(p, None)
            for p in changed:
                before, after = old.get(p), notes[p]
                if before is None:
                    touched.update(_keys(after))
                else:
                    touched.update(set(_keys(before)) ^ set(_keys(after)))
                    self._unindex(before)
                    if before.headings != after.headings or before.blocks != after.blocks:
                        redo.update(self._back.get(p, ()))  # links into it may now hit or miss
                self._index(after)
            self.notes = notes
            if touched:
                redo.update(self._depending(touched))
            for src in removed:
                self._drop(src)
            redo -= removed
            self._resolve_sources(notes, sorted((posixpath.dirname(p), p) for p in redo), stop)

    def _resolve_sources(self, notes: dict[str, Note], sources: list[tuple[str, str]],
                         stop: Callable[[], bool] | None = None) -> None:
        """Resolve the links of `sources` ((folder, path), in that order) anew, against the
        lookup tables as they are, under the caller's lock."""
        # Links alike resolve alike within a folder: one cache per folder, sources taken
        # folder by folder, so a full build never holds every link's resolution at once
        # (nor, in dep_cache, every link's text: freed at the end, those strings left
        # ~20 MB of half-empty allocator arenas behind at seed scale).
        cache: dict[tuple, Dest] = {}
        dep_cache: dict[tuple, tuple[str, ...]] = {}
        label_terms: dict[str, tuple[str, ...]] = {}  # a label's anchor terms: labels repeat
        back = self._back if self._reverse else None
        deps_of = _dep_keys if self._reverse else _dep_codes  # a snapshot's are saved as codes
        cache_folder = None
        for n, (folder, src) in enumerate(sources):
            if stop is not None and n % 256 == 0 and stop():
                raise InterruptedError("link graph build abandoned")
            self._drop(src)
            note = notes.get(src)
            if note is None:
                continue
            if folder != cache_folder:
                cache.clear()
                dep_cache.clear()
                cache_folder = folder
            dests, deps = [], set()
            links = links_of(note)
            for link in links:
                kind = link.kind
                if kind in NOT_NOTES:
                    dests.append(NOWHERE)
                    continue
                ck = (kind, link.target, link.anchor, link.label, src if kind in WITHIN_SOURCE else folder)
                d = cache.get(ck)
                if d is None:
                    d = cache[ck] = self._shared(self.resolve(note, link, folder))
                dk = (kind, link.target, link.label)  # what a unit's deps read
                if (ds := dep_cache.get(dk)) is None:
                    ds = dep_cache[dk] = deps_of(link)
                dests.append(d)
                deps.update(ds)
                t = d.target
                if back is not None and t is not None and t != src:
                    back[t].add(src)
            self._out[src] = dests
            self._n_links += len(dests)
            self._n_broken += sum(1 for d in dests if d.broken)
            if self._terms is not None:
                if len(label_terms) > LABEL_CACHE and self._reverse:  # a build apart ends with its process
                    label_terms.clear()
                self._add_anchor_text(src, links, dests, label_terms)
            self._src_deps[src] = tuple(deps) if self._reverse else memoryview(array("I", sorted(deps)))
        # Headings by every form a link names them in: kept for this batch only (a big
        # vault's would hold every heading of every note several times over).
        self._anchor_index.clear()

    def _add_anchor_text(self, src: str, links: list[Link], dests: list[Dest],
                         label_terms: dict[str, tuple[str, ...]]) -> None:
        """What other notes call a note (the labels of links to it) is searchable for it.
        `label_terms`: each label's terms, as far as worked out already."""
        pairs: list[str] = []
        for link, d in zip(links, dests):
            target = d.target
            if link.label and target is not None and target != src and link.kind != "url":
                ts = label_terms.get(link.label)
                if ts is None:
                    ts = label_terms[link.label] = tuple(map(sys.intern, set(self._terms(link.label))))
                for t in ts:
                    pairs += (t, target)
        if pairs:
            self._src_anchor[src] = tuple(pairs)
            if self._reverse:
                self._count_anchor_text(pairs)

    def _count_anchor_text(self, pairs: list[str]) -> None:
        """Count each (term, target) of `pairs` in the anchor text; a term that names a new
        target is sorted again when next asked for (see anchored_by)."""
        text, order = self._anchor_text, self._anchor_order
        for t, target in zip(pairs[::2], pairs[1::2]):
            c = text[t]
            if order and target not in c:
                order.pop(t, None)
            c[target] += 1

    def anchor_match(self, terms: list[str]) -> AnchorMatch:
        """The notes link labels name with these terms, each with the idf-weighted share of
        the terms its labels cover (0..1)."""
        with self._lock:
            n = max(1, len(self.notes))
            weights = {t: math.log(1 + n / (1 + len(self._anchor_text.get(t, ())))) for t in set(terms)}
            total = sum(weights.values()) or 1.0
            # commonest first: the order the shares are summed in
            ranked = sorted(((len(self._anchor_text.get(t, ())), t, w / total) for t, w in weights.items()),
                            key=lambda x: -x[0])
            return AnchorMatch([(t, self._anchor_text[t], w) for size, t, w in ranked if size], self.anchored_by,
                               self._lock)

    def anchored_by(self, term: str) -> list[str]:
        """The notes link labels name with `term`, by path, last first: what anchor_match
        ranks them by when the query has one term (sorted once until they change)."""
        with self._lock:
            out = self._anchor_order.get(term)
            if out is None:
                out = self._anchor_order[term] = sorted(self._anchor_text.get(term, ()), reverse=True)
            return out

    def _drop(self, src: str) -> None:
        pairs = self._src_anchor.pop(src, ())
        for t, target in zip(pairs[::2], pairs[1::2]):
            c = self._anchor_text[t]
            c[target] -= 1
            if c[target] <= 0:
                del c[target]
                self._anchor_order.pop(t, None)
                if not c:
                    del self._anchor_text[t]
        self._src_deps.pop(src, None)
        dests = self._out.pop(src, ())
        self._n_links -= len(dests)
        self._n_broken -= sum(1 for d in dests if d.broken)
        for d in dests:
            if d.target is not None:
                self._back.get(d.target, set()).discard(src)

    def _index(self, n: Note) -> None:
        self._by_path[key(n.path)] = n.path
        self._by_stem[key(stem_of(n.path))].append(n.path)
        for a in n.aliases:
            self._by_alias[key(a)].append(n.path)
        if n.id:
            self._by_id[n.id].append(n.path)
        if n.id_keyword:
            self._by_id[KEYWORD_ID + n.id_keyword].append(n.path)
        for u in n.uuids:
            self._by_uuid[u].append(n.path)

    def _unindex(self, n: Note) -> None:
        self._by_path.pop(key(n.path), None)
        for table, k in [(self._by_stem, key(stem_of(n.path))), *((self._by_alias, key(a)) for a in n.aliases),
                         *((self._by_id, i) for i in _id_keys(n)), *((self._by_uuid, u) for u in n.uuids)]:
            lst = table.get(k)
            if lst and n.path in lst:
                lst.remove(n.path)
                if not lst:
                    del table[k]

    # -- what if ----------------------------------------------------------------

    def what_if(self, changed: dict[str, Note], removed: Iterable[str] = ()) -> "Graph":
        """A resolver over the vault as it would be with the `changed` notes written (new
        or replaced) and the `removed` ones gone: the lookup tables copied (shallowly; the
        lists of the names those notes answer to, deeply) and updated, nothing resolved
        (call `resolve`). The splitter and rename check a plan against it before writing a byte."""
        with self._lock:
            removed = [p for p in removed if p in self.notes and p not in changed]
            g = Graph()
            g.notes = {**self.notes, **changed}
            for p in removed:
                del g.notes[p]
            g._by_path = _copy(self._by_path)
            tables = ("_by_stem", "_by_alias", "_by_id", "_by_uuid")
            for name in tables:
                table = getattr(self, name)
                setattr(g, name, table.copy() if isinstance(table, Lazy) else defaultdict(list, table))
            for n in [*changed.values(), *(self.notes[p] for p in [*changed, *removed] if p in self.notes)]:
                for name, ks in zip(tables, ([key(stem_of(n.path))], map(key, n.aliases), _id_keys(n), n.uuids)):
                    table = getattr(g, name)
                    for k in ks:
                        if k in table:
                            table[k] = list(table[k])  # this graph's own, before it changes
            for p, n in changed.items():
                if p in self.notes:
                    g._unindex(self.notes[p])
                g._index(n)
            for p in removed:
                g._unindex(self.notes[p])
        return g

    def with_id(self, ident: str) -> list[str]:
        """The notes with this Denote identifier (more than one: a `denote:` link to it is ambiguous)."""
        with self._lock:
            return list(self._by_id.get(ident, ()))

    def affected(self, target: str, changed: dict[str, Note], removed: Iterable[str] = ()) -> list[tuple[str, Resolved]]:
        """The links, outside the `changed` and `removed` notes, whose destination writing
        them (and removing those) may change: those into `target`, and those that look up a
        name, alias, identifier or ID that the changed notes gain or lose, or the removed ones held."""
        keys: set[str] = set()
        for p, n in changed.items():
            old = self.notes.get(p)
            keys.update(set(_keys(n)) ^ set(_keys(old)) if old is not None else _keys(n))
        removed = set(removed)
        keys.update(k for p in removed if p in self.notes for k in _keys(self.notes[p]))
        with self._lock:
            looking = self._depending(keys)
            srcs = looking | self._back.get(target, set())
        out = []
        deps: dict[tuple, bool] = {}  # (kind, target, label) -> whether it looks up one of `keys`
        for src in sorted(srcs - changed.keys() - removed):
            for r in self.links(src):
                link = r.link
                if r.target == target:
                    out.append((src, r))
                elif src in looking and link.kind not in NOT_NOTES:
                    k = (link.kind, link.target, link.label)
                    if k not in deps:
                        deps[k] = not keys.isdisjoint(BY_KIND[link.kind].deps(link))
                    if deps[k]:
                        out.append((src, r))
        return out

    # -- resolution: the Lookup the syntaxes resolve against (parse/syntaxes.py) ----------

    def resolve(self, src: Note, link: Link, folder: str | None = None) -> Dest:
        """Where `link`, written in `src`, leads: as its syntax's unit says."""
        return BY_KIND[link.kind].resolve(link, src, posixpath.dirname(src.path) if folder is None else folder, self)

    def lookup(self, src: Note, link: Link) -> Dest:
        """Where `link` leads, written in `src`: a note of the vault, or a note at a path it
        does not hold (an editor's buffer not saved yet), whose own headings are then unknown."""
        with self._lock:
            if src.path not in self.notes and link.kind in WITHIN_SOURCE:
                return Dest(broken=f"{NO_HEADING} ({src.path} is not indexed)")
            return self.resolve(self.notes.get(src.path, src), link)

    def note(self, path: str) -> Note:
        """The note at this vault path."""
        return self.notes[path]

    def ids(self, ident: str) -> list[str]:
        """The notes with this Denote identifier (read under the caller's lock)."""
        return self._by_id.get(ident, [])

    def id_keyword(self, ident: str) -> list[str]:
        """The notes whose disagreeing `identifier` keyword is `ident`."""
        return self._by_id.get(KEYWORD_ID + ident, [])

    def uuids(self, uuid: str) -> list[str]:
        """The notes holding this :ID: or front-matter id."""
        return self._by_uuid.get(uuid, [])

    def _pick(self, folder: str, paths: list[str], strict: bool = False) -> Dest:
        """Several notes share a name: the one in the note's own folder, else the nearest
        (most leading folders in common), then the shallowest, then the shortest path;
        a tie after all that is ambiguous. `strict` (a name a person typed, from no
        folder): any two are ambiguous."""
        if len(paths) <= 1:
            return one_of(paths, NO_NOTE)
        if strict:
            return Dest(broken=AMBIGUOUS, candidates=sorted(paths))
        here = [p for p in paths if posixpath.dirname(p) == folder]
        if len(here) == 1:
            return Dest(target=here[0])
        mine = folder.split("/") if folder else []

        def shared(p: str) -> int:
            n = 0
            for a, b in zip(mine, p.split("/")[:-1]):
                if a != b:
                    break
                n += 1
            return n

        best = max(map(shared, paths))
        near = [p for p in paths if shared(p) == best]
        depth = min(p.count("/") for p in near)
        top = [p for p in near if p.count("/") == depth]
        shortest = min(len(p) for p in top)
        top = [p for p in top if len(p) == shortest]  # Obsidian: the shortest path
        if len(top) == 1:
            return Dest(target=top[0])
        return Dest(broken=AMBIGUOUS, candidates=sorted(paths))

    def exact(self, path: str) -> str | None:
        """The note at this vault path, trying the note extensions when it has none."""
        k = key(path)
        if k in self._by_path:
            return self._by_path[k]
        if not k.endswith(NOTE_EXTS):
            for ext in NOTE_EXTS:
                if k + ext in self._by_path:
                    return self._by_path[k + ext]
        return None

    def by_name(self, folder: str, target: str, strict: bool = False) -> Dest:
        """The note a name leads to from `folder`, as Obsidian finds it (see the module's
        docstring); `strict`: a name typed, from no folder, never guessed."""
        t = target.replace("\\", "/").strip()
        if "/" in t.strip("/"):
            t = t.lstrip("/")
            for cand in (posixpath.normpath(posixpath.join(folder, t)), posixpath.normpath(t)):
                found = self.exact(cand)
                if found:
                    return Dest(target=found)
            kt = key(t)
            suffixes = (kt,) if kt.endswith(NOTE_EXTS) else tuple(kt + e for e in NOTE_EXTS)
            paths = [p for p in self._by_stem.get(key(stem_of(t)), []) if key(p).endswith(tuple("/" + s for s in suffixes))]
            if paths:
                return self._pick(folder, paths, strict)
        else:
            t = t.strip("/")
            name = stem_of(t)
            paths = self._by_stem.get(key(name), [])
            if t.lower().endswith(NOTE_EXTS):
                paths = [p for p in paths if key(p.rsplit("/", 1)[-1]) == key(t)]
            if paths:
                return self._pick(folder, paths, strict)
            aliases = self._by_alias.get(key(t), [])
            if aliases:
                return self._pick(folder, sorted(set(aliases)), strict)
        if has_attachment_ext(t):
            return NOWHERE  # an attachment, not a note
        return Dest(broken=NO_NOTE)

    def _shared(self, d: Dest) -> Dest:
        """A plain link's destination, one object per target: a big vault has half a million links."""
        if d.target is None or d.line is not None or d.broken is not None:
            return d
        return self._plain.setdefault(d.target, d)

    def anchors(self, note: Note) -> Anchors:
        """The note's headings and blocks by every form a link names them in (kept for one batch)."""
        a = self._anchor_index.get(note.path)
        if a is None:
            a = self._anchor_index[note.path] = Anchors(note)
        return a

    # -- queries ----------------------------------------------------------------

    def links(self, path: str) -> list[Resolved]:
        """Every link written in `path`, with where it leads."""
        with self._lock:
            note = self.notes.get(path)
            return [Resolved(l, d) for l, d in zip(links_of(note), self._out.get(path, ()))] if note else []

    def edges(self, path: str) -> set[str]:
        """Notes `path` links to (resolved, not itself)."""
        return {d.target for d in self._out.get(path, ()) if d.target and d.target != path}

    @property
    def back(self) -> dict[str, set[str]]:
        """target -> the notes linking to it."""
        with self._lock:
            return {t: set(srcs) for t, srcs in self._back.items() if srcs}

    def backlinks(self, path: str, anchored: bool = False) -> list[tuple[str, Resolved]]:
        """(source, link) of every link to `path`; `anchored`: only those to a place in it (a
        heading, a block), whose sources alone are then read."""
        def pick(dests: list[Dest]) -> list[tuple[int, Dest]]:
            # list.index finds the links to `path` at C speed: a source at seed scale has 500 links
            targets, hits, i = list(map(_TARGET, dests)), [], -1
            while True:
                try:
                    i = targets.index(path, i + 1)
                except ValueError:
                    return hits
                if not anchored or dests[i].line is not None:
                    hits.append((i, dests[i]))

        with self._lock:
            items = self._resolved(self._back.get(path, ()), pick)
        return sorted(items, key=lambda t: (t[0], t[1].link.line, t[1].link.col))

    def sources(self, path: str) -> set[str]:
        with self._lock:
            return set(self._back.get(path, ()))

    def broken(self) -> list[tuple[str, Resolved]]:
        with self._lock:
            if not self._n_broken:  # the common case: no pass over every link
                return []
            return self._resolved(sorted(self._out), lambda dests: [(i, d) for i, d in enumerate(dests) if d.broken])

    def _resolved(self, sources: Iterable[str], pick: Callable[[list[Dest]], list[tuple[int, Dest]]]) -> list[tuple[str, Resolved]]:
        """(source, link and destination) of the links of `sources` that `pick` picks from a
        source's destinations (as (index, destination)); its links are decoded only then."""
        out = []
        for src in sources:
            hits = pick(self._out[src])
            if hits:
                links = links_at(self.notes[src], [i for i, _ in hits])
                out += [(src, Resolved(link, d)) for link, (_, d) in zip(links, hits)]
        return out

    def count(self) -> tuple[int, int]:
        """(links, broken links)."""
        with self._lock:
            return self._n_links, self._n_broken

    def orphans(self) -> list[str]:
        with self._lock:
            return sorted(p for p in self.notes if not self._back.get(p) and not self.edges(p))

    def neighbours(self, path: str, depth: int) -> tuple[list[str], list[tuple[str, str]]]:
        """Notes within `depth` links of `path` in either direction, and the edges among them."""
        with self._lock:
            seen = {path}
            frontier = {path}
            for _ in range(depth):
                nxt = set()
                for p in frontier:
                    nxt |= self.edges(p) | self.sources(p)
                frontier = nxt - seen
                seen |= frontier
            edges = sorted({(s, t) for s in seen for t in self.edges(s) if t in seen})
        return sorted(seen), edges

    def find(self, name: str, vault_root: str | None = None) -> list[str]:
        """Notes a user may mean by `name`: a path (vault-relative or absolute), a Denote
        identifier, an Org ID, a wikilink-style name or alias, else a title."""
        n = name.strip()
        if vault_root and os.path.isabs(n):
            try:
                n = os.path.relpath(os.path.realpath(n), os.path.realpath(vault_root)).replace(os.sep, "/")
            except ValueError:
                return []
            if n.startswith("../"):
                return []
        if n.startswith("[[") and n.endswith("]]"):
            n = n[2:-2].split("|")[0].split("#")[0]
        for prefix in ("denote:", "id:"):
            if n.startswith(prefix):
                n = n[len(prefix):]
        found = self.exact(n)
        if found:
            return [found]
        for table in (self._by_id, self._by_uuid):
            if n in table:
                return sorted(table[n])
        r = self.by_name("", n, strict=True)  # typed, not linked from a folder: never guessed
        if r.target:
            return [r.target]
        if r.candidates:
            return r.candidates
        want = key(n)  # last, a title as shown (a Denote note's file name is its identifier)
        return sorted(p for p, note in self.notes.items() if note.title and key(note.title) == want)


def dep_code(k: str) -> int:
    """A lookup key's code, as saved (its CRC32): two keys may share one, which only makes an
    update re-resolve a few links more than it had to."""
    return zlib.crc32(k.encode())


def _dep_keys(link: Link) -> tuple[str, ...]:
    """The lookup keys `link` depends on (see syntaxes.LinkSyntax.deps), each string once
    in memory (interned): notes share them."""
    return tuple(map(sys.intern, BY_KIND[link.kind].deps(link)))


def _dep_codes(link: Link) -> tuple[int, ...]:
    """The codes of the lookup keys `link` depends on (see dep_code), as a save holds them."""
    return tuple(zlib.crc32(k.encode()) for k in BY_KIND[link.kind].deps(link))


def dep_codes(deps: tuple[str, ...] | memoryview) -> set[int]:
    """The codes of a note's lookup keys, from the keys or as saved (uint32s)."""
    return set(deps) if isinstance(deps, memoryview) else {dep_code(k) for k in deps}


def _keys(n: Note) -> list[str]:
    """The lookup keys a note answers to (see syntaxes.LinkSyntax.deps): a `denote:` link by its identifier
    keyword too, when that disagrees with its file name (the link's reason names the note)."""
    ks = [BY_NAME + key(stem_of(n.path))] + [BY_ALIAS + key(a) for a in n.aliases] + [BY_UUID + u for u in n.uuids]
    return ks + [BY_IDENT + i for i in (n.id, n.id_keyword) if i]


KEYWORD_ID = "keyword:"
"""In the identifier table, the prefix of a Denote note's `identifier` keyword that disagrees
with its file name: no `denote:` link leads there (Denote follows the file name), but the
broken link says which note's keyword it names."""


def _id_keys(n: Note) -> list[str]:
    """A note's keys in the identifier table: its identifier, and its disagreeing keyword."""
    return [k for k in (n.id, KEYWORD_ID + n.id_keyword if n.id_keyword else None) if k]
