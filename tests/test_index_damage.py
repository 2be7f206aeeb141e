"""Index damage of any kind rebuilds the index; lock and permission trouble never does.

A real index built by Vault from the fixture vault in a temp state dir, its files then
damaged on disk as a crash, a bad disk or a stray hand would, and the index opened again.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vaultd.config import Config, Index
from vaultd.errors import IndexLocked
from vaultd.vault import Vault

REPO = Path(__file__).resolve().parents[1]
NOTES = {
    "pinning notes": "notes/20251016T080208--memory-tiers__agents_memory.org",
    "가치관이": "notes/20251101T120000--가치관__철학.md",
    "productivity": "notes/Deep work.md",
    "TODO: fix": "journal/2025-11-20.md",
}


@pytest.fixture
def cfg(vault, tmp_path):
    """A built index (its files in cfg.state_dir/index), closed: two commits, the second
    changing a note, so that a segment has deletes (a .del file). One writer thread, so
    that the first commit is one segment, which the change leaves holding three notes."""
    cfg = Config(vault=str(vault), state_dir=str(tmp_path / "st"), index=Index(heap_mb=15)).load()
    v = Vault(cfg)
    v.reconcile()
    with open(vault / "notes" / "Deep work.md", "a") as f:
        f.write("\nOne more line.\n")
    v.reconcile()
    v.close()
    return cfg


def index_dir(cfg) -> Path:
    return Path(cfg.state_dir) / "index"


def part(cfg, ext: str) -> Path:
    """The `ext` file of the segment holding the most bytes of it."""
    return max(index_dir(cfg).glob(f"*.{ext}"), key=lambda p: p.stat().st_size)


def flip(path: Path, at: float = 0.3) -> None:
    """Invert 16 bytes in place (the same inode: what a bad disk does under an open map)."""
    with open(path, "r+b") as f:
        size = os.fstat(f.fileno()).st_size
        f.seek(int(size * at))
        chunk = f.read(16)
        f.seek(int(size * at))
        f.write(bytes(b ^ 0xFF for b in chunk))


def invert(path: Path) -> None:
    """Every byte before the footer inverted, in place: garbage wherever Tantivy looks."""
    with open(path, "r+b") as f:
        data = f.read()
        body = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
        f.seek(0)
        f.write(bytes(b ^ 0xFF for b in data[:body]))


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def cut_out(path: Path) -> None:
    """A piece of the middle gone, the footer kept: shorter, and still ends as Tantivy wrote it."""
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 4] + data[len(data) // 2:])


def meta_edit(cfg, fn) -> None:
    meta = index_dir(cfg) / "meta.json"
    m = json.loads(meta.read_text())
    fn(m)
    meta.write_text(json.dumps(m))


def assert_rebuilt_and_found(cfg, named: str) -> None:
    v = Vault(cfg)
    try:
        assert v.index.rebuilt and v.notes == {}
        v.reconcile()
        for q, path in NOTES.items():
            assert path in [h["path"] for h in v.search(q)["hits"]], q
        assert named in v.index.rebuilt_why
    finally:
        v.close()
    again = Vault(cfg)  # and the rebuilt index is whole: no second rebuild
    try:
        assert not again.index.rebuilt and set(NOTES.values()) <= set(again.notes)
    finally:
        again.close()


SEGMENT_PARTS = ["store", "pos", "idx", "term", "fast", "fieldnorm", "del"]


@pytest.mark.parametrize("ext", SEGMENT_PARTS)
@pytest.mark.parametrize("how", [flip, Path.unlink, truncate, cut_out], ids=["flipped", "missing", "truncated", "cut"])
def test_a_damaged_segment_file_rebuilds(cfg, how, ext, caplog):
    f = part(cfg, ext)
    how(f)
    with caplog.at_level(logging.WARNING, logger="vaultd.index"):
        assert_rebuilt_and_found(cfg, f.name)
    assert any(f.name in r.getMessage() for r in caplog.records), "the warning names the file"


def test_a_segment_file_overwritten_with_junk_rebuilds(cfg):
    f = part(cfg, "fast")
    f.write_bytes(os.urandom(f.stat().st_size))
    assert_rebuilt_and_found(cfg, f.name)


@pytest.mark.parametrize("damage", [
    lambda m: m.clear(),
    lambda m: m["segments"][0].update(max_doc=m["segments"][0]["max_doc"] + 100),  # parses, but lies
    lambda m: m["segments"].append({**m["segments"][0], "segment_id": "0" * 32}),  # a segment that is not there
], ids=["no-keys", "max-doc-too-big", "segment-not-there"])
def test_meta_json_that_lies_rebuilds(cfg, damage):
    meta_edit(cfg, damage)
    assert_rebuilt_and_found(cfg, "")


@pytest.mark.parametrize("text", ["", "{ not json", "\x00" * 100])
def test_garbled_meta_json_rebuilds(cfg, text):
    (index_dir(cfg) / "meta.json").write_text(text)
    assert_rebuilt_and_found(cfg, "meta.json")


def test_garbled_managed_json_rebuilds(cfg):
    (index_dir(cfg) / ".managed.json").write_text("garbage")
    assert_rebuilt_and_found(cfg, ".managed.json")


def test_missing_version_stamp_rebuilds(cfg):
    (index_dir(cfg) / "VERSION").unlink()
    assert_rebuilt_and_found(cfg, "VERSION")


def test_a_stray_file_is_no_damage(cfg):
    (index_dir(cfg) / "junk.bin").write_bytes(os.urandom(1000))
    (index_dir(cfg) / "0123456789abcdef0123456789abcdef.store").write_bytes(os.urandom(1000))  # of no segment
    v = Vault(cfg)
    try:
        assert not v.index.rebuilt and set(v.notes) == set(NOTES.values())
        assert [h["path"] for h in v.search("productivity")["hits"]] == ["notes/Deep work.md"]
    finally:
        v.close()


# -- never wiped: another process's index, or one this process may not touch ------------


def snapshot(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def test_a_damaged_index_another_process_writes_is_left_alone(cfg):
    """Tantivy's writer lock held by another process (an older vaultd): IndexLocked, and not
    a file touched, though the index looks damaged (meta.json garbled)."""
    ix = index_dir(cfg)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, tantivy\nfrom vaultd.store.index import _schema\n"
         "w = tantivy.Index(_schema(), path=sys.argv[1], reuse=True).writer(heap_size=15 << 20, num_threads=1)\n"
         "print('holding', flush=True)\nsys.stdin.read()", str(ix)],
        cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        (ix / "meta.json").write_text("{ not json")
        before = snapshot(ix)
        with pytest.raises(IndexLocked, match="in use by another process"):
            Vault(cfg)
        assert snapshot(ix) == before
    finally:
        holder.communicate("")


def test_a_damaged_index_another_vaultd_has_open_is_left_alone(cfg):
    first = Vault(cfg)
    try:
        (index_dir(cfg) / "VERSION").unlink()
        before = snapshot(index_dir(cfg))
        with pytest.raises(IndexLocked):
            Vault(cfg)
        assert snapshot(index_dir(cfg)) == before
    finally:
        first.close()


def _lock_free_after_close(cfg) -> None:
    fd = os.open(index_dir(cfg) / ".tantivy-writer.lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)


def test_a_refused_open_holds_no_lock(cfg):
    first = Vault(cfg)
    with pytest.raises(IndexLocked):
        Vault(cfg)
    first.close()
    _lock_free_after_close(cfg)
    Vault(cfg).close()


@pytest.fixture
def as_user(cfg, nobody):
    """(index folder, run(code) as a user other than root): root reads and writes every file
    whatever its mode, so as root the check runs as `nobody` (setpriv), on a copy of the
    index that user owns, in a folder that user can reach."""
    top, drop = nobody
    ix = top / "index"
    shutil.copytree(index_dir(cfg), ix)
    owner = top.stat()
    for p in (ix, *ix.iterdir()):
        os.chown(p, owner.st_uid, owner.st_gid)
    yield ix, lambda code: _run([*drop, sys.executable, "-c", code])


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=60)


OPEN = """
import sys
from vaultd.errors import VaultError
from vaultd.store.index import NoteIndex
try:
    NoteIndex(sys.argv[1] if len(sys.argv) > 1 else {ix!r})
except VaultError as e:
    print("VaultError:", e)
else:
    print("opened")
"""


@pytest.mark.parametrize("target, mode", [("index", 0o000), ("index", 0o500), ("store", 0o000), ("meta.json", 0o000)],
                         ids=["folder-unreadable", "folder-read-only", "segment-file-unreadable", "meta-unreadable"])
def test_permission_trouble_is_reported_and_nothing_wiped(as_user, target, mode):
    ix, run = as_user
    path = ix if target == "index" else (max(ix.glob("*.store")) if target == "store" else ix / target)
    before = snapshot(ix)
    old = path.stat().st_mode & 0o777
    path.chmod(mode)
    try:
        res = run(OPEN.format(ix=str(ix)))
    finally:
        path.chmod(old)
    assert res.stdout.startswith("VaultError:"), (res.stdout, res.stderr)
    assert "Permission denied" in res.stdout and "left as it is" in res.stdout
    assert snapshot(ix) == before


# -- at run time: a panic is an ordinary error, and the next start rebuilds --------------


def test_a_panic_in_a_search_is_an_ordinary_error(cfg):
    from vaultd.store.index import IndexDamaged

    v = Vault(cfg)
    try:
        invert(part(cfg, "fast"))  # under the open index: the hits' keys cannot be read
        with pytest.raises(Exception) as raised:  # not a BaseException that kills the thread
            v.search("productivity")
        assert isinstance(raised.value, IndexDamaged), raised.value
        assert "damaged" in str(raised.value) and "PanicException" in str(raised.value)
    finally:
        v.close()
    assert_rebuilt_and_found(cfg, ".fast")


def test_a_store_damaged_under_the_open_index_is_an_ordinary_error(cfg):
    from vaultd.store.index import IndexDamaged

    v = Vault(cfg)
    try:
        invert(part(cfg, "store"))
        with pytest.raises(IndexDamaged, match="damaged"):
            v.index.load_notes()
    finally:
        v.close()
    assert_rebuilt_and_found(cfg, ".store")
