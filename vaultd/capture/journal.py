"""A remembered entry in the split journal, and its undo. The journal entry holds what was
appended, not the note: the capture note's path, the offset the entry starts at, its exact
bytes, the file's identity (device, inode), and when the entry made the note, the note's
head (front matter) and the folders it made. So the journal grows by each entry's size,
however big the day's note gets.

Undo takes out exactly those bytes, while they are in the note unchanged (at their offset,
or once anywhere else: an entry undone before it moved them), and nothing else: entries
appended after it stay. A note the entry made is removed when nothing but its head is left,
and so are the folders it made, when empty. A crash between the journal and the append is
cut back at the next start (recover).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..split import splitter as split
from ..store import checked
from ..store.state import write_atomic


def append(vault: Path, journal: split.Journal, rel: str, new: bytes, size: int | None, head: bytes | None,
           mode: int, made: list[str]) -> dict:
    """Append `new` to the capture note `rel`, which held `size` bytes when read, in place
    (journaled and fsynced first; the note fsynced after); with `size` None, create it
    holding `head` then `new` (never over a file someone put there). Returns the done
    journal entry; SplitError when the note changed meanwhile (nothing was written)."""
    op, now = split.new_op(rel)
    entry = {"op": op, "time": now / 1e9, "kind": split.CAPTURE, "note": rel, "status": "prepared", "parts": [],
             "rewritten": 0, "oversized": [], "files": [],
             "append": {"offset": len(head) if size is None else size, "bytes": split._b64(new),
                        "head": split._b64(head), "made": made, "file": None}}
    p = vault / rel
    fd, saved = None, False
    try:
        if size is not None:
            fd = os.open(p, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size != size:
                raise split.SplitError(f"{rel} changed while remembering; nothing was written")
            entry["append"]["file"] = [st.st_dev, st.st_ino]
            checked.step("checked", p)
        journal.save(entry)
        saved = True
        split._crash_point(1)
        if fd is None:
            try:
                st = write_atomic(p, head + new, mode, new=True)
            except FileExistsError:
                raise split.SplitError(f"{rel} was created by someone else while remembering; nothing was written")
            entry["append"]["file"] = [st.st_dev, st.st_ino]
        else:
            view = memoryview(new)
            checked.step("written", p)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
            checked.step("done", p)
        split._crash_point(2)
    except BaseException as e:
        if fd is not None:
            os.close(fd)
            fd = None
        if saved:
            _cut_back(vault, entry)
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
    new, head = split._unb64(a["bytes"]), split._unb64(a["head"])
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
        split.event(entry, "left", entry["note"], f"cutting back the entry: {e.reason}")
        return False
    except OSError:
        return False


def recover(vault: Path, journal: split.Journal) -> list[str]:
    """Cut back every append a crash left "prepared". Returns the paths touched."""
    touched = []
    for entry in journal.all():
        if entry.get("status") == "prepared" and isinstance(entry.get("append"), dict):
            try:
                split._changes({"op": entry["op"], "files": [{"path": entry["note"], "before": None, "after": None}]},
                               vault)  # a path inside the vault, or SplitError
                if _cut_back(vault, entry):
                    touched.append(entry["note"])
                entry["status"] = "rolled back"
                journal.save(entry)
            except (split.SplitError, KeyError, TypeError, ValueError) as e:
                split.logger.error("journal entry %s left as it is: %s", entry.get("op"), e)
    return touched


def is_append(entry: dict) -> bool:
    return entry.get("kind") == split.CAPTURE and isinstance(entry.get("append"), dict)


def locate(vault: Path, entry: dict) -> tuple[bytes, int]:
    """The capture note's bytes now, and where the entry's bytes are in them. SplitError
    when the entry cannot be undone: not done, the note gone or not a regular file, or the
    entry's bytes edited (nothing is undone)."""
    op, rel = entry["op"], entry["note"]
    if entry["status"] != "done":
        raise split.SplitError(f"remembered entry {op} is {entry['status']}, not done: nothing to undo")
    split._changes({"op": op, "files": [{"path": rel, "before": None, "after": None}]}, vault)
    p = vault / rel
    try:
        if not stat.S_ISREG(os.lstat(p).st_mode):
            raise split.SplitError(f"{rel} is no longer a regular file: remembered entry {op} is not undone")
        data = p.read_bytes()
    except FileNotFoundError:
        raise split.SplitError(f"{rel} is gone: remembered entry {op} has nothing left to undo") from None
    a = entry["append"]
    new = split._unb64(a["bytes"])
    at = a["offset"] if data[a["offset"] : a["offset"] + len(new)] == new else \
        data.find(new) if data.count(new) == 1 else -1
    if at < 0:
        raise split.SplitError(f"{rel}: the entry remembered by {op} was edited or removed since: undo takes out only "
                               "the entry as it was written (edit the note by hand; --force does not change that)")
    return data, at


def undo(vault: Path, journal: split.Journal, entry: dict) -> list[str]:
    """Take the entry's bytes out of its capture note (see locate); remove the note (and
    the folders made for it, when empty) when nothing but the head it was made with is
    left. Returns the paths touched."""
    data, at = locate(vault, entry)
    a, p = entry["append"], vault / entry["note"]
    rest = data[:at] + data[at + len(split._unb64(a["bytes"])):]
    made = a if a["head"] is not None else next(  # the entry that made the note, undone before this one or not
        (e["append"] for e in journal.all() if is_append(e) and e["note"] == entry["note"] and e["append"]["head"]), None)
    try:
        if made is not None and rest == split._unb64(made["head"]):
            checked.remove(p, data)
            _unmake(vault, made["made"])
        else:
            checked.replace(p, data, rest)
    except checked.Changed as e:
        split.event(entry, "refused", entry["note"], f"undo: {e.reason}")
        journal.save(entry)
        raise split.Raced(f"{entry['note']} changed while undoing remembered entry {entry['op']} ({e.reason}); "
                          "nothing was undone: try again") from None
    entry["status"] = "undone"
    journal.save(entry)
    return [entry["note"]]


def _unmake(vault: Path, made: list[str]) -> None:
    """Remove the folders a capture made (deepest first), those left empty."""
    for rel in sorted(made, key=len, reverse=True):
        try:
            (vault / rel).rmdir()
        except OSError:
            pass
