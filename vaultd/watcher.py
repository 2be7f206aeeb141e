"""watchdog events -> debounced, coalesced batches of dirty vault-relative paths.

A path is flushed after `quiet` seconds without events, or `max_delay` after its
first one. Both ends of a move are marked dirty; what a path *is* gets decided at
flush time by stat-ing it (LIBRARY-NOTES 4), so event order never matters. A
kernel queue overflow (only ever a log line in watchdog) asks for a full rescan.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from watchdog import events as ev
from watchdog.observers import Observer

from .filters import NoteFilter

logger = logging.getLogger("vaultd.watcher")

RESCAN = ""
"""The pseudo-path a batch carries when the whole vault must be reconciled."""

_EVENTS = [
    ev.FileCreatedEvent,
    ev.FileModifiedEvent,
    ev.FileClosedEvent,
    ev.FileMovedEvent,
    ev.FileDeletedEvent,
    ev.DirCreatedEvent,
    ev.DirMovedEvent,
    ev.DirDeletedEvent,
]


class Debouncer:
    """Collects dirty paths; `take()` hands out those that are due, as one batch."""

    def __init__(self, quiet: float, max_delay: float):
        self.quiet = quiet
        self.max_delay = max_delay
        self._dirty: dict[str, tuple[float, float]] = {}
        self._taken = 0
        self._cond = threading.Condition()

    def add(self, rel: str) -> None:
        now = time.monotonic()
        with self._cond:
            first, _ = self._dirty.get(rel, (now, now))
            self._dirty[rel] = (first, now)
            self._cond.notify()

    @property
    def pending(self) -> int:
        """Paths seen but not yet committed: waiting, or in the batch being applied."""
        return len(self._dirty) + self._taken

    def done(self) -> None:
        """The batch from the last `take()` is committed."""
        self._taken = 0

    def take(self, stop: threading.Event, timeout: float = 0.5) -> list[str]:
        """Block until some paths are due (or `timeout` passes, or `stop` is set)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not stop.is_set():
                now = time.monotonic()
                due = [p for p, (first, last) in self._dirty.items() if now - last >= self.quiet or now - first >= self.max_delay]
                if due:
                    for p in due:
                        del self._dirty[p]
                    self._taken = len(due)
                    return due
                if now >= deadline:
                    return []
                wake = min(
                    [deadline] + [min(last + self.quiet, first + self.max_delay) for first, last in self._dirty.values()]
                )
                self._cond.wait(max(0.001, wake - now))
        return []

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()


class _Handler(ev.FileSystemEventHandler):
    def __init__(self, root: Path, accept: NoteFilter, sink: Callable[[str], None]):
        self.root = str(root)
        self.accept = accept
        self.sink = sink

    def _rel(self, path: str | bytes) -> str | None:
        path = os.fsdecode(path)
        if path != self.root and not path.startswith(self.root + os.sep):
            return None  # moved out of the tree: only its source matters
        rel = os.path.relpath(path, self.root).replace(os.sep, "/")
        return None if rel == "." else rel

    def on_any_event(self, event: ev.FileSystemEvent) -> None:
        for path in (event.src_path, getattr(event, "dest_path", "")):
            if not path:
                continue
            rel = self._rel(path)
            if rel is None:
                continue
            if event.is_directory:
                if all(self.accept.dir_ok(p) for p in rel.split("/")):
                    self.sink(rel + "/")
            elif self.accept(rel):
                self.sink(rel)


class _OverflowHook(logging.Handler):
    def __init__(self, on_overflow: Callable[[], None]):
        super().__init__(logging.WARNING)
        self.on_overflow = on_overflow

    def emit(self, record: logging.LogRecord) -> None:
        if "overflow" in record.getMessage().lower():
            self.on_overflow()


class Watcher:
    """Runs a watchdog observer on the vault, feeding a Debouncer."""

    def __init__(self, root: Path, accept: NoteFilter, debouncer: Debouncer):
        self.root = root
        self.debouncer = debouncer
        self.observer = Observer()
        self.observer.schedule(_Handler(root, accept, debouncer.add), str(root), recursive=True, event_filter=_EVENTS)
        self._hook = _OverflowHook(lambda: debouncer.add(RESCAN))
        self._wd_logger = logging.getLogger("watchdog.observers")

    def start(self) -> None:
        self._wd_logger.addHandler(self._hook)
        if self._wd_logger.getEffectiveLevel() > logging.WARNING:
            self._wd_logger.setLevel(logging.WARNING)
        self.observer.start()

    def stop(self) -> None:
        self.observer.stop()
        self.observer.join(timeout=5)
        self._wd_logger.removeHandler(self._hook)
