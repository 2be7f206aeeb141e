"""Fault injection: the real daemon under SIGKILL, bad input, a full disk, lost watches, a
moved vault and a second daemon; nothing written may be lost, and the index must equal the
vault once the daemon settles.

    python bench/faults.py                              # every class, default runs (~10 min on 2 cores)
    python bench/faults.py --classes sigkill-split,two-daemons --runs 3 --seed 7
    python bench/faults.py --list

Each run of each class works on a fresh temp copy of a generated vault (300 notes in a few
folders, Markdown and Org, some Denote-named, wikilinks, links into headings, Markdown and
Org file links, six notes just under the split threshold, and notes linking into their
headings). Every note carries tokens (`zq` + ten consonants); each edit replaces one.
The daemon is started as `vaultd run` on a socket of its own, and the bench waits for it to
settle through `status` (reconciled, graph ready, nothing pending, the generation unchanged
for a second; for split classes also no grown note left unsplit).

Classes:
  sigkill-index   SIGKILL once or twice at random moments of the first index (1,200 notes),
                  a few edits while it is down; restart; settle.
  sigkill-churn   a writer edits/creates/renames/deletes ~40 times a second for 8 s while
                  the daemon is SIGKILLed 3 times at random moments and restarted.
  sigkill-split   auto-split on (threshold 4096, quiet 1 s); three notes grow past it; the
                  daemon is SIGKILLed mid-split: by VAULTD_SPLIT_CRASH_AFTER=K (odd runs) or
                  0-30 ms after a journal entry appears (even runs); restart; settle.
  bad-name        a note and a folder whose names are not UTF-8, at start and while running.
  huge-file       a sparse 64 GiB .md at start and another while running, among edits.
  deep-tree       1,100 nested folders with notes at the bottom, at start and while running.
  bad-journal     journal entries of the wrong shape in the vault's .vaultd/split/ (not an
                  object, bad JSON, wrong types, a path out of the vault); splits must go on.
  index-damage    between stop and start: bytes flipped in a segment's .store (odd runs) or
                  a .pos deleted (even runs), and a few edits.
  disk-full       the state folder on a 2 MiB tmpfs, filled up while the writer churns;
                  then the filler is removed (skipped when mount is not permitted).
  watch-limit     the daemon in `unshare -U -r` with max_inotify_watches below the vault's
                  folder count; edits in every folder (skipped when unavailable). When the
                  daemon's status says its watch is degraded with a fallback rescan, the
                  bench waits that long before it compares.
  root-moved      while running, the vault folder is renamed away and a copy put at its
                  path; edits to the copy (and one to the moved-away original, which must
                  not be indexed).
  coarse-mtime    edits that keep the size and the mtime (os.utime back): live, and while
                  the daemon is stopped.
  two-daemons     two daemons on one vault (own state folders and sockets), auto-split on,
                  under churn while three notes grow; only one may ever split.

Columns:
  runs        runs of the class.
  lost        lines of user text missing from the vault after the run (the split oracle's
              lines_lost: non-blank lines of every note as written, links masked, against
              the vault now; lines a split adds are extra, never missing), plus edits the
              filesystem acknowledged that never reached the index after settle (a token on
              disk that the index finds nowhere). The note column splits the two.
  stale       notes whose indexed state differed from disk after a settle, summed over the
              runs (distinct notes per run): a token on disk not found in its file, a token
              written over (or in a file that is no note: a name that is not UTF-8, the
              moved-away vault) still found, a path indexed that is not on disk or the
              reverse.
  crashed     runs in which a daemon exited by itself (not by our SIGTERM/SIGKILL or the
              split crash point), did not stop on SIGTERM, or stopped answering.
  recovered   runs whose last check, after the fault was removed and/or a restart, found
              the index equal to the disk.
  newly broken  links broken after the run that were not before (the daemon's `broken`,
              by raw text and reason), plus links whose meaning the split oracle finds
              broken, re-targeted or gone (split classes and two-daemons).
Details of every failure go to stderr. Exits 1 when any lost or stale is non-zero.
"""

from __future__ import annotations

import argparse
import base64
import errno
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _faults_util import (  # noqa: E402
    TOKEN, Check, Daemon, Generated, Writer, broken_links, check_index, generate, journal_entries,
    kill_at_split, lost_lines, rmtree, token, walk, write_tree,
)

SPLIT_CFG = "[split]\nthreshold = 4096\nwarn = 2048\nquiet = 1.0\n"
PLAIN_CFG = "[split]\nquiet = 1.0\n"


@dataclass
class Outcome:
    lines_lost: int = 0
    unindexed: set[str] = field(default_factory=set)
    stale: set[str] = field(default_factory=set)
    crashes: list[str] = field(default_factory=list)
    recovered: bool = False
    newly_broken: int = 0
    facts: Counter = field(default_factory=Counter)
    maxima: dict[str, float] = field(default_factory=dict)
    """Per class, the most of each (peak RSS, seconds to catch up)."""
    detail: list[str] = field(default_factory=list)
    skipped: str | None = None


class Run:
    """One run of one class: a work folder with a generated vault, the writer, the daemons."""

    def __init__(self, name: str, seed: int, k: int, keep: bool = False):
        self.name, self.k = name, k
        self.r = random.Random(f"{seed}/{name}/{k}")
        self.work = Path(tempfile.mkdtemp(prefix="vf"))
        self.vault = self.work / "vault"
        self.out = Outcome()
        self.daemons: list[Daemon] = []
        self.keep = keep
        self.gen: Generated | None = None
        self.w: Writer | None = None

    def make(self, n: int = 300, threshold: int = 15360, folders: int = 0, cfg: str = PLAIN_CFG) -> None:
        self.gen = generate(self.r.randrange(1 << 30), n, threshold=threshold, folders=folders)
        write_tree(self.vault, self.gen.files)
        self.w = Writer(self.vault, self.gen, self.r)
        self.cfg = self.work / "config.toml"
        self.cfg.write_text(cfg)

    def daemon(self, name: str = "d", **kw) -> Daemon:
        d = Daemon(self.work, self.vault, self.cfg, name, **kw)
        self.daemons.append(d)
        return d

    def settled(self, d: Daemon, label: str, timeout: float = 90, splits: bool = False) -> dict | None:
        self._since = time.monotonic()
        st = d.settle(timeout, splits)
        if st is None:
            self.out.detail.append(f"{label}: {d.name} did not settle: {d.crashes[-1:] or 'exited'}")
        elif st.get("unsettled"):
            self.out.detail.append(f"{label}: {d.name} still not settled after {timeout:.0f} s "
                                   f"(pending {st['pending']}, last_error {st.get('last_error')})")
        return st

    def check(self, d: Daemon, label: str) -> Check:
        """Compare the index with the vault; what differs is counted stale (and lost). When
        they differ and the daemon says its watch is degraded and that it rescans every N s
        instead (N <= 120), wait until N s (and 3) have passed since the last settle began,
        settle again and compare again: the daemon said when it would see what its watch
        cannot, and only what it still misses then counts."""
        c = check_index(d, self.w.tokens)
        w = c.status.get("watch") or {}
        every = w.get("rescan_every")
        if not c.equal and c.answered and (w.get("ok") is False or w.get("problem")):
            self.out.facts["watch degraded"] += 1
            self.out.detail.append(f"{label} ({d.name}): watch degraded: {str(w.get('problem'))[:200]}; "
                                   f"rescan every {every} s")
            if every and every <= 120:
                while time.monotonic() - getattr(self, "_since", 0) < every + 3 and d.alive():
                    time.sleep(0.5)
                self.settled(d, label + " (after the fallback rescan)")
                c = check_index(d, self.w.tokens)
                self.out.facts["seen after the fallback rescan" if c.equal else "missed by the fallback rescan"] += 1
        self.out.stale |= c.stale
        self.out.unindexed |= c.unindexed
        for line in c.detail[:6]:
            self.out.detail.append(f"{label} ({d.name}): {short(line)}")
        if len(c.detail) > 6:
            self.out.detail.append(f"{label} ({d.name}): ... {len(c.detail) - 6} more")
        if not c.equal and c.status:
            st = c.status
            self.out.detail.append(f"{label} ({d.name}): status: generation {st.get('generation')}, pending "
                                   f"{st.get('pending')}, last_error {st.get('last_error')}, watch {st.get('watch')}")
        return c

    def restart_check(self, d: Daemon, label: str = "after restart", splits: bool = False, **start) -> bool:
        """Stop (SIGTERM), start, settle, compare: whether the index equals the disk."""
        d.stop()
        d.start(**start)
        if self.settled(d, label, splits=splits) is None:
            return False
        return self.check(d, label).equal

    def lines(self) -> None:
        lost, bad = lost_lines(self.w.model, self.vault)
        self.out.lines_lost += sum(lost.values())
        for line, n in list(lost.items())[:5]:
            self.out.detail.append(f"line lost: {line[:100]!r} x{n}")
        if bad:
            self.out.newly_broken += len(bad)
            self.out.detail += [f"link: {b}" for b in bad[:5]]

    def finish(self) -> Outcome:
        for d in self.daemons:
            d.stop()
            self.out.crashes += [f"{d.name}: {c}" for c in d.crashes]
        if not self.keep:
            rmtree(self.work)
        else:
            self.out.detail.append(f"kept: {self.work}")
        return self.out


def short(text: str) -> str:
    """A path 1,100 folders deep, shortened: d/d/.../d/ as d/×1100/."""
    return re.sub(r"(?:d/){4,}", lambda m: f"d/×{len(m.group(0)) // 2}/", text)


def descendants(pid: int) -> set[int]:
    kids: dict[int, list[int]] = {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                kids.setdefault(ppid, []).append(int(p))
            except (OSError, ValueError, IndexError):
                pass
    out, todo = set(), [pid]
    while todo:
        for c in kids.get(todo.pop(), []):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def kill_with_orphans(run: Run, d: Daemon) -> None:
    """SIGKILL `d`; its parse workers must die with it (counted when they do not)."""
    kids = descendants(d.proc.pid) if d.proc else set()
    d.kill()
    deadline = time.monotonic() + 3
    while kids and time.monotonic() < deadline:
        kids = {k for k in kids if os.path.exists(f"/proc/{k}") and not _zombie(k)}
        time.sleep(0.05)
    if kids:
        run.out.facts["orphaned workers"] += len(kids)
        run.out.detail.append(f"workers {sorted(kids)} outlived the SIGKILLed daemon")
        for k in kids:
            try:
                os.kill(k, signal.SIGKILL)
            except OSError:
                pass


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


# -- the classes -------------------------------------------------------------------------------


_index_time: dict[int, float] = {}


def first_index_time(run: Run) -> float:
    """Seconds from start to a settled first index of this run's vault, measured once on a
    copy (so that the kills fall inside it on any machine)."""
    if not _index_time:
        copy = run.work / "calibrate"
        shutil.copytree(run.vault, copy)
        d = Daemon(run.work, copy, run.cfg, "calibrate")
        t = time.monotonic()
        d.start()
        while time.monotonic() - t < 120 and d.alive():
            try:
                st = d.ask("status", timeout=1)
                if st["reconciled"] and st.get("graph") == "ready":
                    break
            except Exception:
                pass
            time.sleep(0.02)
        _index_time[0] = time.monotonic() - t
        d.stop()
        rmtree(copy)
    return _index_time[0]


def sigkill_index(run: Run) -> None:
    run.make(n=1200)
    window = first_index_time(run)
    d = run.daemon()
    for i in range(run.r.choice((1, 2))):
        d.start()
        at = run.r.uniform(0.05, 1.0) * window
        t = time.monotonic()
        phase = "before it answered"
        while time.monotonic() - t < at and d.alive():
            try:
                st = d.ask("status", timeout=0.5)
                phase = ("during the first index" if not st["reconciled"] else
                         "during the link graph" if st.get("graph") != "ready" else "after the index")
            except Exception:
                pass
            time.sleep(0.02)
        run.out.facts[f"killed {phase}"] += 1
        kill_with_orphans(run, d)
        for _ in range(run.r.randint(0, 5)):  # edits while it is down
            run.w.step()
    d.start()
    if run.settled(d, "after restart") is not None:
        run.out.recovered = run.check(d, "after restart").equal
    run.lines()


def sigkill_churn(run: Run) -> None:
    run.make()
    d = run.daemon()
    d.start()
    run.settled(d, "first start")
    stop = threading.Event()
    th = run.w.churn(stop, 40)
    t0 = time.monotonic()
    for at in sorted(run.r.uniform(0.5, 7.0) for _ in range(3)):
        while time.monotonic() - t0 < at:
            time.sleep(0.01)
        kill_with_orphans(run, d)
        time.sleep(run.r.uniform(0, 0.8))
        d.start()
    while time.monotonic() - t0 < 8:
        time.sleep(0.05)
    stop.set()
    th.join()
    run.out.facts.update({f"{k}s": v for k, v in run.w.ops.items()})
    if run.settled(d, "after churn") is not None:
        run.out.recovered = run.check(d, "after churn").equal
    run.lines()


def sigkill_split(run: Run) -> None:
    run.make(threshold=4096, cfg=SPLIT_CFG)
    d = run.daemon()
    d.start()
    run.settled(d, "first start")
    before = broken_links(d)
    grown = run.r.sample(run.gen.growable, 3)
    if run.k % 2:
        d.stop()
        k = run.r.randint(1, 5)
        run.out.facts[f"crash after step {k}"] += 1
        d.start(env={"VAULTD_SPLIT_CRASH_AFTER": str(k)})
        run.settled(d, "start with the crash point")
        for g in grown:
            run.w.grow(g, run.r.randint(1500, 4000))
        deadline = time.monotonic() + 30
        while d.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        if d.proc is not None:
            run.out.detail.append("the crash point was never reached in 30 s")
            d.stop()
    else:
        stop = threading.Event()
        for g in grown:
            run.w.grow(g, run.r.randint(1500, 4000))
        seen: dict = {}
        kill_at_split(run.vault, d, run.r, 12.0, stop, seen).join()
        run.out.facts["killed mid-split" if seen.get("entry") else "killed, no split seen"] += 1
    prepared = sum(1 for e in journal_entries(run.vault) if e.get("status") == "prepared")
    run.out.facts["left prepared"] += prepared
    d.start()
    if run.settled(d, "after restart", splits=True) is not None:
        run.out.recovered = run.check(d, "after restart").equal
        try:
            after = broken_links(d)
            new = after - before
            run.out.newly_broken += sum(new.values())
            run.out.detail += [f"newly broken: {k} x{n}" for k, n in list(new.items())[:5]]
        except Exception as e:
            run.out.detail.append(f"broken: {e}")
    entries = journal_entries(run.vault)
    run.out.facts["splits done"] += sum(1 for e in entries if e.get("status") == "done")
    run.out.facts["rolled back"] += sum(1 for e in entries if e.get("status") == "rolled back")
    run.lines()


def bad_name(run: Run) -> None:
    run.make()
    v = run.vault

    def plant(rel: bytes) -> None:
        """A note under a name that is not UTF-8: left out, so its token must be found nowhere."""
        p = Path(os.fsdecode(bytes(v) + b"/" + rel))
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(f"# Bad name\n\nToken {run.w.new_token()} here.\n".encode())

    plant(b"notes/caf\xe9 latin1.md")
    plant(b"bad \xff\xfe dir/Good name inside.md")
    d = run.daemon()
    d.start()
    run.settled(d, "start with bad names")
    run.check(d, "start with bad names")
    plant(b"journal/\xc0\xaf overlong.md")
    plant(b"areas/\xed\xa0\x80 surrogate/Inside.md")
    for _ in range(5):
        run.w.edit()
    run.w.create()
    run.settled(d, "bad names while running")
    run.check(d, "bad names while running")
    src = Path(os.fsdecode(bytes(v) + b"/notes/caf\xe9 latin1.md"))  # renamed to a good name: indexed
    os.rename(src, v / "notes/cafe renamed.md")
    run.w.model["notes/cafe renamed.md"] = (v / "notes/cafe renamed.md").read_bytes()
    run.settled(d, "bad name renamed")
    run.check(d, "bad name renamed")
    run.out.recovered = run.restart_check(d)
    run.lines()


def huge_file(run: Run) -> None:
    run.make()
    with open(run.vault / "notes/Huge.md", "wb") as f:
        f.truncate(64 << 30)
    d = run.daemon()
    d.start()
    run.settled(d, "start with a 64 GiB note", timeout=180)
    run.check(d, "start with a 64 GiB note")
    for _ in range(3):
        run.w.edit()
    with open(run.vault / "journal/Huge 2.md", "wb") as f:
        f.truncate(64 << 30)
    for _ in range(3):
        run.w.edit()
    run.settled(d, "a 64 GiB note while running", timeout=180)
    run.check(d, "a 64 GiB note while running")
    if d.proc is not None:
        try:
            with open(f"/proc/{d.proc.pid}/status") as f:
                hwm = next(int(x.split()[1]) for x in f if x.startswith("VmHWM"))
            run.out.maxima["peak RSS MB"] = max(run.out.maxima.get("peak RSS MB", 0), hwm >> 10)
        except (OSError, StopIteration):
            pass
    run.out.recovered = run.restart_check(d)
    run.lines()


def _deep(root: Path, depth: int, note: str) -> str:
    """`depth` nested folders under `root` (made one at a time: os.makedirs recurses), a note at the bottom."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            try:
                os.mkdir("d", dir_fd=fd)
            except FileExistsError:
                pass
            nfd = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nfd
        with open(os.open(note, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=fd), "wb") as f:
            f.write(b"")
    finally:
        os.close(fd)
    return "/".join(["d"] * depth + [note])


def deep_tree(run: Run) -> None:
    run.make()
    v = run.vault

    def deep(top: str, note: str) -> None:
        (v / top).mkdir(exist_ok=True)
        rel = top + "/" + _deep(v / top, 1100, note)
        data = f"# {note}\n\nToken {run.w.new_token()} here, 1,100 folders down.\n".encode()
        (v / rel).write_bytes(data)
        run.w.model[rel] = data
        run.w.editable.append(rel)

    deep("deep", "Bottom.md")
    d = run.daemon()
    d.start()
    run.settled(d, "start with a deep tree")
    run.check(d, "start with a deep tree")
    deep("deeper", "Bottom too.md")
    for _ in range(3):
        run.w.edit()
    run.settled(d, "a deep tree made while running")
    run.check(d, "a deep tree made while running")
    for rel in [p for p in run.w.editable if p.startswith(("deep/", "deeper/"))]:
        run.w.edit(rel)
    run.settled(d, "deep notes edited")
    run.check(d, "deep notes edited")
    run.out.recovered = run.restart_check(d)
    run.lines()


def bad_journal(run: Run) -> None:
    run.make(threshold=4096, cfg=SPLIT_CFG)
    j = run.vault / ".vaultd" / "split"
    j.mkdir(parents=True)
    outside = run.work / "outside.md"
    outside.write_bytes(b"# Outside\n\nNot in the vault.\n")

    def b64(b: bytes) -> str:
        return base64.b64encode(b).decode()

    some = sorted(run.gen.files)[run.k % 50]
    bad = {
        "20250101T000000-aaaaaa.json": b"[]",
        "20250101T000001-aaaaab.json": b"{not json",
        "20250101T000002-aaaaac.json": json.dumps({"op": "20250101T000002-aaaaac", "note": 5, "status": "prepared",
                                                   "files": "x"}).encode(),
        "20250101T000003-aaaaad.json": json.dumps({"op": "20250101T000003-aaaaad", "note": some, "status": "prepared",
                                                   "time": 1, "files": [{"path": "../outside.md", "before": None,
                                                                         "after": b64(outside.read_bytes())}]}).encode(),
        "20250101T000004-aaaaae.json": json.dumps({"op": "20250101T000004-aaaaae", "note": some, "status": "done",
                                                   "time": "yesterday", "files": [{"path": some}]}).encode(),
        "20250101T000005-aaaaaf.json": json.dumps({"op": "20250101T000005-aaaaaf", "note": some, "status": "prepared",
                                                   "time": 2, "files": [{"path": some, "before": "!!not base64!!",
                                                                         "after": "%%"}]}).encode(),
        "not an op.json": json.dumps({"op": "../../x", "note": some, "status": "done"}).encode(),
        "20250101T000006-aaaaag.json": b"\xff\xfe\x00garbage",
    }
    for name, data in bad.items():
        (j / name).write_bytes(data)
    d = run.daemon()
    d.start()
    run.settled(d, "start with a bad journal")
    run.check(d, "start with a bad journal")
    before = broken_links(d) if d.alive() else Counter()
    g1, g2 = run.r.sample(run.gen.growable, 2)
    run.w.grow(g1, 3000)
    run.settled(d, "a split after a bad journal", splits=True)
    (j / "20250102T000000-bbbbbb.json").write_bytes(json.dumps({"op": "20250102T000000-bbbbbb", "note": None,
                                                                "status": 7, "files": [1, 2]}).encode())
    (j / "20250102T000001-bbbbbc.json").write_bytes(b"null")
    run.w.grow(g2, 3000)
    run.settled(d, "bad entries while running, another split", splits=True)
    try:
        d.ask("split", history=True)
    except Exception as e:
        run.out.detail.append(f"split --history fails: {e}")
        run.out.facts["history fails"] += 1
    run.check(d, "bad entries while running")
    if d.alive():
        new = broken_links(d) - before
        run.out.newly_broken += sum(new.values())
    done = {e["note"] for e in journal_entries(run.vault) if e.get("status") == "done"}
    run.out.facts["splits done"] += len(done & {g1, g2})
    if {g1, g2} - done:
        run.out.detail.append(f"not split after a bad journal: {sorted({g1, g2} - done)}")
    if outside.read_bytes() != b"# Outside\n\nNot in the vault.\n":
        run.out.detail.append("the file outside the vault named by a journal entry was changed")
        run.out.lines_lost += 1
    run.out.recovered = run.restart_check(d, splits=True)
    run.lines()


def index_damage(run: Run) -> None:
    run.make()
    d = run.daemon()
    d.start()
    run.settled(d, "first start")
    for _ in range(10):
        run.w.step()
    run.settled(d, "edits")
    d.stop()
    index = d.state / "index"
    if run.k % 2:
        stores = sorted(p for p in index.rglob("*.store") if p.stat().st_size > 64)
        if not stores:
            run.out.skipped = "no .store file in the index"
            return
        p = run.r.choice(stores)
        data = bytearray(p.read_bytes())
        for _ in range(16):
            i = run.r.randrange(len(data) // 4, len(data))
            data[i] ^= 0xFF
        p.write_bytes(bytes(data))
        run.out.facts["store flipped"] += 1
        run.out.detail.append(f"flipped 16 bytes of {p.relative_to(d.state)} ({len(data)} bytes)")
    else:
        pos = sorted(index.rglob("*.pos"))
        if not pos:
            run.out.skipped = "no .pos file in the index"
            return
        p = run.r.choice(pos)
        p.unlink()
        run.out.facts["pos deleted"] += 1
        run.out.detail.append(f"deleted {p.relative_to(d.state)}")
    for _ in range(5):
        run.w.step()
    d.start()
    if run.settled(d, "start on a damaged index") is not None:
        run.check(d, "start on a damaged index")
    run.out.recovered = run.restart_check(d)
    run.lines()


def _mount_tmpfs(path: Path, size: str) -> str | None:
    path.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
                       capture_output=True, text=True)
    return None if r.returncode == 0 else (r.stderr.strip() or f"mount exited {r.returncode}")


def disk_full(run: Run) -> None:
    run.make()
    fs = run.work / "statefs"
    why = _mount_tmpfs(fs, "2m")
    if why:
        run.out.skipped = f"tmpfs mount not permitted: {why}"
        return
    try:
        d = run.daemon(state=fs / "state")
        d.start()
        st = run.settled(d, "first start on a 2 MiB state folder")
        filler = fs / "filler"
        try:
            with open(filler, "wb") as f:  # whatever room is left (none: full already)
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
        except OSError as e:
            if e.errno != errno.ENOSPC:
                raise
        run.out.facts[f"index {'fit' if st and not st.get('last_error') else 'did not fit'} in 2 MiB"] += 1
        stop = threading.Event()
        th = run.w.churn(stop, 40)
        time.sleep(3)
        stop.set()
        th.join()
        t = time.monotonic()
        seen = None
        while time.monotonic() - t < 10 and d.alive():  # it must notice, keep the edits and go on answering
            try:
                st = d.ask("status", timeout=10)
            except Exception as e:
                run.out.detail.append(f"status while the disk is full: {e}")
                break
            if st.get("last_error"):
                seen = st
                break
            time.sleep(0.3)
        if seen:
            run.out.facts["disk full seen"] += 1
            run.out.detail.append(f"while full: pending {seen['pending']}, last_error {seen['last_error'][:120]}")
        filler.unlink()
        t = time.monotonic()
        if run.settled(d, "after room was made", timeout=150) is not None:
            run.out.maxima["s to catch up once room was made"] = round(time.monotonic() - t, 1)
            run.check(d, "after room was made")
        run.out.recovered = run.restart_check(d)
        run.lines()
        for dd in run.daemons:
            dd.stop()
    finally:
        subprocess.run(["umount", "-l", str(fs)], capture_output=True)


UNSHARE = ["unshare", "-U", "-r", "sh", "-c", 'echo "$0" > /proc/sys/user/max_inotify_watches && exec "$@"']


def _watch_limit_ok() -> str | None:
    try:
        r = subprocess.run([*UNSHARE, "7", "cat", "/proc/sys/user/max_inotify_watches"], capture_output=True,
                           text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return str(e)
    if r.returncode != 0 or r.stdout.strip() != "7":
        return r.stderr.strip() or f"unshare exited {r.returncode}"
    return None


def watch_limit(run: Run) -> None:
    why = _watch_limit_ok()
    if why:
        run.out.skipped = f"cannot lower max_inotify_watches in a user namespace: {why}"
        return
    run.make(folders=60)
    folders = 1 + sum(1 for _ in os.walk(run.vault))
    limit = 20
    run.out.detail.append(f"{folders} folders, max_inotify_watches {limit}")
    d = run.daemon(prefix=[*UNSHARE, str(limit)])
    d.start()
    run.settled(d, "start under the watch limit")
    run.check(d, "start under the watch limit")
    leaves = sorted(p for p in run.w.model if p.startswith("many/"))
    for rel in run.r.sample(leaves, 20):
        run.w.edit(rel)
    for _ in range(10):
        run.w.step()
    for k in range(5):  # new folders, with a note each
        rel = f"many/new{k}/Fresh {k}.md"
        (run.vault / rel).parent.mkdir(parents=True)
        data = f"# Fresh {k}\n\nToken {run.w.new_token()} here.\n".encode()
        (run.vault / rel).write_bytes(data)
        run.w.model[rel] = data
    run.settled(d, "edits under the watch limit")
    run.check(d, "edits under the watch limit")
    d.prefix = []  # the fault removed: the normal limit
    run.out.recovered = run.restart_check(d, "restart without the limit")
    run.lines()


def root_moved(run: Run) -> None:
    run.make()
    d = run.daemon()
    d.start()
    run.settled(d, "first start")
    moved = run.work / "vault.moved"
    os.rename(run.vault, moved)
    shutil.copytree(moved, run.vault, symlinks=True)
    for _ in range(8):
        run.w.edit()
    for _ in range(3):
        run.w.create()
    away = moved / sorted(run.w.editable)[0]  # an edit to the folder moved away: no longer the vault
    away.write_bytes(away.read_bytes() + f"\nToken {run.w.new_token()} away.\n".encode())
    run.settled(d, "vault folder replaced")
    c = run.check(d, "vault folder replaced")
    run.out.facts["followed live" if c.equal else "not followed live"] += 1
    run.out.recovered = run.restart_check(d)
    run.lines()


def _same_size_edit(run: Run, rel: str) -> None:
    """Replace one token with a new one in place, and put the mtime back."""
    p = run.vault / rel
    st = os.stat(p)
    data = p.read_bytes()
    old = TOKEN.findall(data)[0]
    new = run.w.new_token().encode()
    data = data.replace(old, new, 1)
    with open(p, "r+b") as f:
        f.write(data)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    run.w.model[rel] = data


def coarse_mtime(run: Run) -> None:
    run.make()
    d = run.daemon()
    d.start()
    run.settled(d, "first start")
    notes = run.r.sample([p for p in run.w.editable if TOKEN.search(run.w.model[p])], 20)
    for rel in notes[:10]:
        _same_size_edit(run, rel)
    run.settled(d, "same size and mtime, live")
    c = run.check(d, "same size and mtime, live")
    run.out.facts["live seen" if c.equal else "live missed"] += 1
    d.stop()
    for rel in notes[10:]:
        _same_size_edit(run, rel)
    d.start()
    run.settled(d, "same size and mtime, while stopped")
    c = run.check(d, "same size and mtime, while stopped")
    run.out.facts["stopped seen" if c.equal else "stopped missed"] += 1
    run.out.recovered = c.equal
    run.lines()


def two_daemons(run: Run) -> None:
    run.make(threshold=4096, cfg=SPLIT_CFG)
    a, b = run.daemon("a"), run.daemon("b")
    first = run.r.choice((a, b))
    first.start()
    time.sleep(run.r.uniform(0, 0.5))
    (b if first is a else a).start()
    for d in (a, b):
        run.settled(d, "start")
    before = broken_links(a)
    stop = threading.Event()
    th = run.w.churn(stop, 30)
    t0 = time.monotonic()
    for g, at in zip(run.r.sample(run.gen.growable, 3), sorted(run.r.uniform(0, 3) for _ in range(3))):
        while time.monotonic() - t0 < at:
            time.sleep(0.01)
        run.w.grow(g, run.r.randint(1500, 4000))
    while time.monotonic() - t0 < 4:
        time.sleep(0.05)
    stop.set()
    th.join()
    for d in (a, b):
        run.settled(d, "after churn", splits=True)
    for d in (a, b):
        run.settled(d, "after churn (again)", splits=True)
    splitters = set()
    ops = {e["op"] for e in journal_entries(run.vault) if e.get("status") in ("done", "aborted", "rolled back",
                                                                              "prepared", "undone")}
    for d in (a, b):
        text = d.log_text()
        mine = {op for op in ops if f"split {op}:" in text or f"split {op} " in text}
        if mine:
            splitters.add(d.name)
        run.out.facts[f"splits by {d.name}"] += len(mine)
    logged = set()
    for d in (a, b):
        text = d.log_text()
        logged |= {op for op in ops if f"split {op}:" in text or f"split {op} " in text}
    if ops - logged:
        run.out.detail.append(f"journal ops in no daemon's log: {sorted(ops - logged)}")
    run.out.facts[{0: "runs where none split", 1: "runs where one split"}.get(len(splitters), "runs where BOTH split")] += 1
    if len(splitters) > 1:
        run.out.detail.append(f"both daemons split: {sorted(splitters)}")
    equal = True
    for d in (a, b):
        equal &= run.check(d, "after churn").equal
        try:
            new = broken_links(d) - before
            run.out.newly_broken += sum(new.values())
            run.out.detail += [f"newly broken ({d.name}): {k} x{n}" for k, n in list(new.items())[:5]]
        except Exception as e:
            run.out.detail.append(f"broken ({d.name}): {e}")
    run.out.recovered = equal
    run.lines()


CLASSES = {
    "sigkill-index": (sigkill_index, 2),
    "sigkill-churn": (sigkill_churn, 2),
    "sigkill-split": (sigkill_split, 4),
    "bad-name": (bad_name, 1),
    "huge-file": (huge_file, 1),
    "deep-tree": (deep_tree, 2),
    "bad-journal": (bad_journal, 1),
    "index-damage": (index_damage, 2),
    "disk-full": (disk_full, 1),
    "watch-limit": (watch_limit, 1),
    "root-moved": (root_moved, 1),
    "coarse-mtime": (coarse_mtime, 1),
    "two-daemons": (two_daemons, 10),
}
LEGEND = """
lost: lines of user text missing from the vault (split oracle, links masked) + edits on disk the index never got
after settle (the note column says which). stale: notes whose index differed from disk after a settle (a token
missing from its file or found where it is not, a path indexed but gone or on disk but not indexed). crashed: runs
where a daemon exited by itself, hung on SIGTERM or stopped answering. recovered: runs whose last check, after the
fault was removed and/or a restart, found index = disk. newly broken: links broken (or re-targeted) that were not."""
COLUMNS = ["class", "runs", "lost", "stale", "crashed", "recovered", "newly broken", "note"]


def run_class(name: str, runs: int, seed: int, keep: bool) -> tuple[list, bool]:
    fn = CLASSES[name][0]
    outs: list[Outcome] = []
    t = time.perf_counter()
    for k in range(1, runs + 1):
        run = Run(name, seed, k, keep)
        try:
            fn(run)
        except Exception as e:  # the bench's own failure: said, and the run counted as not recovered
            import traceback

            run.out.detail.append(f"bench error: {type(e).__name__}: {e}")
            run.out.detail += traceback.format_exc().splitlines()[-6:]
            run.out.facts["bench errors"] += 1
        finally:
            out = run.finish()
        outs.append(out)
        bad = out.lines_lost or out.unindexed or out.stale or out.crashes or (not out.recovered and not out.skipped)
        if bad or out.skipped:
            print(f"{name} run {k} (seed {seed}){': skipped: ' + out.skipped if out.skipped else ''}", file=sys.stderr)
            for c in out.crashes:
                print(f"  crash: {c}", file=sys.stderr)
            for line in out.detail[:40] if bad else ():
                print(f"  {line}", file=sys.stderr)
    done = [o for o in outs if not o.skipped]
    if not done:
        return [name, 0, "-", "-", "-", "-", "-", f"skipped: {outs[0].skipped}"], False
    lines = sum(o.lines_lost for o in done)
    edits = sum(len(o.unindexed) for o in done)
    stale = sum(len(o.stale) for o in done)
    facts, maxima = Counter(), {}
    for o in done:
        facts.update(o.facts)
        for k, v in o.maxima.items():
            maxima[k] = max(maxima.get(k, v), v)
    note = [f"{lines} lines, {edits} edits"] if lines or edits else []
    note += [f"{k}: {v}" for k, v in sorted(facts.items())]
    note += [f"{k} (most): {v:g}" for k, v in sorted(maxima.items())]
    note.append(f"{time.perf_counter() - t:.0f} s")
    row = [name, len(done), lines + edits, stale, sum(1 for o in done if o.crashes),
           f"{sum(1 for o in done if o.recovered)}/{len(done)}", sum(o.newly_broken for o in done), "; ".join(note)]
    return row, bool(lines or edits or stale)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, help="runs of every class (default: each class's own, two-daemons 10)")
    ap.add_argument("--classes", help="comma-separated classes (default: all; see --list)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", action="store_true", help="keep each run's work folder (logs, vault, state)")
    ap.add_argument("--list", action="store_true", help="list the classes and their default runs")
    args = ap.parse_args()
    if args.list:
        for name, (_, runs) in CLASSES.items():
            print(f"{name}\t{runs}")
        return 0
    names = args.classes.split(",") if args.classes else list(CLASSES)
    unknown = [n for n in names if n not in CLASSES]
    if unknown:
        ap.error(f"unknown classes {unknown}; one of {', '.join(CLASSES)}")
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS), flush=True)
    failed = False
    t = time.perf_counter()
    for name in names:
        row, bad = run_class(name, args.runs or CLASSES[name][1], args.seed, args.keep)
        failed |= bad
        print("| " + " | ".join(str(x) for x in row) + " |", flush=True)
    print(LEGEND)
    print(f"{time.perf_counter() - t:.0f} s in all (seed {args.seed})", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
