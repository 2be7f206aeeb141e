"""Tests wait on events, not on time: a `sleep(` in a test file is a fixed wait standing in
for an event (flaky on a loaded machine, slow on an idle one) unless a comment on its line
or the line above says what it is for:

- `# tick: ...`  it moves past a coarse clock's tick, and nothing can set the time instead;
- `# poll: ...`  it is the interval of a loop that looks again at a condition.

Anything else waits for its condition with conftest's `wait_for` (a 60 s deadline)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).parent
JUSTIFIED = re.compile(r"#\s*(tick|poll):")

NOT_YET: set[tuple[str, str]] = set()
"""Sleeps known and left to their file's owner for now, by file and exact line: once the
line changes, the check applies to it."""


def sleeps(path: Path) -> list[tuple[int, str]]:
    """(line number, line) of every call of a function named `sleep` in `path`."""
    lines = path.read_text().splitlines()
    found = []
    for node in ast.walk(ast.parse("\n".join(lines), str(path))):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name == "sleep":
                found.append((node.lineno, lines[node.lineno - 1]))
    return found


def unjustified(path: Path) -> list[str]:
    lines = path.read_text().splitlines()
    bad = []
    for n, line in sleeps(path):
        said = line + (lines[n - 2] if n >= 2 else "")
        if not JUSTIFIED.search(said) and (path.name, line.strip()) not in NOT_YET:
            bad.append(f"{path.name}:{n}: {line.strip()}")
    return bad


def test_no_test_sleeps_in_place_of_waiting_for_an_event():
    bad = [b for path in sorted([*TESTS.glob("test_*.py"), TESTS / "conftest.py"]) for b in unjustified(path)]
    assert bad == [], "wait for the condition (conftest.wait_for), or say why with # tick: / # poll:"


def test_the_check_finds_a_bare_sleep_and_passes_a_justified_one(tmp_path):
    f = tmp_path / "test_x.py"
    f.write_text("import time\nfrom time import sleep\n\ntime.sleep(0.5)\nsleep(1)\n"
                 "time.sleep(0.02)  # tick: an mtime of another second\n# poll: between looks\ntime.sleep(0.1)\n")
    assert unjustified(f) == ["test_x.py:4: time.sleep(0.5)", "test_x.py:5: sleep(1)"]
