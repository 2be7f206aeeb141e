"""Every ```console block of README.md and docs/*.md is run, and what it shows is what the
program prints: its commands, in one bash, against ONE daemon serving a copy of
examples/vault (module-scoped), with the conventions of tests/docs_blocks.py (`…` for any
text, times, generations and journal ops as variable parts, /home/me/notes for the vault).
Blocks run in the order of the pages (README.md, then docs/ by name), and each leaves the
vault as it found it (what it writes, it undoes). What the daemon remembers of a person's
reads is not undone: they make notes HOT, as docs/agents.md shows in its blocks' order (a
block that shows the HOT set comes before those that read)."""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import docs_blocks
from conftest import DEADLINE, Daemon, wait_for
from docs_blocks import ROOT, Block, Places, Step
from vaultd.paths import vault_name

BLOCKS = [b for page in docs_blocks.PAGES for b in docs_blocks.blocks(page)]

DAEMON_CONFIG = '[capture]\nfolder = "inbox"\n'
"""What the docs' daemon runs with beyond the defaults (docs/README.md says so)."""


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """HOME with ~/notes, a copy of examples/vault stamped as a checkout stamps it (every file
    in the same second, an hour ago), and ~/project beside it; a clone's layout whose examples/vault
    leads to ~/notes (.venv this one's, examples/mcp_session.py, integrations/, editors/);
    ~/.local/bin/vaultd and vaultq, this one's;
    and one daemon on the vault's default socket, found as vaultq finds it."""
    tmp = tmp_path_factory.mktemp("docs")
    clone, home = tmp / "clone", tmp / "home"
    vault = home / "notes"  # a vault named as the docs name it ("the notes vault")
    shutil.copytree(ROOT / "examples" / "vault", vault)
    stamp = time.time() - 3600  # cloned an hour ago (a note made in the clone's minute is not recent)
    for p in vault.rglob("*"):
        os.utime(p, (stamp, stamp))
    (clone / "examples").mkdir(parents=True)
    (clone / "examples" / "vault").symlink_to(vault)
    (clone / ".venv").symlink_to(Path(sys.executable).parent.parent)
    (clone / "examples" / "mcp_session.py").symlink_to(ROOT / "examples" / "mcp_session.py")
    for shared in ("integrations", "editors"):
        (clone / shared).symlink_to(ROOT / shared)
    (home / "project").mkdir()
    (home / ".local" / "bin").mkdir(parents=True)  # as docs/running.md's install makes it
    for program in ("vaultd", "vaultq"):
        (home / ".local" / "bin" / program).symlink_to(Path(sys.executable).with_name(program))
    runtime = Path(tempfile.mkdtemp(prefix="vq"))  # short: a socket path has at most 107 bytes
    (runtime / "vaultd").mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VAULTD_", "XDG_")) and k not in
           ("CLAUDECODE", "NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID")}
    env.update(HOME=str(home), XDG_RUNTIME_DIR=str(runtime), XDG_STATE_HOME=str(tmp / "state"),
               XDG_CONFIG_HOME=str(home / ".config"), XDG_CACHE_HOME=str(tmp / "cache"), PYTHONUNBUFFERED="1",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", NO_COLOR="1",
               LC_ALL="C.UTF-8", TZ="UTC")
    config = tmp / "daemon.toml"
    config.write_text(DAEMON_CONFIG)
    d = Daemon(vault, tmp / "state" / "vaultd" / vault_name(vault), runtime / "vaultd" / f"{vault_name(vault)}.sock",
               ["--config", str(config)])
    with pytest.MonkeyPatch.context() as mp:  # the daemon inherits this environment
        for k in list(os.environ):
            mp.delenv(k)
        for k, v in env.items():
            mp.setenv(k, v)
        d.start()
    places = Places(vault=vault, clone=clone, home=home, runtime=runtime)
    yield {"places": places, "env": env, "daemon": d}
    d.stop()
    shutil.rmtree(runtime, ignore_errors=True)


MARK = "\x1e"


class Shell:
    """One bash for a block: each command is sent to it in turn (so `cd` and `export` hold
    for the next), its output read up to a mark, within DEADLINE. Commands read no input
    but their own pipes'."""

    def __init__(self, cwd: Path, env: dict):
        self.proc = subprocess.Popen(["bash", "--norc", "--noprofile"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, cwd=cwd, env=env)

    def run(self, command: str) -> str:
        self.proc.stdin.write(f"{{ {command}\n}} </dev/null 2>&1; printf '\\n{MARK}\\n'\n".encode())
        self.proc.stdin.flush()
        buf = bytearray()
        end = f"\n{MARK}\n".encode()
        deadline = time.monotonic() + DEADLINE
        while not buf.endswith(end):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                raise AssertionError(f"$ {command}\ndid not end within {DEADLINE:g} s; printed so far:\n{buf.decode()}")
            chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
            if not chunk:
                raise AssertionError(f"$ {command}\nbash ended; printed:\n{buf.decode()}")
            buf += chunk
        return buf[: -len(end)].decode()

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=DEADLINE)
        self.proc.stdout.close()


def run(block: Block, world: dict, steps: list[Step] | None = None) -> list[str | None]:
    """Each step's difference from what it prints (None: none), its commands run in order in
    one bash from the block's folder; an op a step printed is the real one in later commands."""
    places: Places = world["places"]
    bound: dict[str, str] = {}
    shell = Shell(places.vault if block.cwd == "vault" else places.clone, world["env"])
    try:
        return [docs_blocks.compare(step, places.shown(shell.run(places.real(step.command, bound))), block.now, bound)
                for step in (block.steps if steps is None else steps)]
    finally:
        shell.close()


@pytest.mark.parametrize("block", BLOCKS, ids=[b.name for b in BLOCKS])
def test_the_block_shows_what_its_commands_print(block, world):
    d = world["daemon"]
    gen = d.status()["generation"]
    differences = [x for x in run(block, world) if x is not None]
    assert not differences, f"{block.name}:\n" + "\n\n".join(differences)
    wait_for(lambda: d.status()["pending"] == 0)  # what a block wrote and undid is in, before the next
    assert d.status()["generation"] >= gen


def test_a_block_edited_to_show_what_the_program_does_not_print_fails(world):
    """The README's first block with one output line changed (a title), then with a line
    added, then with one taken away: each is a difference, and the block as it is is none."""
    block = next(b for b in BLOCKS if b.page.name == "README.md" and any(s.shown for s in b.steps))
    assert run(block, world) == [None] * len(block.steps)
    i = next(i for i, s in enumerate(block.steps) if s.shown)
    shown = block.steps[i].shown
    for edited in ([shown[0] + " (edited)", *shown[1:]], [*shown[:1], "an extra line", *shown[1:]], shown[1:]):
        steps = [*block.steps[:i], Step(block.steps[i].command, edited), *block.steps[i + 1:]]
        assert run(block, world, steps)[i] is not None, edited


def test_every_page_has_its_blocks_read():
    """A page's console blocks all parse (a block that does not start with a command is an
    error), and the README and the manual have some."""
    assert {b.page.name for b in BLOCKS} >= {"README.md", "query-syntax.md", "agents.md", "editors.md"}
    assert all(b.steps for b in BLOCKS)


def test_the_variable_parts_and_nothing_else_may_differ():
    """The conventions of tests/docs_blocks.py, on text: a time, a generation, `…` and a line
    of `…` match what they stand for; an op shown is bound to the real one, and the same op
    shown twice must be the same real one; any other difference is one."""
    def same(shown: list[str], printed: str, bound: dict | None = None, now: bool = False) -> bool:
        return docs_blocks.compare(Step("x", shown), printed, now, {} if bound is None else bound) is None

    assert same(["3 of 3 notes, 2.1 ms"], "3 of 3 notes, 1083.3 ms\n")
    assert not same(["3 of 3 notes, 2.1 ms"], "3 of 4 notes, 2.1 ms\n")
    assert same(["(… of 300 tokens; generation 2)"], "(267 of 300 tokens; generation 41)\n")
    assert same(["a", "…", "z"], "a\nb\nc\nz\n") and same(["a", "…", "z"], "a\nz\n")
    assert not same(["a", "z"], "a\nb\nz\n") and not same([], "something\n") and not same(["a"], "")
    bound: dict[str, str] = {}
    assert same(["undo: 20261205T191243-19a4e5", "again 20261205T191243-19a4e5"],
                "undo: 20261205T215028-75d1f6\nagain 20261205T215028-75d1f6\n", bound)
    assert bound == {"20261205T191243-19a4e5": "20261205T215028-75d1f6"}
    assert not same(["20261205T191243-19a4e5 20261205T191243-19a4e5"], "20261205T215028-75d1f6 20261205T215028-000000\n")
    assert not same(["at 19:12:44"], "at 21:50:28-2\n") and same(["at 19:12:44"], "at 21:50:28-2\n", now=True)
    assert same(["line  "], "line\n\n\n")  # trailing blanks and blank lines
