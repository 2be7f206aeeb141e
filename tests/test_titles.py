"""A note's title as its own tools show it, one fixture of each dialect (issue 19).

Markdown: front matter `title`, else the file name; Org: `#+title`, else the Denote
title, else the file name; Denote (either format): front matter / `#+title`, else the
title part of the file name. Never a heading."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vaultd.config import Config
from vaultd.errors import NoteNotFound
from vaultd.vault import Vault

DIALECTS = Path(__file__).parent / "fixtures" / "dialects"

TITLES = {
    # Obsidian: the file name; the first heading is a section, an H1 is searched as a title
    "obsidian/Aliases.md": ("Aliases", "file name"),
    "obsidian/Canvas.md": ("Canvas", "file name"),
    # Denote Markdown (YAML and TOML front matter) and Org
    "denote/20251016T080208--memory-tiers__agents_memory.md": ("Memory tiers for agents", "front matter"),
    "denote/20251017T090000--toml-front-matter__hugo.md": ("Notes in TOML front matter", "front matter"),
    "denote/20251018T100000--only-the-file-name__bare.md": ("only the file name", "Denote name"),
    "denote/20251019T110000--slug-words__org.org": ("Org note with its own title", "#+title"),
    "denote/20251020T120000--no-title-keyword__org.org": ("no title keyword", "Denote name"),
    # org-roam: #+title after the file's :PROPERTIES: drawer, else the file name
    "org-roam/zettelkasten.org": ("Zettelkasten", "#+title"),
    "org-roam/untitled_note.org": ("untitled_note", "file name"),
    # Dendron: front matter title (not the dotted file name)
    "dendron/dendron.topic.hierarchies.md": ("Hierarchies", "front matter"),
    "dendron/root.md": ("root", "front matter"),
    # Foam: the file name (Foam's own docs say: front matter, else the first H1, else
    # the file name; the H1 is searched as a title, see below)
    "foam/daily-notes.md": ("daily-notes", "file name"),
    "foam/principles.md": ("principles", "file name"),
}


@pytest.fixture(scope="module")
def v(tmp_path_factory):
    root = tmp_path_factory.mktemp("dialects")
    shutil.copytree(DIALECTS, root / "vault")
    vlt = Vault(Config(vault=str(root / "vault"), state_dir=str(root / "state")).load())
    vlt.reconcile()
    yield vlt
    vlt.close()


def test_every_dialect_fixture_is_checked():
    found = {p.relative_to(DIALECTS).as_posix() for p in DIALECTS.rglob("*") if p.is_file()}
    assert found == set(TITLES)


@pytest.mark.parametrize("path", list(TITLES))
def test_indexed_title_is_the_dialects_own(v, path):
    note = v.notes[path]
    assert (note.title, note.title_from) == TITLES[path]


def test_search_hits_show_the_title_not_a_section_heading(v):
    hits = v.search("Luhmann")["hits"]
    assert [(h["path"], h["title"]) for h in hits] == [("org-roam/zettelkasten.org", "Zettelkasten")]
    hits = v.search("properties")["hits"]
    assert [(h["path"], h["title"]) for h in hits] == [("obsidian/Aliases.md", "Aliases")]


def test_toml_front_matter_is_read_and_not_searched_as_text(v):
    note = v.notes["denote/20251017T090000--toml-front-matter__hugo.md"]
    assert note.tags == ("hugo",) and note.date.startswith("2025-10-17T09:00")
    assert v.search("identifier")["hits"] == []  # a front matter key, not text


def test_a_first_h1_is_searched_as_a_title_but_resolves_no_link(v):
    # title: searches only titles; the H1 of a note named by its file counts
    assert [h["path"] for h in v.search("title:whiteboard")["hits"]] == ["obsidian/Canvas.md"]
    assert [h["path"] for h in v.search("title:principles")["hits"]] == ["foam/principles.md"]
    # not where the note has a title of its own (Dendron's root.md: "Welcome to Dendron")
    assert v.search("title:welcome")["hits"] == []
    # not an alias: Obsidian and Foam resolve no link by it
    with pytest.raises(NoteNotFound):
        v.find_note("Infinite whiteboard")
    assert v.find_note("Alias") == "obsidian/Aliases.md"  # front matter aliases do


def test_vaultd_parse_says_where_the_title_came_from(tmp_path):
    def parse(rel):
        r = subprocess.run([sys.executable, "-m", "vaultd", "parse", str(DIALECTS / rel)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return r.stdout.splitlines()

    assert parse("obsidian/Aliases.md")[0] == "title:    Aliases (file name)"
    assert parse("org-roam/zettelkasten.org")[0] == "title:    Zettelkasten (#+title)"
    assert parse("denote/20251020T120000--no-title-keyword__org.org")[0] == "title:    no title keyword (Denote name)"
    assert parse("obsidian/Canvas.md")[:2] == ["title:    Canvas (file name)",
                                               "          Infinite whiteboard (first H1, searched as a title)"]
