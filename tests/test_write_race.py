"""No save lost to a journaled write (issue 38): an editor's save raced against every step of
a split, a split's undo, a remembered entry and its undo (tests/write_race.py says how).
bench/races.py runs every step with every kind of save, many times; this runs every step
of every operation once, with one kind of save each, and a few more."""

import errno
import os
import random
import threading

import pytest

import write_race as w
from conftest import wait_for
from write_race import paused
from vaultd.store import checked


def _sample() -> list[tuple[str, int, str]]:
    import tempfile
    from pathlib import Path

    every = []
    for op in w.OPS:
        with tempfile.TemporaryDirectory() as t:
            n = len(w.steps(Path(t), op))
        every += [(op, k, ed) for k in range(n) for ed in w.EDITORS]
    rng = random.Random(38)
    first = [r for r in every if (r[1] + w.OPS.index(r[0])) % 3 == w.EDITORS.index(r[2])]  # each step once
    rest = [r for r in every if r not in first]
    return first + rng.sample(rest, max(0, 54 - len(first)))


RACES = _sample()


def test_every_step_of_every_journaled_write_is_raced():
    assert len(RACES) >= 50
    assert {op for op, _, _ in RACES} == set(w.OPS) and {ed for _, _, ed in RACES} == set(w.EDITORS)


@pytest.mark.parametrize("op,step,editor", RACES, ids=[f"{o.replace(' ', '-')}-{k}-{e}" for o, k, e in RACES])
def test_a_save_raced_against_a_journaled_write_is_never_lost(tmp_path, op, step, editor):
    r = w.race(tmp_path, op, step, editor, random.Random(step))
    assert r.at, f"the operation has no step {step}"
    assert not r.lost, f"{editor} save of {r.target} at {r.at} was lost ({r.outcome}: {r.error})"
    assert r.recorded, f"{op} refused ({r.error}) but its journal entry does not say why"
    assert r.leftovers == 0
    if r.outcome == "refused":
        assert "changed while" in r.error and "nothing was" in r.error


def _folder(tmp_path):
    (tmp_path / "v").mkdir()
    return tmp_path / "v"


def test_a_file_open_for_writing_is_not_replaced_and_the_reason_says_so(tmp_path):
    tmp_path = _folder(tmp_path)
    p = tmp_path / "n.md"
    p.write_bytes(b"old\n")
    with open(p, "ab"):  # an editor holding it open for writing
        with pytest.raises(checked.Changed) as e:
            checked.replace(p, b"old\n", b"new\n")
    assert "open for writing" in e.value.reason and p.read_bytes() == b"old\n"
    assert [x.name for x in tmp_path.iterdir()] == ["n.md"]


@pytest.mark.parametrize("at", ["written", "swapping"])
def test_a_save_renamed_over_the_file_after_the_check_is_kept_whole(tmp_path, at):
    """Before the swap, the file at the path is checked again; the swap hands back the file
    it replaced: when that is an editor's save renamed in after the last check, it goes
    back in place at once. Nothing of ours stays."""
    tmp_path = _folder(tmp_path)
    p = tmp_path / "n.md"
    p.write_bytes(b"old\n")
    other = tmp_path / "save.tmp"

    def pause(name, path, fd):
        if name == at:  # after the check, before the swap: an atomic save lands
            other.write_bytes(b"the user's save\n")
            os.replace(other, p)

    with paused(pause), pytest.raises(checked.Changed) as e:
        checked.replace(p, b"old\n", b"new\n")
    assert "saved anew" in e.value.reason and p.read_bytes() == b"the user's save\n"
    assert [x.name for x in tmp_path.iterdir()] == ["n.md"]


def test_an_in_place_save_waits_for_the_lease_and_lands_in_the_file(tmp_path):
    p = tmp_path / "n.md"
    p.write_bytes(b"old\n")
    saver = threading.Thread(target=lambda: p.write_bytes(b"old\nand the user's line\n"))

    def pause(name, path, fd):
        if name == "written":
            saver.start()
            wait_for(lambda: not saver.is_alive() or w.breaking(fd))  # its open() breaks our lease, then waits

    with paused(pause), pytest.raises(checked.Changed) as e:
        checked.replace(p, b"old\n", b"new\n")
    saver.join(60)
    assert "opened it for writing" in e.value.reason or "saved anew" in e.value.reason
    assert p.read_bytes() == b"old\nand the user's line\n"


def test_a_file_that_changed_after_it_was_read_is_not_removed(tmp_path):
    p = tmp_path / "part.md"
    p.write_bytes(b"as written\n")
    with pytest.raises(checked.Changed):
        checked.remove(p, b"as it was read\n")
    assert p.read_bytes() == b"as written\n"
    with pytest.raises(checked.Changed) as e:
        checked.remove(tmp_path / "gone.md", b"x")
    assert e.value.errno == errno.EAGAIN and "gone" in e.value.reason


def test_split_history_says_why_a_raced_split_was_refused(tmp_path):
    """Through the real daemon's socket and vaultq: the refused split's row says why."""
    import subprocess
    import sys

    from conftest import Daemon

    root = tmp_path / "vault"
    w.make_vault(root)
    v = w.open_vault(root, tmp_path / "state1")
    try:
        with open(root / "notes" / "a.md", "ab"):  # an editor holds a linking note open for writing
            with pytest.raises(Exception, match="changed while splitting .*open for writing"):
                v.split_note("notes/hub.md", check_quiet=False)
    finally:
        v.close()
    d = Daemon(root, tmp_path / "state", tmp_path / "d.sock").start()
    try:
        r = subprocess.run([sys.executable, "-m", "vaultd.vaultq", "--socket", str(d.socket), "split", "--history"],
                           capture_output=True, text=True, timeout=60)
    finally:
        d.stop()
    assert r.returncode == 0, r.stderr
    assert "aborted" in r.stdout and "why: notes/a.md changed while splitting" in r.stdout
    assert "refused " in r.stdout and "notes/a.md: a program has it open for writing" in r.stdout
