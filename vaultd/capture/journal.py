"""A remembered entry in the split journal, and its undo. The journal entry holds what was
appended, not the note: the capture note's path, the offset the entry starts at, its exact
bytes, the file's identity (device, inode), and when the entry made the note, the note's
head (front matter) and the folders it made. So the journal grows by each entry's size,
however big the day's note gets.

An entry may also change what is already in the vault, each change an edit: the bytes it
replaced and the bytes it wrote, at an offset of a note (an older entry marked superseded,
an entry remembered again counted, an entry put under a heading of a routed note). Edits
are journaled before they are made, and each file is written through the checked write
(store/checked.py `replace`): never over a file that changed since it was read. An entry
that only edits (strengthening one already there) has no appended bytes ("append" null).

Undo takes out exactly those bytes, while they are in the note unchanged (at their offset,
or once anywhere else: an entry undone before it moved them), and nothing else: entries
appended after it stay; and puts back what each edit replaced, while the edit's bytes are
there unchanged (an older entry's standing is restored). All or nothing: when one cannot be
undone, nothing is. A note the entry made is removed when nothing but its head is left,
and so are the folders it made, when empty. A crash between the journal and the writes is
cut back at the next start (recover).
"""

from __future__ import annotations

import logging
import os
import posixpath
import stat
from dataclasses import dataclass, field
from pathlib import Path

from ..store import checked
from ..store.journal import CAPTURE, Journal, Raced, SplitError, b64, crash_point, event, new_op, unb64
from ..store.state import write_atomic

logger = logging.getLogger("vaultd.split")  # as the journal's own lines


@dataclass
class Rewrite:
    """Edits of one file of the vault: its bytes as read, and each edit as (offset in them,
    the bytes there, the bytes to put there instead), none overlapping."""

    path: str
    before: bytes
    edits: list[tuple[int, bytes, bytes]] = field(default_factory=list)

    def after(self) -> tuple[bytes, list[dict]]:
        """The file's bytes with every edit made, and each edit as the journal keeps it: its
        offset in those bytes, what it replaced and what it wrote (base64)."""
        out, kept, shift, at = [], [], 0, 0
        for offset, old, new in sorted(self.edits):
            if offset < at or self.before[offset : offset + len(old)] != old:
                raise ValueError(f"{self.path}: an edit at byte {offset} does not match what was read")
            out += [self.before[at:offset], new]
            kept.append({"path": self.path, "offset": offset + shift, "old": b64(old), "new": b64(new)})
            shift += len(new) - len(old)
            at = offset + len(old)
        out.append(self.before[at:])
        return b"".join(out), kept


def append(vault: Path, journal: Journal, rel: str, new: bytes, size: int | None, head: bytes | None,
           mode: int, made: list[str], rewrites: list[Rewrite] = (), about: dict | None = None) -> dict:
    """Append `new` to the capture note `rel`, which held `size` bytes when read (after the
    `rewrites`, made first: each file written whole through the checked write), in place
    (journaled and fsynced first; the note fsynced after); with `size` None, create it
    holding `head` then `new` (never over a file someone put there). `about`: what the
    entry is, for `split --history`. Returns the done journal entry; SplitError when a file
    changed meanwhile (nothing was written)."""
    op, now = new_op(rel)
    afters = [(rw, *rw.after()) for rw in rewrites]
    entry = {"op": op, "time": now / 1e9, "kind": CAPTURE, "note": rel, "status": "prepared", "parts": [],
             "rewritten": 0, "oversized": [], "files": [],
             "append": {"offset": len(head) if size is None else size, "bytes": b64(new),
                        "head": b64(head), "made": made, "file": None},
             "edits": [e for _, _, kept in afters for e in kept], **({"entry": about} if about else {})}
    p = vault / rel
    fd, saved = None, False
    try:
        if afters:
            journal.save(entry)
            saved = True
            _rewrite(vault, entry, afters)
            if size is not None:
                size = next((len(data) for rw, data, _ in afters if rw.path == rel), size)
                entry["append"]["offset"] = size
        if size is not None:
            fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size != size:
                raise SplitError(f"{rel} changed while remembering; nothing was written")
            entry["append"]["file"] = [st.st_dev, st.st_ino]
            checked.step("checked", p)
        journal.save(entry)
        saved = True
        crash_point(1)
        if fd is None:
            try:
                st = write_atomic(p, head + new, mode, new=True)
            except FileExistsError:
                raise SplitError(f"{rel} was created by someone else while remembering; nothing was written")
            entry["append"]["file"] = [st.st_dev, st.st_ino]
        else:
            view = memoryview(new)
            checked.step("written", p)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
            checked.step("done", p)
        crash_point(2)
    except BaseException as e:
        if fd is not None:
            os.close(fd)
            fd = None
        if saved:
            _cut_back(vault, entry)
            _unedit(vault, entry)
            entry["status"] = "aborted"
            entry["reason"] = str(e) or type(e).__name__
            journal.save(entry)
        raise
    finally:
        if fd is not None:
            os.close(fd)
    entry["status"] = "done"
    journal.save(entry)
    return entry


def _cut_back(vault: Path, entry: dict) -> bool:
    """Take out what an interrupted append wrote (all or a first part of its bytes, at the
    end of the same file), through checked writes: a save landing meanwhile is kept whole
    (then nothing is cut). Whether it did."""
    a, p = entry["append"], vault / entry["note"]
    new, head = unb64(a["bytes"]), unb64(a["head"])
    try:
        with open(p, "rb") as f:
            st = os.fstat(f.fileno())
            if a["file"] is None or [st.st_dev, st.st_ino] != a["file"] or st.st_size <= a["offset"] or \
                    st.st_size > a["offset"] + len(new):
                return False
            data = f.read()
        if not new.startswith(data[a["offset"]:]):
            return False
        if head is not None:
            checked.remove(p, data)
            _unmake(vault, a["made"])
        else:
            checked.replace(p, data, data[:a["offset"]])
        return True
    except checked.Changed as e:
        event(entry, "left", entry["note"], f"cutting back the entry: {e.reason}")
        return False
    except OSError:
        return False


def edit(vault: Path, journal: Journal, rel: str, rewrites: list[Rewrite], about: dict | None = None) -> dict:
    """Make the `rewrites` (an entry that only edits: one remembered again, or one put
    under a heading of a routed note; `rel` the note it is about), journaled first, each
    file through the checked write. Returns the done journal entry; SplitError when a file
    changed meanwhile (nothing was written)."""
    op, now = new_op(rel)
    afters = [(rw, *rw.after()) for rw in rewrites]
    entry = {"op": op, "time": now / 1e9, "kind": CAPTURE, "note": rel, "status": "prepared", "parts": [],
             "rewritten": 0, "oversized": [], "files": [], "append": None,
             "edits": [e for _, _, kept in afters for e in kept], **({"entry": about} if about else {})}
    journal.save(entry)
    try:
        _rewrite(vault, entry, afters)
    except BaseException as e:
        entry["status"] = "aborted"
        entry["reason"] = str(e) or type(e).__name__
        journal.save(entry)
        raise
    entry["status"] = "done"
    journal.save(entry)
    return entry


def _rewrite(vault: Path, entry: dict, afters: list[tuple[Rewrite, bytes, list[dict]]]) -> None:
    """Write each file with its edits made, through the checked write; when one changed
    since it was read, put back those written (each as checked) and raise Raced."""
    done: list[tuple[Path, bytes, bytes]] = []
    for rw, data, _ in afters:
        p = vault / _inside(vault, entry["op"], rw.path)
        try:
            checked.replace(p, rw.before, data)
        except (checked.Changed, FileNotFoundError) as e:
            why = e.reason if isinstance(e, checked.Changed) else "it is gone"
            event(entry, "refused", rw.path, why)
            for q, before, after in reversed(done):
                try:
                    checked.replace(q, after, before)
                except checked.Changed as e2:
                    event(entry, "left", q.relative_to(vault).as_posix(), f"putting it back: {e2.reason}")
            raise Raced(f"{rw.path} changed while remembering ({why}); nothing was written") from None
        done.append((p, rw.before, data))


def _inside(vault: Path, op: str, rel: str) -> str:
    """`rel` when it names a file inside the vault (relative, normal, no symlink out of
    it); SplitError otherwise: the journal is never a way to write elsewhere."""
    root = os.path.realpath(vault)
    folder = os.path.realpath(vault / posixpath.dirname(rel)) if isinstance(rel, str) else ""
    if (not isinstance(rel, str) or posixpath.isabs(rel) or posixpath.normpath(rel) != rel or rel.startswith("../")
            or (folder != root and not folder.startswith(root + os.sep))):
        raise SplitError(f"remembered entry {op} names {rel!r}, which is not a file inside the vault")
    return rel


def _unedit(vault: Path, entry: dict) -> list[str]:
    """Put back what the entry's edits replaced, in each file where they stand as made (a
    crash or an abort between the journal and the end): the rest is left. Returns the paths
    touched."""
    touched = []
    for rel in dict.fromkeys(e["path"] for e in entry.get("edits") or []):
        p = vault / _inside(vault, entry["op"], rel)
        try:
            data = p.read_bytes()
            rest = _reverted(data, [e for e in entry["edits"] if e["path"] == rel])
            if rest is not None and rest != data:
                checked.replace(p, data, rest)
                touched.append(rel)
        except checked.Changed as e:
            event(entry, "left", rel, f"putting back what the entry changed: {e.reason}")
        except OSError:
            pass
    return touched


def _reverted(data: bytes, edits: list[dict]) -> bytes | None:
    """`data` with each edit's bytes replaced by what they replaced (each found at its
    offset, or once anywhere: an undo before it moved them), last first; None when one is
    not there as made."""
    for e in sorted(edits, key=lambda e: e["offset"], reverse=True):
        old, new = unb64(e["old"]), unb64(e["new"])
        at = e["offset"] if data[e["offset"] : e["offset"] + len(new)] == new else \
            data.find(new) if new and data.count(new) == 1 else -1
        if at < 0:
            return None
        data = data[:at] + old + data[at + len(new):]
    return data


def recover(vault: Path, journal: Journal) -> list[str]:
    """Cut back every append a crash left "prepared", and put back what its edits replaced.
    Returns the paths touched."""
    touched = []
    for entry in journal.all():
        if entry.get("status") == "prepared" and is_append(entry):
            try:
                if entry.get("append"):
                    _inside(vault, entry["op"], entry["note"])
                    if _cut_back(vault, entry):
                        touched.append(entry["note"])
                touched += _unedit(vault, entry)
                entry["status"] = "rolled back"
                journal.save(entry)
            except (SplitError, KeyError, TypeError, ValueError) as e:
                logger.error("journal entry %s left as it is: %s", entry.get("op"), e)
    return touched


def is_append(entry: dict) -> bool:
    """Whether a journal entry is a remembered entry's (appended, edits made, or both)."""
    return entry.get("kind") == CAPTURE and (isinstance(entry.get("append"), dict)
                                                   or isinstance(entry.get("edits"), list))


def locate(vault: Path, entry: dict) -> dict[str, tuple[bytes, bytes]]:
    """What undoing the entry writes: each file's bytes now, and its bytes with the entry's
    appended bytes taken out and its edits put back. SplitError when the entry cannot be
    undone: not done, a file gone or not a regular file, or the entry's bytes edited
    (nothing is undone)."""
    op, rel = entry["op"], entry["note"]
    if entry["status"] != "done":
        raise SplitError(f"remembered entry {op} is {entry['status']}, not done: nothing to undo")
    a = entry.get("append")
    edits = entry.get("edits") or []
    out: dict[str, tuple[bytes, bytes]] = {}
    for path in dict.fromkeys(([rel] if a else []) + [e["path"] for e in edits]):
        p = vault / _inside(vault, op, path)
        try:
            if not stat.S_ISREG(os.lstat(p).st_mode):
                raise SplitError(f"{path} is no longer a regular file: remembered entry {op} is not undone")
            data = p.read_bytes()
        except FileNotFoundError:
            raise SplitError(f"{path} is gone: remembered entry {op} has nothing left to undo") from None
        rest = data
        if a and path == rel:
            new = unb64(a["bytes"])
            at = a["offset"] if data[a["offset"] : a["offset"] + len(new)] == new else \
                data.find(new) if data.count(new) == 1 else -1
            if at < 0:
                raise SplitError(f"{rel}: the entry remembered by {op} was edited or removed since: undo takes "
                                 "out only the entry as it was written (edit the note by hand; --force does not "
                                 "change that)")
            rest = data[:at] + data[at + len(new):]
        mine = [e for e in edits if e["path"] == path]
        if mine and (rest := _reverted(rest, mine)) is None:
            raise SplitError(f"{path}: what remembered entry {op} changed there (an entry it marked, counted or "
                             "put under a heading) was edited since: undo puts back only what it wrote (edit the "
                             "note by hand; --force does not change that)")
        out[path] = (data, rest)
    return out


def changed_since(journal: Journal, entry: dict) -> str | None:
    """A later remembered entry, still done, one of whose edits changed bytes this one
    wrote (an entry counted again or marked superseded since); None when there is none."""
    wrote = [unb64(entry["append"]["bytes"])] if entry.get("append") else []
    wrote += [unb64(e["new"]) for e in entry.get("edits") or []]
    for other in journal.all():
        if other.get("status") == "done" and is_append(other) and other.get("time", 0) > entry.get("time", 0):
            for e in other.get("edits") or []:
                old = unb64(e["old"])
                if old and any(old in w for w in wrote):
                    return other["op"]
    return None


def undo(vault: Path, journal: Journal, entry: dict) -> list[str]:
    """Take the entry's bytes out of its capture note and put back what its edits replaced
    (see locate), all or nothing; remove the note (and the folders made for it, when empty)
    when nothing but the head it was made with is left. Returns the paths touched."""
    plan = locate(vault, entry)
    if later := changed_since(journal, entry):
        raise SplitError(f"remembered entry {later} changed what {entry['op']} wrote since (counted or marked "
                         f"it): undo {later} first; nothing was undone")
    a = entry.get("append")
    made = a if a and a["head"] is not None else next(  # the entry that made the note, undone before this one or not
        (e["append"] for e in journal.all() if is_append(e) and e.get("append") and e["note"] == entry["note"]
         and e["append"]["head"]), None)
    done: list[tuple[Path, bytes, bytes | None]] = []
    try:
        for path, (data, rest) in plan.items():
            p = vault / path
            if path == entry["note"] and made is not None and rest == unb64(made["head"]):
                checked.remove(p, data)
                _unmake(vault, made["made"])
                done.append((p, data, None))
            elif rest != data:
                checked.replace(p, data, rest)
                done.append((p, data, rest))
    except checked.Changed as e:
        event(entry, "refused", e.path.relative_to(vault).as_posix() if e.path.is_relative_to(vault) else
              entry["note"], f"undo: {e.reason}")
        for p, data, rest in reversed(done):  # what was undone is put back as it was
            try:
                checked.create(p, data) if rest is None else checked.replace(p, rest, data)
            except (checked.Changed, FileExistsError):
                event(entry, "left", p.relative_to(vault).as_posix(), "undo, putting it back: it changed")
        journal.save(entry)
        raise Raced(f"{entry['note']} changed while undoing remembered entry {entry['op']} ({e.reason}); "
                    "nothing was undone: try again") from None
    entry["status"] = "undone"
    journal.save(entry)
    return list(plan)


def _unmake(vault: Path, made: list[str]) -> None:
    """Remove the folders a capture made (deepest first), those left empty."""
    for rel in sorted(made, key=len, reverse=True):
        try:
            (vault / rel).rmdir()
        except OSError:
            pass
