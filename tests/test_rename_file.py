"""An editor's own rename of a note's file (issue 42): `plan_file_rename` plans the link
rewrites for a name given (same folder and extension, any name), on a real vault with a
real index; the plan written through the journal and undone byte for byte; refusals."""

from pathlib import Path

import pytest
from test_rename import _tree, _vault

from vaultd.rename.plan import RenameError, plan_file_rename
from vaultd.store import journal


@pytest.fixture
def fv(tmp_path):
    v = _vault(tmp_path, {
        "Old Name.md": "# Heading\n\nBody.\n",
        "a.md": "Wiki [[Old Name]], labelled [[Old Name|Old Name]], [md](Old%20Name.md), [[Old Name#Heading|h]]",
        "20240101T100000--denote-note__kw.org": "#+title: Denote note\n\nText.\n",
        "b.org": "[[file:20240101T100000--denote-note__kw.org][x]] and [[denote:20240101T100000][Denote note]]\n",
    })
    yield v
    v.close()


def _plan(v, note: str, to: str):
    def read(rel: str) -> bytes:
        return (v.root / rel).read_bytes()

    return plan_file_rename(v.graph.notes[note], read(note), to, v.graph, read)


def test_a_file_named_anew_gets_its_links_rewritten_its_text_kept_and_undone(fv):
    before = _tree(fv.root)
    plan = _plan(fv, "Old Name.md", "new name.md")
    assert (plan.note, plan.to, plan.rewritten, plan.relabeled) == ("Old Name.md", "new name.md", 4, 1)
    entry = journal.apply(plan, fv.root, fv.writer.journal, journal.RENAME)
    after = _tree(fv.root)
    assert after["new name.md"] == before["Old Name.md"] and "Old Name.md" not in after
    assert after["a.md"].decode() == ("Wiki [[new name]], labelled [[new name|new name]], [md](new%20name.md), "
                                      "[[new name#Heading|h]]")  # no final newline added, labels kept
    journal.undo(fv.root, fv.writer.journal, entry["op"])
    assert _tree(fv.root) == before


def test_a_denote_file_named_anew_keeps_its_denote_links(fv):
    plan = _plan(fv, "20240101T100000--denote-note__kw.org", "20240101T100000--other-words__kw.org")
    (change,) = [c for c in plan.changes if c.path == "b.org"]
    assert change.after.decode() == ("[[file:20240101T100000--other-words__kw.org][x]] and "
                                     "[[denote:20240101T100000][Denote note]]\n")  # its title keyword still says so


@pytest.mark.parametrize("to, why", [
    ("sub/Old Name.md", "keeps its folder and extension"), ("Old Name.org", "keeps its folder and extension"),
    ("a.md", "a.md exists"), ("x#y.md", "cannot name a note's file"), ("Old Name.md", "already named so"),
])
def test_refusals_change_nothing(fv, to, why):
    before = _tree(fv.root)
    with pytest.raises(RenameError, match=why):
        _plan(fv, "Old Name.md", to)
    assert _tree(fv.root) == before
