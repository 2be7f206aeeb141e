"""The indexer loop: the daemon's one writer thread. It takes the watcher's debounced
batches and applies them (one index commit each), reconciles the whole vault at start,
when events were lost, when the watcher asks and while a folder tree floods in, retries
what failed (waiting twice as long each time, up to a minute), flushes the state file,
and runs auto-split in quiet moments. The server starts it, tends its watcher and reads
its health; the operations (api.py) ask it how much is pending and wait on it."""

from __future__ import annotations

import logging
import threading
import time

from ..config import Watch
from ..memory import release_freed_memory
from ..store.index import from_panic
from .update import Stopped
from .watcher import RESCAN, Debouncer, Watcher

logger = logging.getLogger("vaultd.server")

MANY_FOLDERS = 32
"""Folders in one batch past which the vault is scanned once instead of each folder walked:
a tree made while vaultd runs reports each of its folders, level by level over many
batches, and a walk of each one's subtree costs the square of its depth (1,100 levels:
minutes, every edit meanwhile waiting)."""

DEEP = 32
"""...or one folder deeper than this many levels (each level of a deep tree is reported
alone, and a walk from each costs 0.07 s at 500 levels: 77 s for 1,100; a scan 0.2 s)."""


TRIM_AFTER_S = 2.0
"""Seconds after a commit when freed heap is given back once more (see
memory.release_freed_memory): what is freed after the commit's and the graph's own release
stays resident otherwise, for as long as the daemon runs. A first index of 20,000 notes:
15-40 MB of glibc's arenas, freed within a second after the link graph's step, not by the
indexer's own code (a garbage collection then finds nothing); own memory once ready
99-101 MB without this, 81-85 with it (a restart: 76)."""


class Indexer:
    def __init__(self, config: Watch, should_exit: threading.Event, first_pass=None):
        self.config = config
        self.should_exit = should_exit
        self.first_pass = first_pass
        """Called once, from this thread, when the first reconcile is done or has failed
        (the server's READY=1)."""
        self.vault = None
        self.debouncer = Debouncer(config.debounce_ms / 1000, config.max_delay_ms / 1000)
        self.failed: list[str] = []
        """Changed files the indexer could not apply yet (a failed batch): retried, counted as pending."""
        self.last_error: str | None = None
        """The indexer's last failure, for `status`."""
        self.rescan = threading.Event()
        """Set by the main loop: the indexer reconciles the whole vault."""
        self.watcher: Watcher | None = None

    def watch(self, vault) -> None:
        """The watcher of `vault`, made; `tend()` starts it (before the first reconcile, so
        nothing slips between them)."""
        self.vault = vault
        w = self.config
        self.watcher = Watcher(vault.root, vault.accept, self.debouncer, w.rescan_s, w.fallback_rescan_s)

    def tend(self) -> str | None:
        """The watcher tended (see Watcher.tend); a rescan when it asks for one. Its problem, if any."""
        if self.watcher.tend():
            self.rescan.set()
        return self.watcher.problem

    def stop(self) -> None:
        self.debouncer.wake()
        if self.watcher is not None:
            self.watcher.stop()

    @property
    def pending(self) -> int:
        """Changes seen and not yet committed: queued, being applied, or kept from a failed batch."""
        return max(self.debouncer.pending, self.vault.in_flight) + len(self.failed)


    def run(self) -> None:
        vault = self.vault
        rescan = True  # the first reconcile; again after lost events, or when one failed
        next_split = time.monotonic()
        delay, retry_at = 1.0, 0.0  # failed work is retried, waiting twice as long each time, up to a minute
        flood = last_scan = 0.0  # until when folders flood in (see below); the last scan
        generation, trim_at = vault.generation, 0.0  # the last commit seen; when to give memory back after it
        while not self.should_exit.is_set():
            batch = [] if rescan and retry_at == 0.0 else self.debouncer.take(self.should_exit)
            self._guard(vault.state.flush)  # access counts and pins: at most ~0.5 s behind
            self._guard(vault.save_graph_soon)  # in the background, when changed
            if RESCAN in batch:
                batch.remove(RESCAN)
                logger.warning("events were lost: reconciling the whole vault")
                rescan = True
            if self.rescan.is_set():  # the watcher's: periodic, or for what it could not see
                self.rescan.clear()
                rescan = True
            now = time.monotonic()
            folders = [p for p in batch if p.endswith("/")]
            if len(folders) > MANY_FOLDERS or any(p.count("/") > DEEP for p in folders):  # a tree made or moved in
                batch = [p for p in batch if not p.endswith("/")]
                rescan, flood = True, now + 30
            elif flood > now and now - last_scan >= 5:
                # watchdog reports a tree's folders from one thread, every other change queued
                # behind them (minutes for a deep tree): scanned meanwhile, so none waits on it
                rescan = True
            if self.failed:  # still counted as pending until applied (never 0 while a failed batch waits)
                batch = list(dict.fromkeys(self.failed + batch))
            ok = True
            if time.monotonic() >= retry_at:
                if rescan:
                    rescan, last_scan = not (ok := self._guard(vault.reconcile)), time.monotonic()
                    if self.first_pass and not self.should_exit.is_set():
                        self.first_pass, ready = None, self.first_pass
                        ready()
                if ok and batch:
                    ok = self._guard(vault.apply, batch, None, True)  # reported by the watcher: read, the hash decides
                    batch = [] if ok else batch
            self.failed = batch  # not applied (failed, or waiting to retry): kept, and counted as pending
            if not ok and self.should_exit.is_set():
                break  # stopped, not failed: the next start redoes it
            if not ok:
                logger.warning("indexing failed: %d changed files and %s kept; retrying in %.0f s", len(batch),
                               "a rescan" if rescan else "no rescan", delay)
                retry_at, delay = time.monotonic() + delay, min(delay * 2, 60.0)
            elif retry_at and time.monotonic() >= retry_at:
                retry_at, delay = 0.0, 1.0
            self.debouncer.done()
            if vault.generation != generation:
                generation, trim_at = vault.generation, time.monotonic() + TRIM_AFTER_S
            elif trim_at and time.monotonic() >= trim_at:
                trim_at = 0.0
                release_freed_memory()
            if time.monotonic() >= next_split and not self.debouncer.pending:  # a quiet moment
                self._guard(vault.auto_split)
                next_split = time.monotonic() + 5

    def _guard(self, fn, *args) -> bool:
        """Run one step of the indexer; whether it went through. An Exception is logged and
        never stops the indexer (the caller retries what failed). A panic in Tantivy (pyo3's
        PanicException, a BaseException), or an Exception raised from one, leaves the writer
        in a state no one knows, and no retry mends a damaged index: it ends the indexer,
        and so the daemon (see _part), and the next start checks the index afresh."""
        try:
            fn(*args)
            return True
        except Stopped as e:
            logger.info("indexing stopped %s", e)
        except Exception as e:
            if from_panic(e):
                raise
            self.last_error = f"{type(e).__name__}: {e}"
            logger.exception("indexing failed")
        return False

    def catch_up(self, generation: int | None, timeout: float = 10.0) -> bool:
        """Wait until the index has committed `generation` and has nothing pending (bounded);
        whether it did."""
        if generation is None:
            return True
        deadline = time.monotonic() + timeout
        v = self.vault
        while not (v.generation >= generation and self.debouncer.pending == 0 and v.in_flight == 0):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True
