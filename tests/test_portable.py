"""Where a Linux facility is missing (macOS, the BSDs), vaultd takes its fallback and says so
(vaultd/host.py): each fallback forced here with $VAULTD_PORTABLE, against the real daemon
where it runs in the daemon. The whole suite also runs with `VAULTD_PORTABLE=1`."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from conftest import DEADLINE, Daemon, wait_for
from vaultd import host

LINUX_ONLY = sorted(f.name for f in host.FACILITIES.values() if f.linux)


@pytest.fixture
def forced(monkeypatch):
    """force(value): $VAULTD_PORTABLE set to `value` for this test and the processes it
    starts, read afresh by this process; as it was after."""
    def force(value: str) -> None:
        monkeypatch.setenv(host.ENV, value)
        host.reset()
    yield force
    host.reset()  # read again once monkeypatch has put it back


def _lines_saying(daemon: Daemon, words: str) -> list[str]:
    return [line for line in daemon.output().splitlines() if words in line]


# -- the one place that decides -----------------------------------------------------------


def test_on_this_linux_every_facility_is_here_and_nothing_is_said(forced):
    forced("")
    if not sys.platform.startswith("linux"):
        pytest.skip("the facilities are Linux's")
    assert [name for name in host.FACILITIES if not host.has(name)] == []
    assert host.lacking_line() is None


def test_portable_forces_every_linux_fallback_and_a_list_forces_those_named(forced):
    forced("1")
    assert [name for name in LINUX_ONLY if host.has(name)] == []
    line = host.lacking_line()
    assert line.startswith("running without some of what vaultd uses on Linux (forced by $VAULTD_PORTABLE)")
    said = [f.name for f in host.lacking()]
    assert said == [n for n in host.FACILITIES if n in LINUX_ONLY and host.FACILITIES[n].without]
    assert all(f"[{n}]: {host.FACILITIES[n].without}" in line for n in said)
    assert "sock_cloexec" not in line  # nothing is lost without it: not said
    if sys.platform.startswith("linux"):
        assert host.has("native_watch")  # not Linux's alone: only forced by name
    forced("lease, shm")
    assert [f.name for f in host.lacking()] == ["shm", "lease"]
    with pytest.raises(KeyError):
        host.has("no such facility")


# -- the fallbacks, each where it runs ----------------------------------------------------


def test_without_proc_a_note_reached_through_a_folder_symlinked_out_is_refused(forced, tmp_path):
    from vaultd.paths import open_note

    forced("proc_fd")
    vault, outside = tmp_path / "vault", tmp_path / "outside"
    (vault / "notes").mkdir(parents=True)
    outside.mkdir()
    (vault / "notes" / "in.md").write_text("# In\n")
    (outside / "secret.md").write_text("# Outside\n")
    (vault / "notes" / "sub").symlink_to(outside, target_is_directory=True)
    os.close(open_note(str(vault), "notes/in.md"))
    with pytest.raises(OSError) as e:
        open_note(str(vault), "notes/sub/secret.md")
    assert e.value.errno == errno.EXDEV


def test_without_dev_shm_the_workers_spool_is_in_the_temp_folder(forced, vault):
    from vaultd.ingest import workers

    forced("shm,pdeathsig")
    assert workers.spool_base() == tempfile.gettempdir()
    (vault / "bulk").mkdir()
    for i in range(workers.CHUNK * 6):
        (vault / f"bulk/n{i}.md").write_text(f"# Note {i}\n\nwork item {i}\n")
    items = [(f"bulk/n{i}.md", 0, 40, 0) for i in range(workers.CHUNK * 6)]

    def spooled(base: str) -> list[str]:
        if not os.path.isdir(base):
            return []
        mine = [os.path.join(base, d) for d in os.listdir(base) if d.startswith(f"{workers.SPOOL_PREFIX}{os.getpid()}-")]
        return [os.path.join(d, f) for d in mine for f in os.listdir(d)]

    got = workers.parse_many(str(vault), items, 1 << 20, 2)
    first = next(got)
    wait_for(lambda: len(spooled(tempfile.gettempdir())) == 5)  # the other chunks wait, in the temp folder
    assert spooled("/dev/shm") == []
    rest = [first, *got]
    assert [(rel, note.path) for rel, note, _ in rest] == [(rel, rel) for rel, *_ in items]
    assert spooled(tempfile.gettempdir()) == []


PARENT = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path

    def hold(marks):
        Path(marks, str(os.getpid())).touch()  # running the task
        signal.pause()  # and never ending it: only the worker's end of life ends it

    if __name__ == "__main__":
        from vaultd.ingest.workers import worker_pool

        pool = worker_pool(2)
        for _ in range(2):
            pool.submit(hold, sys.argv[1])
        signal.pause()
""")


@pytest.mark.parametrize("force", ["", "pdeathsig"], ids=["PR_SET_PDEATHSIG", "polling getppid"])
def test_a_parsing_worker_ends_when_its_daemon_is_killed(forced, tmp_path, force):
    forced(force)
    script, marks = tmp_path / "parent.py", tmp_path / "marks"
    script.write_text(PARENT)
    marks.mkdir()
    parent = subprocess.Popen([sys.executable, str(script), str(marks)])
    pids: list[int] = []
    try:
        running = wait_for(lambda: len(found := os.listdir(marks)) == 2 and found)  # both workers hold a task
        pids = [int(p) for p in running]
        parent.kill()  # SIGKILL: nothing of the parent's runs
        parent.wait(timeout=DEADLINE)
        wait_for(lambda: not any(_running(p) for p in pids))
    finally:
        parent.kill()
        parent.wait()
        for p in pids:
            if _running(p):
                os.kill(p, signal.SIGKILL)


def _running(pid: int) -> bool:
    """Whether `pid` runs (a zombie does not: its parent, the init of this container, reaps it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# -- the real daemon with every fallback forced -------------------------------------------


def test_the_daemon_with_every_fallback_forced_says_so_indexes_searches_and_sees_a_save(
        forced, make_daemon, vault, tmp_path):
    from vaultd.ingest import workers

    forced("1")
    (vault / "bulk").mkdir()
    for i in range(workers.POOL_MIN + 20):  # a first index in worker processes: spool and parent checks forced
        (vault / f"bulk/n{i}.md").write_text(f"# Bulk {i}\n\nwork item quillwort{i}\n")
    config = tmp_path / "config.toml"
    config.write_text("[index]\nworkers = 2\n")
    d = make_daemon(extra=["--config", str(config), "--split", "propose"])
    [said] = wait_for(lambda: _lines_saying(d, "running without"))
    assert "forced by $VAULTD_PORTABLE" in said and all(f"[{f.name}]" in said for f in host.lacking())
    assert d.search_paths(f"quillwort{workers.POOL_MIN + 19}") == [f"bulk/n{workers.POOL_MIN + 19}.md"]
    watch = d.status()["watch"]
    assert watch["ok"] and watch["watched"] is None and watch["folders"] >= 2, watch  # not counted: no /proc

    gen = d.status()["generation"]
    (vault / "notes" / "Fresh.md").write_text("# Fresh\n\nmarsupial lantern\n")
    d.wait_generation(gen)
    assert d.search_paths("marsupial") == ["notes/Fresh.md"]


def test_a_split_written_and_undone_without_leases_or_the_swap(forced, make_daemon, vault):
    forced("1")
    big = vault / "notes" / "Big.md"
    big.write_text("# Big\n\nIntro.\n\n" + "".join(f"## Part {i}\n\n" + f"walrus words {i}\n" * 400 for i in range(4)))
    os.utime(big, (1e9, 1e9))  # written long ago: quiet enough to split
    before = _tree(vault)
    d = make_daemon(extra=["--split", "propose"])
    res = d.request("split", note="notes/Big.md")
    assert res["parts"] and all((vault / p).is_file() for p in res["parts"])
    assert big.read_bytes() != before["notes/Big.md"]  # the hub replaced it
    undone = d.request("split", undo=[res["op"]])
    assert undone["undone"] == [res["op"]]
    assert _tree(vault) == before


def test_a_save_a_new_folder_and_a_delete_are_seen_by_the_polling_observer(forced, make_daemon, vault):
    forced("native_watch")
    d = make_daemon()
    [said] = wait_for(lambda: _lines_saying(d, "running without"))
    assert "[native_watch]" in said and "[lease]" not in said
    assert d.status()["watch"]["ok"]
    gen = d.status()["generation"]
    (vault / "notes" / "Polled.md").write_text("# Polled\n\ncassowary\n")
    d.wait_generation(gen)
    assert d.search_paths("cassowary") == ["notes/Polled.md"]
    gen = d.status()["generation"]
    (vault / "later" / "deeper").mkdir(parents=True)
    (vault / "later" / "deeper" / "Down.md").write_text("# Down\n\npangolin\n")
    (vault / "notes" / "Polled.md").unlink()
    d.wait_generation(gen)
    wait_for(lambda: d.search_paths("pangolin") == ["later/deeper/Down.md"] and not d.search_paths("cassowary"))
    assert d.status()["watch"]["ok"]


def _tree(root: Path) -> dict[str, bytes]:
    """The vault's files, but for vaultd's split journal (.vaultd/)."""
    return {rel: p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not (rel := p.relative_to(root).as_posix()).startswith(".vaultd/")}
