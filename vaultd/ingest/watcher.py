"""watchdog events -> debounced, coalesced batches of dirty vault-relative paths.

A path is flushed after `quiet` seconds without events, or `max_delay` after its
first one. Both ends of a move are marked dirty; what a path *is* gets decided at
flush time by stat-ing it (LIBRARY-NOTES 4), so event order never matters. A
kernel queue overflow (only ever a log line in watchdog) asks for a full rescan.

watchdog fails quietly, so the Watcher checks rather than assumes: the folder at the
vault's path is the one watched, the observer's threads still run, and the kernel
watches every folder (past the inotify watch limit watchdog drops watches without a
word); where it cannot see, the vault is rescanned instead, and status says so.

The observer is watchdog's pick for this system (inotify on Linux, FSEvents on macOS,
kqueue on the BSDs). The kernel's watches are counted only where host has `inotify_count`
(/proc); elsewhere `watched` is None, as where /proc cannot tell. With host's
`native_watch` forced off, watchdog's polling observer stands in (tests).
"""

from __future__ import annotations

import logging
import os
import stat
import sys
import threading
import time
import warnings
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

from watchdog import events as ev
from watchdog.observers import Observer

from .. import host
from .filters import NoteFilter

logger = logging.getLogger("vaultd.watcher")


def _quiet_rewatch() -> None:
    """watchdog 7 warns each time it adds a watch a folder already has, which a deep tree
    made while vaultd runs does once per folder per level above it (600,000 times for
    1,100 levels). Each warning formats a bound method, `watch.short_str` (not a property),
    which reprs the Watch, its callbacks and the objects they belong to: every watch, each
    time. Its reader thread spent minutes on it while no event was delivered (2.4 GB of
    log). The warnings are ignored, and a Watch is shown by its descriptor."""
    warnings.filterwarnings("ignore", message="Callback with id", category=RuntimeWarning)
    try:
        from watchdog.observers import inotify_c
    except Exception:  # not Linux: ImportError, or watchdog's UnsupportedLibcError (a C library without inotify)
        return
    watch = getattr(inotify_c, "Watch", None)
    if watch is not None and "short_str" in vars(watch) and not isinstance(vars(watch)["short_str"], property):
        watch.__repr__ = lambda self: f"<Watch wd={self.wd}>"


_quiet_rewatch()

RESCAN = ""
"""The pseudo-path a batch carries when the whole vault must be reconciled."""

_EVENTS = [
    ev.FileCreatedEvent,
    ev.FileModifiedEvent,
    ev.FileAttribEvent,  # a chmod: a note that could not be read may be now
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
                    due = _outermost(due)
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


def _outermost(paths: list[str]) -> list[str]:
    """`paths` less the folders ("a/b/") inside another folder of them ("a/"): applying a
    folder walks all of it, and a folder tree 1,100 levels deep, made or moved in, came as
    1,100 nested folders, walked 600,000 times over."""
    folders = sorted(p for p in paths if p.endswith("/"))
    inner, outer = set(), None
    for f in folders:
        if outer is not None and f.startswith(outer):
            inner.add(f)
        else:
            outer = f
    return [p for p in paths if p not in inner] if inner else paths


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
        if getattr(event, "is_synthetic", False):
            return  # what watchdog makes up for the contents of a folder moved: the folder's own event covers it
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
    """Runs a watchdog observer on the folder at the vault's path, feeding a Debouncer, and
    keeps it honest: `tend()`, called by the daemon's main loop, watches again a vault folder
    that was replaced or came back, restarts an observer whose threads died, counts the
    folders the kernel really watches, and asks for rescans where events cannot be had.
    `health()` says how it stands, for `status` and `vaultd check`."""

    def __init__(self, root: Path, accept: NoteFilter, debouncer: Debouncer, rescan_s: float = 0.0,
                 fallback_rescan_s: float = 30.0):
        self.root = root
        self.accept = accept
        self.debouncer = debouncer
        self.rescan_s = rescan_s
        self.fallback_rescan_s = fallback_rescan_s
        self.root_id: tuple[int, int] | None = None
        """(st_dev, st_ino) of the folder watched: what a moved or recreated vault folder changes."""
        self.problem: str | None = None
        """Why some change could go unseen (then the vault is rescanned every fallback_rescan_s)."""
        self.gone = False
        """The vault folder is missing: nothing to watch or rescan until it is back."""
        self.folders: int | None = None
        self.watched: int | None = None
        """Of the vault's folders, how many the kernel watches (None: /proc cannot tell)."""
        self._observer: Observer | None = None
        self._threads: list[threading.Thread] = []
        self._fds: set[int] | None = None
        self._started = 0.0
        self._failures = 0
        self._retry_at = 0.0
        self._next_rescan = time.monotonic() + self._interval()
        self._folder_event = 0.0
        self._hook = _OverflowHook(lambda: debouncer.add(RESCAN))
        self._wd_logger = logging.getLogger("watchdog.observers")

    # -- the observer -----------------------------------------------------------

    def start(self) -> None:
        """Watch the folder now at the vault's path. Raises what watchdog raises (an OSError:
        the folder is gone, the inotify instance limit); then nothing of it is left running."""
        _allow_deep_walks()
        st = os.stat(self.root)
        counted = host.has("inotify_count") and _observer_class() is Observer
        threads, fds = set(threading.enumerate()), _inotify_fds() if counted else None
        observer = None
        try:
            observer = _observer_class()()
            observer.schedule(_Handler(self.root, self.accept, self._sink), str(self.root), recursive=True,
                              event_filter=_EVENTS)
            observer.start()
        except BaseException:
            if observer is not None:
                _stop(observer)
            raise
        self._observer = observer
        # Every thread it started: the dispatcher, the emitter, and watchdog's reader of the inotify queue.
        self._threads = list(dict.fromkeys([observer, *observer.emitters, *(
            t for t in threading.enumerate() if t not in threads and type(t).__module__.startswith("watchdog"))]))
        after = _inotify_fds() if counted else None
        self._fds = None if fds is None or after is None else after - fds
        self.root_id = (st.st_dev, st.st_ino)
        self._started = time.monotonic()
        self._wd_logger.addHandler(self._hook)
        if self._wd_logger.getEffectiveLevel() > logging.WARNING:
            self._wd_logger.setLevel(logging.WARNING)

    def stop(self) -> None:
        if self._observer is not None:
            _stop(self._observer)
        self._observer, self._threads, self._fds, self.root_id = None, [], None, None
        self._wd_logger.removeHandler(self._hook)

    def alive(self) -> bool:
        """Whether every thread of the observer still runs: watchdog's reader thread dies of an
        exception without a word (and every later event is lost), and its emitter stops when
        the vault folder is deleted."""
        return self._observer is not None and all(t.is_alive() for t in self._threads)

    def _sink(self, rel: str) -> None:
        if rel.endswith("/"):
            self._folder_event = time.monotonic()  # a new folder needs a watch: count them once quiet
        self.debouncer.add(rel)

    # -- keeping it honest ------------------------------------------------------

    def tend(self) -> bool:
        """One look, from the main loop (twice a second); whether the vault should be rescanned
        now. Never raises."""
        now = time.monotonic()
        here = _folder_id(self.root)
        if here is None:
            if not self.gone:
                self.gone = True
                self.stop()
                self._say(f"the vault folder {self.root} is missing (deleted or moved away): no rescan empties "
                          "the index meanwhile (only deletions seen as they happened are applied), and the folder "
                          "is watched again as soon as it is back")
            return False  # a rescan would find no notes
        self.gone = False
        if here == self.root_id and self.alive():
            if self._folder_event and now - self._folder_event >= 2.0:
                self._folder_event = 0.0
                self.check_coverage()
            return self._rescan_due(now)
        if self._observer is not None:
            if here != self.root_id:
                logger.warning("another folder is now at %s (moved or recreated): watching it instead", self.root)
            else:
                self._failed(now)
                self._say(f"the watcher of {self.root} stopped (the log says why); restarting it in "
                          f"{self._retry_at - now:.0f} s, and rescanning every {self.fallback_rescan_s:g} s")
            self.stop()
        if now < self._retry_at:
            return self._rescan_due(now)
        try:
            self.start()
        except Exception as e:
            logger.debug("watching %s failed", self.root, exc_info=True)
            self._failed(now)
            self._say(f"cannot watch {self.root} ({type(e).__name__}: {e}); trying again in "
                      f"{self._retry_at - now:.0f} s, and rescanning every {self.fallback_rescan_s:g} s")
            return self._rescan_due(now)
        self.check_coverage()
        self._next_rescan = now + self._interval()
        return True  # for what changed while nothing watched

    def check_coverage(self) -> None:
        """Count the vault's folders and those the kernel watches, and say so when some are not
        (past the inotify watch limit, watchdog drops a watch it cannot add without a word)."""
        folders = _folders(self.root, self.accept)
        watched = _watched(self._fds)
        self.folders = len(folders)
        self.watched = None if watched is None else len(folders & watched)
        if self.watched is None or self.watched >= self.folders:
            self._say(None)
            return
        self._say(f"{self.folders - self.watched} of the vault's {self.folders} folders are not watched (the "
                  f"inotify watch limit, {_watch_limit()}, is the usual cause: raise fs.inotify.max_user_watches "
                  f"and restart vaultd); changes in them are found by a rescan every {self.fallback_rescan_s:g} s")

    def health(self) -> dict:
        """How the watch stands, for `status`: `ok` is false while some change could go unseen.
        The vault folder is looked at now, not at the main loop's last look."""
        here = _folder_id(self.root)
        problem = self.problem
        if self._observer is None and not self._started and problem is None:
            problem = "not watching yet: starting"  # the daemon answers before it watches
        elif here is None and not self.gone:
            problem = f"the vault folder {self.root} is missing (deleted or moved away)"
        elif here is not None and here != self.root_id and problem is None:
            problem = f"another folder is now at {self.root}, not watched yet"
        return {"ok": problem is None, "problem": problem, "folders": self.folders, "watched": self.watched,
                "rescan_every": None if self.gone else self._interval() or None}

    def _interval(self) -> float:
        return self.fallback_rescan_s if self.problem else self.rescan_s

    def _rescan_due(self, now: float) -> bool:
        if not self._interval() or now < self._next_rescan:
            return False
        self._next_rescan = now + self._interval()
        if self._observer is not None:
            self.check_coverage()  # folders come and go between rescans
        return True

    def _failed(self, now: float) -> None:
        """A start that failed, or an observer that died: the next start waits 1 s, doubling to
        5 min; an observer that ran for 5 min first starts the count afresh."""
        if self._observer is not None and now - self._started > 300:
            self._failures = 0
        self._retry_at = now + min(2.0**self._failures, 300.0)
        self._failures += 1

    def _say(self, problem: str | None) -> None:
        if problem == self.problem:
            return
        if problem:
            logger.warning("%s", problem)
        else:
            logger.info("watching every folder of %s again (%s)", self.root, self.folders)
        was = self._interval()
        self.problem = problem
        if self._interval() != was:
            self._next_rescan = time.monotonic() + self._interval()


def _observer_class() -> type[Observer]:
    """watchdog's observer for this system; its polling one where host says there is no
    native watch (see host `native_watch`)."""
    if host.has("native_watch"):
        return Observer
    from watchdog.observers.polling import PollingObserver

    return PollingObserver


def _stop(observer: Observer) -> None:
    """Stop watchdog, waiting at most a few seconds: its stop waits for a lock its reader
    may hold for long (adding the watches of a deep tree just made), and a stop of vaultd
    must not hang on it (its threads are daemons: they end with the process)."""
    def stop() -> None:
        with suppress(Exception):
            observer.stop()
    t = threading.Thread(target=stop, name="watchdog-stop", daemon=True)
    t.start()
    t.join(timeout=5)
    if t.is_alive():
        logger.warning("watchdog did not stop within 5 s; leaving it to end with vaultd")
        return
    with suppress(RuntimeError):  # never started
        observer.join(timeout=5)


def _allow_deep_walks() -> None:
    """watchdog adds its watches with os.walk, which before Python 3.12 recurses once per
    folder level: a 1,100-level folder raised RecursionError at start (a crash loop) or, made
    while running, killed the thread that reads events (all later changes unseen). No path is
    longer than PATH_MAX (4,096 bytes), so no walk by path goes deeper than 2,048 levels:
    allow that. (2,041 levels of os.walk took under 1 MB of a thread's 8 MB stack.)"""
    if sys.version_info < (3, 12):
        sys.setrecursionlimit(max(sys.getrecursionlimit(), 2048 + 1000))


def _folder_id(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISDIR(st.st_mode) else None


def _folders(root: Path, accept: NoteFilter) -> set[tuple[int, int]]:
    """(st_dev, st_ino) of the vault folder and every folder below it that can hold notes
    (not hidden or ignored, not a symlink) and can be read: the folders that need a watch.
    Without recursion, as NoteFilter.walk."""
    out: set[tuple[int, int]] = set()
    stack = [os.fspath(root)]
    while stack:
        d = stack.pop()
        try:
            st = os.stat(d, follow_symlinks=False)
            entries = list(os.scandir(d))
        except OSError:
            continue
        out.add((st.st_dev, st.st_ino))
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False) and accept.dir_ok(e.name):
                    stack.append(e.path)
            except OSError:
                continue
    return out


def _inotify_fds() -> set[int] | None:
    """This process's inotify file descriptors (None without /proc)."""
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return None
    out = set()
    for fd in fds:
        with suppress(OSError):
            if os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:inotify":
                out.add(int(fd))
    return out


def _watched(fds: set[int] | None) -> set[tuple[int, int]] | None:
    """(st_dev, st_ino) of everything the inotify instances `fds` watch, from the kernel's own
    list in /proc/self/fdinfo ("inotify wd:1 ino:20c6d2 sdev:fe00000 ..."; sdev is the kernel's
    dev_t, major << 20 | minor). None when /proc cannot tell."""
    if fds is None:
        return None
    out: set[tuple[int, int]] = set()
    for fd in fds:
        try:
            with open(f"/proc/self/fdinfo/{fd}") as f:
                lines = [line for line in f if line.startswith("inotify wd:")]
        except OSError:
            return None
        for line in lines:
            kv = dict(p.split(":", 1) for p in line.split()[1:] if ":" in p)
            try:
                sdev = int(kv["sdev"], 16)
                out.add((os.makedev(sdev >> 20, sdev & 0xFFFFF), int(kv["ino"], 16)))
            except (KeyError, ValueError):  # a kernel that says it otherwise
                return None
    return out


def _watch_limit() -> str:
    if not host.has("inotify_count"):
        return "unknown here"
    for f in ("/proc/sys/user/max_inotify_watches", "/proc/sys/fs/inotify/max_user_watches"):
        with suppress(OSError, ValueError):
            return f"{int(Path(f).read_text()):,} watches per user"
    return "unknown here"
