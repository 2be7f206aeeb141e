"""Shared fixtures: an isolated HOME/XDG, a temp copy of the fixture vault, and the
real daemon started as a subprocess on a real Unix socket."""

from __future__ import annotations

import json
import logging
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from pathlib import Path

import pytest

FIXTURE_VAULT = Path(__file__).parent / "fixtures" / "vault"

DEADLINE = 60.0
"""How long a test waits for an event before it fails. Only a failure waits this long: a
loaded machine (the suite beside `stress-ng --cpu 4`) can take seconds for what takes
milliseconds alone, and how soon things happen is bench/'s to measure, not a test's."""

LOG_TAIL_LINES = 400
"""How much of each daemon's log a failed test's report shows (its last lines)."""


@pytest.fixture(autouse=True)
def isolated_env(tmp_path, monkeypatch):
    """No test reads or writes the real HOME, XDG folders or a running vaultd."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR", "VAULTD_VAULT", "VAULTD_SOCKET",
                "VAULTD_STATE_DIR", "VAULTD_CONFIG", "NOTIFY_SOCKET", "VAULTD_AGENT", "CLAUDECODE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


@pytest.fixture(autouse=True)
def restore_logging():
    """Only the CLI installs handlers; in-process tests must leave logging as they found it."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture
def vault(tmp_path) -> Path:
    dest = tmp_path / "vault"
    shutil.copytree(FIXTURE_VAULT, dest)
    return dest


@pytest.fixture
def short_dir():
    """A short folder for sockets: tmp_path can exceed the 107-byte sun_path limit."""
    d = tempfile.mkdtemp(prefix="vq")
    yield Path(d)
    shutil.rmtree(d, ignore_errors=True)


def mem_tmp(prefix: str = "vaultd-mem-") -> tempfile.TemporaryDirectory:
    """A temp folder in memory (/dev/shm) where there is one, else in the usual temp dir: for
    tests of logic run over many generated vaults (split, link rewriting), where each
    index commit's and split journal's fsyncs on a disk cost more than the rest of the
    example. Tests of what the file system does (watching, inode and ctime, crashes,
    permissions) stay on tmp_path. (test_link_syntax.py's `fast_tmp` does the same.)"""
    shm = "/dev/shm"
    base = shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None
    return tempfile.TemporaryDirectory(prefix=prefix, dir=base)


@pytest.fixture
def nobody():
    """(a folder a user other than root owns and can reach, the command prefix that runs a
    program as that user): root reads and writes every file whatever its mode, so as root
    permission checks run as `nobody` (setpriv); as anyone else, as themselves."""
    import pwd

    top = Path(tempfile.mkdtemp(prefix="vaultd-perm-"))
    top.chmod(0o755)
    drop: list[str] = []
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            shutil.rmtree(top)
            pytest.skip("running as root and no setpriv to drop to another user")
        user = pwd.getpwnam("nobody")
        os.chown(top, user.pw_uid, user.pw_gid)
        drop = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups"]
    try:
        yield top, drop
    finally:
        for p in (top, *top.rglob("*")):
            p.chmod(0o700)
        shutil.rmtree(top)


def wait_for(pred, timeout: float = DEADLINE, interval: float = 0.01):
    """Poll `pred` until it returns something truthy, and return that; fail after `timeout`
    seconds (a bound on a failure, not a claim about speed: keep the default)."""
    deadline = time.monotonic() + timeout
    while True:
        got = pred()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(interval)  # poll: between two looks at the condition


@pytest.fixture(scope="session")
def kiwi():
    """The Korean analyser (Kiwi) loaded, as the daemon's warm-up has it a moment after its
    start: for in-process searches that expect words found by their stems (no query waits
    for Kiwi to load). Nothing where the korean extra is not installed."""
    from vaultd.query import korean

    if not korean.ANALYSER.missing:
        korean.ANALYSER.start()
        wait_for(lambda: korean.ANALYSER.ready or korean.ANALYSER.proc is None)
    yield korean.ANALYSER


def proc_stat(pid: int) -> list[str]:
    """/proc/PID/stat after the command name: state, ppid, ... (empty when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return []


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid`, from /proc."""
    return [int(d) for d in os.listdir("/proc") if d.isdigit() and (st := proc_stat(int(d))) and st[1] == str(pid)]


def cmdline(pid: int) -> bytes:
    """A process's command line (NUL-separated), b"" once it is gone."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read()
    except OSError:
        return b""


@contextlib.contextmanager
def first_index_held(make_daemon, tmp_path, notes: int = 400):
    """A daemon started on a new vault of `notes` notes (over workers.POOL_MIN: parsed by
    two worker processes) whose first index is held still: each parsing worker stopped
    (SIGSTOP) once it runs multiprocessing's spawn_main, not earlier (a child stopped between
    fork and exec holds the daemon in its spawn, and the second worker never comes), and not
    its resource tracker (the workers would go on). Yields the Daemon; resumed (SIGCONT) at
    the end. Reads /proc."""
    vault = tmp_path / "big"
    for i in range(notes):
        (vault / f"d{i % 8}").mkdir(parents=True, exist_ok=True)
        (vault / f"d{i % 8}" / f"n{i}.md").write_text(f"# Note {i}\n\nquokka words {i}\n[[n{i + 1}]]\n")
    cfg = tmp_path / "workers.toml"
    cfg.write_text("[index]\nworkers = 2\n")
    d = make_daemon(vault, extra=["--config", str(cfg)], start=False)
    d.start(wait=False)
    stopped: set[int] = set()

    def hold() -> bool:
        for pid in children(d.proc.pid):
            if pid not in stopped and b"spawn_main" in cmdline(pid):
                os.kill(pid, signal.SIGSTOP)
                stopped.add(pid)
        return len(stopped) >= 2

    try:
        wait_for(hold, interval=0.002)
        yield d
    finally:
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)


def on_a_terminal(args: list[str], timeout: float = 30) -> tuple[int, bytes]:
    """Run `args` with a pseudo-terminal as its stdout (stderr dropped): its exit code and
    what it printed there."""
    import pty

    master, slave = pty.openpty()
    try:
        p = subprocess.run(args, stdout=slave, stderr=subprocess.DEVNULL, timeout=timeout)
        os.close(slave)
        out = b""
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the other end is closed and drained
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(master)
    return p.returncode, out


class DaemonLog:
    """A child's merged stdout and stderr, read line by line by a thread as it is written, so
    the child never blocks on a full pipe (64 KiB of log), and kept for the test to read."""

    def __init__(self, stream):
        self.lines: list[str] = []
        self._stream = stream
        self._reader = threading.Thread(target=self._read, name="daemon-log", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        with self._stream:
            for line in iter(self._stream.readline, b""):
                self.lines.append(line.decode(errors="replace"))

    def text(self) -> str:
        return "".join(self.lines)

    def finish(self, timeout: float = DEADLINE) -> str:
        """All of it, once the child (and any child of its holding the pipe) has exited."""
        self._reader.join(timeout)
        return self.text()


_DAEMONS: "weakref.WeakSet[Daemon]" = weakref.WeakSet()
_TEST_SERIAL = [0]  # which test is running (counted in pytest_runtest_setup)


class Daemon:
    """A real `vaultd run` subprocess and a line-protocol connection to it. Its log is read
    continuously (`output()`), and shown in the report of a test that fails while it ran."""

    def __init__(self, vault: Path, state: Path, sock: Path, extra: list[str] = ()):
        self.vault, self.state, self.socket = vault, state, sock
        self.args = [sys.executable, "-m", "vaultd", "run", "--vault", str(vault), "--state-dir", str(state),
                     "--socket", str(sock), *extra]
        self.proc: subprocess.Popen | None = None
        self._conn: socket.socket | None = None
        self._buf = b""
        self.log: DaemonLog | None = None
        self.earlier_logs: list[str] = []  # the runs before a restart
        self.started_in_test = -1
        _DAEMONS.add(self)

    def start(self, wait: bool = True) -> "Daemon":
        self._close()  # a restart: the last one's connection and log are done with
        if self.log is not None:
            self.earlier_logs.append(self.log.finish())
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.log = DaemonLog(self.proc.stdout)
        self.started_in_test = _TEST_SERIAL[0]
        if wait:
            wait_for(self._ready, interval=0.05)
        return self

    def _ready(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"vaultd exited {self.proc.returncode}:\n{self.output()}")
        try:
            st = self.request("status")
        except OSError:
            self._close()
            return False
        return st["reconciled"]

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def connect(self) -> socket.socket:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(DEADLINE)
        try:
            s.connect(str(self.socket))
        except OSError:
            s.close()
            raise
        return s

    def send_raw(self, data: bytes) -> dict:
        if self._conn is None:
            self._conn = self.connect()
            self._buf = b""
        self._conn.sendall(data)
        # one bytearray, and only each new chunk searched: a 20 MB reply took seconds of copying
        buf, end = bytearray(self._buf), self._buf.find(b"\n")
        while end < 0:
            chunk = self._conn.recv(1 << 20)
            if not chunk:
                self._close()
                raise ConnectionResetError("daemon closed the connection")
            if (i := chunk.find(b"\n")) >= 0:
                end = len(buf) + i
            buf += chunk
        line, self._buf = bytes(buf[:end]), bytes(buf[end + 1:])
        return json.loads(line)

    def request(self, op: str, **args) -> dict:
        msg = self.send_raw(json.dumps({"v": 1, "id": 1, "op": op, **args}).encode() + b"\n")
        assert msg["ok"], msg
        return msg["result"]

    def search_paths(self, q: str, limit: int = 20) -> list[str]:
        return [h["path"] for h in self.request("search", q=q, limit=limit)["hits"]]

    def status(self) -> dict:
        return self.request("status")

    def wait_generation(self, after: int, timeout: float = DEADLINE) -> dict:
        """Wait until a commit past generation `after` is visible and nothing is pending. The
        timeout only bounds a failure (how soon a save is seen is bench/run.py's to measure):
        a loaded CI machine can take seconds."""
        return wait_for(lambda: (st := self.status())["generation"] > after and st["pending"] == 0 and st, timeout)

    def stop(self, sig=signal.SIGTERM) -> int:
        """Signal the daemon and wait for it to exit (a kill only after DEADLINE); its code."""
        self._close()
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=DEADLINE)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def output(self) -> str:
        """What this run of the daemon has logged so far; all of it once it has exited."""
        if self.log is None:
            return ""
        return self.log.finish() if self.proc.poll() is not None else self.log.text()

    def report(self) -> str:
        """The last lines of every run's log as read so far (no wait), for a failed test's report."""
        runs = [*self.earlier_logs, self.log.text() if self.log else ""]
        text = "\n".join(f"--- run {i + 1} of {len(runs)} ---\n{r}" for i, r in enumerate(runs))
        lines = text.splitlines()
        cut = f"(the first {len(lines) - LOG_TAIL_LINES} lines left out)\n" if len(lines) > LOG_TAIL_LINES else ""
        return cut + "\n".join(lines[-LOG_TAIL_LINES:])


def pytest_runtest_setup(item):
    _TEST_SERIAL[0] += 1


FACILITY_TESTS = {
    "test_write_race.py::test_a_save_raced_against_a_journaled_write_is_never_lost": ("lease", "exchange"),
    "test_write_race.py::test_a_file_open_for_writing_is_not_replaced_and_the_reason_says_so": ("lease",),
    "test_write_race.py::test_a_save_renamed_over_the_file_after_the_check_is_kept_whole[swapping]": ("exchange",),
    "test_write_race.py::test_split_history_says_why_a_raced_split_was_refused": ("lease",),
    "test_write_race.py::test_an_in_place_save_waits_for_the_lease_and_lands_in_the_file": ("lease",),
    "test_vault.py::test_big_blocks_stay_out_of_the_heap_whose_holes_are_never_given_back": ("malloc_trim",),
    "test_watch_health.py::test_past_the_inotify_watch_limit_it_says_so_and_rescans": ("inotify_count",),
}
"""Tests of a facility itself (vaultd/host.py), by file::name (a parametrized test's every
case, or one case by its id): skipped where the facility is missing or $VAULTD_PORTABLE
forces it off (what its fallback does instead is tests/test_portable.py's)."""


def pytest_collection_modifyitems(config, items):
    from vaultd import host

    for item in items:
        needs = FACILITY_TESTS.get(f"{item.path.name}::{item.name}") or \
            FACILITY_TESTS.get(f"{item.path.name}::{getattr(item, 'originalname', item.name)}", ())
        if missing := [n for n in needs if not host.has(n)]:
            item.add_marker(pytest.mark.skip(reason=f"tests {', '.join(missing)} itself: not here, or forced off by "
                                                    f"${host.ENV}"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test's report shows the log of each daemon started in it or still running."""
    report = yield
    if report.failed:
        for d in list(_DAEMONS):
            running = d.proc is not None and d.proc.poll() is None
            if d.proc is not None and (running or d.started_in_test == _TEST_SERIAL[0]):
                report.sections.append((f"vaultd log ({d.socket})", d.report()))
    return report


@pytest.fixture
def make_daemon(vault, tmp_path, short_dir):
    started: list[Daemon] = []

    def make(v: Path = vault, extra: list[str] = (), start: bool = True) -> Daemon:
        d = Daemon(v, tmp_path / "state", short_dir / "d.sock", list(extra))
        started.append(d)
        return d.start() if start else d

    yield make
    for d in started:
        d.stop()


@pytest.fixture
def daemon(make_daemon) -> Daemon:
    return make_daemon()
