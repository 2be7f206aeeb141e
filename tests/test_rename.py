"""Rename (issue 42): a note or a heading renamed on a real vault with a real index, every
link to it rewritten in its own syntax (labels kept, one equal to the old title follows),
checked before a byte is written, journaled, undone byte for byte; refusals change nothing."""

import os
import time
from pathlib import Path

import msgspec
import pytest

from vaultd.config import Config
from vaultd.errors import NoteNotFound, QueryError
from vaultd.rename.job import Renamer
from vaultd.rename.plan import denote_slug
from vaultd.store import checked
from vaultd.vault import Vault

OLD = time.time() - 3600


def _vault(tmp_path: Path, files: dict[str, str]) -> Vault:
    root = tmp_path / "vault"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(text.encode())
        os.utime(root / rel, (OLD, OLD))
    cfg = Config(vault=str(root), state_dir=str(tmp_path / "state"))
    cfg = msgspec.structs.replace(cfg, split=msgspec.structs.replace(cfg.split, quiet=0.0)).load()
    v = Vault(cfg)
    v.reconcile()
    return v


def _renamer(v: Vault) -> Renamer:
    """The Vault's rename job (phase 2 assembles it in the Vault; built here from its parts)."""
    return getattr(v, "renamer", None) or Renamer(v.core, v.link_graph, v.writer)


def _tree(root: Path) -> dict[str, bytes]:
    """The vault's files, but for vaultd's journal (.vaultd/)."""
    return {rel: p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not (rel := p.relative_to(root).as_posix()).startswith(".vaultd/")}


def _where(v: Vault, src: str) -> list[tuple[str, str | None, int | None, str | None]]:
    """Each link of `src`: its text, and where the vault's graph says it leads."""
    return [(r.link.raw, r.target, r.line, r.broken) for r in v.graph.links(src)]


@pytest.fixture
def md(tmp_path):
    v = _vault(tmp_path, {
        "Old Title.md": "---\ntitle: Old Title\naliases: [Oldie]\n---\n# Old Title\n\n## Section One\n\n"
                        "Self [[Old Title#Section One]], within [[#Section One]].\n",
        "a.md": "Wiki [[Old Title]], aliased [[Old Title|my words]], titled [[Old Title|Old Title]], "
                "embed ![[Old Title#Section One]], by alias [[Oldie]].\n"
                "Markdown [Old Title](Old%20Title.md), [read this](<Old Title.md>), [s](Old%20Title.md#section-one).\n",
        "sub/b.md": "Up [the note](../Old%20Title.md) and [[Old Title#Section One|there]].\n",
        "c.md": "Unrelated [[a]].\n",
    })
    yield v
    v.close()


def test_markdown_rename_rewrites_every_link_keeps_labels_and_undoes(md):
    v = md
    before = _tree(v.root)
    res = _renamer(v).rename("Old Title", "New Name")
    assert (res["note"], res["to"], res["dry_run"]) == ("Old Title.md", "New Name.md", False)
    after = _tree(v.root)
    assert "Old Title.md" not in after
    assert after["New Name.md"].decode().startswith("---\ntitle: New Name\naliases: [Oldie]\n---\n# Old Title\n")
    assert "Self [[New Name#Section One]], within [[#Section One]]." in after["New Name.md"].decode()
    assert after["a.md"].decode() == (
        "Wiki [[New Name]], aliased [[New Name|my words]], titled [[New Name|New Name]], "
        "embed ![[New Name#Section One]], by alias [[Oldie]].\n"
        "Markdown [New Name](New%20Name.md), [read this](<New Name.md>), [s](New%20Name.md#section-one).\n")
    assert after["sub/b.md"].decode() == "Up [the note](../New%20Name.md) and [[New Name#Section One|there]].\n"
    assert after["c.md"] == before["c.md"]
    # the index follows: every link leads to the note at its new name, none broken
    assert v.broken()["broken"] == []
    assert all(t == "New Name.md" for _, t, _, _ in _where(v, "a.md") + _where(v, "sub/b.md"))
    assert v.notes["New Name.md"].title == "New Name"
    entry = next(e for e in v.split_history()["history"] if e["op"] == res["op"])
    assert (entry["kind"], entry["status"], entry["note"]) == ("rename", "done", "Old Title.md")
    v.split_undo(res["op"])
    assert _tree(v.root) == before
    assert v.broken()["broken"] == [] and "Old Title.md" in v.notes and "New Name.md" not in v.notes


def test_dry_run_writes_nothing_and_shows_the_diff(md):
    before = _tree(md.root)
    res = _renamer(md).rename("Old Title.md", "New Name", dry_run=True)
    assert res["dry_run"] and "+Wiki [[New Name]]" in res["diff"] and "+++ b/New Name.md" in res["diff"]
    assert _tree(md.root) == before
    assert md.split_history()["history"] == []


DENOTE_ORG = "20240125T164237--old-title__emacs_notes.org"
DENOTE_MD = "20240201T100000==a1--markdown-note.md"
DENOTE_TXT = "20240301T090000--plain-note__text.txt"


@pytest.fixture
def denote(tmp_path):
    v = _vault(tmp_path, {
        DENOTE_ORG: "#+title:      Old Title\n#+date:       [2024-01-25 Thu 16:42]\n#+filetags:   :emacs:notes:\n"
                    "#+identifier: 20240125T164237\n\n* Part A\n:PROPERTIES:\n:CUSTOM_ID: part-a\n:END:\n\n"
                    "Text, and [[*Part A][here]].\n\n* Part B\n\nMore.\n",
        DENOTE_MD: "---\ntitle:      \"Markdown Note\"\ndate:       2024-02-01T10:00:00+01:00\n"
                   "identifier: \"20240201T100000\"\n---\n\nSee [Old Title](denote:20240125T164237).\n",
        DENOTE_TXT: "title:      Plain Note\ndate:       2024-03-01\ntags:       text\n"
                    "identifier: 20240301T090000\n---------------------------\n\nPlain.\n",
        "index.org": "#+title: Index\n\n- [[denote:20240125T164237][Old Title]]\n- [[denote:20240125T164237][my own words]]\n"
                     f"- [[file:{DENOTE_ORG}][Old Title]] and [[file:{DENOTE_ORG}::*Part B]]\n"
                     f"- [[file:{DENOTE_ORG}::#part-a][by id]] [[denote:20240125T164237::*Part B][B]]\n"
                     "- [[denote:20240201T100000][Markdown Note]] [[denote:20240301T090000][Plain Note]]\n",
    })
    yield v
    v.close()


def test_denote_rename_keeps_identifier_rewrites_title_and_file_links(denote):
    v = denote
    before = _tree(v.root)
    res = _renamer(v).rename("20240125T164237", "Émigré's Notes: A Study?")
    new = "20240125T164237--émigrés-notes-a-study__emacs_notes.org"
    assert res["to"] == new
    after = _tree(v.root)
    assert DENOTE_ORG not in after
    assert after[new].decode().startswith("#+title:      Émigré's Notes: A Study?\n#+date:       [2024-01-25 Thu 16:42]\n")
    assert after[new].split(b"\n")[1:] == before[DENOTE_ORG].split(b"\n")[1:]  # but its title, as it was
    assert after["index.org"].decode() == (
        "#+title: Index\n\n- [[denote:20240125T164237][Émigré's Notes: A Study?]]\n"
        "- [[denote:20240125T164237][my own words]]\n"
        f"- [[file:{new}][Émigré's Notes: A Study?]] and [[file:{new}::*Part B]]\n"
        f"- [[file:{new}::#part-a][by id]] [[denote:20240125T164237::*Part B][B]]\n"
        "- [[denote:20240201T100000][Markdown Note]] [[denote:20240301T090000][Plain Note]]\n")
    # Denote's Markdown link: the identifier kept, the label that said the old title follows
    assert after[DENOTE_MD].decode().endswith("See [Émigré's Notes: A Study?](denote:20240125T164237).\n")
    assert v.broken()["broken"] == []
    assert v.notes[new].title == "Émigré's Notes: A Study?" and v.notes[new].id == "20240125T164237"
    v.split_undo(res["op"])
    assert _tree(v.root) == before


def test_denote_markdown_and_text_notes_rewrite_their_front_matter(denote):
    v = denote
    before = _tree(v.root)
    r = _renamer(v)
    md_res = r.rename("20240201T100000", 'Say "Hi"')
    assert md_res["to"] == "20240201T100000==a1--say-hi.md"
    text = (v.root / md_res["to"]).read_text()
    assert text.startswith('---\ntitle:      "Say \\"Hi\\""\ndate:')
    assert v.notes[md_res["to"]].title == 'Say "Hi"'
    txt_res = r.rename("20240301T090000", "Plain, renamed")
    assert txt_res["to"] == "20240301T090000--plain-renamed__text.txt"
    assert (v.root / txt_res["to"]).read_text().startswith("title:      Plain, renamed\ndate:       2024-03-01\n")
    index = (v.root / "index.org").read_text()
    assert "[[denote:20240201T100000][Say \"Hi\"]] [[denote:20240301T090000][Plain, renamed]]" in index
    assert v.broken()["broken"] == []
    v.split_undo([md_res["op"], txt_res["op"]])
    assert _tree(v.root) == before


def test_heading_rename_rewrites_markdown_and_wiki_anchors(md):
    v = md
    before = _tree(v.root)
    res = _renamer(v).rename_heading("Old Title", 7, "Section Uno")
    assert res["heading"] == 7
    after = _tree(v.root)
    assert after["Old Title.md"].decode().endswith("## Section Uno\n\nSelf [[Old Title#Section Uno]], within "
                                                   "[[#Section Uno]].\n")
    a = after["a.md"].decode()
    assert "embed ![[Old Title#Section Uno]]" in a and "[s](Old%20Title.md#section-uno)" in a
    assert "Wiki [[Old Title]], aliased [[Old Title|my words]]" in a  # links to the whole note: as they were
    assert after["sub/b.md"].decode() == "Up [the note](../Old%20Title.md) and [[Old Title#Section Uno|there]].\n"
    assert v.broken()["broken"] == []
    v.split_undo(res["op"])
    assert _tree(v.root) == before


def test_heading_rename_rewrites_org_anchors_and_keeps_custom_ids(denote):
    d = denote
    before = _tree(d.root)
    _renamer(d).rename_heading(DENOTE_ORG, 13, "Part Bee")  # Org: *Part B by text
    index = (d.root / "index.org").read_text()
    assert f"[[file:{DENOTE_ORG}::*Part Bee]]" in index and "[[denote:20240125T164237::*Part Bee][B]]" in index
    _renamer(d).rename_heading(DENOTE_ORG, 6, "Part Ay")  # by CUSTOM_ID and by text
    own = (d.root / DENOTE_ORG).read_text()
    assert "* Part Ay\n" in own and "Text, and [[*Part Ay][here]]." in own
    assert f"[[file:{DENOTE_ORG}::#part-a][by id]]" in (d.root / "index.org").read_text()  # its CUSTOM_ID kept
    assert d.broken()["broken"] == []
    d.split_undo(every=True)
    assert _tree(d.root) == before


@pytest.mark.parametrize("name, title, says", [
    ("Old Title", "", "empty"),
    ("Old Title", "  \n ", "empty"),
    ("Old Title", "Two\nlines", "holds"),
    ("Old Title", "a/b", "cannot name a note's file"),
    ("Old Title", "What? #1", "cannot name a note's file"),
    ("Old Title", ".hidden", "dot"),
    ("Old Title", "x" * 250, "bytes"),
    ("Old Title", "c", "exists"),
    ("Old Title", "Old Title", "already titled"),
])
def test_refusals_change_nothing(md, name, title, says):
    before = _tree(md.root)
    with pytest.raises(QueryError, match=says):
        _renamer(md).rename(name, title)
    assert _tree(md.root) == before
    assert md.split_history()["history"] == []


def test_refusals_for_denote_and_missing_notes_change_nothing(denote, tmp_path):
    before = _tree(denote.root)
    r = _renamer(denote)
    with pytest.raises(QueryError, match="leaves nothing for a Denote file name"):
        r.rename("20240125T164237", "?!.")
    with pytest.raises(NoteNotFound):
        r.rename("No Such Note", "Anything")
    outside = tmp_path / "elsewhere.org"
    outside.write_text("#+title: Elsewhere\n")
    with pytest.raises(NoteNotFound):
        r.rename(str(outside), "Anything")
    with pytest.raises(QueryError, match="not a heading"):
        r.rename_heading("20240125T164237", 2, "Anything")
    assert _tree(denote.root) == before
    assert denote.split_history()["history"] == []


def test_a_rename_that_would_retarget_another_link_is_refused(tmp_path):
    # `[[New]]` in the top folder leads to other/New.md; a New.md beside it would take it over
    v = _vault(tmp_path, {"Old.md": "old\n", "other/New.md": "new\n", "top.md": "[[New]] and [[Old]]\n"})
    try:
        before = _tree(v.root)
        with pytest.raises(QueryError, match=r"would change where links lead: top\.md:1: \[\[New\]\] would lead to "
                                             r"New\.md, not other/New\.md"):
            _renamer(v).rename("Old", "New")
        assert _tree(v.root) == before
    finally:
        v.close()


def test_a_save_landing_during_the_rename_is_kept_and_nothing_is_renamed(md):
    v = md
    before = _tree(v.root)
    saved = b"Wiki [[Old Title]], the user's edit, saved while vaultd renamed.\n"

    def editor_saves(step: str, path: Path, fd) -> None:
        if step == "written" and path.name == "a.md" and path.read_bytes() != saved:
            tmp = path.with_name(".a.md.editor")
            tmp.write_bytes(saved)
            os.rename(tmp, path)  # an editor's save: a new file renamed over the old one

    checked.pause = editor_saves
    try:
        with pytest.raises(QueryError, match="a.md changed while renaming"):
            _renamer(v).rename("Old Title", "New Name")
    finally:
        checked.pause = None
    assert _tree(v.root) == {**before, "a.md": saved}
    entry = v.split_history()["history"][-1]
    assert (entry["kind"], entry["status"]) == ("rename", "aborted")


def test_denote_slug_follows_denote_sluggify_title():
    assert denote_slug("Economics in the Euro Area") == "economics-in-the-euro-area"
    assert denote_slug("  Hello_World -- (draft) ") == "hello-world-draft"
    assert denote_slug("가치관에 대해") == "가치관에-대해"
    assert denote_slug("a.b/c=d") == "abcd"


def test_a_yaml_block_title_is_rewritten_on_its_one_line_or_refused(tmp_path):
    v = _vault(tmp_path, {
        "proj.one.md": "---\nid: x1\ntitle: >-\n    Project One\ndesc: ''\n---\n\nOne.\n",
        "proj.two.md": "---\ntitle: |\n  Project\n  Two\n---\n\nTwo.\n",
        "index.md": "[[proj.one]] [[proj.two]] [[Project One|proj.one]]\n",
    })
    try:
        res = _renamer(v).rename("proj.one", "proj.first")
        assert (v.root / res["to"]).read_text() == "---\nid: x1\ntitle: >-\n    proj.first\ndesc: ''\n---\n\nOne.\n"
        assert v.notes["proj.first.md"].title == "proj.first" and not v.notes["proj.first.md"].problems
        # Dendron's [[label|note.name]] keeps its form and what it shows
        assert (v.root / "index.md").read_text() == "[[proj.first]] [[proj.two]] [[Project One|proj.first]]\n"
        before = _tree(v.root)
        with pytest.raises(QueryError, match="YAML block of 2 lines"):
            _renamer(v).rename("proj.two", "proj.second")
        assert _tree(v.root) == before
    finally:
        v.close()


def test_org_note_file_links_rewritten_id_links_only_relabeled(tmp_path):
    v = _vault(tmp_path, {
        "roam/plain.org": ":PROPERTIES:\n:ID:       1b7c2e0a-0000-4000-8000-000000000001\n:END:\n#+TITLE: Plain\n\nBody.\n",
        "roam/sub/refs.org": "#+title: Refs\n\n[[file:../plain.org][Plain]], [[file:../plain.org::Body][at Body]], "
                             "[[id:1b7c2e0a-0000-4000-8000-000000000001][Plain]], "
                             "[[id:1b7c2e0a-0000-4000-8000-000000000001][mine]]\n",
    })
    try:
        before = _tree(v.root)
        res = _renamer(v).rename("roam/plain.org", "Plain Renamed")
        assert res["to"] == "roam/Plain Renamed.org"
        assert (v.root / res["to"]).read_text().endswith("#+TITLE: Plain Renamed\n\nBody.\n")
        assert (v.root / "roam/sub/refs.org").read_text() == (
            "#+title: Refs\n\n[[file:../Plain Renamed.org][Plain Renamed]], [[file:../Plain Renamed.org::Body][at Body]], "
            "[[id:1b7c2e0a-0000-4000-8000-000000000001][Plain Renamed]], "
            "[[id:1b7c2e0a-0000-4000-8000-000000000001][mine]]\n")
        assert (res["rewritten"], res["relabeled"]) == (2, 2)
        assert v.broken()["broken"] == []
        v.split_undo(res["op"])
        assert _tree(v.root) == before
    finally:
        v.close()
