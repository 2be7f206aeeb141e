"""Writing into the vault only over what was checked: no gap between the check and the write.

A journaled writer (a split, its rollback and undo, a remembered entry's undo, a rename)
reads a file, decides from those bytes what to write, and replaces or removes the file. A
save by the user's editor that lands in between must never be thrown away. `replace` and
`remove` close that gap with what the OS gives:

- **A read lease** (Linux `F_SETLEASE`) is held on the file from the read to the swap. It is
  refused while any program has the file open for writing, and any open for writing made
  while it is held (an editor's in-place save, `open(f, "w")`) breaks it: the saver waits in
  its open() until we let go, a few milliseconds. A broken lease means someone is about to
  write: the step is abandoned and the saver's write then lands in the file it opened,
  which is the vault's file again.
- **An atomic swap** (`renameat2(RENAME_EXCHANGE)`) puts the new file in place and hands
  back the one it replaced. When that is not the file checked (an editor renamed its own
  save over it meanwhile), the two are swapped back at once: the editor's file is never
  deleted.
- **Identity** (device, inode, size, mtime) of the file read is compared with the file at the
  path just before the swap and with the file handed back after it.

Where leases or the swap are not available (a system without them: see host `lease` and
`exchange`; a filesystem that refuses them, a file owned by another user), the identity and
content checks are made immediately before a plain rename: the gap is then the few
microseconds between that check and the rename.

The one gap left with both: a save whose open() looked the path up before the swap and
reaches the old file in the microseconds between the last lease check and its unlink.

`Changed` says why a write was abandoned; nothing was written then (the temporary file is
removed), and the caller records it (the journal) and refuses or retries.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import signal
import stat
from collections.abc import Callable
from pathlib import Path

from .. import host
from .state import fsync_dir, temp_name, write_atomic

pause: Callable[[str, Path, int | None], None] | None = None
"""Tests only: called at each step (`checked`, `written`, `swapping`, `swapped`, `done`) with the path
and the leased descriptor, so a test can race a save against every step. None otherwise:
one comparison per step."""


class Changed(OSError):
    """The file changed (or is being written) between the check and the write: nothing was
    written. `reason` says how."""

    def __init__(self, path: Path, reason: str):
        super().__init__(errno.EAGAIN, reason, str(path))
        self.path, self.reason = path, reason

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


_AT_FDCWD, _RENAME_EXCHANGE = -100, 2
_renameat2: Callable | None | bool = None


def _exchange(a: Path, b: Path) -> bool:
    """Swap the files at `a` and `b` atomically. False where the C library or the
    filesystem cannot (the caller then renames)."""
    global _renameat2
    if not host.has("exchange"):
        return False
    if _renameat2 is None:
        try:
            fn = ctypes.CDLL(None, use_errno=True).renameat2
            fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
            _renameat2 = fn
        except (OSError, AttributeError):
            _renameat2 = False
    if _renameat2 is False:
        return False
    if _renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    e = ctypes.get_errno()
    if e in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    raise OSError(e, os.strerror(e), str(b))


def _lease(fd: int, path: Path) -> bool:
    """Take a read lease on `fd`. True when held; False where leases are not to be had
    (another user's file, a filesystem without them). Changed when the file is open for
    writing now."""
    if not host.has("lease"):
        return False
    try:
        # a break is told by a signal: SIGURG, ignored by default (SIGIO, the default, kills)
        fcntl.fcntl(fd, fcntl.F_SETSIG, signal.SIGURG)
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK)
    except OSError as e:
        if e.errno == errno.EAGAIN:
            raise Changed(path, "a program has it open for writing (an editor saving?)") from None
        return False
    fcntl.fcntl(fd, fcntl.F_SETOWN, 0)  # and to nobody
    return True


def _broken(fd: int, leased: bool) -> bool:
    """Whether someone opened the leased file for writing since (the lease is breaking)."""
    return leased and fcntl.fcntl(fd, fcntl.F_GETLEASE) != fcntl.F_RDLCK


def _same(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino, a.st_size, a.st_mtime_ns) == (b.st_dev, b.st_ino, b.st_size, b.st_mtime_ns)


def step(name: str, path: Path, fd: int | None = None) -> None:
    """A step of a journaled write, for `pause` (tests only)."""
    if pause is not None:
        pause(name, path, fd)


class _Held:
    """A file opened for reading, leased where possible, and its bytes as read: the check."""

    def __init__(self, path: Path, expect: bytes):
        self.path, self.leased = path, False
        try:
            self.fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError:
            raise Changed(path, "it is gone") from None
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise Changed(path, "it is now a symlink") from None
            raise
        try:
            self.seen = os.fstat(self.fd)
            if not stat.S_ISREG(self.seen.st_mode):
                raise Changed(path, "it is no longer a regular file")
            self.leased = _lease(self.fd, path)
            if self.seen.st_size != len(expect) or _read(self.fd, len(expect)) != expect:
                raise Changed(path, "its content changed since it was read")
            step("checked", path, self.fd)
        except BaseException:
            self.close()
            raise

    def intact(self, at: Path) -> str | None:
        """Why the file checked is no longer the one at `at`, unchanged and unwanted by a
        writer; None when it is."""
        if _broken(self.fd, self.leased):
            return "a program opened it for writing (an editor saving?)"
        try:
            now = os.lstat(at)
        except FileNotFoundError:
            return "it was moved or deleted"
        if not _same(now, self.seen) or not _same(os.fstat(self.fd), self.seen):
            return "it was saved anew"
        return None

    def close(self) -> None:
        if self.fd is not None:
            if self.leased:
                try:
                    fcntl.fcntl(self.fd, fcntl.F_SETLEASE, fcntl.F_UNLCK)
                except OSError:
                    pass
            os.close(self.fd)
            self.fd = None


def _read(fd: int, n: int) -> bytes:
    """At most n + 1 bytes of `fd` from its start (one more tells a file that grew)."""
    chunks, want = [], n + 1
    while want > 0:
        b = os.pread(fd, want, n + 1 - want)
        if not b:
            break
        chunks.append(b)
        want -= len(b)
    return b"".join(chunks)


def replace(path: Path, expect: bytes, data: bytes, mode: int | None = None) -> os.stat_result:
    """Replace the file at `path`, which must hold `expect`, with `data` (atomically, as
    write_atomic, keeping the file's permissions unless `mode`). Changed when the file is
    not `expect`, or is written, saved anew, moved or deleted before the swap: nothing was
    written then. Returns the new file's stat."""
    held = _Held(path, expect)
    tmp = temp_name(path)
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
            os.fchmod(f.fileno(), held.seen.st_mode & 0o7777 if mode is None else mode)
        step("written", path, held.fd)
        if why := held.intact(path):
            raise Changed(path, why)
        step("swapping", path, held.fd)  # the last check made: what the swap brings back is checked again
        if _exchange(tmp, path):
            step("swapped", path, held.fd)
            if why := held.intact(tmp):  # what came back is not the file checked, or it is being written
                _exchange(tmp, path)  # theirs back in place, unharmed
                raise Changed(path, why)
        else:
            os.replace(tmp, path)
        st = os.stat(path)
    finally:
        try:
            os.unlink(tmp)  # the old file after a swap; ours when abandoned
        except FileNotFoundError:
            pass
        held.close()
    fsync_dir(path.parent)
    step("done", path, None)
    return st


def remove(path: Path, expect: bytes) -> None:
    """Remove the file at `path`, which must hold `expect`. Changed as for replace; the file
    is then where it was (or, when a new file took its name meanwhile, kept beside it as
    `.NAME.PID.tmp`, named in the reason)."""
    held = _Held(path, expect)
    tmp = temp_name(path)
    try:
        os.rename(path, tmp)  # the name is free at once; the file checked is still whole
        step("swapped", path, held.fd)
        if why := held.intact(tmp):
            try:
                os.link(tmp, path)
                os.unlink(tmp)
            except FileExistsError:
                raise Changed(path, f"{why}; a new file took its name meanwhile, the old one is kept as {tmp.name}") \
                    from None
            raise Changed(path, why)
        os.unlink(tmp)
    finally:
        held.close()
    fsync_dir(path.parent)
    step("done", path, None)


def create(path: Path, data: bytes, mode: int | None = None) -> os.stat_result:
    """Make a new file at `path` holding `data`, never over a file someone put there
    (FileExistsError then)."""
    st = write_atomic(path, data, mode, new=True)
    step("done", path, None)
    return st
