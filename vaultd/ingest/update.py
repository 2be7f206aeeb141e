"""Changes into the index: reconcile (a stat scan of the vault), apply (one batch of changed
paths, read and parsed, committed at once), and the change log behind `changes --since`.
Part of the Vault (see vault.py)."""

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

from ..errors import VaultError
from ..memory import release_freed_memory
from ..note import Note, compact
from ..query.analysis import terms
from ..store import graph_file
from ..store.graph import Graph
from ..store.index import path_key
from ..store.state import as_written
from .workers import parse_many, workers_for

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


def _apart(fn: Callable[..., int], *args) -> int:
    """fn(*args), an int, worked out in a child process forked for it: what it makes and
    frees is the child's, gone with it, never the daemon's. The child only reads the objects
    it is given (their pages stay the daemon's until touched), does its work and exits;
    nothing else of the daemon runs in it, and it holds none of its files (the socket, the
    index's locks). What it raises comes back as RuntimeError. Where there is no fork, it
    is done here."""
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
        got, deadline = b"", time.monotonic() + APART_S
        while select.select([r], [], [], max(0.0, deadline - time.monotonic()))[0]:
            part = os.read(r, 4096)
            if not part:
                break
            got += part
        else:
            os.kill(pid, signal.SIGKILL)
            got = b"it took over %d s and was stopped" % APART_S
    finally:
        os.close(r)
        os.waitpid(pid, 0)
    if got.startswith(b"ok "):
        return int(got[3:])
    raise RuntimeError(f"its process failed: {got.decode(errors='replace') or 'it died'}")


MOVE_S = 10
"""A note deleted, then one of the same Denote identifier or bytes added within this many
seconds in a later commit: a move (its state follows it; `changes` says moved)."""


class Ingest:
    """The Vault's ingest: reconcile, apply, the change log."""

    def reconcile(self, progress: Progress | None = None, graph: bool = True) -> tuple[int, int]:
        """Bring the index in line with the vault by a stat scan, then build the link graph
        if there is none yet (unless `graph` is False). A graph saved beside the index is read
        first (in well under a second: its tables are decoded as asked for), and the scan's
        changes applied to it as to any. Returns (upserted, deleted)."""
        self.progress = (0, None)
        if graph and self.graph is None and self._saved_graph is not None and not self.stopping.is_set():
            self._read_saved_graph()
        on_disk = dict(self.accept.walk(self.root))
        if not self.root.is_dir():  # deleted or moved away, before or during the walk: not every note deleted
            raise VaultError(f"the vault folder {self.root} is missing: no rescan empties the index meanwhile")
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
                release_freed_memory()
                self._graph_ready.set()
                self._graph_save_at = 0.0  # saved at once (see save_graph_soon): a build is what a save spares
                logger.info("link graph: %d links resolved in %.2f s", self.graph.count()[0], time.perf_counter() - t)
        return result

    def _load_graph(self) -> graph_file.Saved | None:
        """The link graph and note table saved beside the index, when the file is of this
        vault and of the index as last committed, and reads whole; else None (see graph_file)."""
        try:
            stamp = graph_file.stamp_of(self.root, self.index, terms)
        except (OSError, ValueError, LookupError) as e:
            logger.warning("index commit unknown (%s): the link graph is built anew", e)
            return None
        return graph_file.load(self.graph_path, stamp)

    def _read_saved_graph(self) -> None:
        """The saved graph read, and brought up to date with the notes that changed since
        it was saved (when the note table changed meanwhile)."""
        with self._apply_lock:
            saved, self._saved_graph = self._saved_graph, None
            if saved is None or self.graph is not None:
                return
            g = saved.graph(terms)
            if g is None:
                return
            before, now = saved.notes, self.notes
            del saved
            if now is not before:
                changed = [p for p, n in now.items() if before.get(p) is not n]
                removed = [p for p in before if p not in now]
                g.update(now, changed, removed)
                logger.info("link graph: %d notes changed and %d deleted since it was saved", len(changed),
                            len(removed))
            else:
                self._graph_saved = self.generation  # as saved
            self.graph = g
            release_freed_memory()
            self._graph_ready.set()

    def save_graph_soon(self) -> None:
        """Called by the indexer twice a second: when the link graph changed since it was
        saved, save it in a background thread (at most once every GRAPH_SAVE_EVERY seconds),
        so a restart after a crash loads it too."""
        if self.graph is None or self._graph_saved == self.generation or time.monotonic() < self._graph_save_at:
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
        with self._graph_save_lock:  # one save at a time, each of a later commit than the last
            with self._apply_lock:  # no commit between the snapshot and the stamp
                if self.graph is None or self._graph_saved == self.generation:
                    return False
                snap, generation = self.graph.snapshot(), self.generation
                try:
                    stamp = graph_file.stamp_of(self.root, self.index, terms)
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
            self._graph_saved = generation
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
                self.unreadable.pop(rel, None)
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
                    if isinstance(doc, str):  # listed by `problems` until it can be read or is gone
                        self.unreadable[rel] = doc.replace(f" {rel}:", ":", 1)
                    continue
                self.unreadable.pop(rel, None)
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
        if self.semantic is not None:  # after the commit: its vectors catch up in the background
            self.semantic.changed([*(n.path for n in upserts), *gone])
        release_freed_memory()
        graph_file.release_pages()  # what queries read of the saved graph since: read again when asked for
        self._record(self.generation, old_notes, upserts, gone)
        self._watch_growth(old_notes, upserts, gone)
        logger.info("commit %d: %d upserted, %d deleted", self.generation, len(upserts), len(deletes))
        return len(upserts), len(deletes)

    def _record(self, g: int, old: dict[str, Note], upserts: list[Note], gone: dict[str, Note]) -> None:
        moves = _moves(gone, upserts)
        now = time.monotonic()
        lately = self._gone_lately = {p: (t, n) for p, (t, n) in self._gone_lately.items()
                                      if now - t < MOVE_S and p not in self.notes}
        if lately:  # the two ends of a move, committed apart (watchdog's may come seconds apart under load)
            arrived = [n for n in upserts if n.path not in old and n.path not in moves.values()]
            moves |= _moves({p: n for p, (_, n) in lately.items()}, arrived) if arrived else {}
        for o in moves:
            lately.pop(o, None)
        lately |= {p: (now, n) for p, n in gone.items() if p not in moves}
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
        for p, s in status.items():
            if s == "moved" and origin[p] == p:  # moved away and back: at most changed
                status[p] = "changed"
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
