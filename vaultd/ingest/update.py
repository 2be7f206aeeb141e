"""Changes into the index: reconcile (a stat scan of the vault), apply (one batch of changed
paths, read and parsed, committed at once), and the change log behind `changes --since`.
The Vault's ingest job (see vault.py), over the state its jobs share (store/vault_state.py)."""

from __future__ import annotations

import gc
import logging
import os
import select
import signal
import stat
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import VaultError
from ..memory import release_freed_memory
from ..note import Note, NoteTable, compact
from ..query.analysis import terms
from ..store import graph_file
from ..store.graph import Graph
from ..store.index import parse_date, path_key
from .filters import NoteFilter
from .workers import parse_many, workers_for

if TYPE_CHECKING:
    from ..query.embedder import Embedder
    from ..store.vault_state import VaultState

logger = logging.getLogger("vaultd.vault")

LOG_MAX = 100_000
"""Change records kept for `changes --since`."""

GRAPH_SAVE_EVERY = 30.0
"""Seconds at least between two saves of a changed link graph while vaultd runs (at 100,000
notes a save takes about a second of a background thread); it is saved at shutdown too."""

Progress = Callable[[int, int], None]
"""progress(done, total): injected by the caller; the library never prints."""


class Stopped(Exception):
    """A batch given up because the daemon is stopping."""


APART_S = 600.0
"""Seconds work done apart (see _apart) may take before it is given up and its process killed."""


def _apart(fn: Callable[..., int], *args, stop: Callable[[], bool] | None = None) -> int:
    """fn(*args), an int, worked out in a child process forked for it: what it makes and
    frees is the child's, gone with it, never the daemon's. The child only reads the objects
    it is given (their pages stay the daemon's until touched), does its work and exits;
    nothing else of the daemon runs in it, and it holds none of its files (the socket, the
    index's locks). What it raises comes back as RuntimeError. `stop`, when it turns true
    (asked every STOP_POLL_S), kills the child and raises InterruptedError. Where there is
    no fork, it is done here."""
    if not hasattr(os, "fork"):
        return fn(*args)
    r, w = os.pipe()
    try:
        with warnings.catch_warnings():  # 3.12 warns of a fork in a process with threads: the child runs none
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
    except BaseException:
        os.close(r)
        os.close(w)
        raise
    if pid == 0:  # the child: never returns, whatever happens
        code = 1
        try:
            os.close(r)
            os.closerange(3, w)
            os.closerange(w + 1, os.sysconf("SC_OPEN_MAX"))
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(sig, signal.SIG_DFL)
            gc.disable()  # every object here is the daemon's: nothing to collect
            try:
                out, code = b"ok %d" % fn(*args), 0
            except BaseException as e:
                out = f"{type(e).__name__}: {e}".encode(errors="replace")
            os.write(w, out[:4000])
        finally:
            os._exit(code)
    os.close(w)
    try:
        got = _child_answer(pid, r, stop)
    finally:
        os.close(r)
        os.waitpid(pid, 0)
    if got is None:
        raise InterruptedError("stopped")
    if got.startswith(b"ok "):
        return int(got[3:])
    raise RuntimeError(f"its process failed: {got.decode(errors='replace') or 'it died'}")


STOP_POLL_S = 0.1
"""Seconds between two looks at `stop` while work is done apart."""


def _child_answer(pid: int, r: int, stop: Callable[[], bool] | None) -> bytes | None:
    """What the child `pid` writes to `r` until it closes it: its answer; None when `stop`
    turned true first (the child killed), a line saying so when it took over APART_S."""
    got, deadline = b"", time.monotonic() + APART_S
    while (left := deadline - time.monotonic()) > 0:
        if stop is not None and stop():
            os.kill(pid, signal.SIGKILL)
            return None
        if not select.select([r], [], [], min(left, STOP_POLL_S) if stop is not None else left)[0]:
            continue
        part = os.read(r, 4096)
        if not part:
            return got
        got += part
    os.kill(pid, signal.SIGKILL)
    return b"it took over %d s and was stopped" % APART_S


def _graph_saved(path: Path, stamp: graph_file.Stamp, notes: dict[str, Note]) -> int:
    """Build the link graph of `notes` and save it at `path` with `stamp`: the bytes written.
    Done apart (see Ingest._build_graph): the daemon then maps what was saved."""
    return graph_file.save(path, stamp, Graph.snapshot_of(notes, terms))


MOVE_S = 10
"""A note deleted, then one of the same Denote identifier or bytes added within this many
seconds in a later commit: a move (its state follows it; `changes` says moved)."""


class Ingest:
    """The Vault's ingest: reconcile, apply, the change log; the link graph's build, load and
    save. The one job that changes the note table, the graph and the generation."""

    def __init__(self, core: VaultState, semantic: Embedder | None = None):
        self.core = core
        self.semantic = semantic
        """Told of each commit's notes (their vectors catch up in the background), when on."""
        self.accept = NoteFilter(core.config.watch.extensions, core.config.watch.ignore_dirs)
        """What is a note of this vault (see ingest/filters.py)."""
        self.graph_path = core.state_dir / graph_file.FILE_NAME
        self.saved_graph = self._load_graph()
        """The graph and note table saved beside the index, when that file is of this index's
        last commit: its notes are the table, its graph is read before the first reconcile."""
        core.notes = self.saved_graph.notes if self.saved_graph else core.index.load_notes()
        core.by_key = self.saved_graph.by_key() if self.saved_graph else \
            {path_key(p): n for p, n in core.notes.items()}
        core.first_index = not core.notes
        self.graph_saved: int | None = None
        """The generation the saved graph is of (None: it is not saved)."""
        self._graph_save_at = 0.0  # monotonic time before which no background save starts
        self._graph_saver: threading.Thread | None = None
        self._graph_save_lock = threading.Lock()
        self.apply_lock = threading.Lock()
        """Held while a batch is applied, and while the graph is built, read or copied to save."""
        self.parsed = 0
        """Files read and parsed since start (restarts re-parse only what changed)."""
        self.in_flight = 0
        """Paths of the batch being applied now (part of `pending`)."""
        self.watchers: list[Callable[[dict[str, Note], list[Note], dict[str, Note]], None]] = []
        """Told of each commit, under the apply lock: watcher(the note table before, the notes
        upserted, the notes deleted) (splits: which notes grew, which hubs were saved over)."""
        self._log: list[tuple[int, str, str, str | None]] = []
        """(generation, added|changed|deleted|moved, path, old path): what each commit did."""
        self._log_start = core.generation
        self._gone_lately: dict[str, tuple[float, Note]] = {}
        """Notes deleted in the last MOVE_S seconds, by path: a note that appears in a later
        commit with the same identifier or bytes moved (see _record)."""

    def reconcile(self, progress: Progress | None = None, graph: bool = True) -> tuple[int, int]:
        """Bring the index in line with the vault by a stat scan, then build the link graph
        if there is none yet (unless `graph` is False). A graph saved beside the index is read
        first (in well under a second: its tables are decoded as asked for), and the scan's
        changes applied to it as to any. Returns (upserted, deleted)."""
        core = self.core
        core.progress = (0, None)
        if graph and core.graph is None and self.saved_graph is not None and not core.stopping.is_set():
            self._read_saved_graph()
        # compared as walked, each file's path and stat let go at once: a table of them all
        # (100,000 at a time), freed while the warm-up's vocabulary was being built beside
        # it, left 35 MB of the heap's holes in a restarted daemon for as long as it ran
        notes, unseen, changed, on_disk = core.notes, set(core.notes), [], 0
        for rel, st in self.accept.walk(core.root):
            on_disk += 1
            unseen.discard(rel)
            if (n := notes.get(rel)) is None or not _same_stat(n, st):
                changed.append(rel)
        if not core.root.is_dir():  # deleted or moved away, before or during the walk: not every note deleted
            raise VaultError(f"the vault folder {core.root} is missing: no rescan empties the index meanwhile")
        gone = [rel for rel in notes if rel in unseen]
        logger.info("reconcile: %d notes on disk, %d to parse, %d to delete", on_disk, len(changed), len(gone))
        del unseen
        result = self.apply(changed + gone, progress=progress)
        del changed, gone
        core.reconciled = True
        if graph:
            self.build_graph()
        return result

    def build_graph(self) -> None:
        """Make the link graph ready, unless it is or vaultd is stopping: read from where it
        was saved (and brought up to date), else built from the notes and saved (see
        _build_graph). `vaultd index` asks it once its progress bar is done."""
        core = self.core
        if core.graph is None and self.saved_graph is not None and not core.stopping.is_set():
            self._read_saved_graph()
        if core.graph is None and not core.stopping.is_set():
            with self.apply_lock:
                if core.graph is None:
                    self._build_graph()

    def _build_graph(self) -> None:
        """Build the link graph from the notes, under the apply lock. In a child process
        (see _apart), which saves it; then the daemon maps what it saved, the note table
        too, as a restart does. Built here, the graph and the table it was built from kept
        a first run at 100,000 notes at 756-761 MB of its own memory for as long as it ran
        (a restart: 328-345); so, 526-636 MB after a first index, 338 once its note table
        was read back from the index (see _first_table) and freed heap given back after the
        graph's step (indexer.TRIM_AFTER_S) (a restart then: 276-279); about a restart's
        once no second table was read from the save (graph_file.load_over),
        and as small as a restart when the index was there (an upgrade's rules, a saved graph
        gone). Built here where that cannot be done (no fork, the save or its load failed),
        then saved soon."""
        core = self.core
        t = time.perf_counter()
        try:
            if (g := self._graph_built_apart()) is None:
                g = Graph(core.notes, terms, stop=core.stopping.is_set)
                self._graph_save_at = 0.0  # saved at once (see save_graph_soon): a build is what a save spares
        except InterruptedError:
            raise Stopped("before the link graph was built") from None
        logger.info("link graph: %d links resolved in %.2f s", g.count()[0], time.perf_counter() - t)  # said first:
        core.graph = g  # a client that saw the graph ready finds the line in the log
        release_freed_memory()
        core.graph_ready.set()

    def _graph_built_apart(self) -> Graph | None:
        """The link graph built and saved by a child process (see _graph_saved), then loaded
        from the file over the note table it was saved from: the table stays, its notes'
        headings and links now the file's mapped bytes (graph_file.load_over). None, and a
        log line, where there is no fork or it could not be saved or loaded."""
        core = self.core
        if not hasattr(os, "fork"):
            return None
        t = time.perf_counter()
        try:
            stamp = graph_file.stamp_of(core.root, core.index, terms)
            size = _apart(_graph_saved, self.graph_path, stamp, core.notes, stop=core.stopping.is_set)
        except InterruptedError:  # vaultd is stopping (an OSError too)
            raise
        except (OSError, ValueError, LookupError, RuntimeError) as e:
            logger.warning("link graph not built apart (%s: %s): building it here", type(e).__name__, e)
            return None
        logger.info("link graph saved: %d notes, %.1f MB in %.2f s (built in a child process)", len(core.notes),
                    size / 2**20, time.perf_counter() - t)
        saved = graph_file.load_over(self.graph_path, stamp, core.notes)  # the table as it is, its
        g = saved.graph(terms) if saved is not None else None                # bytes the file's
        if g is None:
            return None
        self.graph_saved = core.generation
        return g

    def _load_graph(self) -> graph_file.Saved | None:
        """The link graph and note table saved beside the index, when the file is of this
        vault and of the index as last committed, and reads whole; else None (see graph_file)."""
        try:
            stamp = graph_file.stamp_of(self.core.root, self.core.index, terms)
        except (OSError, ValueError, LookupError) as e:
            logger.warning("index commit unknown (%s): the link graph is built anew", e)
            return None
        return graph_file.load(self.graph_path, stamp)

    def _read_saved_graph(self) -> None:
        """The saved graph read, and brought up to date with the notes that changed since
        it was saved (when the note table changed meanwhile)."""
        core = self.core
        with self.apply_lock:
            saved, self.saved_graph = self.saved_graph, None
            if saved is None or core.graph is not None:
                return
            g = saved.graph(terms)
            if g is None:
                return
            before, now = saved.notes, core.notes
            del saved
            if now is not before:
                changed = [p for p, n in now.items() if before.get(p) is not n]
                removed = [p for p in before if p not in now]
                g.update(now, changed, removed)
                logger.info("link graph: %d notes changed and %d deleted since it was saved", len(changed),
                            len(removed))
            else:
                self.graph_saved = core.generation  # as saved
            core.graph = g
            release_freed_memory()
            core.graph_ready.set()

    def save_graph_soon(self) -> None:
        """Called by the indexer twice a second: when the link graph changed since it was
        saved, save it in a background thread (at most once every GRAPH_SAVE_EVERY seconds),
        so a restart after a crash loads it too."""
        core = self.core
        if core.graph is None or self.graph_saved == core.generation or time.monotonic() < self._graph_save_at:
            return
        if self._graph_saver is not None and self._graph_saver.is_alive():
            return
        self._graph_save_at = time.monotonic() + GRAPH_SAVE_EVERY
        self._graph_saver = threading.Thread(target=self.save_graph, args=(True,), name="graph saver", daemon=True)
        self._graph_saver.start()

    def save_graph(self, apart: bool = False) -> bool:
        """Save the link graph and the note table beside the index, stamped with its last
        commit, when they changed since last saved. Holds the indexer back only while the
        graph's tables are copied (milliseconds); whether it saved. `apart`: in a child
        process (see _apart), as the daemon does while it runs: done in the daemon, a save
        left part of what it made and freed in its memory (Python's arenas, each kept by a
        few objects still alive in it), 100 MB a save at 100,000 notes, 20 MB at 10,000."""
        core = self.core
        with self._graph_save_lock:  # one save at a time, each of a later commit than the last
            with self.apply_lock:  # no commit between the snapshot and the stamp
                if core.graph is None or self.graph_saved == core.generation:
                    return False
                snap, generation = core.graph.snapshot(), core.generation
                try:
                    stamp = graph_file.stamp_of(core.root, core.index, terms)
                except (OSError, ValueError, LookupError) as e:
                    logger.warning("link graph not saved: index commit unknown (%s)", e)
                    return False
            t = time.perf_counter()
            try:
                size = _apart(graph_file.save, self.graph_path, stamp, snap) if apart else \
                    graph_file.save(self.graph_path, stamp, snap)
            except Exception as e:  # a full disk, a bug: the next start builds the graph, as before
                logger.warning("link graph not saved to %s (%s: %s): the next start builds it anew", self.graph_path,
                               type(e).__name__, e)
                return False
            self.graph_saved = generation
            n = len(snap.notes)
            del snap
            if not apart:
                release_freed_memory()
            logger.info("link graph saved: %d notes, %.1f MB in %.2f s", n, size / 2**20,
                        time.perf_counter() - t)
            return True

    def apply(self, paths: Iterable[str], progress: Progress | None = None, reread: bool = False) -> tuple[int, int]:
        """Re-read every dirty path (a file, or a folder when it ends in '/') and commit the
        result as one batch. Returns (upserted, deleted). `reread`: the files named were
        reported changed (by the watcher), so they are read even when their size and mtime
        are as indexed (coarse timestamps, two saves in one tick), and their hash decides."""
        paths = list(dict.fromkeys(paths))
        with self.apply_lock:
            self.in_flight = len(paths)
            try:
                return self._apply(paths, progress, reread)
            finally:
                self.in_flight = 0

    def _apply(self, paths: list[str], progress: Progress | None, reread: bool = False) -> tuple[int, int]:
        core = self.core
        files: dict[str, os.stat_result | None] = {}
        for rel in paths:
            if rel.endswith("/"):
                folder = rel.rstrip("/")
                prefix = folder + "/"
                files.update({p: None for p in core.notes if p.startswith(prefix)})
                if os.path.isdir(core.root / folder) and not os.path.islink(core.root / folder):
                    files.update(self.accept.walk(core.root, folder))
            elif rel not in files:
                files[rel] = None
        upserts: list[Note] = []  # metadata only: bodies go straight to the index
        first = not core.notes  # a first index: its table is read back from the index (see _first_table)
        added = 0
        deletes: list[str] = []
        to_parse: list[tuple[str, int, int, int]] = []
        reported = {p for p in paths if not p.endswith("/")} if reread else set()
        for rel, st in files.items():
            st = self._stat(rel, st, rel in reported)
            if st is None:
                core.unreadable.pop(rel, None)
                if rel in core.notes:
                    deletes.append(rel)
            elif st is not False:
                to_parse.append((rel, st.st_mtime_ns, st.st_size, st.st_ctime_ns))
        parsed = parse_many(str(core.root), to_parse, core.config.index.max_file_mb << 20,
                            workers_for(core.config.index.workers))
        core.progress = (len(files) - len(to_parse), len(files))
        with core.index.batch() as batch:
            for rel in deletes:
                batch.delete(rel)
            for done, (rel, note, doc) in enumerate(parsed, len(files) - len(to_parse) + 1):
                if core.stopping.is_set():
                    raise Stopped(f"after {done - 1} of {len(files)} files; nothing of this batch was committed")
                core.progress = (done, len(files))
                if progress:
                    progress(done, len(files))
                if note is None:
                    if rel in core.notes:
                        deletes.append(rel)
                        batch.delete(rel)
                    if isinstance(doc, str):  # listed by `problems` until it can be read or is gone
                        core.unreadable[rel] = doc.replace(f" {rel}:", ":", 1)
                    continue
                core.unreadable.pop(rel, None)
                self.parsed += 1
                old = core.notes.get(rel)
                if old is not None and (old.hash, old.mtime_ns, old.size, old.ctime_ns) == \
                        (note.hash, note.mtime_ns, note.size, note.ctime_ns):
                    continue  # read again, and the same bytes (a new ctime alone is kept, not to read it again)
                for problem in note.problems:
                    logger.warning("%s: %s", rel, problem)
                batch.add(note, doc, new=rel not in core.notes)
                added += 1
                if not first:
                    upserts.append(compact(note))
            for rel in self._moved_away(upserts, set(deletes)):
                deletes.append(rel)
                batch.delete(rel)
        if first and added:
            del note, doc, parsed
            upserts = self._first_table(files)
        if not upserts and not deletes:
            return 0, 0
        old_notes = core.notes
        notes = NoteTable(old_notes)
        gone = {rel: notes.pop(rel) for rel in deletes if rel in notes}
        by_key = dict(core.by_key)
        for rel in gone:
            by_key.pop(path_key(rel), None)
        for note in upserts:
            notes[note.path] = note
            by_key[path_key(note.path)] = note
        core.notes, core.by_key = notes, by_key
        if core.graph is not None:
            core.graph.update(notes, changed=[n.path for n in upserts], removed=gone)
        core.generation += 1
        if self.semantic is not None:  # after the commit: its vectors catch up in the background
            self.semantic.changed([*(n.path for n in upserts), *gone])
        release_freed_memory()
        graph_file.release_pages()  # what queries read of the saved graph since: read again when asked for
        self._record(core.generation, old_notes, upserts, gone)
        for watcher in self.watchers:
            watcher(old_notes, upserts, gone)
        logger.info("commit %d: %d upserted, %d deleted", core.generation, len(upserts), len(deletes))
        return len(upserts), len(deletes)

    def _first_table(self, order: Iterable[str]) -> list[Note]:
        """The notes a first index committed, read back from the index (as a restart reads
        them), in the order of `order` (the batch's paths), once what the parse made is freed.
        Kept from the parse instead, its 100,000 notes lay among the parse's freed objects in
        Python's arenas, and so did the table that replaced them (the saved graph's, see
        _build_graph): arenas are given back only when empty, and that daemon kept ~45 MB of
        them at 20,000 notes for as long as it ran. What parse_date remembers of the parse (a
        date string of each note, kept as its key) goes too."""
        parse_date.cache_clear()
        release_freed_memory()
        table = self.core.index.load_notes()
        return [n for rel in order if (n := table.get(rel)) is not None]

    def _record(self, g: int, old: dict[str, Note], upserts: list[Note], gone: dict[str, Note]) -> None:
        core = self.core
        moves = _moves(gone, upserts)
        now = time.monotonic()
        lately = self._gone_lately = {p: (t, n) for p, (t, n) in self._gone_lately.items()
                                      if now - t < MOVE_S and p not in core.notes}
        if lately:  # the two ends of a move, committed apart (watchdog's may come seconds apart under load)
            arrived = [n for n in upserts if n.path not in old and n.path not in moves.values()]
            moves |= _moves({p: n for p, (_, n) in lately.items()}, arrived) if arrived else {}
        for o in moves:
            lately.pop(o, None)
        lately |= {p: (now, n) for p, n in gone.items() if p not in moves}
        log = self._log
        for o, n in moves.items():
            logger.info("moved: %s -> %s", o, n)
            core.state.moved(o, n)
            log.append((g, "moved", n, o))
        arrived = set(moves.values())
        log += [(g, "changed" if n.path in old else "added", n.path, None) for n in upserts if n.path not in arrived]
        log += [(g, "deleted", p, None) for p in gone if p not in moves]
        if len(log) > LOG_MAX:
            del log[: len(log) - LOG_MAX]
            self._log_start = log[0][0] - 1
        core.state.set_generation(g)

    def changes(self, since: int) -> dict:
        """What happened to notes after generation `since`: added, changed, deleted, moved.
        `reset` is true when `since` is older than this daemon remembers (a restart, or
        more than LOG_MAX changes ago), or newer than it has reached (a generation of
        another state folder): then every note counts as changed."""
        core = self.core
        if since < self._log_start or since > core.generation:
            return {"generation": core.generation, "since": since, "reset": True, "added": [],
                    "changed": sorted(core.notes), "deleted": [], "moved": []}
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
        for p, s in status.items():
            if s == "moved" and origin[p] == p:  # moved away and back: at most changed
                status[p] = "changed"
        by = {k: sorted(p for p, s in status.items() if s == k) for k in ("added", "changed", "deleted")}
        return {"generation": core.generation, "since": since, "reset": False, **by,
                "moved": sorted([origin[p], p] for p, s in status.items() if s == "moved")}

    def _moved_away(self, upserts: list[Note], deleting: set[str]) -> list[str]:
        """Old paths of notes that reappear in this batch under a new path (same Denote
        identifier or same bytes) and are gone from disk. watchdog can report the two ends
        of a move half a second apart; this keeps a move in one commit."""
        core = self.core
        new = [n for n in upserts if n.path not in core.notes]
        if not new:
            return []
        ids, hashes = {n.id for n in new if n.id}, {n.hash for n in new}
        by_id: dict[str, list[str]] = {}  # of the notes sharing an identifier or bytes with a new one only:
        by_hash: dict[str, list[str]] = {}  # tables of every note took 0.8 s a new note at 100,000 notes
        for p, n in core.notes.items():
            if n.id and n.id in ids:
                by_id.setdefault(n.id, []).append(p)
            if n.hash in hashes:
                by_hash.setdefault(n.hash, []).append(p)
        out = []
        for n in new:
            for old in by_id.get(n.id, []) + by_hash.get(n.hash, []) if n.id else by_hash.get(n.hash, []):
                if old not in deleting and old != n.path and not os.path.lexists(core.root / old):
                    deleting.add(old)
                    out.append(old)
        return out

    def _stat(self, rel: str, st: os.stat_result | None, reread: bool = False) -> os.stat_result | None | bool:
        """`rel`'s stat when it needs parsing; None when it is gone (or not a note); False when
        unchanged by size and mtime (never with `reread`)."""
        try:
            st = st or os.lstat(self.core.root / rel)
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode) or not self.accept(rel):
            return None
        old = self.core.notes.get(rel)
        if not reread and old is not None and _same_stat(old, st):
            logger.debug("unchanged: %s", rel)
            return False
        return st



def _same_stat(note: Note, st: os.stat_result) -> bool:
    """Whether the file is as indexed, by its stat: size, mtime and ctime (an edit that
    keeps size and mtime, made while vaultd was stopped or within a coarse timestamp,
    still changes the ctime; so do a chmod or a rename: read again, the hash decides)."""
    return note.mtime_ns == st.st_mtime_ns and note.size == st.st_size and note.ctime_ns == st.st_ctime_ns


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
