"""What this system offers vaultd: each facility vaultd uses that not every system has
(most of them Linux's), whether it is here, and what doing without it costs. The one place
that decides: a module that uses a facility asks `has(name)` and takes its fallback when
told no, so that on macOS or a BSD vaultd starts, and says at start what it does without
(`lacking`), rather than failing on an import or a missing file.

$VAULTD_PORTABLE forces fallbacks where the facilities are there (tests): `1` (or `all`)
every Linux-only one, else a comma-separated list of names (`native_watch`, not Linux's
alone, only by name: watchdog's polling observer stands in for an observer other than
inotify). Read once per process, at the first question (`reset` reads it again).

Standard library only, and cheap to import (paths.py imports it, and vaultq paths): each
facility is probed when first asked about."""

from __future__ import annotations

import functools
import os
import sys

ENV = "VAULTD_PORTABLE"


def _linux() -> bool:
    return sys.platform.startswith("linux")


def _libc_has(*names: str) -> bool:
    """Whether the C library this process runs on has every function of `names`."""
    try:
        import ctypes

        libc = ctypes.CDLL(None)
    except (ImportError, OSError):
        return False
    return all(hasattr(libc, n) for n in names)


def _fcntl_has(*names: str) -> bool:
    try:
        import fcntl
    except ImportError:
        return False
    return all(hasattr(fcntl, n) for n in names)


def _shm() -> bool:
    return os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK)


def _sock_cloexec() -> bool:
    import socket

    return hasattr(socket, "SOCK_CLOEXEC")


def _native_watch() -> bool:
    from watchdog.observers import Observer

    return Observer.__name__ != "PollingObserver"


class Facility:
    """One facility: its `name` (what `has` and $VAULTD_PORTABLE take), `what` it is, what is
    done without it and what that costs (`without`; empty when nothing is lost), whether it is
    Linux's alone (`linux`: forced off by VAULTD_PORTABLE=1), and how to tell it is here."""

    __slots__ = ("name", "what", "without", "linux", "probe")

    def __init__(self, name: str, what: str, without: str, probe, linux: bool = True):
        self.name, self.what, self.without, self.probe, self.linux = name, what, without, probe, linux


FACILITIES = {f.name: f for f in (
    Facility("inotify_count", "the count of inotify's watches (/proc/self/fdinfo)",
             "a folder the system cannot watch goes unsaid (the full rescan, watch.rescan_s, is the safety net)",
             lambda: _linux() and os.path.isdir("/proc/self/fdinfo")),
    Facility("proc_fd", "/proc/self/fd (an opened note's real path)",
             "its path's realpath is checked instead: a folder swapped for a symlink and back around the "
             "open goes unseen",
             lambda: _linux() and os.path.isdir("/proc/self/fd")),
    Facility("pdeathsig", "PR_SET_PDEATHSIG (the parsing workers)",
             "each worker looks for its daemon every second: one outlives a killed daemon by up to a second",
             _linux),
    Facility("shm", "/dev/shm (the parsing workers' output)",
             "it passes through the temp folder, on disk unless that is in memory",
             _shm),
    Facility("malloc_trim", "glibc's malloc_trim and mallopt (freed memory)",
             "freed heap is not handed back: after a full index the daemon's memory stays nearer its peak",
             lambda: _libc_has("malloc_trim", "mallopt")),
    Facility("lease", "read leases, F_SETLEASE (vaultd's writes into notes: split, undo, rename)",
             "the note is checked just before it is replaced: an editor's save landing in those "
             "microseconds can be lost",
             lambda: _linux() and _fcntl_has("F_SETLEASE", "F_GETLEASE", "F_SETSIG")),
    Facility("exchange", "renameat2 RENAME_EXCHANGE (the same writes)",
             "a plain rename: a save renamed over the note in the microseconds after the last check is replaced",
             lambda: _linux() and _libc_has("renameat2")),
    Facility("systemd", "systemd (install-service's units, socket activation, sd_notify)",
             "start vaultd yourself (a login item, launchd)",
             _linux),
    Facility("sock_cloexec", "SOCK_CLOEXEC (the daemon's sockets)",
             "",  # Python makes every socket non-inheritable anyway
             _sock_cloexec),
    Facility("native_watch", "the system's own change notification (inotify, FSEvents, kqueue), as "
             "watchdog picks it",
             "watchdog's polling observer: every folder looked at each second, a change seen a second or so "
             "late, a chmod not at all",
             _native_watch, linux=False),
)}


@functools.cache
def forced() -> frozenset[str]:
    """The facilities $VAULTD_PORTABLE forces off."""
    raw = os.environ.get(ENV, "").strip()
    if raw.lower() in ("", "0", "no", "false"):
        return frozenset()
    names = {n.strip() for n in raw.split(",") if n.strip()}
    if names & {"1", "all", "yes", "true"}:
        names |= {f.name for f in FACILITIES.values() if f.linux}
    return frozenset(names)


@functools.cache
def has(name: str) -> bool:
    """Whether this process uses facility `name` (KeyError for one not in FACILITIES): it is
    here and not forced off."""
    f = FACILITIES[name]
    if name in forced():
        return False
    try:
        return bool(f.probe())
    except Exception:  # noqa: BLE001 - a probe that fails says: not here
        return False


def lacking() -> list[Facility]:
    """The facilities this process does without whose absence costs something."""
    return [f for f in FACILITIES.values() if f.without and not has(f.name)]


def lacking_line() -> str | None:
    """One line saying what vaultd does without here and what that costs; None when nothing."""
    gone = lacking()
    if not gone:
        return None
    why = "forced by $VAULTD_PORTABLE" if forced() else f"not on this system ({sys.platform})"
    return (f"running without some of what vaultd uses on Linux ({why}): "
            + "; ".join(f"{f.what} [{f.name}]: {f.without}" for f in gone))


def reset() -> None:
    """Read $VAULTD_PORTABLE and probe again (tests that change it in process)."""
    forced.cache_clear()
    has.cache_clear()
