"""The man pages vaultd(1) and vaultq(1): docs/man/ holds what `vaultd man` and `vaultq man`
print (the same source as their --help: click's commands, vaultq's parser from ops.OPS),
they render with `man -l` without a warning, and `pip install .` puts them in the prefix's
share/man/man1, where `man vaultq` finds them from that prefix's bin/ on PATH (no MANPATH:
man-db derives it from PATH). The install is a real one, of a copy of this source tree,
into a new venv by its own pip, with build isolation (setuptools from the index, as a
user's `pip install .` gets it), and --no-deps (the dependencies are not what is checked,
and cost minutes)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vaultd import ops

ROOT = Path(__file__).resolve().parents[1]
PAGES = {"vaultd": ROOT / "docs" / "man" / "vaultd.1", "vaultq": ROOT / "docs" / "man" / "vaultq.1"}
PRINTS = {"vaultd": [sys.executable, "-m", "vaultd", "man"], "vaultq": [sys.executable, "-m", "vaultd.vaultq", "man"]}
TH = re.compile(r'^\.TH (\S+) 1 "\d{4}-\d\d-\d\d" ', re.M)

needs_man = pytest.mark.skipif(shutil.which("man") is None, reason="man is not installed (apt-get install man-db)")


def undated(page: str) -> str:
    """A page less its date (the day it was made)."""
    return TH.sub(r'.TH \1 1 "" ', page)


@pytest.mark.parametrize("name", PAGES)
def test_the_shipped_page_is_what_the_program_prints(name):
    printed = subprocess.run(PRINTS[name], capture_output=True, text=True, timeout=60, check=True).stdout
    assert TH.match(printed), printed[:200]
    assert undated(PAGES[name].read_text()) == undated(printed), (
        f"docs/man/{name}.1 is not current: python docs/generate.py")


def test_a_page_is_dated_by_source_date_epoch():
    env = {**os.environ, "SOURCE_DATE_EPOCH": "1764547200"}  # 2025-12-01
    out = subprocess.run(PRINTS["vaultq"], capture_output=True, text=True, timeout=60, env=env, check=True).stdout
    assert out.startswith('.TH VAULTQ 1 "2025-12-01" ')


def render(args: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["man", "--warnings", *args], capture_output=True, text=True, timeout=60,
                          env={**(env or os.environ), "MANWIDTH": "100", "MANPAGER": "cat", "PAGER": "cat"})


@needs_man
@pytest.mark.parametrize("name", PAGES)
def test_the_page_renders_without_a_warning(name):
    r = render(["-l", str(PAGES[name])])
    assert r.returncode == 0 and not r.stderr.strip(), r.stderr
    for head in ("NAME", "SYNOPSIS", "COMMANDS", "EXIT STATUS", "ENVIRONMENT", "SEE ALSO"):
        assert f"\n{head}\n" in r.stdout, (name, head)
    if name == "vaultq":
        assert all(f"\n   {op.name}" in r.stdout for op in ops.OPS if op.cli)
    else:
        for command in ("run", "index", "check", "install-service", "mcp", "lsp", "parse", "man"):
            assert f"\n   vaultd {command}" in r.stdout, command


@needs_man
def test_pip_install_puts_the_pages_where_man_finds_them(tmp_path):
    src = tmp_path / "src"  # a copy: pip builds in the tree it is given (build/, *.egg-info)
    src.mkdir()
    for part in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / part, src / part)
    for part in ("docs/man", "vaultd"):
        shutil.copytree(ROOT / part, src / part, ignore=shutil.ignore_patterns("__pycache__"))
    prefix = tmp_path / "venv"  # its own pip: this environment's, given a --prefix, would uninstall vaultd here
    subprocess.run([sys.executable, "-m", "venv", str(prefix)], check=True, timeout=300)
    r = subprocess.run([str(prefix / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", str(src)],
                       capture_output=True, text=True, timeout=600)
    if r.returncode and re.search(r"No matching distribution|Could not find a version|NewConnectionError|"
                                  r"Temporary failure in name resolution", r.stderr):
        pytest.skip(f"pip cannot reach the package index for setuptools (build isolation): {r.stderr[-300:]}")
    assert r.returncode == 0, r.stderr
    man1 = prefix / "share" / "man" / "man1"
    for name, page in PAGES.items():
        assert (man1 / f"{name}.1").read_text() == page.read_text()
    env = {k: v for k, v in os.environ.items() if k != "MANPATH"}
    env["PATH"] = f"{prefix / 'bin'}{os.pathsep}/usr/local/bin{os.pathsep}/usr/bin{os.pathsep}/bin"
    assert (prefix / "bin" / "vaultq").exists()
    for name in PAGES:
        where = subprocess.run(["man", "-w", name], capture_output=True, text=True, timeout=60, env=env)
        assert where.stdout.strip() == str(man1 / f"{name}.1"), (where.stdout, where.stderr)
        r = render([name], env)
        assert r.returncode == 0 and f"{name.upper()}(1)" in r.stdout and not r.stderr.strip(), r.stderr
