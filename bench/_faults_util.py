"""Plumbing for bench/faults.py: a generated vault, a writer that churns it, the real
daemon as a subprocess, waiting for it to settle, and the oracles that compare the index
and the vault with what was written.

Every note the bench writes carries tokens (`zq` and ten consonants: no stemmer touches
them, no two are alike); each edit replaces one. After the daemon settles, each token
still on disk must be found by the index in exactly the files that hold it, and each
token written over must be found nowhere.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from split_oracle import View, compare, lines_lost  # noqa: E402

CONSONANTS = "bcdfghjklmnpqrtvwxz"
TOKEN = re.compile(rb"\bzq[bcdfghjklmnpqrtvwxz]{10}\b")
NOTE_EXT = (".md", ".org")
IGNORE_DIRS = {".git", ".obsidian", ".trash", ".stversions", "node_modules"}
BIG = 8 << 20
"""Files over this are not read by the oracles (the sparse 64 GiB note): they hold no token."""

WORDS = ("memory index search agent note vault graph link context tree budget cache latency archive "
         "journal project area resource keyword daemon socket query ranking recency access tier split "
         "heading section outline agenda capture review garden habit routine principle pattern entity "
         "decision preference constraint summary reflection retrieval precision recall benchmark "
         "throughput editor shell service event segment commit merge reader writer schema field "
         "snippet phrase boolean range week month value identity knowledge opinion world").split()


def token(r: random.Random) -> str:
    return "zq" + "".join(r.choice(CONSONANTS) for _ in range(10))


def sentence(r: random.Random) -> str:
    s = " ".join(r.choice(WORDS) for _ in range(r.randint(7, 14)))
    return s[0].upper() + s[1:] + "."


def paragraph(r: random.Random, n: int | None = None) -> str:
    return " ".join(sentence(r) for _ in range(n or r.randint(2, 4)))


# -- the vault -------------------------------------------------------------------------------


@dataclass
class Generated:
    files: dict[str, bytes]
    growable: list[str]
    """Markdown notes just under the threshold, with headings: grown past it, they split."""
    protected: set[str]
    """Notes the churn writer leaves alone: the growable ones and those linking into them
    (the splitter rewrites those links; an edit racing it is another test)."""


FOLDERS = ["notes", "notes", "notes", "journal", "projects", "areas/health", "areas/work", "archive"]


def generate(seed: int, n: int = 300, threshold: int = 4096, growable: int = 6, folders: int = 0) -> Generated:
    """A vault of `n` notes (a fifth of them Org, some Denote-named) in a few folders, with
    wikilinks, links into headings, Markdown and Org file links, `growable` notes at about
    70% of `threshold`, and `folders` extra empty-ish folders (each with one note)."""
    r = random.Random(seed)
    files: dict[str, bytes] = {}
    names: list[tuple[str, str, list[str]]] = []  # (rel, title, headings)
    for i in range(n):
        folder = r.choice(FOLDERS)
        if i % 5 == 4:
            ident = f"2025{1 + i % 12:02d}{1 + i % 28:02d}T{i % 24:02d}{i % 60:02d}{(i * 7) % 60:02d}"
            title = f"topic {i:03d} {r.choice(WORDS)}"
            rel = f"{folder}/{ident}--{title.replace(' ', '-')}__{r.choice(WORDS)}.org"
        else:
            title = f"Note {i:03d} {r.choice(WORDS)}"
            rel = f"{folder}/{title}.md"
        names.append((rel, title, [f"Section {k} {r.choice(WORDS)}" for k in range(1, r.randint(2, 5))]))
    grow = [f"notes/Grow {k}.md" for k in range(growable)]
    grow_heads = {g: [f"Part {k} {r.choice(WORDS)}" for k in range(1, 6)] for g in grow}
    linkers = set()
    for g in grow:  # two notes link into each growable note's later headings: rewritten by a split
        for h in grow_heads[g][2:4]:
            rel = r.choice(names)[0]
            linkers.add(rel)
            files.setdefault("__links__" + rel, b"")
            files["__links__" + rel] += f"See [[{Path(g).stem}#{h}]] for that.\n".encode()
    for rel, title, heads in names:
        extra = files.pop("__links__" + rel, b"").decode()
        org = rel.endswith(".org")
        out = [f"#+title: {title}\n#+filetags: :{r.choice(WORDS)}:\n" if org else f"# {title}\n", "\n"]
        tok_at = r.randrange(len(heads))
        for k, h in enumerate(heads):
            out.append(f"{'*' if org else '##'} {h}\n\n{paragraph(r)}\n\n")
            if k == tok_at:
                out.append(f"Token {token(r)} here.\n\n")
            for _ in range(r.randint(0, 2)):
                t_rel, t_title, t_heads = r.choice(names)
                if org:
                    rp = os.path.relpath(t_rel, os.path.dirname(rel))
                    out.append(f"Also [[file:{rp}][{t_title}]].\n\n")
                elif t_rel.endswith(".org") or r.random() < 0.3:
                    rp = os.path.relpath(t_rel, os.path.dirname(rel)).replace(" ", "%20")
                    out.append(f"Read [{t_title}]({rp}).\n\n")
                elif r.random() < 0.5:
                    out.append(f"Link [[{t_title}#{r.choice(t_heads)}]].\n\n")
                else:
                    out.append(f"Link [[{t_title}]].\n\n")
        if extra:
            out.append(("" if org else "## Links\n\n") + extra)
        files[rel] = "".join(out).encode()
    for g in grow:
        out = [f"# {Path(g).stem}\n\n"]
        size = int(threshold * 0.7)
        per = size // len(grow_heads[g])
        for k, h in enumerate(grow_heads[g]):
            out.append(f"## {h}\n\n")
            body = ""
            while len(body) < per - 60:
                body += sentence(r) + " "
            out.append(body.strip() + "\n\n" + (f"Token {token(r)} here.\n\n" if k % 2 == 0 else ""))
        files[g] = "".join(out).encode()
    for k in range(folders):
        rel = f"many/f{k:03d}/Leaf {k}.md"
        files[rel] = f"# Leaf {k}\n\nToken {token(r)} here. {sentence(r)}\n".encode()
    return Generated(files, grow, set(grow) | linkers)


def write_tree(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


def is_note(rel: str) -> bool:
    """A note as vaultd's README defines one, said independently of its code."""
    parts = rel.split("/")
    for d in parts[:-1]:
        if d.startswith(".") or d in IGNORE_DIRS or not _utf8(d):
            return False
    name = parts[-1]
    return (name.lower().endswith(NOTE_EXT) and not name.startswith((".", "#")) and _utf8(name)
            and not name.endswith(("~", ".swp", ".tmp", ".bak", "#")))


def _utf8(s: str) -> bool:
    try:
        s.encode()
        return True
    except UnicodeEncodeError:
        return False


def walk(root: Path) -> dict[str, int]:
    """Every note under `root`: path -> size. Iterative (a 1,100-folder-deep tree), no symlinks."""
    out = {}
    stack = [(str(root), "")]
    while stack:
        d, prefix = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            rel = prefix + e.name
            if e.is_dir(follow_symlinks=False):
                if not e.name.startswith(".") and e.name not in IGNORE_DIRS and _utf8(e.name):
                    stack.append((e.path, rel + "/"))
            elif e.is_file(follow_symlinks=False) and is_note(rel):
                out[rel] = e.stat(follow_symlinks=False).st_size
    return out


def read_notes(root: Path) -> dict[str, bytes]:
    """Every note under `root` with its bytes (those over BIG are left out)."""
    out = {}
    for rel, size in walk(root).items():
        if size <= BIG:
            try:
                out[rel] = (root / rel).read_bytes()
            except OSError:
                pass
    return out


def journal_entries(vault: Path) -> list[dict]:
    out = []
    d = vault / ".vaultd" / "split"
    for p in sorted(d.glob("*.json")) if d.is_dir() else []:
        try:
            e = json.loads(p.read_bytes())
        except (OSError, ValueError):
            continue
        if isinstance(e, dict) and isinstance(e.get("op"), str):
            out.append(e)
    return out


def origin_of(vault: Path) -> dict[str, str]:
    """part -> hub, for every split done now (from the journal in the vault)."""
    out = {}
    for e in journal_entries(vault):
        if e.get("status") == "done" and e.get("kind", "split") == "split":
            for p in e.get("parts") or []:
                out[p] = e["note"]
    return out


# -- the writer ------------------------------------------------------------------------------


class Writer:
    """Edits, creates, deletes and renames notes as a user and their tools would (in place,
    or a temp file renamed over), keeping a model of what it wrote: the vault as it must be
    (but for what the splitter moves), and every token it ever wrote."""

    def __init__(self, vault: Path, gen: Generated, r: random.Random):
        self.vault = vault
        self.r = r
        self.model: dict[str, bytes] = dict(gen.files)
        self.editable = [p for p in gen.files if p not in gen.protected and not p.startswith("many/")]
        self.created: list[str] = []
        self.tokens: set[str] = {t.decode() for b in gen.files.values() for t in TOKEN.findall(b)}
        self.ops = Counter()
        self.n = 0
        self.lock = threading.Lock()

    def _write(self, rel: str, data: bytes) -> None:
        p = self.vault / rel
        if self.r.random() < 0.5:
            tmp = p.with_name(f".{p.name}.{self.r.randrange(1 << 30)}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, p)
        else:
            with open(p, "wb") as f:
                f.write(data)
        self.model[rel] = data

    def new_token(self) -> str:
        t = token(self.r)
        self.tokens.add(t)
        return t

    def edit(self, rel: str | None = None, append: bool | None = None) -> str:
        rel = rel or self.r.choice(self.editable + self.created)
        data = self.model[rel]
        old = TOKEN.findall(data)
        if old:
            data = data.replace(self.r.choice(old), self.new_token().encode(), 1)
        if append if append is not None else self.r.random() < 0.4:
            data += f"\nChurn {self.r.choice(WORDS)} {self.new_token()} {sentence(self.r)}\n".encode()
        self._write(rel, data)
        self.ops["edit"] += 1
        return rel

    def create(self) -> str:
        self.n += 1
        folder = self.r.choice(FOLDERS)
        rel = f"{folder}/Churn {self.n} {self.r.randrange(1 << 20):x}.md"
        target = Path(self.r.choice(self.editable)).stem
        data = f"# Churn {self.n}\n\nToken {self.new_token()} here. Link [[{target}]].\n\n{paragraph(self.r)}\n".encode()
        self._write(rel, data)
        self.created.append(rel)
        self.ops["create"] += 1
        return rel

    def delete(self) -> str | None:
        if not self.created:
            return None
        rel = self.created.pop(self.r.randrange(len(self.created)))
        os.unlink(self.vault / rel)
        del self.model[rel]
        self.ops["delete"] += 1
        return rel

    def rename(self) -> str | None:
        if not self.created:
            return None
        i = self.r.randrange(len(self.created))
        rel = self.created[i]
        self.n += 1
        new = f"{self.r.choice(FOLDERS)}/Renamed {self.n} {self.r.randrange(1 << 20):x}.md"
        os.rename(self.vault / rel, self.vault / new)
        self.model[new] = self.model.pop(rel)
        self.created[i] = new
        self.ops["rename"] += 1
        return new

    def step(self) -> None:
        with self.lock:
            x = self.r.random()
            if x < 0.55:
                self.edit()
            elif x < 0.75 or not self.created:
                self.create()
            elif x < 0.88:
                self.rename()
            else:
                self.delete()

    def grow(self, rel: str, by: int) -> None:
        """Append sections (with a token each) to `rel` until it is `by` bytes longer."""
        with self.lock:
            data = self.model[rel]
            add = ""
            k = 0
            while len(add) < by:
                k += 1
                add += f"\n## Added {k} {self.r.choice(WORDS)}\n\nToken {self.new_token()} here. {paragraph(self.r, 5)}\n"
            self._write(rel, data + add.encode())
            self.ops["grow"] += 1

    def churn(self, stop: threading.Event, rate: float = 40.0) -> threading.Thread:
        """Steps at about `rate` a second in a thread, until `stop` is set."""
        def loop():
            while not stop.is_set():
                self.step()
                time.sleep(self.r.expovariate(rate))
        t = threading.Thread(target=loop, daemon=True)
        t.start()
        return t


# -- the daemon ------------------------------------------------------------------------------


class Unanswered(Exception):
    pass


class Daemon:
    """A real `vaultd run`, started and stopped (or killed) as often as a run needs. Knows
    whether each exit was ours (SIGTERM, SIGKILL, the split crash point) or its own."""

    def __init__(self, work: Path, vault: Path, config: Path, name: str = "d", split: str = "auto",
                 prefix: list[str] | None = None, state: Path | None = None):
        self.work, self.vault, self.config, self.name, self.split = work, vault, config, name, split
        self.state = state or work / f"state-{name}"
        (work / "run").mkdir(mode=0o700, exist_ok=True)
        self.sock = work / "run" / f"{name}.sock"
        self.log = work / f"{name}.log"
        self.prefix = prefix or []
        self.proc: subprocess.Popen | None = None
        self.crash_env = False
        self.crashes: list[str] = []
        """Exits not caused by us, and times it stopped answering."""
        self.starts = 0
        self.kills = 0

    def start(self, env: dict[str, str] | None = None) -> None:
        e = {k: v for k, v in os.environ.items() if not k.startswith("VAULTD_") and k != "NOTIFY_SOCKET"}
        e.update(XDG_STATE_HOME=str(self.work / "xdg-state"), XDG_RUNTIME_DIR=str(self.work / "run"),
                 XDG_CONFIG_HOME=str(self.work / "xdg-config"), PYTHONPATH=str(ROOT),
                 PYTHONFAULTHANDLER="1")
        e.update(env or {})
        self.crash_env = "VAULTD_SPLIT_CRASH_AFTER" in (env or {})
        cmd = [*self.prefix, sys.executable, "-m", "vaultd", "run", "--vault", str(self.vault), "--state-dir",
               str(self.state), "--socket", str(self.sock), "--config", str(self.config), "--split", self.split]
        with open(self.log, "a") as log:
            log.write(f"=== start {self.starts + 1}{' ' + str(env) if env else ''}\n")
            log.flush()
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=log, cwd=ROOT, env=e, start_new_session=True)
        self.starts += 1

    def alive(self) -> bool:
        """Whether it runs; an exit of its own is recorded as a crash."""
        if self.proc is None:
            return False
        rc = self.proc.poll()
        if rc is None:
            return True
        if not (rc == -signal.SIGKILL and self.crash_env):
            self.crashes.append(f"exited by itself with {rc} (start {self.starts})")
        else:
            self.kills += 1  # the split crash point: ours
        self.proc = None
        return False

    def kill(self) -> None:
        if self.alive():
            self.proc.kill()
            self.proc.wait()
            self.proc = None
            self.kills += 1

    def stop(self, timeout: float = 30) -> None:
        if self.alive():
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.crashes.append(f"did not stop within {timeout:.0f} s of SIGTERM (its threads' stacks: {self.log})")
                self.proc.send_signal(signal.SIGABRT)  # PYTHONFAULTHANDLER: every thread's stack into the log
                try:
                    self.proc.wait(5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            else:
                if self.proc.returncode not in (0, -signal.SIGTERM):
                    self.crashes.append(f"exited {self.proc.returncode} on SIGTERM")
            self.proc = None

    def ask(self, op: str, timeout: float = 30.0, **args):
        """One request on a fresh connection; its result. Raises Unanswered."""
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(timeout)
                s.connect(str(self.sock))
                s.sendall(json.dumps({"v": 1, "op": op, **args}).encode() + b"\n")
                buf = b""
                while not buf.endswith(b"\n"):
                    chunk = s.recv(1 << 20)
                    if not chunk:
                        raise Unanswered(f"{op}: connection closed")
                    buf += chunk
        except OSError as e:
            raise Unanswered(f"{op}: {e}") from None
        msg = json.loads(buf)
        if not msg.get("ok"):
            raise Unanswered(f"{op}: {msg.get('error')}")
        return msg["result"]

    def wait_up(self, timeout: float = 60) -> bool:
        """Until the socket answers (not yet indexed, maybe)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                return False
            try:
                self.ask("ping", timeout=2)
                return True
            except Unanswered:
                time.sleep(0.05)
        self.crashes.append(f"did not answer within {timeout:.0f} s of its start")
        return False

    def settle(self, timeout: float = 60, splits: bool = False) -> dict | None:
        """Wait until it has reconciled, built its graph, has nothing pending and its
        generation stays put for a second (with `splits`: and no note it would auto-split
        is left). The last status, or None when it exited or stopped answering."""
        deadline = time.monotonic() + timeout
        last, same, st = None, 0, None
        unanswered = 0
        while time.monotonic() < deadline:
            if not self.alive():
                return None
            try:
                st = self.ask("status", timeout=10)
                unanswered = 0
            except Unanswered:
                unanswered += 1
                if unanswered >= 20:
                    break
                time.sleep(0.3)
                continue
            key = (st["generation"], st["notes"])
            if st["reconciled"] and st["pending"] == 0 and st.get("graph") == "ready" and key == last:
                same += 1
            else:
                same = 0
            last = key
            if same >= 3:
                if not splits or not self.split_due():
                    return st
                same = 0
            time.sleep(0.3)
        if st is None or unanswered:
            self.crashes.append(f"stopped answering (start {self.starts})")
            return None
        return {**st, "unsettled": True}

    def split_due(self) -> bool:
        """Whether a note it will auto-split (grown past the threshold) is still whole."""
        try:
            return any(c.get("auto") for c in self.ask("split", list=True, timeout=30)["over"])
        except Unanswered:
            return False

    def log_text(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""


# -- the oracles -----------------------------------------------------------------------------


@dataclass
class Check:
    """One comparison of the index with the vault."""

    answered: bool = True
    stale: set[str] = field(default_factory=set)
    """Notes whose indexed state differs from disk."""
    unindexed: set[str] = field(default_factory=set)
    """Tokens on disk the index finds nowhere: edits that never reached it."""
    detail: list[str] = field(default_factory=list)
    status: dict = field(default_factory=dict)

    @property
    def equal(self) -> bool:
        return self.answered and not self.stale and not self.unindexed


def check_index(d: Daemon, tokens: set[str], vault: Path | None = None) -> Check:
    """Every token written, looked up in the index, against where it is on disk; the
    indexed paths against the notes on disk."""
    vault = vault or d.vault
    c = Check()
    sizes = walk(vault)
    where: dict[str, set[str]] = {}
    for rel, size in sizes.items():
        if size > BIG:
            continue
        try:
            data = (vault / rel).read_bytes()
        except OSError:
            continue
        for t in TOKEN.findall(data):
            where.setdefault(t.decode(), set()).add(rel)
    try:
        st = d.ask("status")
        ch = d.ask("changes", since=0, limit=100_000)  # every note (changes is paged: 500 by default)
        indexed = set(ch["changed"]) if ch.get("reset") else None
        if indexed is not None:
            for rel in sorted(indexed - sizes.keys()):
                c.stale.add(rel)
                c.detail.append(f"indexed but not on disk: {rel}")
            for rel in sorted(sizes.keys() - indexed):
                c.stale.add(rel)
                c.detail.append(f"on disk but not indexed: {rel}")
        if st["notes"] != len(sizes):
            c.detail.append(f"status says {st['notes']} notes, {len(sizes)} on disk")
            if indexed is None:
                c.stale.add("(the note count)")
        c.status = st
        for t in sorted(tokens | where.keys()):
            hits = {h["path"] for h in d.ask("search", q=f"+{t} ", limit=100, scope="all", snippets=False)["hits"]}
            want = where.get(t, set())
            if want and not hits:
                c.unindexed.add(t)
                c.stale |= want
                c.detail.append(f"token {t} in {sorted(want)} is not in the index")
            elif hits != want:
                c.stale |= hits ^ want
                c.detail.append(f"token {t} found in {sorted(hits)}, on disk in {sorted(want)}")
    except Unanswered as e:
        c.answered = False
        c.detail.append(f"no answer: {e}")
    return c


def broken_links(d: Daemon) -> Counter:
    return Counter((b.get("raw"), b.get("broken")) for b in d.ask("broken", timeout=60)["broken"])


def lost_lines(expected: dict[str, bytes], vault: Path) -> tuple[Counter, list[str]]:
    """Lines of the notes as written (links masked) missing from the vault now, as the
    split oracle counts them (the splitter's added lines are extra, never missing); and the
    links whose meaning changed for the worse (newly broken or re-targeted), by the oracle."""
    want = {k: v for k, v in expected.items() if is_note(k) and len(v) <= BIG}
    now = read_notes(vault)
    origin = {p: h for p, h in origin_of(vault).items() if p in now}
    before, after = View(want), View(now, origin)
    lost = lines_lost(before, after)
    bad = [str(m).splitlines()[0] for m in compare(before, after)
           if m.kind in ("newly broken", "re-targeted", "lost") and m.src in want]
    return lost, bad


def kill_at_split(vault: Path, d: Daemon, r: random.Random, within: float, stop: threading.Event,
                  seen: dict) -> threading.Thread:
    """A thread that SIGKILLs `d` a random 0-30 ms after a new journal entry appears in
    the vault (mid-split, most often: `seen["entry"]`), or at a random moment within
    `within` s when none does; once."""
    def loop():
        before = {p.name for p in (vault / ".vaultd" / "split").glob("*.json")}
        deadline = time.monotonic() + r.uniform(0.2, within)
        while not stop.is_set() and time.monotonic() < deadline:
            try:
                now = {p.name for p in (vault / ".vaultd" / "split").glob("*.json")}
            except OSError:
                now = before
            if now - before:
                seen["entry"] = True
                time.sleep(r.uniform(0, 0.03))
                break
            time.sleep(0.001)
        if not stop.is_set():
            d.kill()
    t = threading.Thread(target=loop, daemon=True)
    t.start()
    return t


def rmtree(p: Path) -> None:
    """rm -rf: shutil.rmtree recurses, and a 1,100-folder-deep tree exceeds Python's stack."""
    subprocess.run(["rm", "-rf", "--one-file-system", str(p)], check=False)
