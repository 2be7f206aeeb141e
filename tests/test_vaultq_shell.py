"""vaultq in the shell: --version, help with the query syntax and exit codes, completion
scripts for bash, zsh and fish and a man page, each generated from the table of
operations (ops.OPS) and run in the real shell against a real daemon."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from vaultd import __version__, ops

VAULTQ = [sys.executable, "-m", "vaultd.vaultq"]
FORMATS = sorted(next(o["choices"] for f, o in ops.BY_NAME["search"].cli.args if f == ("--format",)))
"""search's --format choices, as the table has them."""


def vaultq(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([*VAULTQ, *args], capture_output=True, text=True, timeout=30, **kw)


def test_version():
    r = vaultq("--version")
    assert (r.returncode, r.stdout, r.stderr) == (0, f"vaultq {__version__}\n", "")


def test_help_shows_the_query_syntax_and_the_exit_codes():
    r = vaultq("search", "--help")
    assert r.returncode == 0
    assert "query syntax:" in r.stdout and '"memory tiers"' in r.stdout and "tag:rust" in r.stdout
    assert "exit status:" in r.stdout and "4  the first index is still being built" in r.stdout
    r = vaultq("--help")
    assert "3  the daemon is unreachable" in r.stdout and "--version" in r.stdout


@pytest.fixture
def shell_env(tmp_path):
    """PATH with this vaultq first (the scripts run `vaultq` for note paths and tags)."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "vaultq").write_text(f"#!/bin/sh\nexec {sys.executable} -m vaultd.vaultq \"$@\"\n")
    (bin_ / "vaultq").chmod(0o755)
    return {**os.environ, "PATH": f"{bin_}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": os.pathsep.join(sys.path)}


def _bash(script: str, lines: list[list[str]], env, cwd) -> list[list[str]]:
    """Each of `lines` completed by the script in bash, as bash would (COMP_WORDS, COMP_CWORD, the
    function `complete -p` names), one list of candidates each; `complete -p vaultq` first."""
    calls = "".join(
        "COMP_WORDS=(" + " ".join(f"'{w}'" for w in words) + f"); COMP_CWORD={len(words) - 1}; COMPREPLY=(); "
        '"$fn"; printf "%s\\t" "${COMPREPLY[@]}"; echo\n' for words in lines)
    prog = (f"{script}\nspec=$(complete -p vaultq) || exit 9\necho \"$spec\"\n"
            "fn=${spec#*-F }; fn=${fn%% *}\n" + calls)
    r = subprocess.run(["bash", "--norc", "-c", prog], capture_output=True, text=True, timeout=60, env=env, cwd=cwd)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[0] == "complete -F _vaultq vaultq"
    return [sorted(filter(None, ln.split("\t"))) for ln in out[1:]]


def test_bash_completion_of_commands_flags_choices_note_paths_and_tags(daemon, shell_env):
    script = vaultq("completion", "bash").stdout
    s = str(daemon.socket)
    got = _bash(script, [
        ["vaultq", ""],
        ["vaultq", "--socket", s, "sea"],
        ["vaultq", "search", "--for"],
        ["vaultq", "search", "--format", ""],
        ["vaultq", "--socket", s, "backlinks", "notes/De"],
        ["vaultq", "--socket", s, "search", "--tag", "ha"],
        ["vaultq", "completion", ""],
    ], shell_env, daemon.vault)
    from vaultd.vaultq import COMMANDS

    assert set(COMMANDS) <= set(got[0]) and {"--socket", "--vault", "--version"} <= set(got[0])
    assert got[1:4] == [["search"], ["--format"], FORMATS]
    assert got[4] == ["notes/Deep work.md"]  # from the daemon: paths as seen from the current folder
    assert got[5] == ["habit"]
    assert got[6] == ["bash", "fish", "zsh"]
    # every flag of every operation (ops.OPS) is offered
    lines = [["vaultq", op.name, "-"] for op in ops.OPS if op.cli]
    for op, offered in zip([op for op in ops.OPS if op.cli], _bash(script, lines, shell_env, daemon.vault)):
        flags = {f for flags, _ in op.cli.args for f in flags if f.startswith("-")}
        assert flags <= set(offered), op.name


def test_bash_completion_without_a_daemon_offers_no_notes_and_says_nothing(tmp_path, shell_env):
    script = vaultq("completion", "bash").stdout
    assert _bash(script, [["vaultq", "--socket", str(tmp_path / "none.sock"), "read", ""]], shell_env, tmp_path) == [[]]


def test_zsh_completion(tmp_path, shell_env):
    if shutil.which("zsh") is None:
        pytest.skip("zsh is not installed (apt-get install zsh)")
    f = tmp_path / "_vaultq"
    f.write_text(vaultq("completion", "zsh").stdout)
    r = subprocess.run(["zsh", "-n", str(f)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    r = subprocess.run(["zsh", "-fc", f"autoload -U compinit; compinit -u -D; source {f}; print -r -- $_comps[vaultq]"],
                       capture_output=True, text=True, timeout=30, env=shell_env)
    assert r.stdout.strip() == "_vaultq", r.stderr


def test_fish_completion(daemon, shell_env, tmp_path):
    if shutil.which("fish") is None:
        pytest.skip("fish is not installed (apt-get install fish)")
    f = tmp_path / "vaultq.fish"
    f.write_text(vaultq("completion", "fish").stdout)
    s = str(daemon.socket)

    def complete(line: str) -> list[str]:
        r = subprocess.run(["fish", "--no-config", "-c", f"source {f}; complete -C '{line}'"], capture_output=True,
                           text=True, timeout=30, env=shell_env, cwd=daemon.vault)
        assert r.returncode == 0 and not r.stderr, r.stderr
        return [ln.split("\t")[0] for ln in r.stdout.splitlines()]

    assert complete("vaultq sea") == ["search"]
    assert sorted(complete("vaultq search --format ")) == FORMATS
    assert complete(f"vaultq --socket {s} backlinks notes/D") == ["notes/Deep work.md"]
    assert "habit" in complete(f"vaultq --socket {s} search --tag ")


def test_the_man_page_renders(tmp_path):
    if shutil.which("man") is None:
        pytest.skip("man is not installed (apt-get install man-db)")
    page = tmp_path / "vaultq.1"
    r = vaultq("man")
    assert r.returncode == 0
    page.write_text(r.stdout)
    r = subprocess.run(["man", "--warnings", "-l", str(page)], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "MANWIDTH": "100", "MANPAGER": "cat", "PAGER": "cat"})
    assert r.returncode == 0 and not r.stderr.strip(), r.stderr
    text = r.stdout
    for head in ("NAME", "SYNOPSIS", "COMMANDS", "QUERY SYNTAX", "EXIT STATUS", "ENVIRONMENT"):
        assert f"\n{head}\n" in text, head
    for op in ops.OPS:
        if op.cli:
            assert f"\n   {op.name}" in text, op.name
    assert "--after-generation G" in text and "the first index is still being built" in text
