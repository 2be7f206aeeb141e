"""Vault: the facade every caller uses. It owns the index and the in-memory note table,
turns dirty paths into one index commit, and answers queries."""

from __future__ import annotations

import functools
import itertools
import logging
import os
import stat
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

import msgspec

from .. import __version__
from . import context as ctx
from ..split import splitter as split
from ..config import Config
from ..errors import AmbiguousNote, NoteNotFound, QueryError, StillIndexing, VaultError
from ..ingest.filters import NoteFilter
from ..store.graph import Graph, Resolved
from ..store.index import NoteIndex, note_epoch, path_key
from ..note import Note, compact, headings_of
from ..parse import decode
from .ranking import Plan, Vocabulary, blend, plan, terms
from ..parse.markdown import split_front_matter
from ..paths import cut, open_note, read_head, read_lines
from .snippets import READ_FIRST, Matcher, best_lines, tagged_lines
from ..store.state import StateStore, as_written, changed_ns
from .tiers import hot, is_cold
from ..ingest.workers import parse_many, workers_for

logger = logging.getLogger("vaultd.vault")

LOG_MAX = 100_000
"""Change records kept for `changes --since`."""

Progress = Callable[[int, int], None]
"""progress(done, total): injected by the caller; the library never prints."""


class Stopped(Exception):
    """A batch given up because the daemon is stopping."""


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        import ctypes

        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None


def _release_freed_memory() -> None:
    """Give freed heap back to the system: glibc keeps it otherwise, in one arena per thread
    (the graph build frees tens of MB; each commit, Tantivy's threads ~15 MB). About 1 ms.
    Elsewhere than glibc, nothing to do."""
    if trim := _malloc_trim():
        trim(0)


class Vault:
    def __init__(self, config: Config):
        self.config = config
        self.root = Path(config.vault)
        self._root = str(self.root)
        self.state_dir = Path(config.state_dir)
        _make_private(self.state_dir)
        self.accept = NoteFilter(config.watch.extensions, config.watch.ignore_dirs)
        self.index = NoteIndex(self.state_dir / "index", config.index.heap_mb)
        self.notes: dict[str, Note] = self.index.load_notes()
        """Every indexed note's metadata (no body). Replaced, never mutated, per batch."""
        self._by_key = {path_key(p): n for p, n in self.notes.items()}
        """The same notes by their index key; replaced with `notes`."""
        self.graph: Graph | None = None
        """Built after the first reconcile (seconds on a big vault; search does not wait for it)."""
        self._graph_ready = threading.Event()
        self._sized: tuple[dict, int] = ({}, 0)  # (self.notes, _text_bytes of it)
        self._vocab: tuple[dict, Vocabulary | None, float] = ({}, None, 0.0)  # (of these notes, titles' words, when)
        self.generation = 0
        """Grows by one with every commit, and by one at each start (from the state file)."""
        self.parsed = 0
        """Files read and parsed since start (restarts re-parse only what changed)."""
        self.in_flight = 0
        """Paths of the batch being applied now (part of `pending`)."""
        self.state = StateStore(self.state_dir / "state.json")
        self._apply_lock = threading.Lock()
        self._split_lock = threading.RLock()  # one write into the vault at a time (a split, an undo)
        self.journal = split.Journal(self.root, older=(self.state_dir / "split",))
        self._writer = split.WriterLock(self.root)
        self._taken = 0  # the writer lock's acquisitions seen (see _may_write)
        self._split_announced = False
        self._split_skip: dict[str, tuple[int, str]] = {}
        """Notes auto-split could not split, with the mtime it saw: not retried until they change."""
        self._kept_whole: dict[str, str] = {}
        """Notes the user wants whole (a split undone, a stale save), with the op: auto-split leaves them whole."""
        self._done: dict[str, str] = {}
        """Notes split now, with the op: their hubs are watched for a stale editor buffer saved over them."""
        if not self._may_write():  # the writer reads the journal as it takes the lock; the others here
            self._read_journal()
            holder = self._writer.holder()
            logger.warning("another vaultd%s writes into %s: this one indexes and answers, and splits nothing while "
                           "that one runs", f" (pid {holder})" if holder else "", self.root)
        self._stale: set[str] = set()
        """Hubs changed since their split: checked, once quiet, for the parts' text saved back."""
        self.generation = self.state.state.generation + 1
        self._log: list[tuple[int, str, str, str | None]] = []
        """(generation, added|changed|deleted|moved, path, old path): what each commit did."""
        self._log_start = self.generation
        self.started = time.time()
        self.reconciled = False
        self.first_index = not self.notes
        """The index held no note at start (a new vault, a rebuild): until the first reconcile
        is done, every answer says it is still being built (see `indexing`)."""
        self.progress: tuple[int, int | None] = (0, None)
        """(files read, files to read) of the batch being applied; None while the vault is walked."""
        self.stopping = threading.Event()
        """Set on shutdown: a batch in progress stops, and rolls back (the next start redoes it)."""

    def close(self) -> None:
        self.state.flush()
        self.index.close()
        self._writer.release()

    def _read_journal(self) -> None:
        self._kept_whole = split.kept_whole(self.journal)
        self._done = split.done_splits(self.journal)

    def _may_write(self) -> bool:
        """Whether this vaultd may write into the vault: it holds the vault's writer lock.
        Each time it takes it (at start, or when the vaultd that held it stopped), it first
        rolls back what a crash left half done and reads the journal anew: the other one
        may have split or undone since."""
        with self._split_lock:
            if not self._writer.acquire():
                return False
            if self._taken != self._writer.taken:
                self._taken = self._writer.taken
                for rel in split.recover(self.root, self.journal):  # a crash mid-split: back to before
                    logger.warning("restored %s from the split journal", rel)
                self._read_journal()
            return True

    def _writing(self) -> None:
        """Raise SplitError unless this vaultd may write into the vault (see _may_write)."""
        if not self._may_write():
            holder = self._writer.holder()
            raise split.SplitError(f"another vaultd{f' (pid {holder})' if holder else ''} writes into this vault: "
                                   "only it splits and undoes; this one indexes and answers (nothing was changed)")

    # -- change -----------------------------------------------------------------

    def reconcile(self, progress: Progress | None = None, graph: bool = True) -> tuple[int, int]:
        """Bring the index in line with the vault by a stat scan, then build the link graph
        if there is none yet (unless `graph` is False). Returns (upserted, deleted)."""
        self.progress = (0, None)
        on_disk = dict(self.accept.walk(self.root))
        if not self.root.is_dir():  # deleted or moved away, before or during the walk: not every note deleted
            raise VaultError(f"the vault folder {self.root} is missing: the index is kept as it was")
        changed = [
            rel
            for rel, st in on_disk.items()
            if (n := self.notes.get(rel)) is None or not _same_stat(n, st)
        ]
        gone = [rel for rel in self.notes if rel not in on_disk]
        logger.info("reconcile: %d notes on disk, %d to parse, %d to delete", len(on_disk), len(changed), len(gone))
        result = self.apply(changed + gone, progress=progress)
        self.reconciled = True
        if graph and self.graph is None and not self.stopping.is_set():
            with self._apply_lock:
                t = time.perf_counter()
                try:
                    self.graph = Graph(self.notes, terms, stop=self.stopping.is_set)
                except InterruptedError:
                    raise Stopped("before the link graph was built") from None
                _release_freed_memory()
                self._graph_ready.set()
                logger.info("link graph: %d links resolved in %.2f s", self.graph.count()[0], time.perf_counter() - t)
        return result

    def apply(self, paths: Iterable[str], progress: Progress | None = None, reread: bool = False) -> tuple[int, int]:
        """Re-read every dirty path (a file, or a folder when it ends in '/') and commit the
        result as one batch. Returns (upserted, deleted). `reread`: the files named were
        reported changed (by the watcher), so they are read even when their size and mtime
        are as indexed (coarse timestamps, two saves in one tick), and their hash decides."""
        paths = list(dict.fromkeys(paths))
        with self._apply_lock:
            self.in_flight = len(paths)
            try:
                return self._apply(paths, progress, reread)
            finally:
                self.in_flight = 0

    def _apply(self, paths: list[str], progress: Progress | None, reread: bool = False) -> tuple[int, int]:
        files: dict[str, os.stat_result | None] = {}
        for rel in paths:
            if rel.endswith("/"):
                folder = rel.rstrip("/")
                prefix = folder + "/"
                files.update({p: None for p in self.notes if p.startswith(prefix)})
                if os.path.isdir(self.root / folder) and not os.path.islink(self.root / folder):
                    files.update(self.accept.walk(self.root, folder))
            elif rel not in files:
                files[rel] = None
        upserts: list[Note] = []  # metadata only: bodies go straight to the index
        deletes: list[str] = []
        to_parse: list[tuple[str, int, int, int]] = []
        reported = {p for p in paths if not p.endswith("/")} if reread else set()
        for rel, st in files.items():
            st = self._stat(rel, st, rel in reported)
            if st is None:
                if rel in self.notes:
                    deletes.append(rel)
            elif st is not False:
                to_parse.append((rel, st.st_mtime_ns, st.st_size, st.st_ctime_ns))
        parsed = parse_many(str(self.root), to_parse, self.config.index.max_file_mb << 20,
                            workers_for(self.config.index.workers))
        self.progress = (len(files) - len(to_parse), len(files))
        with self.index.batch() as batch:
            for rel in deletes:
                batch.delete(rel)
            for done, (rel, note, doc) in enumerate(parsed, len(files) - len(to_parse) + 1):
                if self.stopping.is_set():
                    raise Stopped(f"after {done - 1} of {len(files)} files; nothing of this batch was committed")
                self.progress = (done, len(files))
                if progress:
                    progress(done, len(files))
                if note is None:
                    if rel in self.notes:
                        deletes.append(rel)
                        batch.delete(rel)
                    continue
                self.parsed += 1
                old = self.notes.get(rel)
                if old is not None and (old.hash, old.mtime_ns, old.size, old.ctime_ns) == \
                        (note.hash, note.mtime_ns, note.size, note.ctime_ns):
                    continue  # read again, and the same bytes (a new ctime alone is kept, not to read it again)
                for problem in note.problems:
                    logger.warning("%s: %s", rel, problem)
                batch.add(note, doc, new=rel not in self.notes)
                upserts.append(compact(note))
            for rel in self._moved_away(upserts, set(deletes)):
                deletes.append(rel)
                batch.delete(rel)
        if not upserts and not deletes:
            return 0, 0
        old_notes = self.notes
        notes = dict(old_notes)
        gone = {rel: notes.pop(rel) for rel in deletes if rel in notes}
        by_key = dict(self._by_key)
        for rel in gone:
            by_key.pop(path_key(rel), None)
        for note in upserts:
            notes[note.path] = note
            by_key[path_key(note.path)] = note
        self.notes, self._by_key = notes, by_key
        if self.graph is not None:
            self.graph.update(notes, changed=[n.path for n in upserts], removed=gone)
        self.generation += 1
        _release_freed_memory()
        self._record(self.generation, old_notes, upserts, gone)
        self._watch_growth(old_notes, upserts, gone)
        logger.info("commit %d: %d upserted, %d deleted", self.generation, len(upserts), len(deletes))
        return len(upserts), len(deletes)

    def _record(self, g: int, old: dict[str, Note], upserts: list[Note], gone: dict[str, Note]) -> None:
        moves = _moves(gone, upserts)
        log = self._log
        for o, n in moves.items():
            logger.info("moved: %s -> %s", o, n)
            self.state.moved(o, n)
            log.append((g, "moved", n, o))
        arrived = set(moves.values())
        log += [(g, "changed" if n.path in old else "added", n.path, None) for n in upserts if n.path not in arrived]
        log += [(g, "deleted", p, None) for p in gone if p not in moves]
        if len(log) > LOG_MAX:
            del log[: len(log) - LOG_MAX]
            self._log_start = log[0][0] - 1
        self.state.set_generation(g)

    def _watch_growth(self, old: dict[str, Note], upserts: list[Note], gone: dict[str, Note]) -> None:
        """Note which notes grew past the split threshold (auto mode splits those), which
        hubs the user saved over, and which files are no longer as vaultd wrote them."""
        threshold = self.config.split.threshold
        st = self.state
        for n in upserts:
            p = n.path
            if as_written(st.state, p, n.mtime_ns, n.size):
                continue  # vaultd's own write
            if p in st.state.written:  # it was vaultd's; the user's since
                st.wrote(p, None)
            if p in self._done:
                self._stale.add(p)
            o = old.get(p)
            if n.size <= threshold:
                st.grew(p, None)
            elif o is not None and o.size <= threshold and p not in st.state.grown:
                st.grew(p, o.size)
        for p in gone:
            st.grew(p, None)
            st.wrote(p, None)

    def changes(self, since: int) -> dict:
        """What happened to notes after generation `since`: added, changed, deleted, moved.
        `reset` is true when `since` is older than this daemon remembers (a restart, or
        more than LOG_MAX changes ago), or newer than it has reached (a generation of
        another state folder): then every note counts as changed."""
        if since < self._log_start or since > self.generation:
            return {"generation": self.generation, "since": since, "reset": True, "added": [],
                    "changed": sorted(self.notes), "deleted": [], "moved": []}
        status: dict[str, str] = {}
        origin: dict[str, str] = {}
        for g, kind, path, old in self._log:
            if g <= since:
                continue
            if kind == "moved":
                prev = status.pop(old, None)
                if prev == "added":
                    status[path] = "added"
                else:
                    status[path] = "moved"
                    origin[path] = origin.pop(old, old)
            elif kind == "deleted":
                prev = status.pop(path, None)
                if prev != "added":
                    status[origin.pop(path, path)] = "deleted"
            elif kind == "added" and status.get(path) == "deleted":
                status[path] = "changed"
            elif not (kind == "changed" and status.get(path) in ("added", "moved")):
                status[path] = kind
        by = {k: sorted(p for p, s in status.items() if s == k) for k in ("added", "changed", "deleted")}
        return {"generation": self.generation, "since": since, "reset": False, **by,
                "moved": sorted([origin[p], p] for p, s in status.items() if s == "moved")}

    def _moved_away(self, upserts: list[Note], deleting: set[str]) -> list[str]:
        """Old paths of notes that reappear in this batch under a new path (same Denote
        identifier or same bytes) and are gone from disk. watchdog can report the two ends
        of a move half a second apart; this keeps a move in one commit."""
        new = [n for n in upserts if n.path not in self.notes]
        if not new:
            return []
        by_id: dict[str, list[str]] = {}
        by_hash: dict[str, list[str]] = {}
        for p, n in self.notes.items():
            if n.id:
                by_id.setdefault(n.id, []).append(p)
            by_hash.setdefault(n.hash, []).append(p)
        out = []
        for n in new:
            for old in by_id.get(n.id, []) + by_hash.get(n.hash, []) if n.id else by_hash.get(n.hash, []):
                if old not in deleting and old != n.path and not os.path.lexists(self.root / old):
                    deleting.add(old)
                    out.append(old)
        return out

    def _stat(self, rel: str, st: os.stat_result | None, reread: bool = False) -> os.stat_result | None | bool:
        """`rel`'s stat when it needs parsing; None when it is gone (or not a note); False when
        unchanged by size and mtime (never with `reread`)."""
        try:
            st = st or os.lstat(self.root / rel)
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode) or not self.accept(rel):
            return None
        old = self.notes.get(rel)
        if not reread and old is not None and _same_stat(old, st):
            logger.debug("unchanged: %s", rel)
            return False
        return st

    # -- query ------------------------------------------------------------------

    def _vocabulary(self) -> Vocabulary:
        """The words of the notes' titles, aliases and tags, to correct typos into: built on
        the first search that needs it, and again when the notes changed, at most once a
        minute (a second at 100,000 notes; a word it lacks meanwhile is only not corrected)."""
        notes, (built, vocab, at) = self.notes, self._vocab
        if vocab is None or (built is not notes and time.monotonic() - at > 60):
            vocab = Vocabulary(t for n in notes.values() for t in (n.title, *n.aliases, *n.tags))
            self._vocab = (notes, vocab, time.monotonic())
        return vocab

    def _text_bytes(self) -> int:
        """The size of every note indexed, summed once per version of the table."""
        notes = self.notes  # replaced, never changed in place
        if self._sized[0] is not notes:
            self._sized = (notes, sum(n.size for n in notes.values()))
        return self._sized[1]

    def rank(self, q: str, limit: int, scope: str = "auto") -> tuple[int, list[tuple[float, Note]], Plan, bool]:
        """The best `limit` notes for `q`: (total matches, [(score, note)], the plan, whether
        COLD notes were searched). scope "auto" leaves COLD out unless WARM finds fewer than
        tiers.min_results; "warm" always leaves it out; "all" searches everything."""
        cfg = self.config.search
        p = plan(self.index.schema, self.index.searcher(), q, cfg, self._text_bytes(), self._vocabulary)
        if p.query is None:
            return 0, [], p, False
        total, found, shares = self.index.search(p.query, max(limit, cfg.candidates), self._by_key, p.units)
        now = time.time()
        tiers = self.config.tiers
        graph = self.graph
        anchors = graph.anchor_match(p.terms) if graph is not None and p.terms else {}
        if anchors and not p.parsed.constrained:
            # Notes the words do not reach but links to them name that way: found by anchor text alone
            top = max((score for score, _ in found), default=1.0)
            seen = {n.path for _, n in found}
            notes = self.notes
            extra = anchors.best(max(limit, 10), 0.5, lambda t: t in seen or t not in notes)
            found += [(top * 0.5 * m, notes[t]) for m, t in extra]
        ranked = sorted(((blend(score, note_epoch(n), is_cold(n.path, tiers), cfg, now, anchors.get(n.path, 0.0),
                                shares.get(n.path) if shares else None), n)
                         for score, n in found), key=lambda t: (-t[0], t[1].path))
        with_cold = scope == "all"
        if not with_cold:
            warm = [t for t in ranked if not is_cold(t[1].path, tiers)]
            with_cold = scope == "auto" and len(warm) < tiers.min_results and len(warm) < len(ranked)
            ranked = ranked if with_cold else warm
        return total, ranked[:limit], p, with_cold

    def search(self, q: str, limit: int | None = None, scope: str = "auto", snippets: bool = True) -> dict:
        """Ranked hits for `q`; each with its best lines unless `snippets` is False (null)."""
        t0 = time.perf_counter()
        total, ranked, p, with_cold = self.rank(q, limit or self.config.search.limit, scope)
        matcher = Matcher(p.words, p.stems) if snippets else None
        tags = set(p.parsed.tags)
        hits = [
            {
                "path": note.path,
                "id": note.id,
                "title": note.title,
                "tags": note.tags,
                "score": round(score, 4),
                "snippets": msgspec.to_builtins(self._snippets(note, matcher, tags)) if matcher is not None else None,
            }
            for score, note in ranked
        ]
        took = round((time.perf_counter() - t0) * 1000, 3)
        return {"query": q, "vault": str(self.root), "total": total, "took_ms": took, "cold": with_cold,
                "generation": self.generation, "hits": hits}

    def _snippets(self, note: Note, matcher: Matcher, tags: set[str] = frozenset()) -> list:
        """The best lines of `note` for the query; for a `tag:` a heading of it carries (Org
        heading tags), that heading's line and the best lines under it (tagged_lines)."""
        headings = headings_of(note)
        marked = bool(tags) and not tags.isdisjoint(note.tags) and any(not tags.isdisjoint(h.tags) for h in headings)
        if not matcher and not marked:
            return []
        try:  # a bare descriptor: a file object costs as much again as the read
            fd = open_note(self._root, note.path)
        except OSError:
            return []
        try:  # read(n) allocates n bytes up front: ask for the file's size, capped; a big file's head first
            cap, size = self.config.index.max_file_mb << 20, os.fstat(fd).st_size
            over = size > cap
            size = cap if over else size + 1
            data = os.read(fd, min(size, READ_FIRST))

            def rest() -> bytes:  # of a file over the cap, only the lines indexed (see paths.cut)
                more = os.read(fd, size - len(data))
                return cut(data + more, cap)[len(data) :] if over else more

            fm = note.path.endswith(".md") and data.removeprefix(b"\xef\xbb\xbf").startswith(b"---")
            skip = _front_matter_lines(data) if fm else 0
            if marked:  # the tagged heading may be anywhere: the whole file
                whole = data + rest() if len(data) == READ_FIRST < size else data
                return tagged_lines(decode(whole)[0], matcher, tags, headings, skip=skip)
            return best_lines(data, matcher, skip=skip, headings=headings,
                              rest=rest if len(data) == READ_FIRST < size else None)
        except OSError:
            return []
        finally:
            os.close(fd)

    # -- graph ------------------------------------------------------------------

    @property
    def indexing(self) -> bool:
        """Whether the first index of the vault is still being built: until then answers
        are of the notes read so far (none, at first), and say so."""
        return self.first_index and not self.reconciled

    def indexing_progress(self) -> dict:
        """How far the first index is: files read and files to read (null while the vault's
        folders are still being walked)."""
        done, total = self.progress
        return {"done": done, "total": total}

    def _progress_words(self) -> str:
        done, total = self.progress
        return "listing the vault's files" if total is None else f"{done} of {total} files read"

    def _ready_graph(self) -> Graph:
        if self.indexing:  # not a wait: a first index of a big vault takes minutes
            raise StillIndexing(self._progress_words())
        if not self._graph_ready.wait(120):
            raise QueryError("the link graph is still being built; try again in a moment")
        return self.graph

    def find_note(self, name: str) -> str:
        """The vault path of the note `name` means; raises NoteNotFound or AmbiguousNote."""
        found = self._ready_graph().find(name, str(self.root))
        if not found:
            raise NoteNotFound(name)
        if len(found) > 1:
            raise AmbiguousNote(name, found)
        return found[0]

    def backlinks(self, name: str) -> dict:
        path = self.find_note(name)
        g = self.graph
        items = [dict(path=src, **_link_json(r)) for src, r in g.backlinks(path)]
        _add_context(self.root, items, self.config.index.max_file_mb << 20)
        return {"note": path, "title": g.notes[path].title, "backlinks": items}

    def links(self, name: str) -> dict:
        path = self.find_note(name)
        items = [_link_json(r) for r in self.graph.links(path)]
        return {"note": path, "title": self.graph.notes[path].title, "links": items}

    def neighbourhood(self, name: str, depth: int) -> dict:
        path = self.find_note(name)
        g = self.graph
        nodes, edges = g.neighbours(path, depth)
        return {
            "note": path,
            "depth": depth,
            "nodes": [{"path": p, "title": g.notes[p].title} for p in nodes],
            "edges": [list(e) for e in edges],
        }

    def broken(self) -> dict:
        items = [dict(path=src, **_link_json(r)) for src, r in self._ready_graph().broken()]
        return {"total": len(items), "broken": items}

    def orphans(self) -> dict:
        g = self._ready_graph()
        return {"orphans": [{"path": p, "title": g.notes[p].title} for p in g.orphans()]}

    def tags(self) -> dict:
        """Every tag with its count and the five tags most often beside it (ties: the one met first)."""
        counts: Counter[str] = Counter()
        pairs: Counter[tuple[str, str]] = Counter()  # one update a note, not one a tag: 4x faster
        for n in self.notes.values():
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

    # -- working set ------------------------------------------------------------

    def read(self, name: str, lines: tuple[int, int] | None = None, heading: str | None = None,
             agent: bool = False) -> dict:
        """A note's text (all, a line range, or one heading's section), read from the file: of
        a file over the size cap, only what is indexed (`truncated`, and its lines so far).
        A person's read counts towards HOT; an `agent`'s is counted apart."""
        path = self.find_note(name)
        note = self.notes[path]
        try:
            data, size = read_head(self._root, path, self.config.index.max_file_mb << 20)
        except OSError as e:
            raise QueryError(f"cannot read {path}: {e.strerror}") from None
        truncated = size > len(data)
        text = decode(data)[0]
        all_lines = text.split("\n")
        if text.endswith("\n"):
            all_lines.pop()
        first, last = 1, len(all_lines)
        if heading is not None:
            first, last = _section(note, heading, len(all_lines))
        if lines is not None:
            a, b = lines
            if a < 1 or b < a:
                raise QueryError(f"lines: expected A:B with 1 <= A <= B, got {a}:{b}")
            if a > last - first + 1:
                raise QueryError(f"lines {a}:{b}: past the end ({'the section' if heading else path} has "
                                 f"{last - first + 1} lines" + (" as far as read: the file is over index.max_file_mb"
                                                                if truncated else "") + ")")
            first, last = max(first, first + a - 1 if heading else a), min(last, (first + b - 1) if heading else b)
        self.state.touch(path, agent)
        body = "\n".join(all_lines[first - 1 : last])
        return {"path": path, "title": note.title, "first": first, "last": max(first - 1, last),
                "total_lines": len(all_lines), "truncated": truncated, "text": body}

    def context(self, q: str, budget: int, unit: str = "tokens", scope: str = "warm", hits: int = 8,
                show: Callable[[str], str] | None = None, with_hot: bool = True) -> dict:
        """The HOT notes' first lines and the best sections of the top hits for `q`, filling
        but never exceeding `budget` (see context.py), each item with its line range. With
        no words in `q`, the HOT notes may fill all of the budget; with `with_hot` False, they
        are left out. Each item's path is as
        `show` gives it (paths.shown), and its header is counted so. Context is an agent's
        retrieval: the notes it gives are counted apart from a person's reads."""
        show = show or (lambda rel: rel)
        items: list[dict] = []
        used = 0
        taken: dict[str, list[tuple[int, int]]] = {}

        def add(item: dict | None) -> bool:
            nonlocal used
            if item is None or item["last"] < item["first"] or not item["text"].strip():
                return False  # nothing to give: never an empty item, nor an inverted range
            spans = taken.setdefault(item["path"], [])
            if any(a <= item["last"] and item["first"] <= b for a, b in spans):
                return False
            c = ctx.cost(ctx.render(item), unit)
            if used + c > budget:
                return False
            item["cost"] = c
            items.append(item)
            spans.append((item["first"], item["last"]))
            used += c
            return True

        def lines_of(note: Note) -> tuple[list[str], int]:
            try:  # as far as the size cap: what was indexed (a 1 GB note read whole took 42 s and 4.4 GB)
                text = decode(read_head(self._root, note.path, self.config.index.max_file_mb << 20)[0])[0]
            except OSError:
                return [], 1
            lines = text.split("\n")
            if text.endswith("\n"):
                lines.pop()
            start = split_front_matter(lines) + 1 if note.path.endswith(".md") else 1
            while start <= len(lines) and (not lines[start - 1].strip() or lines[start - 1].lstrip().startswith(("#+", ":"))):
                start += 1  # skip blank lines, Org keywords and drawers: the note's first real lines
            return lines, start

        def maker(note: Note, lines: list[str], kind: str, why: str):
            path = show(note.path)
            return lambda a, b: {"kind": kind, "path": path, "title": note.title, "tags": note.tags,
                                 "first": a, "last": b, "text": "\n".join(lines[a - 1 : b]), "why": why}

        hot_items = hot(self.notes, self.state.state, self.config.tiers) if with_hot else []
        hot_budget = budget // 4 if q.strip() else budget
        for h in hot_items:  # the working set first, within a quarter of the budget
            if used >= hot_budget:
                break  # no more room: not read
            note = self.notes[h["path"]]
            lines, start = lines_of(note)
            if start > len(lines):
                continue
            last = min(len(lines), start + 2)
            add(ctx.fit(lines, start, last, start, maker(note, lines, "hot", ", ".join(h["why"])),
                        min(hot_budget - used, budget - used), unit))
        _, ranked, p, _ = self.rank(q, hits, scope)
        matcher = Matcher(p.words, p.stems)
        sections = []  # per hit: (note, lines, its sections best first)
        for score, note in ranked:
            lines, start = lines_of(note)
            if not lines:
                continue
            heads = headings_of(note)
            if start > len(lines):  # no body (an org-roam stub: properties and a title): its title line, if any
                at = _title_line(lines, note.title)
                if at is not None:
                    sections.append((note, lines, heads, [(at, at, at, None)]))
                continue
            secs = ctx.ranked_sections(lines, heads, matcher, start, limit=2) if matcher else []  # two rounds below
            sections.append((note, lines, heads, secs or [(*ctx.section(lines, heads, start, start), start, None)]))
        # The best section of every hit, then the runners-up of the top three, while the budget lasts
        for round_, cut in ((0, len(sections)), (1, 3)):
            for rank_, (note, lines, heads, secs) in enumerate(sections[:cut], 1):
                if round_ >= len(secs):
                    continue
                first, last, focus, heading = secs[round_]
                why = f"hit {rank_} for the query" + (f", section “{heading}”" if heading else "")
                make = maker(note, lines, "hit", why)
                whole = make(first, ctx.whole_section(lines, heads, first, last))
                if whole["last"] > last and ctx.cost(ctx.render(whole), unit) <= min(budget - used, budget * 0.4):
                    last = whole["last"]  # with its subsections, while that stays a modest share
                if add(ctx.fit(lines, first, last, focus, make, budget - used, unit)):
                    self.state.touch(note.path, agent=True)
        return {"query": q, "budget": budget, "unit": unit, "used": used, "generation": self.generation,
                "items": items}

    # -- split ------------------------------------------------------------------

    def split_candidates(self) -> dict:
        """Notes over the threshold (splittable or not, and why), and notes over the warning
        size. `auto` on a note: auto mode splits it once quiet (it grew past the threshold
        while vaultd watched it); the others wait for `split --all` or `split NOTE`."""
        cfg = self.config.split
        over, cannot, growing = [], [], []
        names_taken = split.taken(self._ready_graph())  # once, not per note: it reads every note
        grown = self.state.state.grown
        for path, n in sorted(self.notes.items()):
            if n.size <= cfg.warn:
                continue
            if n.size <= cfg.threshold:
                growing.append({"path": path, "size": n.size})
            elif split.excluded(path, cfg):
                cannot.append({"path": path, "size": n.size, "why": "excluded by split.exclude"})
            elif path in self._kept_whole:
                cannot.append({"path": path, "size": n.size, "why": self._kept_why(path)})
            elif path in self._stale and path in self._done:  # not resolved on their own outside auto mode
                cannot.append({"path": path, "size": n.size, "why": "its hub was saved with the text of its parts "
                               "(an editor's buffer from before the split?): `vaultq split --all` removes the "
                               "duplicate parts, so the vault is what was saved"})
            elif path in self._split_skip and self._split_skip[path][0] == n.mtime_ns:
                cannot.append({"path": path, "size": n.size, "why": self._split_skip[path][1]})
            else:
                try:
                    plan = self._split_plan(path, names_taken)
                    why = next(filter(None, (split.read_only(self.root, c.path) for c in plan.changes)), None)
                    if why:  # the split would refuse it: not offered
                        raise split.SplitError(why)
                    over.append({"path": path, "size": n.size, "parts": len(plan.parts), "rewritten": plan.rewritten,
                                 "oversized": plan.oversized, "auto": cfg.mode == "auto" and path in grown})
                except (split.SplitError, OSError) as e:
                    cannot.append({"path": path, "size": n.size, "why": str(e)})
        return {"threshold": cfg.threshold, "warn": cfg.warn, "mode": cfg.mode, "over": over, "cannot": cannot,
                "growing": growing}

    def _split_plan(self, path: str, names_taken: tuple[set[str], set[str]] | None = None) -> split.Plan:
        """The checked plan to split `path` (see split.plan_split). A file over the size cap,
        the note or one whose links the split rewrites, is refused, and never read whole:
        vaultd reads only its first max_file_mb, and writing it from those would lose the rest."""
        cap = self.config.index.max_file_mb << 20

        def refuse(rel: str, size: int) -> split.SplitError:
            return split.SplitError(f"{rel} is {size} bytes, over the size cap (index.max_file_mb = {cap >> 20}): "
                                    f"vaultd reads only its first {cap >> 20} MB, and writing it from those would "
                                    "lose the rest")

        def whole(rel: str) -> bytes:
            data, size = read_head(self._root, rel, cap)
            if size > len(data):
                raise refuse(rel, size)
            return data

        note = self.notes[path]
        if note.size > cap:
            raise refuse(path, note.size)
        data = whole(path)
        if len(data) != note.size:
            raise split.SplitError(f"{path} changed since it was indexed; try again in a moment")
        return split.plan_split(note, data, self._ready_graph(), self.root, self.config.split,
                                read=lambda p: whole(p.relative_to(self.root).as_posix()), names_taken=names_taken)

    def split_note(self, name: str, dry_run: bool = False, check_quiet: bool = True) -> dict:
        """Split one note (or show the plan and diff with `dry_run`). Raises QueryError."""
        path = self.find_note(name)
        cfg = self.config.split
        try:
            if split.excluded(path, cfg):
                raise split.SplitError(f"{path} is excluded by split.exclude")
            plan = self._split_plan(path)
            result = {"note": path, "parts": plan.parts, "rewritten": plan.rewritten, "oversized": plan.oversized,
                      "files": [c.path for c in plan.changes]}
            if dry_run:
                return {**result, "dry_run": True, "diff": split.diff(plan)}
            if check_quiet and not self._as_written(path):  # vaultd's own last write is no edit to wait out
                split.check_quiet(self.root, path, cfg.quiet)
            elif check_quiet and (busy := split.editor_busy(self.root, path)):
                raise split.SplitError(f"{path}: {busy}")
            for c in plan.changes:
                why = split.read_only(self.root, c.path) or split.editor_busy(self.root, c.path)
                if why:
                    raise split.SplitError(why if why.endswith("read-only") else f"{c.path}: {why}")
            entry = self._write(plan)
        except (split.SplitError, OSError) as e:
            raise QueryError(str(e)) from None
        self._kept_whole.pop(path, None)  # split by hand: the undo no longer speaks for it
        self._done[path] = entry["op"]
        self.state.grew(path, None)
        logger.info("split %s: %s into %d parts, %d links rewritten (undo: vaultq split --undo %s)",
                    entry["op"], path, len(plan.parts), plan.rewritten, entry["op"])
        return {**result, "op": entry["op"], "dry_run": False}

    def _as_written(self, path: str) -> bool:
        """Whether `path` is as vaultd itself last wrote it (a split, an undo)."""
        try:
            st = os.stat(self.root / path)
        except OSError:
            return False
        return as_written(self.state.state, path, st.st_mtime_ns, st.st_size)

    def _write(self, plan: split.Plan, kind: str = split.SPLIT) -> dict:
        """Apply a plan through the journal, note what vaultd wrote (not the user's activity),
        and index it. Returns the journal entry."""
        user = {}  # each file's time of change as the user left it: parts take the note's
        for c in plan.changes:
            n = self.notes.get(c.path)
            user[c.path] = changed_ns(self.state.state, c.path, n.mtime_ns, n.size) if n else 0
        note_ns = user.get(plan.note, 0)
        with self._split_lock:
            self._writing()
            entry = split.apply(plan, self.root, self.journal, kind)
        self._wrote([c.path for c in plan.changes], {p: ns or note_ns for p, ns in user.items()})
        return entry

    def _wrote(self, paths: list[str], user: dict[str, int]) -> None:
        for p in paths:
            try:
                st = os.stat(self.root / p)
            except FileNotFoundError:
                st = None
            self.state.wrote(p, st, user.get(p, 0))
        self.apply(paths)

    def split_all(self) -> dict:
        """Apply every proposal (`split_candidates()["over"]`), each through the journal.
        Notes an editor holds or that changed within `quiet` are skipped, with why."""
        cfg = self.config.split
        done, skipped = [], []
        for path in sorted(self._stale):  # hubs saved whole again: the user's save wins
            op = self._resolve_stale(path, check_quiet=False)
            if op is not False:
                self._stale.discard(path)
            if op:
                done.append({"note": path, "op": op, "parts": [], "rewritten": 0, "stale": True})
            elif op is False:
                skipped.append({"note": path, "why": "an editor holds it"})
        for path in sorted(p for p, n in self.notes.items() if n.size > cfg.threshold):
            if split.excluded(path, cfg) or path in self._kept_whole or path in self._stale or path not in self.notes:
                continue  # not proposals (see split_candidates)
            try:
                res = self.split_note(path)  # planned and checked once, here
                done.append({"note": path, "op": res["op"], "parts": res["parts"], "rewritten": res["rewritten"]})
            except QueryError as e:
                skipped.append({"note": path, "why": str(e)})
        return {"split": done, "skipped": skipped}

    def split_history(self) -> dict:
        return {"history": [{"kind": e.get("kind", split.SPLIT),
                             **{k: e.get(k) for k in ("op", "time", "note", "status", "parts", "rewritten", "oversized")}}
                            for e in self.journal.all()]}

    def split_undo(self, ops: list[str] | str | None = None, force: bool = False, every: bool = False) -> dict:
        """Undo operations, newest first: those named, or with `every` every done one."""
        entries = self.journal.all()
        if every:
            ops = [e["op"] for e in entries if e.get("status") == "done"]
        ops = [ops] if isinstance(ops, str) else list(ops or [])
        if not ops:
            if every:
                return {"op": None, "undone": [], "restored": []}
            raise QueryError("split --undo: give an operation")
        undone, restored = [], []
        when = {e["op"]: e.get("time", 0) for e in entries}
        ops = sorted(dict.fromkeys(ops), key=lambda o: (when.get(o, 0), o), reverse=True)
        try:
            self._writing()
        except split.SplitError as e:
            raise QueryError(str(e)) from None
        if not force:
            try:
                split.undoable(self.root, self.journal, ops)  # all or nothing
            except split.SplitError as e:
                raise QueryError(f"{e}; nothing was undone") from None
        for op in ops:
            try:
                with self._split_lock:
                    entry = self.journal.load(op)
                    user = {c["path"]: changed_ns(self.state.state, c["path"], n.mtime_ns, n.size)
                            for c in entry["files"] if (n := self.notes.get(c["path"]))}
                    touched = split.undo(self.root, self.journal, op, force)
            except split.SplitError as e:
                if undone:
                    raise QueryError(f"{e} (undid {', '.join(undone)} before it)") from None
                raise QueryError(str(e)) from None
            note = entry["note"]
            if entry.get("kind", split.SPLIT) == split.SPLIT:
                self._kept_whole[note] = op
                self._done.pop(note, None)
            else:  # a stale save's removal undone: the split stands again
                self._kept_whole.pop(note, None)
            if self.config.split.mode == "auto" and note in self._kept_whole:
                logger.info("undid split %s: auto-split leaves %s whole from now on (`vaultq split` splits it by hand)",
                            op, note)
            self._wrote(touched, user)
            undone.append(op)
            restored += touched
        return {"op": undone[0] if len(undone) == 1 else None, "undone": undone, "restored": restored}

    def _kept_why(self, path: str) -> str:
        op = self._kept_whole[path]
        try:
            stale = self.journal.load(op).get("kind") == split.STALE
        except split.SplitError:
            stale = False
        why = f"it was saved whole over its hub ({op})" if stale else f"its split {op} was undone"
        return f"{why}: auto-split leaves it whole (`vaultq split` splits it by hand)"

    def _announce_split(self) -> None:
        cfg = self.config.split
        over = sum(1 for n in self.notes.values() if n.size > cfg.threshold)
        if cfg.mode == "off":
            logger.info("auto-split is off: vaultd writes nothing into the vault (%d notes over %d bytes; "
                        "`vaultq split NOTE` splits one by hand)", over, cfg.threshold)
        elif cfg.mode == "propose":
            logger.info("auto-split proposes only: vaultd writes nothing into the vault on its own; %d notes are over "
                        "%d bytes (`vaultq split --list` shows them, `vaultq split --all` applies them)",
                        over, cfg.threshold)
        else:
            logger.warning("auto-split is on: a note that grows past %d bytes while vaultd runs is split into a hub "
                           "and parts once quiet for %.0f s (undo: `vaultq split --undo OP`, or `--undo --all`). "
                           "Notes already over it are left as they are: %d are proposed (`vaultq split --list` shows "
                           "them, `vaultq split --all` applies them). `--split propose` or `off` turns this off",
                           cfg.threshold, cfg.quiet, over)

    def auto_split(self) -> list[str]:
        """Resolve stale saves over hubs, then, in `auto` mode, split every quiet, unlocked
        note that grew past the threshold while watched. Returns the ops."""
        cfg = self.config.split
        if self.graph is None:
            return []
        if not self._split_announced:
            self._split_announced = True
            self._announce_split()
        ops = []
        if cfg.mode == "auto" and self._may_write():  # propose and off never write on their own
            for path in list(self._stale):
                op = self._resolve_stale(path)
                if op is not False:
                    self._stale.discard(path)
                if op:
                    ops.append(op)
        if cfg.mode != "auto" or not self._may_write():
            return ops
        grown = self.state.state.grown
        todo = [(p, n) for p in list(grown) if (n := self.notes.get(p)) is not None and n.size > cfg.threshold
                and not split.excluded(p, cfg) and p not in self._kept_whole
                and self._split_skip.get(p, (None,))[0] != n.mtime_ns]
        for path, n in todo:
            try:
                split.check_quiet(self.root, path, cfg.quiet)
            except (split.SplitError, OSError):
                continue  # not yet: try again later
            try:
                ops.append(self.split_note(path)["op"])
            except QueryError as e:
                self._split_skip[path] = (n.mtime_ns, str(e))
                logger.warning("not splitting %s, which grew past %d bytes: %s", path, cfg.threshold, e)
        return ops

    def _resolve_stale(self, path: str, check_quiet: bool = True) -> str | None | bool:
        """The hub `path` changed: when it holds its parts' text again (an editor's stale
        buffer saved), remove the duplicate so the vault is what the user saved. Returns the
        op, None when there is nothing to resolve, False when not yet (not quiet)."""
        op = self._done.get(path)
        if op is None:
            return None
        try:
            if check_quiet:
                split.check_quiet(self.root, path, self.config.split.quiet)
            elif busy := split.editor_busy(self.root, path):
                raise split.SplitError(busy)
        except (split.SplitError, OSError):
            return False
        try:
            plan = split.stale_plan(self.journal.load(op), self.root)
            if plan is None:
                return None
            entry = self._write(plan, split.STALE)
        except (split.SplitError, OSError) as e:  # left as it is; never split again on its own for it
            logger.warning("%s: %s", path, e)
            self.state.grew(path, None)
            if (n := self.notes.get(path)) is not None:
                self._split_skip[path] = (n.mtime_ns, str(e))
            return None
        self._done.pop(path, None)
        self._kept_whole[path] = entry["op"]
        self.state.grew(path, None)
        logger.warning("%s was saved with the text of its parts (an editor's buffer from before split %s): the user's "
                       "save wins; removed the %d parts it duplicated and put back %d rewritten notes "
                       "(%s; undo: vaultq split --undo %s)", path, op, sum(c.after is None for c in plan.changes),
                       sum(c.after is not None for c in plan.changes), entry["op"], entry["op"])
        return entry["op"]

    def pin(self, name: str, on: bool) -> dict:
        path = self.find_note(name)
        changed = self.state.pin(path, on)
        return {"path": path, "pinned": on, "changed": changed}

    def pins(self) -> dict:
        return {"pins": [{"path": p, "title": self.notes[p].title if p in self.notes else None}
                         for p in self.state.state.pins]}

    def hot(self) -> dict:
        return {"hot": hot(self.notes, self.state.state, self.config.tiers)}

    def recent(self, days: float) -> dict:
        cutoff = time.time() - days * 86400
        st = self.state.state
        items = sorted(((m, p) for p, n in self.notes.items() if (m := changed_ns(st, p, n.mtime_ns, n.size)) / 1e9 >= cutoff),
                       reverse=True)
        return {"days": days, "recent": [{"path": p, "title": self.notes[p].title,
                                          "mtime": round(m / 1e9, 3)} for m, p in items]}

    def status(self) -> dict:
        return {
            "version": __version__,
            "vault": str(self.root),
            "state_dir": str(self.state_dir),
            "notes": len(self.notes),
            "generation": self.generation,
            "parsed": self.parsed,
            "reconciled": self.reconciled,
            "problems": sum(1 for n in self.notes.values() if n.problems),
            **dict(zip(("links", "broken"), self.graph.count() if self.graph else (None, None))),
            "graph": "ready" if self.graph else "building",
            "writer": self._writer.fd is not None,
            "split_mode": self.config.split.mode,
            "index_rebuilt": self.index.rebuilt_why,
            "uptime_s": round(time.time() - self.started, 1),
            "indexing": self.indexing,
            **({"progress": self.indexing_progress()} if self.indexing else {}),
        }


def _same_stat(note: Note, st: os.stat_result) -> bool:
    """Whether the file is as indexed, by its stat: size, mtime and ctime (an edit that
    keeps size and mtime, made while vaultd was stopped or within a coarse timestamp,
    still changes the ctime; so do a chmod or a rename: read again, the hash decides)."""
    return note.mtime_ns == st.st_mtime_ns and note.size == st.st_size and note.ctime_ns == st.st_ctime_ns


def _title_line(lines: list[str], title: str) -> int | None:
    """The line (1-based) among a note's first that shows its title (#+title:, front
    matter, a heading), or None."""
    want = title.casefold().strip()
    return next((i for i, x in enumerate(lines[:50], 1) if want and want in x.casefold()), None)


def _make_private(folder: Path) -> None:
    """The state folder and all in it readable by its owner alone (it holds the notes' text:
    the index, the split journal's pre-images), whatever the umask, also when an older
    vaultd made it readable to others. New files: see the umask set by `vaultd run`/`index`."""
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    mine = [folder / "index", folder / "split", *folder.glob("state.json*")]  # what vaultd keeps there, and no more
    for p in (folder, *mine, *(q for d in mine[:2] if d.is_dir() for q in d.rglob("*"))):
        try:
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode) or not st.st_mode & 0o077:
                continue
            os.chmod(p, stat.S_IMODE(st.st_mode) & 0o700)
        except OSError:
            continue


def _section(note: Note, heading: str, n_lines: int) -> tuple[int, int]:
    """First and last line of the section under `heading` (text, anchor, or custom id)."""
    want = heading.strip().lstrip("#*").strip().casefold()
    hs = sorted(headings_of(note), key=lambda h: h.line)
    for i, h in enumerate(hs):
        if h.text.casefold() == want or h.anchor.casefold() == want:
            end = next((o.line - 1 for o in hs[i + 1 :] if o.level <= h.level), n_lines)
            return h.line, end
    raise QueryError(f"{note.path} has no heading {heading!r}")


def _moves(gone: dict[str, Note], added: list[Note]) -> dict[str, str]:
    """Notes that vanished and reappeared in one batch: same Denote identifier, or same bytes."""
    by_id = {n.id: n.path for n in added if n.id}
    by_hash = {n.hash: n.path for n in added}
    out = {}
    for old, n in gone.items():
        new = (n.id and by_id.get(n.id)) or by_hash.get(n.hash)
        if new and new != old:
            out[old] = new
    return out


def _front_matter_lines(data: bytes) -> int:
    """split_front_matter of a Markdown file's first 16 KB, from its first 2 KB when the
    block ends there: decoding and splitting 16 KB of Korean took 29 us a seed file, this 6."""
    lines = decode(data[:2048])[0].split("\n", 200)
    if len(data) > 2048:
        lines.pop()  # it may be cut short
        if not lines or (lines[0].rstrip() == "---" and not split_front_matter(lines)):
            lines = decode(data[:16384])[0].split("\n", 200)  # the block goes on
    return split_front_matter(lines)


def _link_json(r: Resolved) -> dict:
    ln = r.link
    d = {"line": ln.line, "col": ln.col, "raw": ln.raw, "kind": ln.kind, "target": ln.target, "anchor": ln.anchor,
         "resolved": r.target, "resolved_line": r.line, "broken": r.broken}
    if r.candidates:
        d["candidates"] = r.candidates
    return d


RELATED_OF = 50
"""A note's tags, at most, that count towards `tags`' related tags."""

MAX_TEXT = 1000
"""Characters of a link's line given with it: 8,000 links on one 112 KB line gave 900 MB."""


def _add_context(root: Path, items: list[dict], cap: int) -> None:
    """Give each item the text of the line it stands on, read from its file. Only the lines
    wanted are read and decoded, and the file split only as far as the last of them: a hub
    note's backlinks come from hundreds of files, decoding them whole took 0.6 ms each at
    seed scale. Never past the size cap `cap`: a link is indexed only there."""
    by_path: dict[str, list[dict]] = {}
    for it in items:
        by_path.setdefault(it["path"], []).append(it)
    for path, its in by_path.items():
        upto = max(it["line"] for it in its)
        try:
            data = read_lines(str(root), path, cap, upto)
        except OSError:
            data = b""
        if b"\r" in data:  # a lone CR ends a line too (see decode): the slow way
            lines = decode(data)[0].split("\n", upto)
        else:
            lines = data.split(b"\n", upto)
        on_line: dict[int, list[dict]] = {}
        for it in its:
            on_line.setdefault(it["line"], []).append(it)
        for n, here in on_line.items():  # each line decoded once, however many links it holds
            line = lines[n - 1] if 0 < n <= len(lines) else ""
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
