"""The units under a real systemd user manager (`systemd --user`), not only `systemd-analyze`:
`systemd-analyze verify` and `security` passed on a unit that a real user manager (systemd
252, Debian 12) refused to start (218/CAPABILITIES: PrivateDevices= drops capabilities an
unprivileged service may not drop).

A user manager needs a delegated cgroup, a runtime folder and a booted-with-systemd marker;
a test can give it all three only as root, on cgroup v2, with systemd installed (`.ci/run`
installs it). Elsewhere these tests skip, saying why.

- As an unprivileged user (nobody): each unit vaultd ships or writes starts with its whole
  sandbox (its ExecStart swapped for /bin/true: the venv under /root is not theirs to run).
- As root's own user manager: the real daemon, installed by `vaultd install-service`,
  started by its socket for a query queued before it ran, READY, and not restarted in a
  loop on a bad config."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import wait_for

ROOT = Path(__file__).parent.parent
SYSTEMD = next((p for p in ("/lib/systemd/systemd", "/usr/lib/systemd/systemd") if os.access(p, os.X_OK)), None)
NOBODY = 65534


def _cgroup2() -> Path | None:
    for line in Path("/proc/self/mounts").read_text().splitlines():
        dev, where, kind, *_ = line.split()
        if kind == "cgroup2" and os.access(where, os.W_OK):
            return Path(where)
    return None


def _why_not() -> str | None:
    if os.geteuid() != 0:
        return "a user manager can be started here only as root"
    if SYSTEMD is None or shutil.which("systemctl") is None:
        return "systemd is not installed (apt-get install systemd)"
    if _cgroup2() is None:
        return "no writable cgroup v2 hierarchy to delegate"
    if shutil.which("setpriv") is None:
        return "setpriv is not installed (util-linux)"
    return None


pytestmark = pytest.mark.skipif(_why_not() is not None, reason=_why_not() or "")


class Manager:
    """`systemd --user` as `uid`, in a cgroup of its own, with its own runtime folder and
    HOME: `ctl(...)` is `systemctl --user ...` against it."""

    def __init__(self, uid: int):
        self.uid = uid
        self.base = Path(tempfile.mkdtemp(prefix="um", dir="/tmp"))  # short: sockets live below it
        self.base.chmod(0o755)
        self.runtime, self.home = self.base / "r", self.base / "h"
        for d in (self.runtime, self.home):
            d.mkdir(mode=0o700)
            os.chown(d, uid, uid)
        self.marker = Path("/run/systemd/system")  # what sd_booted() looks for
        self.made_marker = not self.marker.exists()
        self.marker.mkdir(parents=True, exist_ok=True)
        self.cgroup = _cgroup2() / f"vaultd-test-{os.getpid()}-{uid}"
        self.cgroup.mkdir()
        os.chown(self.cgroup, uid, uid)
        for f in ("cgroup.procs", "cgroup.subtree_control", "cgroup.threads"):
            os.chown(self.cgroup / f, uid, uid)
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home),
                    "XDG_RUNTIME_DIR": str(self.runtime), "LANG": "C.UTF-8"}
        self.log = open(self.base / "manager.log", "wb")
        into = f"echo $$ > {self.cgroup}/cgroup.procs && exec setpriv --reuid={uid} --regid={uid} " \
               f"--clear-groups {SYSTEMD} --user --log-target=console"
        self.proc = subprocess.Popen(["sh", "-c", into], env=self.env, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            wait_for(lambda: self.proc.poll() is not None or
                     self.ctl("is-system-running").stdout.strip() in ("running", "degraded"))
        except AssertionError:
            pass
        if self.proc.poll() is not None or self.ctl("is-system-running").stdout.strip() not in ("running", "degraded"):
            why = (self.base / "manager.log").read_text(errors="replace")[-500:]
            self.close()
            pytest.skip(f"a user manager does not start here: {why.strip() or 'no output'}")

    def run(self, *cmd: str, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
        return subprocess.run(["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups", *cmd],
                              env={**self.env, **kw.pop("env", {})}, capture_output=True, text=True, timeout=timeout,
                              **kw)

    def ctl(self, *args: str) -> subprocess.CompletedProcess:
        return self.run("systemctl", "--user", "--no-pager", *args)

    def show(self, unit: str, *props: str) -> dict[str, str]:
        out = self.ctl("show", unit, "-p", ",".join(props)).stdout
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                pass
        kill = self.cgroup / "cgroup.kill"
        for _ in range(100):  # the manager and every service it left: nothing outlives the test
            try:
                if kill.exists():
                    kill.write_text("1")
                else:
                    for pid in (self.cgroup / "cgroup.procs").read_text().split():
                        os.kill(int(pid), signal.SIGKILL)
                for sub in sorted(self.cgroup.rglob("*"), key=lambda p: -len(p.parts)):
                    if sub.is_dir():
                        sub.rmdir()
                self.cgroup.rmdir()
                break
            except OSError:
                time.sleep(0.1)  # poll: the cgroup empties as its processes die
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.log.close()
        if self.made_marker:
            shutil.rmtree(self.marker, ignore_errors=True)
        shutil.rmtree(self.base, ignore_errors=True)


@pytest.fixture
def nobody():
    m = Manager(NOBODY)
    yield m
    m.close()


@pytest.fixture
def root_manager():
    m = Manager(0)
    yield m
    m.close()


def _sandbox_only(unit_text: str) -> str:
    """The unit with its program swapped for /bin/true: every sandbox option kept."""
    keep = []
    for line in unit_text.splitlines():
        if line.startswith(("ExecStart=", "Type=", "NotifyAccess=", "WatchdogSec=", "Restart=")):
            continue
        keep.append(line)
        if line.strip() == "[Service]":
            keep += ["Type=oneshot", "ExecStart=/bin/true"]
    return "\n".join(keep) + "\n"


def _namespaces_this_machine_cannot_make(m: Manager, unit_text: str) -> list[str]:
    """The unit's yes/no sandbox options whose namespace this machine refuses even to
    /bin/true (226/NAMESPACE: a container that may not remount /proc/sys, say)."""
    opts = [ln for ln in unit_text.splitlines() if re.fullmatch(r"(Private|Protect)\w+=yes", ln)]
    return [o for o in opts
            if m.run("systemd-run", "--user", "--wait", "-q", "-p", o, "/bin/true").returncode != 0]


def test_every_unit_starts_with_its_whole_sandbox_as_an_unprivileged_user(nobody, tmp_path):
    vault = nobody.home / "notes"
    vault.mkdir()
    os.chown(vault, NOBODY, NOBODY)
    written = subprocess.run([sys.executable, "-m", "vaultd", "install-service", "--vault", str(vault), "--dry-run"],
                             capture_output=True, text=True, env={**os.environ, "HOME": str(nobody.home),
                                                                  "XDG_RUNTIME_DIR": str(nobody.runtime)})
    assert written.returncode == 0, written.stderr
    parts = re.split(r"^# ---- (\S+)\n", written.stdout, flags=re.M)
    installed = dict(zip(parts[1::2], parts[2::2]))["vaultd.service"]
    assert "ReadWritePaths=" in installed and "ExecStart=" in installed, written.stdout
    units = {"shipped": (ROOT / "systemd" / "vaultd.service").read_text(), "installed": installed}
    folder = nobody.home / ".config" / "systemd" / "user"
    folder.mkdir(parents=True)
    for name, text in units.items():
        (folder / f"vd-{name}.service").write_text(_sandbox_only(text))
    shutil.chown(nobody.home / ".config", NOBODY, NOBODY)
    for d in (nobody.home / ".config" / "systemd", folder, *folder.iterdir()):
        shutil.chown(d, NOBODY, NOBODY)
    assert nobody.ctl("daemon-reload").returncode == 0
    for name in units:
        r = nobody.ctl("start", f"vd-{name}.service")
        st = nobody.show(f"vd-{name}.service", "Result", "ExecMainStatus")
        assert r.returncode == 0 and st == {"Result": "success", "ExecMainStatus": "0"}, (name, st, r.stderr)


def test_installed_units_start_the_daemon_on_the_first_query_and_do_not_loop_on_a_bad_config(root_manager, vault):
    m = root_manager
    state = m.base / "state"
    r = m.run(sys.executable, "-m", "vaultd", "install-service", "--vault", str(vault), "--state-dir", str(state))
    assert r.returncode == 0, r.stderr + r.stdout
    sock = re.search(r"socket (\S+)\. Now:", r.stdout).group(1).rstrip(",")
    assert sock.startswith(str(m.runtime)), r.stdout
    unit = (m.home / ".config" / "systemd" / "user" / "vaultd.service")
    cannot = _namespaces_this_machine_cannot_make(m, unit.read_text())
    if cannot:  # a container may not remount /proc/sys: the rest of the sandbox still applies
        dropin = unit.with_name("vaultd.service.d")
        dropin.mkdir()
        (dropin / "machine.conf").write_text("[Service]\n" + "".join(f"{o.split('=')[0]}=no\n" for o in cannot))
    assert m.ctl("daemon-reload").returncode == 0
    r = m.ctl("enable", "--now", "vaultd.socket")
    assert r.returncode == 0, r.stderr
    assert m.show("vaultd.service", "ActiveState")["ActiveState"] == "inactive"

    # the first query starts it (socket activation) and is answered: by its hits, or, while
    # the first index is built, by how far it is (exit 4), never "not running"
    ask = (sys.executable, "-m", "vaultd.vaultq", "--socket", sock, "search", "--format", "paths", "boredom")
    q = m.run(*ask)
    assert q.returncode == 0 or q.returncode == 4 and "first index" in q.stderr, q.stdout + q.stderr
    assert m.show("vaultd.service", "ActiveState")["ActiveState"] in ("activating", "active")
    wait_for(lambda: m.show("vaultd.service", "ActiveState")["ActiveState"] == "active", 60)  # READY=1 (Type=notify)
    q = m.run(*ask)
    assert q.returncode == 0 and [Path(p).name for p in q.stdout.splitlines()] == ["Deep work.md"], q.stdout + q.stderr
    st = m.show("vaultd.service", "ActiveState", "SubState", "StatusText", "NRestarts")
    assert st["SubState"] == "running" and st["StatusText"] == "serving" and st["NRestarts"] == "0", st

    # a bad config: exit 2, and no restart loop (RestartPreventExitStatus=)
    config = m.home / ".config" / "vaultd" / "config.toml"
    config.write_text(config.read_text() + "\nthis is = = not toml\n")
    m.ctl("restart", "vaultd.service")
    wait_for(lambda: m.show("vaultd.service", "ActiveState")["ActiveState"] == "failed")
    st = m.show("vaultd.service", "ExecMainStatus", "NRestarts", "Result")
    assert st == {"ExecMainStatus": "2", "NRestarts": "0", "Result": "exit-code"}, st

    # fixed, and the units written again (another split mode): the commands it prints run them
    config.write_text(config.read_text().replace("\nthis is = = not toml\n", ""))
    r = m.run(sys.executable, "-m", "vaultd", "install-service", "--vault", str(vault), "--state-dir", str(state),
              "--split", "off")
    assert "replaced: " in r.stdout, r.stdout + r.stderr
    for line in r.stdout.splitlines():
        if line.startswith("  systemctl --user ") and "enable --now" not in line:
            for cmd in line.split("#")[0].split("&&"):
                assert m.run(*cmd.split()).returncode == 0, cmd
    wait_for(lambda: m.show("vaultd.service", "ActiveState")["ActiveState"] == "active", 60)
    assert m.show("vaultd.socket", "ActiveState")["ActiveState"] == "active"  # still there for the next start
    assert "--split off" in m.show("vaultd.service", "ExecStart")["ExecStart"]
    q = m.run(*ask)
    assert q.returncode == 0 and [Path(p).name for p in q.stdout.splitlines()] == ["Deep work.md"], q.stdout + q.stderr
    m.ctl("stop", "vaultd.service", "vaultd.socket")
