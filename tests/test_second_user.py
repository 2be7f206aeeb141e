"""As another local user (issue 18): nothing vaultd keeps or writes is readable, and the
socket takes no one else's requests; as the owner, no request writes outside the vault
and the state folder. Runs as root, acting as `nobody` through setpriv; skipped elsewhere."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import Daemon, wait_for

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                                reason="needs root and setpriv to act as another user")

PROBE = r"""
import json, os, socket, sys
found = {}
for top in sys.argv[1:]:
    for dirpath, dirs, files in os.walk(top, onerror=lambda e: found.setdefault(e.filename, type(e).__name__)):
        for name in dirs + files:
            p = os.path.join(dirpath, name)
            try:
                if os.path.isdir(p):
                    os.listdir(p)
                elif name.endswith(".sock"):
                    s = socket.socket(socket.AF_UNIX); s.connect(p); s.sendall(b'{"op":"ping"}\n'); s.recv(100)
                else:
                    open(p, "rb").read(1)
                found[p] = "read"
            except OSError as e:
                found[p] = type(e).__name__
print(json.dumps(found))
"""


def _as_nobody(*paths: Path) -> dict[str, str]:
    r = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable, "-c", PROBE,
                        *map(str, paths)], capture_output=True, text=True, timeout=60, cwd="/")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.fixture
def open_base():
    """A folder others may enter, as a home folder often is (pytest's own is 0700, which
    would hide everything and prove nothing)."""
    d = Path(tempfile.mkdtemp(prefix="vq2u", dir="/tmp"))
    os.chmod(d, 0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def test_another_user_reads_nothing_vaultd_keeps_or_writes(open_base):
    vault = open_base / "vault"
    (vault / "notes").mkdir(parents=True, mode=0o755)
    os.chmod(vault, 0o755)
    (vault / "notes" / "Open.md").write_text("# Open\n\nreadable to all, as its owner left it\n")
    secret = vault / "notes" / "Secret.md"
    secret.write_text("# Secret\n\n" + "".join(f"## Part {i}\n\n" + "private words\n" * 250 for i in range(6)))
    os.chmod(secret, 0o600)
    for p in (secret, vault / "notes" / "Open.md"):
        os.utime(p, (1e9, 1e9))  # written long ago: quiet enough to split
    old = os.umask(0o022)  # a usual umask: vaultd must not rely on a strict one
    try:
        d = Daemon(vault, open_base / "state", open_base / "run" / "v.sock").start()
    finally:
        os.umask(old)
    try:
        assert d.request("search", q="private")["total"] == 1
        parts = d.request("split", note="notes/Secret.md")["parts"]
        wait_for(lambda: d.status()["pending"] == 0)
        assert (vault / ".vaultd" / "split").is_dir() and parts
        seen = _as_nobody(open_base)
    finally:
        d.stop()
    readable = sorted(p for p, how in seen.items() if how == "read")
    assert readable == [str(vault), str(vault / "notes"), str(vault / "notes" / "Open.md")], readable  # as left
    for theirs in (open_base / "state", open_base / "run", vault / ".vaultd", secret, *(vault / p for p in parts)):
        assert seen.get(str(theirs)) == "PermissionError", (theirs, seen.get(str(theirs)))


@pytest.mark.parametrize("op,args", [
    ("read", {"note": "../outside.md"}), ("read", {"note": "/etc/passwd"}), ("pin", {"note": "../outside.md"}),
    ("split", {"note": "../outside.md"}), ("split", {"undo": ["../../outside"]}), ("split", {"note": "/tmp"}),
    ("backlinks", {"note": "../../x"}), ("graph", {"note": "/"}), ("links", {"note": "../outside.md"}),
])
def test_no_request_reaches_outside_the_vault(open_base, op, args):
    vault = open_base / "vault"
    vault.mkdir()
    (vault / "a.md").write_text("# A\n\n[[b]]\n")
    (open_base / "outside.md").write_text("# Outside\n\n" + "x\n" * 20000)
    before = {p: p.read_bytes() for p in open_base.rglob("*") if p.is_file()}
    d = Daemon(vault, open_base / "state", open_base / "run" / "v.sock").start()
    try:
        res = d.send_raw(json.dumps({"v": 1, "id": 1, "op": op, **args}).encode() + b"\n")
        assert not res["ok"], res
        assert "Outside" not in json.dumps(res)
    finally:
        d.stop()
    after = {p: p.read_bytes() for p in open_base.rglob("*") if p.is_file() and not p.is_relative_to(open_base / "state")}
    assert after == {p: b for p, b in before.items()}
