"""In-place rewrites against the real daemon, and the oracle that its index then equals a
fresh build. Shared by tests/test_inplace_property.py (make test) and bench/inplace.py.

An example is a folder of a few notes and a random sequence of operations on them:
truncate (`open(f, "w")`), an in-place rewrite that keeps the size (truncate, maybe a
pause with the file open, write), append, rename (to a new name or over another note of
the folder), utime (the mtime set back to one the note had: a sync tool, `touch -r`, a
restore) and chmod. Every note holds tokens (`zq` and ten consonants: no stemmer touches
them, no two alike); each write puts new ones in. Once the daemon has settled, each token
on disk must be found in exactly the notes that hold it, each token written over found
nowhere, and `list` must hold exactly the notes on disk.

Examples run a round at a time, several at once (disjoint folders, the steps interleaved,
random pauses between them, some past the watcher's debounce). A round ends with a
barrier: a new note written after the round's last step. The watcher reports events in
the order they happened, and a path is taken for a batch no later than any path whose
events came after its own (see Debouncer.take), so once the barrier note is listed and
nothing is pending, every change of the round has been committed: no sleep-and-hope.

The round's check, the next round's set-up and the removal of the last round's folders
share one barrier: [set up r1] B [steps r1, set up r2] B [check r1, remove r1, steps r2,
set up r3] B ...
"""

from __future__ import annotations

import os
import random
import re
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from conftest import wait_for

CONSONANTS = "bcdfghjklmnpqrtvwxz"
TOKEN = re.compile(r"\bzq[bcdfghjklmnpqrtvwxz]{10}\b")
WORDS = "memory index search agent note vault graph link context tree budget cache journal project".split()
PAUSES = (0.0, 0.0, 0.0, 0.0, 0.001, 0.005, 0.02, 0.08, 0.35)
"""Seconds between two steps (and, in a rewrite, between the truncate and the write): most
none, some past the watcher's default 300 ms debounce, so a batch may be taken mid-rewrite."""

CLASSES = ("rewrite-utime", "gap-rewrite", "append-utime", "rename", "chmod", "mixed")
"""What an example does:
- rewrite-utime: in-place rewrites keeping the size, the mtime set back after each (the issue)
- gap-rewrite: as rewrite-utime, the file left empty and open a while between truncate and write
- append-utime: appends, the mtime set back
- rename: rewrites and renames (to a new name, or over another note of the example)
- chmod: rewrites, chmods and mtimes set back
- mixed: any operation, any order"""

BARRIER_DIR = "zbarrier"

Ask = Callable[..., dict]
"""ask(op, **args) -> the daemon's result (raising when it answers an error)."""


def new_token(r: random.Random) -> str:
    return "zq" + "".join(r.choice(CONSONANTS) for _ in range(10))


def note_text(r: random.Random, n: int) -> bytes:
    """A small Markdown note with `n` tokens among ordinary words."""
    words = [r.choice(WORDS) for _ in range(6)]
    lines = [f"# {r.choice(WORDS).title()} {r.choice(WORDS)}", ""]
    for _ in range(n):
        lines.append(" ".join([*r.sample(words, 3), new_token(r), *r.sample(words, 2)]) + ".")
    return ("\n".join(lines) + "\n").encode()


def tokens_of(data: bytes) -> set[str]:
    return set(TOKEN.findall(data.decode(errors="replace")))


@dataclass
class Example:
    """One example: its folder, its class, and what it did (for a failure's report)."""

    folder: str
    cls: str
    r: random.Random
    names: list[str] = field(default_factory=list)
    """The notes it holds now (vault-relative paths)."""
    stamps: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    """(atime_ns, mtime_ns) each note had before each of its changes: what utime puts back."""
    written: set[str] = field(default_factory=set)
    """Every token it ever wrote."""
    steps: list[tuple[str, Callable[[], None]]] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    """The steps taken, described, in order."""
    serial: int = 0


class Rounds:
    """Runs examples against a daemon at `vault`, a round at a time; `ask` talks to it."""

    def __init__(self, vault: Path, ask: Ask, seed: int, per_round: int = 10, notes: int = 3,
                 ops: tuple[int, int] = (4, 8), timeout: float = 60.0):
        self.vault, self.ask, self.seed = vault, ask, seed
        self.r = random.Random(seed)
        self.per_round, self.notes, self.ops, self.timeout = per_round, notes, ops, timeout
        self.barriers = 0
        self.made = 0

    # -- a round -------------------------------------------------------------------------

    def run(self, examples: int, on_result: Callable[[Example, list[str]], None]) -> None:
        """`examples` examples, each reported to on_result(example, mismatches) once checked."""
        pending: list[Example] = []  # set up, steps not taken yet
        checking: list[Example] = []  # steps taken, not checked yet
        left = examples
        while left or pending or checking:
            for ex in checking:
                on_result(ex, self.check(ex))
            for ex in checking:
                shutil.rmtree(self.vault / ex.folder, ignore_errors=True)
            self.interleave(pending)
            checking, pending = pending, []
            for _ in range(min(left, self.per_round)):
                pending.append(self.set_up(self.r.choice(CLASSES)))
                left -= 1
            self.barrier()
            for ex in pending:  # as indexed: what utime may put back
                for p in ex.names:
                    st = os.stat(self.vault / p)
                    ex.stamps[p] = [(st.st_atime_ns, st.st_mtime_ns)]

    def set_up(self, cls: str) -> Example:
        self.made += 1
        ex = Example(f"ex{self.made:05d}", cls, random.Random(self.r.getrandbits(64)))
        (self.vault / ex.folder).mkdir()
        for i in range(self.notes):
            p = f"{ex.folder}/n{i}.md"
            data = note_text(ex.r, ex.r.randint(1, 3))
            (self.vault / p).write_bytes(data)
            ex.names.append(p)
            ex.written |= tokens_of(data)
        ex.serial = self.notes
        return ex

    def interleave(self, examples: list[Example]) -> None:
        """Each example's steps, planned now, taken in its own thread (so the examples'
        steps interleave, and their pauses overlap), a random pause after each."""
        errors: list[BaseException] = []

        def run(ex: Example, steps: list[Callable[[], None]]) -> None:
            try:
                for step in steps:
                    step()
                    time.sleep(ex.r.choice(PAUSES))  # scenario: the edits' own timing, what is tested
            except BaseException as e:  # the harness's own failure: raised in the caller
                errors.append(e)

        threads = [threading.Thread(target=run, args=(ex, self.plan(ex)), name=ex.folder) for ex in examples]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]

    def barrier(self) -> None:
        """Write a new barrier note (the last one removed first) and wait until the daemon
        lists it and has nothing pending: every change made before it is then committed."""
        d = self.vault / BARRIER_DIR
        d.mkdir(exist_ok=True)
        for old in d.iterdir():
            old.unlink()
        self.barriers += 1
        name = f"b{self.barriers:05d}.md"
        (d / name).write_text(f"# Barrier {self.barriers}\n")
        want = [f"{BARRIER_DIR}/{name}"]
        wait_for(lambda: [n["path"] for n in self.ask("list", path=[BARRIER_DIR])["notes"]] == want
                 and self.ask("status")["pending"] == 0, timeout=self.timeout, interval=0.02)

    # -- the operations ------------------------------------------------------------------

    def plan(self, ex: Example) -> list[Callable[[], None]]:
        """The example's steps as closures, drawn as its class says (a step's target is
        drawn when it runs: a rename changes the names)."""
        n = ex.r.randint(*self.ops)
        kinds = {
            "rewrite-utime": ["rewrite", "utime"],
            "gap-rewrite": ["gap-rewrite", "utime"],
            "append-utime": ["append", "utime"],
            "rename": ["rewrite", "rename", "utime"],
            "chmod": ["rewrite", "chmod", "utime"],
        }.get(ex.cls)
        if kinds is None:
            seq = [ex.r.choice(("truncate", "rewrite", "gap-rewrite", "append", "rename", "utime", "chmod"))
                   for _ in range(n)]
        else:
            seq = [kinds[i % len(kinds)] for i in range(max(n, len(kinds)))]
        return [lambda k=k: self.step(ex, k) for k in seq]

    def step(self, ex: Example, kind: str) -> None:
        r = ex.r
        if not ex.names:
            return
        p = r.choice(ex.names)
        f = self.vault / p
        st = os.stat(f)
        ex.stamps.setdefault(p, []).append((st.st_atime_ns, st.st_mtime_ns))
        if kind == "truncate":
            with open(f, "w"):
                pass
            ex.done.append(f"truncate {p}")
        elif kind in ("rewrite", "gap-rewrite"):
            old = f.read_bytes()
            new = TOKEN.sub(lambda m: new_token(r), old.decode()).encode() if tokens_of(old) else note_text(r, 1)
            ex.written |= tokens_of(new)
            gap = r.uniform(0.32, 0.6) if kind == "gap-rewrite" else r.choice(PAUSES)
            with open(f, "wb") as out:  # truncated here
                out.flush()
                if gap:
                    time.sleep(gap)  # scenario: the file left empty this long (past the debounce, or not)
                out.write(new)
            ex.done.append(f"{kind} {p} ({len(old)} -> {len(new)} bytes, {gap:.3f} s open empty)")
        elif kind == "append":
            more = f"{' '.join(r.sample(WORDS, 2))} {new_token(r)}.\n".encode()
            ex.written |= tokens_of(more)
            with open(f, "ab") as out:
                out.write(more)
            ex.done.append(f"append {p}")
        elif kind == "rename":
            others = [q for q in ex.names if q != p]
            if others and r.random() < 0.4:
                dest = r.choice(others)
                ex.names.remove(dest)
            else:
                dest = f"{ex.folder}/n{ex.serial}.md"
                ex.serial += 1
            os.rename(f, self.vault / dest)
            ex.names[ex.names.index(p)] = dest
            ex.stamps[dest] = ex.stamps.pop(p)
            ex.done.append(f"rename {p} -> {dest}")
        elif kind == "utime":
            at, mt = r.choice(ex.stamps[p])
            os.utime(f, ns=(at, mt))
            ex.done.append(f"utime {p} back to {mt}")
        elif kind == "chmod":
            mode = 0o600 if st.st_mode & 0o777 != 0o600 else 0o644
            os.chmod(f, mode)
            ex.done.append(f"chmod {p} {mode:o}")
        else:
            raise ValueError(kind)

    # -- the oracle ----------------------------------------------------------------------

    def check(self, ex: Example) -> list[str]:
        """What differs between the index and a fresh build of the example's notes: a token on
        disk not found where it is, a former one found, a note listed but gone or there and
        not listed."""
        out = []
        on_disk = {p.relative_to(self.vault).as_posix(): p.read_bytes()
                   for p in sorted((self.vault / ex.folder).glob("*.md"))}
        listed = {n["path"] for n in self.ask("list", path=[ex.folder])["notes"]}
        for p in sorted(listed ^ on_disk.keys()):
            out.append(f"{p}: {'listed, not on disk' if p in listed else 'on disk, not listed'}")
        where: dict[str, set[str]] = {}
        for p, data in on_disk.items():
            for t in tokens_of(data):
                where.setdefault(t, set()).add(p)
        for t in sorted(ex.written):
            hits = {h["path"] for h in self.ask("search", q=f"+{t} ", limit=50, scope="all", snippets=False)["hits"]}
            want = where.get(t, set())
            if hits != want:
                out.append(f"token {t}: found in {sorted(hits)}, on disk in {sorted(want)}")
        return out
