"""No single folder or thread leaves vaultd blind or half dead: the real daemon, real
inotify, real faults (issue 18).

- a folder tree 1,100 levels deep (watchdog walks with recursion);
- past the inotify watch limit (watchdog drops watches without a word): the daemon
  counts what the kernel watches, says so, and rescans;
- the vault folder moved away, replaced, deleted and recreated: watched again;
- a panic in Tantivy (pyo3's PanicException is a BaseException) from a damaged index
  file: an error reply in a client thread, a stop with exit 1 in the indexer.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DEADLINE, wait_for

DEPTH = 1100


def _deep_tree(top: Path, depth: int = DEPTH) -> Path:
    """`top`/d/d/.../d, `depth` folders, with a note at the bottom; the bottom folder."""
    d = top
    d.mkdir()
    for _ in range(depth - 1):
        d = d / "d"
        d.mkdir()
    return d


@pytest.fixture
def deep_trees():
    """Folders to remove after the test with rm, which does not recurse: shutil.rmtree does,
    once per level, and pytest's clean-up of old temp folders then dies of RecursionError."""
    trees: list[Path] = []
    yield trees
    for t in trees:
        subprocess.run(["rm", "-rf", "--", str(t)], check=False)


def _check(daemon) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vaultd", "check", "--vault", str(daemon.vault), "--state-dir",
                           str(daemon.state), "--socket", str(daemon.socket)], capture_output=True, text=True,
                          timeout=30)


def test_a_folder_tree_1100_levels_deep_neither_stops_the_start_nor_the_watcher(make_daemon, vault, tmp_path,
                                                                                deep_trees):
    deep_trees += [vault / "deep", vault / "trench", tmp_path / "trench"]
    bottom = _deep_tree(vault / "deep")
    (bottom / "abyss.md").write_text("# Abyss\n\nbathyscaphe\n")
    daemon = make_daemon()  # watchdog's recursive os.walk raised RecursionError here: a crash loop
    assert daemon.status()["watch"]["ok"], daemon.status()["watch"]
    assert daemon.search_paths("bathyscaphe") == [(bottom / "abyss.md").relative_to(vault).as_posix()]

    # One moved in while running: watchdog walks it in the thread that reads events.
    bottom = _deep_tree(tmp_path / "trench")
    (bottom / "vent.md").write_text("# Vent\n\nhydrothermal\n")
    os.rename(tmp_path / "trench", vault / "trench")
    assert wait_for(lambda: daemon.search_paths("hydrothermal"), interval=0.1)

    (vault / "notes" / "Deep work.md").write_text("# Deep work\n\nafterwards an edit: narwhal\n")
    assert wait_for(lambda: daemon.search_paths("narwhal") == ["notes/Deep work.md"], interval=0.05), \
        "a normal note is still seen as it changes"
    assert daemon.status()["watch"]["ok"] and _check(daemon).returncode == 0


def _userns_watch_limit_works() -> bool:
    try:
        return subprocess.run(["unshare", "-U", "-r", "sh", "-c", "echo 20 > /proc/sys/user/max_inotify_watches"],
                              capture_output=True, timeout=DEADLINE).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.skipif(not _userns_watch_limit_works(), reason="needs unshare -U -r and a per-namespace inotify watch limit")
def test_past_the_inotify_watch_limit_it_says_so_and_rescans(make_daemon, vault, tmp_path):
    for i in range(40):
        (vault / f"topic{i}").mkdir()
        (vault / f"topic{i}" / f"t{i}.md").write_text(f"# Topic {i}\n\nplain text\n")
    config = tmp_path / "vaultd.toml"
    config.write_text("[watch]\nfallback_rescan_s = 1.0\n")
    daemon = make_daemon(extra=["--config", str(config)], start=False)
    daemon.args = ["unshare", "-U", "-r", "sh", "-c", 'echo 20 > /proc/sys/user/max_inotify_watches && exec "$@"',
                   "sh", *daemon.args]  # 20 watches for 43 folders (unshare and sh exec: the pid is the daemon's)
    daemon.start()

    # The daemon answers before its watcher has started and counted the folders: wait for its
    # word. Watchdog before 7.1 drops a watch it cannot add without a word, and vaultd counts the
    # folders the kernel watches ("23 of the vault's 43 folders are not watched (the inotify watch
    # limit..."); watchdog 7.1 refuses to start at all ("cannot watch ... inotify watch limit
    # reached"), and vaultd tries again later. Either way it says so and rescans.
    watch = wait_for(lambda: (w := daemon.status()["watch"])["problem"] and "watch limit" in w["problem"] and w)
    assert not watch["ok"] and watch["rescan_every"] == 1.0, watch
    if watch["folders"] is not None:
        assert watch["folders"] == 43 and watch["watched"] <= 20 and "are not watched" in watch["problem"], watch
    r = _check(daemon)
    assert r.returncode == 1 and "watch:     DEGRADED" in r.stdout and "watch limit" in r.stdout, r.stdout

    for i in range(40):  # more than half of them in folders the kernel does not watch
        (vault / f"topic{i}" / f"t{i}.md").write_text(f"# Topic {i}\n\nchanged to wombat{i}\n")
    found = lambda: {p for i in range(40) for p in daemon.search_paths(f"wombat{i}")}  # noqa: E731
    assert wait_for(lambda: len(found()) == 40, interval=0.2), f"only {sorted(found())} were seen"


def test_vault_folder_moved_away_then_another_in_its_place(daemon, vault, tmp_path):
    before = daemon.status()["notes"]
    os.rename(vault, tmp_path / "vault.old")
    watch = wait_for(lambda: (w := daemon.status()["watch"])["problem"] and w)
    assert not watch["ok"] and "missing" in watch["problem"]
    assert _check(daemon).returncode != 0
    assert daemon.status()["notes"] == before, "a missing vault folder is not a vault with no notes"

    vault.mkdir()
    (vault / "fresh.md").write_text("# Fresh\n\nmarmot\n")
    assert wait_for(lambda: daemon.search_paths("marmot") == ["fresh.md"], interval=0.05)
    (vault / "fresh.md").write_text("# Fresh\n\nmarmot, and later ibex\n")
    assert wait_for(lambda: daemon.search_paths("ibex") == ["fresh.md"], interval=0.05), \
        "the new folder is watched, not only rescanned once"
    assert wait_for(lambda: daemon.status()["notes"] == 1), "the old folder's notes are gone"
    assert daemon.status()["watch"]["ok"]
    (tmp_path / "vault.old" / "notes" / "Deep work.md").write_text("# Deep work\n\nplatypus\n")
    (vault / "fresh.md").write_text("# Fresh\n\nand last lemur\n")
    assert wait_for(lambda: daemon.search_paths("lemur") == ["fresh.md"], interval=0.05)
    assert daemon.search_paths("platypus") == [], "the folder moved away is no longer watched"


def test_vault_folder_deleted_and_recreated_and_check_is_never_ok_while_blind(daemon, vault):
    shutil.rmtree(vault)
    vault.mkdir()
    (vault / "again.md").write_text("# Again\n\npelican\n")
    wait_for(lambda: _check(daemon).returncode == 0, interval=0.1)
    (vault / "again.md").write_text("# Again\n\npelican and heron\n")  # once check says ok, edits are seen
    assert wait_for(lambda: daemon.search_paths("heron") == ["again.md"], interval=0.05)
    assert daemon.search_paths("pelican") == ["again.md"]


# -- a panic in Tantivy ---------------------------------------------------------


_PROBE = r"""
import os, shutil, sys, tantivy
index, where, tmp = sys.argv[1:]

def panics(copy):
    try:
        idx = tantivy.Index.open(copy)
    except BaseException as e:
        return "open" if type(e).__name__ == "PanicException" else "error"
    try:
        s = idx.searcher()
        s.fast_field_values("key", [a for _, a in s.search(tantivy.Query.all_query(), 100).hits])
    except BaseException as e:
        return "read" if type(e).__name__ == "PanicException" else "error"

for name in sorted(f for f in os.listdir(index) if f.endswith(".fast")):
    data = open(os.path.join(index, name), "rb").read()
    for pos in range(len(data) - 1, -1, -1):
        copy = os.path.join(tmp, f"probe-{name}-{pos}")
        shutil.copytree(index, copy)
        with open(os.path.join(copy, name), "r+b") as f:
            f.seek(pos)
            f.write(bytes([data[pos] ^ 0xFF]))
        if panics(copy) == where:
            print(name, pos)
            sys.exit()
"""


def _panicking_damage(index: Path, where: str, tmp: Path) -> tuple[Path, int]:
    """A byte of a fast-field file of `index` whose flip makes Tantivy panic: `where` is
    "open" (opening the index, as the reload after each commit does) or "read" (reading the
    `key` column, as every search does). Found by flipping each byte of a copy in turn, in a
    process of its own (the panics print, and leave threads behind)."""
    tmp.mkdir()
    r = subprocess.run([sys.executable, "-c", _PROBE, str(index), where, str(tmp)], capture_output=True, text=True,
                       timeout=300, env={**os.environ, "RUST_BACKTRACE": "0"})
    if not r.stdout.strip():
        pytest.skip(f"no byte of {index} makes this Tantivy panic at {where} ({r.returncode})")
    name, pos = r.stdout.split()
    return index / name, int(pos)


def _flip(f: Path, pos: int) -> None:
    with open(f, "r+b") as fh:  # in place: the daemon's mmap sees it
        fh.seek(pos)
        b = fh.read(1)[0]
        fh.seek(pos)
        fh.write(bytes([b ^ 0xFF]))


def test_a_panic_in_a_request_on_a_damaged_index_stops_the_daemon_and_the_restart_rebuilds(daemon, tmp_path):
    assert daemon.search_paths("memory")
    f, pos = _panicking_damage(daemon.state / "index", "read", tmp_path / "probe")
    _flip(f, pos)
    msg = daemon.send_raw(b'{"v":1,"id":5,"op":"search","q":"memory"}\n')
    assert not msg["ok"] and msg["error"]["code"] == "internal" and "PanicException" in msg["error"]["message"], msg
    assert wait_for(lambda: daemon.proc.poll() is not None, interval=0.1), \
        "a daemon whose index files are damaged stops, so that its restart rebuilds the index"
    out = daemon.output()
    assert daemon.proc.returncode == 1 and "damaged while serving" in out and f.name in out, out
    daemon.start()
    assert daemon.search_paths("memory") and daemon.status()["index_rebuilt"]


def test_a_panic_in_the_indexer_stops_the_daemon_with_exit_1(daemon, vault, tmp_path):
    f, pos = _panicking_damage(daemon.state / "index", "open", tmp_path / "probe")
    _flip(f, pos)
    (vault / "new.md").write_text("# New\n\nthe commit goes through; the reload after it panics\n")
    assert wait_for(lambda: daemon.proc.poll() is not None, interval=0.1), \
        "a daemon whose indexer died must not go on serving a frozen index"
    out = daemon.output()
    assert daemon.proc.returncode == 1, out
    assert "the indexer failed (" in out and "PanicException" in out, out
    assert "vaultd stopped so that it starts afresh" in out, out


def test_a_note_that_cannot_be_read_is_a_problem_until_a_chmod_fixes_it(monkeypatch, nobody):
    """A note file vaultd may not read is listed by `problems` (and counted by `status`),
    not indexed; the chmod that lets it read it is an event: the note is indexed at once,
    not at the next rescan. Root reads every file, so the daemon runs as `nobody`."""
    from conftest import Daemon

    top, drop = nobody
    vault = top / "v"
    vault.mkdir()
    (vault / "a.md").write_text("# A\n\nalpha\n")
    (vault / "b.md").write_text("# B\n\nzulu\n")
    owner = top.stat()
    for p in (vault, *vault.iterdir()):
        os.chown(p, owner.st_uid, owner.st_gid)
    (vault / "b.md").chmod(0o000)
    d = Daemon(vault, top / "state", top / "d.sock")
    d.args = [*drop, *d.args]
    for var in ("HOME", "XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"):
        monkeypatch.setenv(var, str(top))  # folders that user can reach
    d.start()
    try:
        [p] = d.request("problems")["problems"]
        assert p == {"path": "b.md", "title": None, "problems": ["cannot read: Permission denied"]}
        assert d.request("status")["problems"] == 1
        assert d.request("search", q="zulu")["hits"] == []
        g = d.request("status")["generation"]
        (vault / "b.md").chmod(0o644)  # no byte changes, nor the mtime
        wait_for(lambda: d.request("status")["generation"] > g)
        assert [h["path"] for h in d.request("search", q="zulu")["hits"]] == ["b.md"]
        assert d.request("problems")["problems"] == [] and d.request("status")["problems"] == 0
    finally:
        d.stop()
