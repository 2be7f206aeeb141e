"""Denote identity as Denote defines it (issue 42): the identifier in a note's file name
names it, an `identifier` keyword that disagrees is the note's problem, and Denote's
plain-text `.txt` notes are notes. The real daemon on real files; the LSP through
pygls's client."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types as t
from conftest import wait_for
from test_lsp import lsp, u16

NAME_ID, KEYWORD_ID = "20240125T164237", "20240125T164238"
MISMATCHED = f"{NAME_ID}--mismatched-note__denote.org"
TEXT_NOTE = "20240101T120000--plain-text-note__alpha_beta.txt"


def write(vault: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text(text)


@pytest.fixture
def dvault(tmp_path) -> Path:
    """A Denote vault: a note whose keyword disagrees with its file name, two links to it by
    the file name's identifier, a `.txt` note in Denote's text front matter, and a plain
    `notes.txt` that is no Denote name."""
    v = tmp_path / "dv"
    write(v, {
        MISMATCHED: f"#+title:      Mismatched note\n#+filetags:   :denote:\n#+identifier: {KEYWORD_ID}\n\nBody.\n",
        "20240126T090000--first-linker.org": f"#+title: First linker\n\nSee [[denote:{NAME_ID}][the note]].\n",
        "20240127T090000--second-linker.md": f"---\ntitle: Second linker\n---\n\nSee [[denote:{NAME_ID}]] too.\n",
        TEXT_NOTE: ("title:      Plain text note\ndate:       2024-01-01\ntags:       alpha  gamma\n"
                    "identifier: 20240101T120000\n---------------------------\n\nZanzibarquux words here.\n"),
        "20240128T090000--text-linker.org": "#+title: Text linker\n\n[[denote:20240101T120000][plain]]\n",
        "notes.txt": "title: Not a note\n\nZanzibarquux scratch.\n",
    })
    return v


def test_the_file_name_identifier_names_a_denote_note(make_daemon, dvault):
    d = make_daemon(dvault)
    assert d.request("broken")["broken"] == []
    for src in ("20240126T090000--first-linker.org", "20240127T090000--second-linker.md"):
        res = d.request("resolve", link=f"[[denote:{NAME_ID}]]", **{"from": src})
        assert res["path"] == MISMATCHED, res
    by_keyword = d.request("resolve", link=f"[[denote:{KEYWORD_ID}]]")
    assert by_keyword.get("path") is None and MISMATCHED in by_keyword["broken"], by_keyword
    listed = {n["path"]: n["problems"] for n in d.request("problems")["problems"]}
    assert listed[MISMATCHED] == [f"file name says {NAME_ID}, identifier keyword says {KEYWORD_ID}; Denote "
                                  f"follows the file name (fix the keyword to {NAME_ID}, or rename the file)"]


def test_lsp_completion_writes_the_identifier_denote_follows(make_daemon, dvault):
    d = make_daemon(dvault)
    src = "20240126T090000--first-linker.org"
    text = (dvault / src).read_text() + "[[denote:2024012"
    last = text.split("\n")[-1]

    async def steps(s):
        s.open(src, text)
        return await s.completion(src, t.Position(line=len(text.split("\n")) - 1, character=u16(last)))

    items = lsp(dvault, steps, str(d.socket)).items
    it = next(i for i in items if i.label == "Mismatched note")
    assert it.text_edit.new_text == f"denote:{NAME_ID}][Mismatched note]]"


def test_a_denote_text_note_is_a_note(make_daemon, dvault):
    d = make_daemon(dvault)
    res = d.request("resolve", link="[[denote:20240101T120000]]", **{"from": "20240128T090000--text-linker.org"})
    assert res["path"] == TEXT_NOTE, res
    assert d.request("broken")["broken"] == []
    hits = d.request("search", q="zanzibarquux")["hits"]
    assert [h["path"] for h in hits] == [TEXT_NOTE], hits  # notes.txt, no Denote name, is not a note (as before)
    assert hits[0]["title"] == "Plain text note"
    assert {"alpha", "beta", "gamma"} <= set(hits[0]["tags"])
    later = "20240102T080000--written-later.txt"
    (dvault / later).write_text("title:      Written later\n---------------------------\n\nQuuxzanzibar.\n")
    hit = wait_for(lambda: d.request("search", q="quuxzanzibar")["hits"])  # the watcher takes it too
    assert [(h["path"], h["title"]) for h in hit] == [(later, "Written later")]
