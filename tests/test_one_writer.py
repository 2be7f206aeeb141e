"""One writer per vault, and a journal that goes with the vault (issue 18).

Two vaultds on one vault (different state folders: a container and the host, another
XDG_STATE_HOME) must not both split; the split journal is user data kept in the vault, so
deleting the state folder loses no undo and no "keep this note whole"; an aborted split
removes only files it created itself."""

import os
import shutil

import msgspec
import pytest

from vaultd.store import journal
from vaultd.store.state import write_atomic
from vaultd.config import Config
from vaultd.errors import QueryError
from vaultd.vault import Vault

from conftest import wait_for
from test_split import _age, _big_md, _tree, _vault


def _second(v: Vault, state: str) -> Vault:
    """Another vaultd on the same vault, with a state folder of its own."""
    cfg = msgspec.structs.replace(v.config, state_dir=str(v.root.parent / state))
    w = Vault(cfg)
    w.reconcile()
    return w


def test_a_second_vaultd_on_the_vault_indexes_but_never_writes(tmp_path):
    v = _vault(tmp_path, {"notes/Big.md": _big_md(), "notes/Other.md": "[[Big#Section 5]]\n"}, quiet=0)
    w = _second(v, "state2")
    try:
        assert v.status()["writer"] and not w.status()["writer"]
        assert w.search("lorem", 5, "warm", False)["total"] >= 1  # it indexes and answers
        before = _tree(v.root)
        with pytest.raises(QueryError, match=f"another vaultd \\(pid {os.getpid()}\\) writes into this vault"):
            w.split_note("notes/Big.md")
        assert w.split_all()["split"] == [] and _tree(v.root) == before
        op = v.split_note("notes/Big.md")["op"]
        with pytest.raises(QueryError, match="another vaultd"):
            w.split_undo(op)
        assert (v.root / ".vaultd/split" / f"{op}.json").is_file()
    finally:
        v.close()
    try:  # the writer stopped: the other one takes over, reading what the first did
        w.split_undo(op)
        assert w.splits.kept_whole == {"notes/Big.md": op}
        assert w.status()["writer"]
    finally:
        w.close()


def test_the_journal_lives_in_the_vault_and_outlives_the_state_folder(tmp_path):
    v = _vault(tmp_path, {"notes/Big.md": _big_md(), "notes/Small.md": "# S\n"}, quiet=0)
    try:
        assert not (v.root / ".vaultd").exists(), "nothing is written into the vault before a split"
        first = v.split_note("notes/Big.md")["op"]
        v.split_undo(first)
        second = v.split_note("notes/Big.md")["op"]  # by hand: it splits again
        journal = v.root / ".vaultd/split"
        assert sorted(p.name for p in journal.iterdir()) == sorted([f"{first}.json", f"{second}.json"])
        assert oct((v.root / ".vaultd").stat().st_mode & 0o777) == "0o700"
        assert {oct(p.stat().st_mode & 0o777) for p in journal.iterdir()} == {"0o600"}
        assert "undo" in (v.root / ".vaultd/README.txt").read_text()
    finally:
        v.close()
    shutil.rmtree(v.state_dir)  # derived data, says the README
    v = Vault(v.config)
    try:
        v.reconcile()
        assert [e["op"] for e in v.split_history()["history"]] == [first, second]
        v.split_undo(second)  # an older split can still be undone
        assert v.splits.kept_whole == {"notes/Big.md": second}
        v.state.grew("notes/Big.md", 10)  # grown while watched: auto mode would split it...
        msgspec.structs.replace(v.config.split, mode="auto")
        assert v.auto_split() == []  # ...but the undo, read from the vault, keeps it whole
    finally:
        v.close()


def test_an_older_journal_in_the_state_folder_is_still_read_and_undone(tmp_path):
    v = _vault(tmp_path, {"notes/Big.md": _big_md()}, quiet=0)
    try:
        before = _tree(v.root)
        op = v.split_note("notes/Big.md")["op"]
    finally:
        v.close()
    old = v.state_dir / "split"  # where vaultd kept it before
    old.mkdir()
    shutil.move(v.root / ".vaultd/split" / f"{op}.json", old / f"{op}.json")
    v = Vault(v.config)
    try:
        v.reconcile()
        v.split_undo(op)
        assert _tree(v.root) == before
        assert journal.Journal(v.root, (old,)).load(op)["status"] == "undone"
        assert not (v.root / ".vaultd/split" / f"{op}.json").exists()  # updated where it was
    finally:
        v.close()


def test_a_split_never_writes_over_a_file_someone_else_created(tmp_path):
    """A part's path taken between planning and writing (another vaultd's split of a
    synced vault, the user): the split stops, and that file is left as it was."""
    v = _vault(tmp_path, {"notes/Big.md": _big_md()}, quiet=0)
    try:
        before = _tree(v.root)
        plan = v.splits.plan("notes/Big.md")
        theirs = v.root / plan.parts[-1]
        theirs.write_text("someone else's note\n")
        with pytest.raises(journal.SplitError, match="nothing was split"):
            journal.apply(plan, v.root, v.journal)
        assert theirs.read_text() == "someone else's note\n"
        assert _tree(v.root) == {**before, plan.parts[-1]: b"someone else's note\n"}
        assert [e["status"] for e in v.journal.all()] == ["aborted"]
    finally:
        v.close()


def test_a_roll_back_removes_only_the_files_it_wrote_itself(tmp_path):
    """Same bytes, another file: the abort leaves it (another writer's, not ours)."""
    root = tmp_path / "v"
    root.mkdir()
    mine, theirs = root / "mine.md", root / "theirs.md"
    c_mine, c_theirs = journal.FileChange("mine.md", None, b"x\n"), journal.FileChange("theirs.md", None, b"x\n")
    written = {"mine.md": write_atomic(mine, b"x\n", new=True),
               "theirs.md": write_atomic(theirs, b"x\n", new=True)}
    gone = theirs.stat().st_ctime_ns
    theirs.unlink()
    # A new file may get the old one's inode number: only its ctime tells them apart. No call
    # sets a ctime (os.utime sets it to now), so wait for the file system's coarse clock to
    # pass the old one's, as a folder's ctime after a utime shows.
    wait_for(lambda: os.utime(tmp_path) or tmp_path.stat().st_ctime_ns > gone, interval=0.001)
    theirs.write_bytes(b"x\n")  # replaced by another writer with the very same bytes
    assert journal.restore(root, [c_mine, c_theirs], mine=written) == ["mine.md"]
    assert not mine.exists() and theirs.read_bytes() == b"x\n"
    with pytest.raises(FileExistsError):  # and a part is only ever created, never written over another's
        write_atomic(theirs, b"y\n", new=True)
    assert theirs.read_bytes() == b"x\n" and sorted(p.name for p in root.iterdir()) == ["theirs.md"]


def test_two_real_daemons_one_writer(tmp_path, short_dir):
    """Two `vaultd run` on one vault, each with its own state folder and socket (a container
    and the host): both answer; only the first writes, and the second says who does."""
    from conftest import Daemon
    from test_vaultq import vaultq

    vault = tmp_path / "vault"
    (vault / "notes").mkdir(parents=True)
    (vault / "notes" / "Big.md").write_text(_big_md())
    _age(vault)
    a = Daemon(vault, tmp_path / "state-a", short_dir / "a.sock").start()
    b = Daemon(vault, tmp_path / "state-b", short_dir / "b.sock").start()
    try:
        assert a.search_paths("lorem") == b.search_paths("lorem") == ["notes/Big.md"]
        assert a.status()["writer"] and not b.status()["writer"]
        assert "writer:     no: another vaultd writes" in vaultq("--socket", str(b.socket), "status").stdout
        r = vaultq("--socket", str(b.socket), "split", "notes/Big.md")
        assert r.returncode == 2 and f"another vaultd (pid {a.proc.pid}) writes into this vault" in r.stderr, r.stderr
        assert not (vault / ".vaultd").exists()
        assert vaultq("--socket", str(a.socket), "split", "notes/Big.md").returncode == 0
    finally:
        a.stop()
    assert wait_for(lambda: b.status()["writer"] or None) is True  # it takes over
    b.stop()


@pytest.mark.parametrize("what", ["symlink", "file"])
def test_a_vaultd_folder_that_is_a_symlink_or_a_file_is_neither_written_nor_read(tmp_path, what):
    outside = tmp_path / "outside"
    (outside / "split").mkdir(parents=True)
    planted = {"op": "20260101T000000-abcdef", "time": 1.0, "note": "notes/Big.md", "status": "undone", "files": []}
    (outside / "split" / "20260101T000000-abcdef.json").write_text(__import__("json").dumps(planted))
    v = _vault(tmp_path, {"notes/Big.md": _big_md()}, quiet=0)
    try:
        if what == "symlink":
            os.symlink(outside, v.root / ".vaultd")
        else:
            (v.root / ".vaultd").write_text("not a folder\n")
        before = _tree(v.root)
        assert v.split_history()["history"] == [], "another folder's journal says nothing here"
        with pytest.raises(QueryError, match=r"\.vaultd is not a folder \(a symlink or a file\)"):
            v.split_note("notes/Big.md")
        assert _tree(v.root) == before
        assert sorted(p.name for p in outside.rglob("*")) == ["20260101T000000-abcdef.json", "split"]
    finally:
        v.close()
