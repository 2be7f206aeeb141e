"""The journaled writer: every write vaultd makes into the vault (a split, a stale save's
repair, an undo, a remembered entry) goes through one journal, and one vaultd at a time
writes (the writer lock). Split, capture and rename all use it; it knows no planning.

Applying a set of file changes (`apply`):
  1. the journal entry (in the vault's .vaultd/split/), holding the pre-image of every
     file to touch and its new content, is written and fsynced (status "prepared");
  2. each file's bytes are re-checked against its pre-image, then it is written
     atomically through the checked write (store/checked.py), in the order given;
  3. the entry is marked "done": it is now the undo record.
A crash before 3 is rolled back at start-up (`recover`): every file goes back to its
pre-image, created files are removed. `undo` does the same for a done operation,
refusing when a file changed since (unless forced). Appends (capture/journal.py) keep
their own entries in the same journal and are recovered by their own code.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import json
import logging
import os
import posixpath
import re
import signal
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..errors import VaultdError
from . import checked
from .state import write_atomic

logger = logging.getLogger("vaultd.split")  # its lines read as they did when it lived in the splitter


class SplitError(VaultdError):
    """A journaled write (a split, an undo, a remembered entry) that cannot or must not be
    done now, and why. Named for the first writer; every journaled writer raises it."""


class Raced(SplitError):
    """A file changed, or was being saved, between its check and its write: nothing of the
    operation was written (what was is put back), the journal says which file and how, and
    the operation may be tried again once the save is done."""


@dataclass
class FileChange:
    path: str
    before: bytes | None
    """None: the file is created."""
    after: bytes | None
    """None: the file is removed."""


class Writes(Protocol):
    """What `apply` writes: the note an operation is about, each file's change, and what
    the journal entry records of it (a split's parts, links rewritten, sections left whole)."""

    note: str
    changes: list[FileChange]
    parts: list[str]
    rewritten: int
    oversized: list[str]


# -- the journal ----------------------------------------------------------------------------


def b64(b: bytes | None) -> str | None:
    """Bytes as the journal keeps them (base64 text); None stays None."""
    return None if b is None else base64.b64encode(b).decode()


def unb64(s: str | None) -> bytes | None:
    """The bytes `b64` kept; None stays None."""
    return None if s is None else base64.b64decode(s)


def crash_point(step: int) -> None:
    """Tests only: VAULTD_SPLIT_CRASH_AFTER=K kills the process with SIGKILL after step K."""
    if os.environ.get("VAULTD_SPLIT_CRASH_AFTER") == str(step):
        os.kill(os.getpid(), signal.SIGKILL)


_OP = re.compile(r"\d{8}T\d{6}-[0-9a-f]{6}")


JOURNAL = ".vaultd/split"
"""Where in the vault the journal lives: it is user data (the only way back from a split,
and the record of which notes the user wants whole), so it goes with the vault, not with
a state folder that may be deleted, and every vaultd on the vault reads the same one.
Created at the first split, never before; a dot folder, so never indexed."""

_README = b"""This folder is vaultd's journal: one file per split, holding every file it
changed as it was before and after (and one per entry an agent remembered, when
[capture] is on, holding the bytes it appended; one per rename). It is how
`vaultq undo OP` puts a note back (`vaultq history` lists them), and how vaultd knows
which notes you want kept whole. Keep it with the vault (it is private: only you can
read it). Deleting it loses the undo of past splits and renames.
"""


class Journal:
    """The split journal: one JSON file per operation in the vault's `.vaultd/split/`.
    Entries an older vaultd kept in its state folder (`older`) are still read, and updated
    where they are."""

    def __init__(self, vault: Path, older: tuple[Path, ...] = ()):
        self.vault = vault
        self.dir = vault / JOURNAL
        self.older = older

    def _path(self, op: str) -> Path:
        if not _OP.fullmatch(op):  # an op names a file in the journal's folder, and nothing else
            raise SplitError(f"no operation {op!r} in the journal (see `vaultq history`)")
        name = f"{op}.json"
        return next((d / name for d in self.older if (d / name).exists()), self.dir / name)

    def _dirs(self) -> list[Path]:
        return ([self.dir] if self._readable() else []) + list(self.older)

    def _ours(self, path: Path) -> bool:
        """Whether `path` (.vaultd or .vaultd/split) is missing or a real folder of this
        vault: a symlink put in its place would take the notes' text elsewhere, or hand
        vaultd another journal's decisions."""
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return True
        return stat.S_ISDIR(st.st_mode)

    def _readable(self) -> bool:
        ok = self._ours(self.dir.parent) and self._ours(self.dir)
        if not ok:
            logger.warning("%s is not a folder of the vault (a symlink or a file): its journal is not read", self.dir)
        return ok

    def _make_dir(self) -> None:
        """The journal's folder, private; refused when .vaultd or .vaultd/split is anything
        but a folder of this vault (checked before anything is made: mkdir follows a symlink)."""
        top = self.dir.parent
        for p in (top, self.dir):
            if not self._ours(p):
                raise SplitError(f"{p} is not a folder (a symlink or a file): move it away to split; nothing was written")
        if not top.is_dir():
            top.mkdir(mode=0o700, exist_ok=True)
            write_atomic(top / "README.txt", _README, 0o600, new=True)
        self.dir.mkdir(mode=0o700, exist_ok=True)
        if os.path.realpath(self.dir) != os.path.join(os.path.realpath(self.vault), JOURNAL):
            raise SplitError(f"{self.dir} is not a folder of the vault (a symlink?): nothing was written")

    def save(self, entry: dict) -> None:
        path = self._path(entry["op"])
        if path.parent == self.dir:
            self._make_dir()
        write_atomic(path, json.dumps(entry, ensure_ascii=False).encode(), 0o600)

    def load(self, op: str) -> dict:
        path = self._path(op)
        if path.parent == self.dir and not self._readable():
            raise SplitError(f"no split operation {op!r}: {self.dir} is not a folder of the vault")
        try:
            return json.loads(path.read_bytes())
        except FileNotFoundError:
            raise SplitError(f"no operation {op!r} in the journal (see `vaultq history`)") from None

    def all(self) -> list[dict]:
        """Every entry, oldest first."""
        out = {}
        for p in sorted(p for d in self._dirs() for p in d.glob("*.json")):
            try:
                e = json.loads(p.read_bytes())
                if not (isinstance(e, dict) and _OP.fullmatch(str(e.get("op"))) and isinstance(e.get("note"), str)
                        and isinstance(e.get("status"), str) and isinstance(e.get("files", []), list)
                        and isinstance(e.get("time", 0), (int, float))):
                    raise ValueError("not a journal entry of this vaultd")
                out.setdefault(e["op"], e)
            except (OSError, ValueError) as e:  # set aside in the log; the rest go on
                logger.warning("journal entry %s unreadable: %s", p.name, e)
        return sorted(out.values(), key=lambda e: (e.get("time", 0), e["op"]))


class WriterLock:
    """One vaultd at a time writes into a vault: an flock on the vault's folder itself,
    whatever state folder, bind mount or container each vaultd runs from (they all open
    the same folder), and nothing written for it. The others index and answer. Not across
    machines: a network folder, or a vault synced between two (see docs/auto-split.md)."""

    def __init__(self, root: Path):
        self.root = root
        self.fd: int | None = None
        self.folder: tuple[int, int] | None = None
        self.taken = 0
        """Times it was acquired: after each, what another vaultd did meanwhile is read anew."""

    def acquire(self) -> bool:
        """Whether this vaultd holds the lock now (taken when free; taken anew when the
        vault's folder was replaced since)."""
        try:
            st = os.stat(self.root)
        except OSError:
            return False
        if self.fd is not None and self.folder == (st.st_dev, st.st_ino):
            return True
        self.release()
        try:
            fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        st = os.fstat(fd)
        self.fd, self.folder, self.taken = fd, (st.st_dev, st.st_ino), self.taken + 1
        return True

    def holder(self) -> int | None:
        """The pid holding the lock, as /proc/locks says (None when unknown, or in another
        pid namespace)."""
        try:
            st = os.stat(self.root)
            want = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
            with open("/proc/locks") as f:
                for line in f:
                    parts = line.split()
                    if "FLOCK" in parts and want in parts and "->" not in parts:
                        pid = int(parts[parts.index(want) - 1])
                        return pid or None
        except (OSError, ValueError, IndexError):
            pass
        return None

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = self.folder = None


SPLIT, STALE, CAPTURE, RENAME = "split", "stale save", "capture", "rename"
"""Journal entry kinds: a split; the duplicate a stale editor buffer made, removed; an
entry `remember` appended to a capture note (capture/); a note or heading renamed, with
every link to it rewritten (rename/)."""

_DOING = {CAPTURE: ("remembering", "nothing was written"), RENAME: ("renaming", "nothing was renamed")}
"""What `apply`'s refusals say an operation of each kind was doing, and what was not done
(a split's by default)."""




OTHER = type("Other", (), {"__repr__": lambda self: "<a file bigger than any content looked for>"})()
"""What `read_like` gives for a file too big to be any of the contents looked for: equal to none."""


def read_like(p: Path, *like: bytes | None, room: int = 0) -> bytes | None | object:
    """`p`'s bytes, None when it is gone. A file bigger than each of `like` (plus `room`)
    is not read but is OTHER: it is none of them, and a note grown huge since a split (a
    sparse file, a log pasted in) is never read whole."""
    try:
        with open(p, "rb") as f:
            if os.fstat(f.fileno()).st_size > max(len(x or b"") for x in like) + room:
                return OTHER
            return f.read()
    except FileNotFoundError:
        return None

def new_op(note: str) -> tuple[str, int]:
    """A new operation's id, and its time in ns (in the hash too: two operations on one note
    within a second are two)."""
    now = time.time_ns()
    return time.strftime("%Y%m%dT%H%M%S") + "-" + hashlib.sha1(f"{note}\0{now}".encode()).hexdigest()[:6], now


def apply(plan: Writes, vault: Path, journal: Journal, kind: str = SPLIT, mode: int | None = None) -> dict:
    """Write the plan through the journal. Returns the done entry. Files it creates get
    `mode`, by default the note's (which must exist then)."""
    op, now = new_op(plan.note)
    entry = {
        "op": op, "time": now / 1e9, "kind": kind, "note": plan.note, "status": "prepared", "parts": plan.parts,
        "rewritten": plan.rewritten, "oversized": plan.oversized,
        "files": [{"path": c.path, "before": b64(c.before), "after": b64(c.after)} for c in plan.changes],
        **getattr(plan, "record", {}),  # what else an operation keeps of itself (a rename: the new path)
    }
    journal.save(entry)
    crash_point(1)
    written: dict[str, tuple[FileChange, os.stat_result | None]] = {}
    if mode is None:
        mode = os.stat(vault / plan.note).st_mode & 0o7777  # the parts: as private as the note
    doing, nothing = _DOING.get(kind, ("splitting", "nothing was split"))
    try:
        for step, c in enumerate(plan.changes, start=2):
            p = vault / c.path
            try:
                if c.before is None:
                    p.parent.mkdir(parents=True, exist_ok=True)
                    written[c.path] = (c, checked.create(p, c.after, mode))
                elif c.after is None:
                    checked.remove(p, c.before)
                    written[c.path] = (c, None)
                else:
                    written[c.path] = (c, checked.replace(p, c.before, c.after))
            except FileExistsError:
                raise SplitError(f"{c.path} was created by someone else while {doing}; {nothing}") from None
            except checked.Changed as e:
                event(entry, "refused", c.path, e.reason)
                raise Raced(f"{c.path} changed while {doing} ({e.reason}); {nothing}") from None
            crash_point(step)
    except BaseException as e:
        restore(vault, [c for c, _ in written.values()], mine={p: st for p, (_, st) in written.items()}, entry=entry)
        entry["status"] = "aborted"
        entry.setdefault("reason", str(e) or type(e).__name__)
        journal.save(entry)
        raise
    entry["status"] = "done"
    journal.save(entry)
    crash_point(len(plan.changes) + 2)
    return entry


def event(entry: dict, what: str, path: str, reason: str) -> None:
    """Note in a journal entry a step refused or left (saved with the entry): `split
    --history` shows them."""
    entry.setdefault("events", []).append({"time": time.time(), "what": what, "path": path, "reason": reason})


def restore(vault: Path, changes, mine: dict[str, os.stat_result | None] | None = None,
             entry: dict | None = None) -> list[str]:
    """Put back the pre-images of changes that were written. Returns the paths touched.
    A file changed since (or being saved while it was put back) is left as it is; so is,
    with `mine` (each path's file as written here), a file that is no longer the one
    written here, even with the same bytes: another writer's (a second vaultd elsewhere on
    a synced vault) is never removed. Each one left is noted in `entry`, when given."""
    touched = []
    for c in reversed(list(changes)):
        p = vault / c.path
        current = read_like(p, c.before, c.after)
        if current == c.before:
            continue
        why = None
        if current != c.after or (mine and c.after is not None and not _same_file(p, mine.get(c.path))):
            why = "changed since it was written"
        else:
            try:
                if c.before is None:
                    checked.remove(p, c.after)
                else:
                    checked.replace(p, c.after, c.before)
                touched.append(c.path)
            except checked.Changed as e:
                why = e.reason
        if why:
            logger.warning("%s %s; leaving it as it is", c.path, why)
            if entry is not None:
                event(entry, "left", c.path, why)
                entry.setdefault("left", []).append(c.path)
    return touched


def _same_file(p: Path, st: os.stat_result | None) -> bool:
    try:
        now = os.stat(p)
    except OSError:
        return False
    # an inode number is soon given again to a new file: its ctime tells the two apart
    return st is not None and (now.st_dev, now.st_ino, now.st_ctime_ns) == (st.st_dev, st.st_ino, st.st_ctime_ns)


def files_of(entry: dict, vault: Path) -> list[FileChange]:
    """The files of a journal entry. Raises SplitError when one is not a path inside the
    vault (absolute, `..`, or through a symlink out of it): the journal is never a way to
    write elsewhere."""
    out = []
    root = os.path.realpath(vault)
    for f in entry["files"]:
        path = f["path"]
        folder = os.path.realpath(vault / posixpath.dirname(path))
        if (not isinstance(path, str) or posixpath.isabs(path) or posixpath.normpath(path) != path
                or path.startswith("../") or (folder != root and not folder.startswith(root + os.sep))):
            raise SplitError(f"split {entry.get('op')} names {path!r}, which is not a file inside the vault")
        out.append(FileChange(path, unb64(f["before"]), unb64(f["after"])))
    return out


def recover(vault: Path, journal: Journal) -> list[str]:
    """Roll back every operation a crash left "prepared". Returns the paths touched."""
    touched = []
    for entry in journal.all():
        if entry.get("status") == "prepared" and "append" not in entry:  # an append: capture/journal.py's
            logger.warning("split %s of %s was interrupted: rolling it back", entry.get("op"), entry.get("note"))
            try:
                touched += restore(vault, files_of(entry, vault), entry=entry)
                entry["status"] = "rolled back"
                journal.save(entry)
            except (SplitError, KeyError, TypeError, ValueError) as e:  # one bad entry must not stop a start
                logger.error("journal entry %s left as it is: %s", entry.get("op"), e)
    return touched


def _kind(entry: dict) -> str:
    """An operation as a message names it."""
    return {CAPTURE: "remembered entry", RENAME: "rename"}.get(entry.get("kind"), "split")


def undoable(vault: Path, journal: Journal, ops: list[str]) -> None:
    """Raise SplitError unless every one of `ops` (newest first) can be undone in that order:
    each done, each file as the op wrote it, or written since by a newer one of `ops`
    (which puts it back first)."""
    later: set[str] = set()
    for op in ops:
        entry = journal.load(op)
        if entry["status"] != "done":
            raise SplitError(f"{_kind(entry)} {op} is {entry['status']}, not done: nothing to undo")
        for c in files_of(entry, vault):
            if c.path not in later and read_like(vault / c.path, c.after) != c.after:
                raise SplitError(f"{c.path} changed since {_kind(entry)} {op}; undo would lose that (use --force)")
        later.update(c.path for c in files_of(entry, vault))


DISPLACED_MAX = 64 << 20
"""A file changed since its split that a forced undo keeps in the journal: at most this big."""


def undo(vault: Path, journal: Journal, op: str, force: bool = False) -> list[str]:
    """Restore the pre-image of every file a done split touched. Forced, what it writes over
    or removes that changed since (an edit of a part, of the hub) is first kept in the
    entry, under `displaced` (path, bytes in base64): the undo loses nothing either. A file
    saved while the undo runs stops it: what it undid is put back (Raced, the entry still
    done, the refusal in its events)."""
    entry = journal.load(op)
    if entry["status"] != "done":
        raise SplitError(f"{_kind(entry)} {op} is {entry['status']}, not done: nothing to undo")
    changes = files_of(entry, vault)
    displaced, now = [], {}
    for c in changes:
        p = vault / c.path
        current = now[c.path] = read_like(p, c.after, room=DISPLACED_MAX if force else 0)
        if current == c.after:
            continue
        if not force:
            raise SplitError(f"{c.path} changed since {_kind(entry)} {op}; undo would lose that (use --force)")
        if current is None or current == c.before:
            continue  # nothing of the user's is lost by putting it back
        if current is OTHER:
            raise SplitError(f"{c.path} grew by more than {DISPLACED_MAX >> 20} MB since {_kind(entry)} {op}: "
                             "move it away to undo (nothing was changed)")
        displaced.append({"path": c.path, "bytes": b64(current)})
    if displaced:  # journaled (fsynced) before the first write
        entry["displaced"] = entry.get("displaced", []) + displaced
        journal.save(entry)
        logger.warning("undo %s: %s changed since; what undo replaced is kept in %s (\"displaced\")", op,
                       ", ".join(d["path"] for d in displaced), journal._path(op))
    mode = None  # files it brings back: as private as the note (a renamed one: at its new path)
    for rel in filter(None, (entry["note"], entry.get("to"))):
        try:
            mode = os.stat(vault / rel).st_mode & 0o7777
            break
        except OSError:
            continue
    done: list[FileChange] = []  # each as it was before the undo, and as the undo left it
    try:
        for c in reversed(changes):
            undid = FileChange(c.path, now[c.path], c.before)
            _put(vault / c.path, undid.before, undid.after, mode)
            done.append(undid)
    except (checked.Changed, FileExistsError) as e:
        why = _why(e)
        event(entry, "refused", c.path, f"undo: {why}")
        for d in reversed(done):  # what was undone is put back as it was
            try:
                _put(vault / d.path, d.after, d.before, mode)
            except (checked.Changed, FileExistsError) as e2:
                event(entry, "left", d.path, f"undo, putting it back: {_why(e2)}")
        journal.save(entry)
        raise Raced(f"{c.path} changed while undoing {op} ({why}); nothing was undone") from None
    entry["status"] = "undone"
    journal.save(entry)
    return [c.path for c in reversed(changes)]


def _why(e: OSError) -> str:
    return e.reason if isinstance(e, checked.Changed) else "another program created a file by that name"


def _put(p: Path, now: bytes | None, want: bytes | None, mode: int | None) -> None:
    """Make the file at `p`, holding `now` (None: no file), hold `want` (None: removed),
    each step checked (checked.Changed, FileExistsError when it is not as expected)."""
    if now == want:
        return
    if want is None:
        checked.remove(p, now)
    elif now is None:
        p.parent.mkdir(parents=True, exist_ok=True)
        checked.create(p, want, mode)
    else:
        checked.replace(p, now, want)
