"""Every query operator (vaultd/query/operators.py) selects the same notes both ways: as the
Tantivy clause `search` runs, and as the test of a note `list` and `grep` run over the note
table. One row per operator and value; a real daemon on a real vault, its answers over the
socket.

Adding an operator: its unit in operators.py, and its rows in ROWS here.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from vaultd.query.operators import OPERATORS

NOTES = {
    "journal/2025-01-02.md": "---\ntags: [daily, a]\ndate: 2025-01-02\n---\n# Thursday\n",
    "journal/2024-12-30.md": "---\ntags: [daily]\ndate: 2024-12-30\n---\n# Monday\n",
    "journal/old/2023-05-01.md": "---\ntags: [Daily, archive/2023]\ndate: 2023-05-01\n---\n# May day\n",
    "journals/elsewhere.md": "---\ntags: [a/b]\ndate: 2024-03-05\n---\n# Elsewhere\n",
    "journal-notes.md": "---\ntags: ['#a/b/c']\ndate: 2024-03-01\n---\n# Journal notes\n",
    "projects/alpha.md": "---\ntags: [project, a]\ndate: 2024-02-29\n---\n# Alpha\n",
    "projects/alpha-two/beta.org": "#+title: Beta\n#+filetags: :project:b:\n#+date: [2025-06-01 Sun]\n\n* Plan\n",
    "projects/20230102T101010--gamma__project_c.org": "#+title: Gamma\n#+filetags: :project:c:\n\n* Notes\n",
    "top.md": "# Top\n\nNo tags, no date: the file's own time.\n",
    "ab.md": "---\ntags: [ab]\n---\n# Ab, not a\n",
}
"""Every note also holds the word WORD (grep needs words): nested tags, tags written with a
#, in capitals, from Org filetags and a Denote name; folders with a look-alike (journals/,
journal-notes.md); dates from front matter, #+date, a Denote identifier and a file's time."""

WORD = "zephyrine"
FILE_TIME = 1_700_000_000  # 2023-11-14: the date of the notes that carry none

ROWS = [
    ("tag", "a"), ("tag", "a/b"), ("tag", "#a"), ("tag", "daily"), ("tag", "DAILY"), ("tag", "archive"),
    ("tag", "project"), ("tag", "c"), ("tag", "ab"), ("tag", "nothing"),
    ("path", "journal"), ("path", "journal/"), ("path", "journal/2025"), ("path", "journal/old"), ("path", "journals"),
    ("path", "projects"), ("path", "projects/alpha"), ("path", "top"), ("path", "nowhere"),
    ("after", "2024"), ("after", "2024-03"), ("after", "2025-01-02"), ("after", "2023-11"), ("after", "2030"),
    ("before", "2024"), ("before", "2024-03"), ("before", "2025-01-02"), ("before", "2023-11-15"), ("before", "2000"),
]
"""(operator, value): each selects the same notes in search as in list (tag, path) and grep."""


@pytest.fixture(scope="module")
def d(tmp_path_factory):
    from conftest import Daemon  # a module-scoped daemon: every row asks the same one

    root = tmp_path_factory.mktemp("ops")
    vault = root / "vault"
    for rel, text in NOTES.items():
        f = vault / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text + f"\n{WORD}\n")
        os.utime(f, (FILE_TIME, FILE_TIME))
    with tempfile.TemporaryDirectory(prefix="vo", dir="/tmp") as short:  # a socket path's length is bounded
        daemon = Daemon(vault, root / "state", Path(short) / "d.sock", ["--config", str(_config(root))]).start()
        yield daemon
        daemon.stop()


def _config(root: Path) -> Path:
    cfg = root / "config.toml"
    cfg.write_text('[split]\nmode = "off"\n')
    return cfg


def searched(d, q: str) -> set[str]:
    return {h["path"] for h in d.request("search", q=q, limit=1000, scope="all", snippets=False)["hits"]}


def listed(d, op: str, value: str) -> set[str] | None:
    if op not in ("tag", "path"):
        return None
    return {n["path"] for n in d.request("list", **{op: [value]})["notes"]}


def grepped(d, op: str, value: str) -> set[str]:
    arg = [value] if op in ("tag", "path") else value
    return {m["path"] for m in d.request("grep", q=WORD, **{op: arg})["matches"]}


@pytest.mark.parametrize("op,value", ROWS, ids=[f"{o}:{v}" for o, v in ROWS])
def test_the_index_and_the_note_table_select_the_same_notes(d, op, value):
    by_index = searched(d, f"{op}:{value}")
    by_table = grepped(d, op, value)
    assert by_index == by_table, f"{op}:{value}: search {sorted(by_index)}, grep {sorted(by_table)}"
    if (by_list := listed(d, op, value)) is not None:
        assert by_list == by_index, f"{op}:{value}: list {sorted(by_list)}, search {sorted(by_index)}"


def test_every_operator_is_in_the_table_and_each_selects_something_not_everything(d):
    """A row that selects all notes or none proves nothing: each operator the note table
    takes has rows that tell notes apart (a stub that keeps every note, or none, fails)."""
    for name, op in OPERATORS.items():
        if op.test("x" if name in ("tag", "path") else 0) is None:
            continue  # the index's only (title:)
        sizes = {len(searched(d, f"{o}:{v}")) for o, v in ROWS if o == name}
        assert sizes and any(0 < s < len(NOTES) for s in sizes), f"{name}: no row tells notes apart ({sizes})"


def test_operators_combine_and_title_is_the_index_only(d):
    assert searched(d, "tag:a path:projects") == grepped(d, "tag", "a") & grepped(d, "path", "projects") \
        == {"projects/alpha.md"}
    assert searched(d, "title:beta") == {"projects/alpha-two/beta.org"}
    assert OPERATORS["title"].test("beta") is None


def test_a_value_an_operator_cannot_use_is_words_and_a_bad_date_is_an_error(d):
    assert searched(d, f"after:lunch {WORD}") == set(NOTES)  # read as words: every note holds zephyrine
    msg = d.send_raw(b'{"v": 1, "id": 2, "op": "search", "q": "after:2025-13"}\n')
    assert not msg["ok"] and "after: '2025-13' is not a date" in msg["error"]["message"]
