"""The small state file: what the vault cannot give back (access counts, pins).

Written atomically (temp file, fsync, rename, fsync of the folder), flushed by the
daemon every few seconds when something changed and at shutdown. A file that cannot
be read is set aside as `state.json.bad-<time>` and vaultd starts from empty state.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
import threading
import time
from pathlib import Path

import msgspec

from ..errors import ConfigError

logger = logging.getLogger("vaultd.state")


class State(msgspec.Struct, kw_only=True):
    version: int = 1
    access: dict[str, int] = {}
    """Times a person read each note through vaultd (`vaultq read`, an editor): these count
    towards HOT."""
    last_access: dict[str, float] = {}
    pins: list[str] = []
    agent_access: dict[str, int] = {}
    """Times agents read each note (`context`, reads through the MCP server or a hook):
    counted apart, towards HOT only as far as tiers.agent_access_weight says (0 by default),
    so an agent's own retrievals never prime every later prompt."""
    agent_last_access: dict[str, float] = {}
    generation: int = 0
    """The last index generation committed, so generations keep growing across restarts."""
    grown: dict[str, int] = {}
    """Notes that grew past the split threshold while vaultd watched them, with the size
    they had before: what auto mode splits (a note first seen over it is only proposed)."""
    written: dict[str, list[int]] = {}
    """Files vaultd itself wrote (split, undo): [mtime_ns, size] as written and the mtime the
    user last gave them. While a file is as written, that is its time of change (HOT, recent)."""


def as_written(state: State, path: str, mtime_ns: int, size: int) -> bool:
    """Whether `path`, of this mtime and size, is as vaultd itself last wrote it."""
    w = state.written.get(path) if state.written else None
    return w is not None and w[0] == mtime_ns and w[1] == size


def changed_ns(state: State, path: str, mtime_ns: int, size: int) -> int:
    """When the user last changed `path`: its mtime, unless vaultd wrote it as it is now
    (a split's hub and parts, an undo's restored files are not the user's activity)."""
    return state.written[path][2] if as_written(state, path, mtime_ns, size) else mtime_ns


def temp_name(path: Path) -> Path:
    """The temporary file `path` is written through: a dot file beside it (never indexed),
    named by this process."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def write_atomic(path: Path, data: bytes, mode: int | None = None, new: bool = False) -> os.stat_result:
    """Replace `path` with `data` so that a crash leaves either the old or the new file.
    The file keeps its permissions (a private note stays private); a new one gets `mode`,
    when given. With `new`, only create it: FileExistsError when someone else put a file
    there, which is left as it is. Returns the written file's stat (its inode and ctime say
    later whether the file at `path` is still the one written here)."""
    if not new:
        try:
            mode = os.stat(path).st_mode & 0o7777
        except FileNotFoundError:
            pass
    tmp = temp_name(path)
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
        if mode is not None:
            os.fchmod(f.fileno(), mode)
    if new:
        try:
            os.link(tmp, path)  # never over another's file, unlike a rename
        except OSError as e:
            if e.errno == errno.EEXIST or os.path.lexists(path):
                os.unlink(tmp)
                raise FileExistsError(errno.EEXIST, "someone else created it", str(path)) from None
            os.replace(tmp, path)  # no hard links here (FAT, some FUSE): checked just before, instead
        else:
            os.unlink(tmp)
    else:
        os.replace(tmp, path)
    st = os.stat(path)
    fsync_dir(path.parent)
    return st


def fsync_dir(folder: Path) -> None:
    """Make a rename or link in `folder` durable."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class StateStore:
    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self._dirty = False
        self.state = self._load()

    def _load(self) -> State:
        try:
            return msgspec.json.decode(self.path.read_bytes(), type=State)
        except FileNotFoundError:
            return State()
        except (OSError, msgspec.DecodeError) as e:
            bad = self.path.with_name(f"{self.path.name}.bad-{int(time.time())}")
            logger.warning("state file %s unreadable (%s); set aside as %s, starting empty", self.path, e, bad.name)
            try:
                os.replace(self.path, bad)
            except OSError:
                pass
            return State()

    def flush(self) -> bool:
        """Write the state if it changed since the last flush. Returns whether it wrote."""
        with self._lock:
            if not self._dirty:
                return False
            data = msgspec.json.encode(self.state)
            self._dirty = False
        write_atomic(self.path, data)
        return True

    def touch(self, path: str, agent: bool = False) -> None:
        """`path` was read: by a person (HOT counts it), or by an agent (counted apart)."""
        with self._lock:
            if agent:
                self.state.agent_access[path] = self.state.agent_access.get(path, 0) + 1
                self.state.agent_last_access[path] = time.time()
            else:
                self.state.access[path] = self.state.access.get(path, 0) + 1
                self.state.last_access[path] = time.time()
            self._dirty = True

    def pin(self, path: str, on: bool) -> bool:
        """Pin or unpin; returns whether anything changed."""
        with self._lock:
            pins = self.state.pins
            if on == (path in pins):
                return False
            if on:
                pins.append(path)
            else:
                pins.remove(path)
            self._dirty = True
            return True

    def set_generation(self, g: int) -> None:
        with self._lock:
            self.state.generation = g
            self._dirty = True

    def grew(self, path: str, size: int | None) -> None:
        """`path` grew past the threshold from `size`; None: it is no longer a grown note."""
        with self._lock:
            if size is None:
                if self.state.grown.pop(path, None) is None:
                    return
            else:
                self.state.grown[path] = size
            self._dirty = True

    def wrote(self, path: str, st: os.stat_result | None, user_mtime_ns: int = 0) -> None:
        """vaultd wrote `path` (`st`: its stat after; None: removed or no longer as written)."""
        with self._lock:
            if st is None:
                if self.state.written.pop(path, None) is None:
                    return
            else:
                self.state.written[path] = [st.st_mtime_ns, st.st_size, user_mtime_ns]
            self._dirty = True

    def moved(self, old: str, new: str) -> None:
        """A note moved: its access count, pin and the rest follow it."""
        with self._lock:
            s = self.state
            for table in (s.access, s.last_access, s.agent_access, s.agent_last_access, s.grown, s.written):
                if old in table:
                    table[new] = table.pop(old)
            if old in s.pins:
                s.pins[s.pins.index(old)] = new
            self._dirty = True


def make_private(folder: Path) -> None:
    """The state folder and all in it readable by its owner alone (it holds the notes' text:
    the index, the split journal's pre-images), whatever the umask, also when an older
    vaultd made it readable to others. New files: see the umask set by `vaultd run`/`index`."""
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as e:  # a configuration problem (exit 2: systemd does not restart in a loop)
        raise ConfigError(f"the state folder {folder} cannot be made: {e.strerror or e}; set state_dir to a folder "
                          "you can write (under systemd, `vaultd install-service` makes it and lets the unit write "
                          "there)") from None
    mine = [folder / "index", folder / "split", *folder.glob("state.json*"), *folder.glob("*graph.msgpack*"),
            *folder.glob("*vectors-*")]  # what vaultd keeps there, and no more
    for p in (folder, *mine, *(q for d in mine[:2] if d.is_dir() for q in d.rglob("*"))):
        try:
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode) or not st.st_mode & 0o077:
                continue
            os.chmod(p, stat.S_IMODE(st.st_mode) & 0o700)
        except OSError:
            continue
