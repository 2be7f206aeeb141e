"""An editor's save raced against every step of vaultd's journaled writes (issue 38).

Each race builds a small vault (a note over the split threshold, two notes linking into
its sections, a capture folder), runs one journaled operation through the real Vault
(a split, the undo of a split, the undo of a remembered entry, a remembered entry's
append, an entry that supersedes an older one, marking it) and, at its K-th step (store/checked.py's `pause`: after the check, after the
temporary file is written, after the swap, when a file is done), has an "editor" save
one of the files the operation writes, in one of three ways editors do:

- `inplace`: open(f, "w") and write (truncates the file the path names);
- `rename`: write a temporary file and rename it over the note (atomic save);
- `backup`: rename the note to `note~`, then write a new file (Emacs' default, Vim's
  `backupcopy=no`).

The save is the file's text as the editor reads it at that moment plus a line of its own.
A save is lost when that line is in no file of the vault once the operation has ended.
An operation that stopped because of the save must say so in its journal entry.

Used by tests/test_write_race.py (a sample of races) and bench/races.py (all of them).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import random
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import msgspec

from conftest import wait_for
from vaultd.config import Config
from vaultd.errors import QueryError
from vaultd.store import checked
from vaultd.vault import Vault

OPS = ("split", "undo split", "undo remember", "remember", "supersede")
EDITORS = ("inplace", "rename", "backup")
OLD = time.time() - 3600


@contextlib.contextmanager
def paused(at: Callable[[str, Path, int | None], None]):
    """store/checked.py's steps call `at` while in this block (its test-only injection point)."""
    checked.pause = at
    try:
        yield
    finally:
        checked.pause = None


def breaking(fd: int) -> bool:
    """Whether someone's open() for writing is breaking the lease held on `fd` (and waits)."""
    return fcntl.fcntl(fd, fcntl.F_GETLEASE) != fcntl.F_RDLCK


def _section(i: int) -> str:
    words = " ".join(f"word{i}x{j}" for j in range(700))
    return f"## Section {i}\n\n{words}\n\n"


def make_vault(root: Path) -> None:
    notes = root / "notes"
    notes.mkdir(parents=True)
    (notes / "hub.md").write_text("# Hub\n\nThe intro of the hub.\n\n" + "".join(_section(i) for i in range(5)))
    (notes / "a.md").write_text("# A\n\nSee [[hub#Section 3]] and [[hub#Section 1]].\n")
    (notes / "b.md").write_text("# B\n\nAlso [[hub#Section 4]], and [the second](hub.md#section-2).\n")
    (root / "inbox").mkdir()
    for p in root.rglob("*"):
        os.utime(p, (OLD, OLD))


def open_vault(root: Path, state: Path) -> Vault:
    cfg = Config(vault=str(root), state_dir=str(state))
    cfg = msgspec.structs.replace(cfg, split=msgspec.structs.replace(cfg.split, mode="propose"),
                                  capture=msgspec.structs.replace(cfg.capture, folder="inbox")).load()
    v = Vault(cfg)
    v.reconcile()
    return v


def _prepare(v: Vault, op: str) -> str | None:
    """What must be done (unraced) before the raced operation; the op to undo."""
    if op == "undo split":
        return v.split_note("notes/hub.md", check_quiet=False)["op"]
    if op == "undo remember":
        return v.remember("The backup runs nightly at 02:00 from the NAS.", ["infra"])["op"]
    if op == "remember":
        v.remember("A first entry, so the note exists and the next one is appended.", ["infra"])
    if op == "supersede":
        v.remember("The backup of the NAS runs nightly at 02:00 to the cloud bucket.", ["infra"])
    return None


def _run(v: Vault, op: str, undo: str | None) -> None:
    if op == "split":
        v.split_note("notes/hub.md", check_quiet=False)
    elif op == "remember":
        v.remember("Rotate the API keys every ninety days, says the security note.", ["security"])
    elif op == "supersede":  # marks the older entry superseded: an edit of the capture note, then the append
        assert v.remember("The backup of the NAS runs nightly at 03:00 to the cloud bucket.", ["infra"])["supersedes"]
    else:
        v.split_undo(undo)


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and ".vaultd" not in p.parts}


def save(path: Path, how: str, line: bytes) -> None:
    """An editor saves `path`: what it holds now plus `line`, as editors of kind `how` do."""
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        text = b""
    data = text + line
    if how == "inplace":
        with open(path, "wb") as f:
            f.write(data)
    elif how == "rename":
        tmp = path.with_name(path.name + ".editor-tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
    else:
        try:
            os.replace(path, path.with_name(path.name + "~"))
        except FileNotFoundError:
            pass
        path.write_bytes(data)


@dataclass
class Race:
    op: str
    step: int
    editor: str
    at: str = ""
    """The step's name and the file it was on."""
    target: str = ""
    outcome: str = ""
    """'done' (the operation took effect) or 'refused' (it stopped, saying why)."""
    lost: bool = False
    recorded: bool = True
    """When refused: whether the journal says why."""
    leftovers: int = 0
    """Temporary files of vaultd's left in the vault."""
    error: str = ""


def steps(tmp: Path, op: str) -> list[str]:
    """The steps of `op`, in order (name and file), on a fresh vault."""
    root, state = tmp / "count" / "vault", tmp / "count" / "state"
    make_vault(root)
    v = open_vault(root, state)
    seen: list[str] = []
    try:
        undo = _prepare(v, op)
        with paused(lambda name, path, fd: seen.append(f"{name} {path.relative_to(root).as_posix()}")):
            _run(v, op, undo)
    finally:
        v.close()
    return seen


def race(tmp: Path, op: str, step: int, editor: str, rng: random.Random) -> Race:
    """One race: `editor` saves a file at the `step`-th step of `op`."""
    r = Race(op, step, editor)
    root, state = tmp / "vault", tmp / "state"
    make_vault(root)
    v = open_vault(root, state)
    line = f"\nsaved by the editor {uuid.uuid4().hex}\n".encode()
    editors: list[threading.Thread] = []
    count = [0]
    try:
        undo = _prepare(v, op)
        writable = sorted(rel for rel in _files(root) if rel.endswith(".md"))

        def pause(name: str, path: Path, fd: int | None) -> None:
            k = count[0]
            count[0] += 1
            if k != step:
                return
            rel = path.relative_to(root).as_posix()
            r.at = f"{name} {rel}"
            r.target = rel if rng.random() < 0.75 or not writable else rng.choice(writable)
            leased = fd is not None and not breaking(fd)
            t = threading.Thread(target=save, args=(root / r.target, editor, line), daemon=True)
            editors.append(t)
            t.start()
            wait_for(lambda: not t.is_alive() or (leased and breaking(fd)), interval=0.0005)  # done, or waiting on us

        try:
            with paused(pause):
                _run(v, op, undo)
            r.outcome = "done"
        except QueryError as e:
            r.outcome, r.error = "refused", str(e)
        for t in editors:
            t.join(60)
        files = _files(root)
        r.lost = bool(editors) and not any(line in b for b in files.values())
        r.leftovers = sum(1 for rel in files if rel.endswith(".tmp"))
        if r.outcome == "refused":
            history = v.split_history()["history"]
            r.recorded = any(e.get("events") or e.get("reason") for e in history)
    finally:
        v.close()
    return r
