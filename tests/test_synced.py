"""A vault synced between machines (Syncthing, Dropbox, iCloud, git; issue 38): `[split]
host` names the one machine whose vaultd writes into it, and sync tools' conflict copies
are recognised (parse/conflicts.py), listed by `problems` and kept from doubling every
search ([search] conflict_copies). Real daemons, real files, the real vaultq."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import Daemon, wait_for
from test_split import _big_md
from vaultd.parse.conflicts import conflict_copy


def vaultq(d: Daemon, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vaultd.vaultq", "--socket", str(d.socket), *args],
                          capture_output=True, text=True, timeout=60, cwd=d.vault)  # paths relative to it


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def logged(d: Daemon, text: str) -> str:
    """Wait for a line of the daemon's log (read as it runs: conftest's Daemon.log) holding `text`."""
    return wait_for(lambda: next((ln for ln in list(d.log.lines) if text in ln), None), timeout=60)


# -- which names are conflict copies, and of which note ------------------------------------

@pytest.mark.parametrize("path, of, tool, when, by", [
    ("notes/Deep work.sync-conflict-20250102-101112-ABCDEFG.md", "notes/Deep work.md", "Syncthing",
     "2025-01-02 10:11:12", "ABCDEFG"),
    ("a.sync-conflict-20250102-101112.md", "a.md", "Syncthing or Obsidian Sync", "2025-01-02 10:11:12", ""),
    ("A.sync-conflict-20250102-101112-AAAAAAA.sync-conflict-20250103-101112-BBBBBBB.org", "A.org", "Syncthing",
     "2025-01-03 10:11:12", "BBBBBBB"),
    ("20251016T080208--memory__agents.sync-conflict-20250102-101112-ABCDEFG.md", "20251016T080208--memory__agents.md",
     "Syncthing", "2025-01-02 10:11:12", "ABCDEFG"),
    ("x/Plan (Miguel Mota's conflicted copy 2014-06-17).md", "x/Plan.md", "Dropbox", "2014-06-17", "Miguel Mota"),
    ("Plan (Ann’s conflicted copy 2014-06-17 (1)).md", "Plan.md", "Dropbox", "2014-06-17", "Ann"),
    ("Plan (Peter's in Konflikt stehende Kopie 2015-01-01).md", "Plan.md", "Dropbox", "2015-01-01", ""),
    ("Plan (copie en conflit de Pierre 2015-01-01).md", "Plan.md", "Dropbox", "2015-01-01", ""),
    ("Plan (conflicting copy).md", "Plan.md", "Maestral (Dropbox)", "", ""),
    ("TODO (conflicted copy 2026-07-10 070952).md", "TODO.md", "Nextcloud", "2026-07-10 07:09:52", ""),
    ("TODO (conflicted copy alice 2026-07-10 070952).org", "TODO.org", "Nextcloud", "2026-07-10 07:09:52", "alice"),
    ("TODO_conflict-20180410-093612.md", "TODO.md", "ownCloud/Nextcloud", "2018-04-10 09:36:12", ""),
    ("2026-03-12 (Conflicted copy ThinkPad-T14-G5 202603121129).md", "2026-03-12.md", "Obsidian Sync",
     "2026-03-12 11:29", "ThinkPad-T14-G5"),
    ("a (b) (Ann's conflicted copy 2014-06-17).md", "a (b).md", "Dropbox", "2014-06-17", "Ann"),
    ("notes/Plan_LOCAL_12345.md", "notes/Plan.md", "git mergetool", "", "LOCAL"),
    ("notes/Plan.md.orig", "notes/Plan.md", "git (a merge's backup)", "", ""),
])
def test_each_tool_s_conflict_copy_is_read_from_its_name(path, of, tool, when, by):
    c = conflict_copy(path)
    assert c is not None and (c.path, c.of, c.tool, c.when, c.by) == (path, of, tool, when, by)


@pytest.mark.parametrize("path", [
    "Note (1).md", "Note 2.md", "Meeting (conflict 2025-01-01).md", "Projekt (Konflikt 2025-01-01).md",
    "Plan (draft).md", "20251016T080208--memory-tiers__agents_memory.md", "a.sync-conflict-soon.md",
    "my_conflict-notes.md", "LOCAL_1.md", "Plan (conflicted copy).md.bak",
])
def test_names_a_person_gives_are_not_taken_for_copies(path):
    assert conflict_copy(path) is None


# -- conflict copies: listed, and kept from doubling search -----------------------------------

NOTE = "# Deep work\n\nFocus in blocks of ninety minutes; the zebrafinch rule.\n"
COPY = "notes/Deep work.sync-conflict-20250102-101112-ABCDEFG.md"
DROPBOX = "notes/Plan (Ann's conflicted copy 2025-01-02).md"
ORPHAN = "notes/Gone (conflicted copy 2025-01-02 101112).md"


@pytest.fixture
def synced(tmp_path, short_dir):
    """A vault a sync tool left conflict copies in, and a daemon on it per [search]
    conflict_copies mode (None: the default)."""
    vault = tmp_path / "vault"
    (vault / "notes").mkdir(parents=True)
    (vault / "notes" / "Deep work.md").write_text(NOTE)
    # the copy holds the shared word more often (it would outrank its note) and a word of its own
    (vault / COPY).write_text(NOTE + "zebrafinch, zebrafinch, zebrafinch.\nWritten on the laptop: quokka.\n")
    (vault / "notes" / "Plan.md").write_text("# Plan\n\nShip the kestrel release.\n")
    (vault / DROPBOX).write_text("# Plan\n\nShip the kestrel release on Friday.\n")
    (vault / ORPHAN).write_text("# Gone\n\nA pangolin note whose original was renamed.\n")
    started = []

    def start(mode: str | None = None) -> Daemon:
        extra = []
        if mode is not None:
            cfg = tmp_path / f"{mode}.toml"
            cfg.write_text(f'[search]\nconflict_copies = "{mode}"\n')
            extra = ["--config", str(cfg)]
        d = Daemon(vault, tmp_path / f"state-{mode}", short_dir / f"{mode}.sock", extra)
        started.append(d)
        return d.start()

    yield start
    for d in started:
        d.stop()


def test_conflict_copies_are_listed_with_their_note(synced):
    d = synced()
    assert d.status()["problems"] == 3
    r = vaultq(d, "problems")
    assert r.returncode == 0, r.stderr
    assert (f"{COPY}  Deep work.sync-conflict-20250102-101112-ABCDEFG\n    a conflict copy of notes/Deep work.md (Syncthing, from ABCDEFG, 2025-01-02 "
            "10:11:12): compare the two, keep what you want in notes/Deep work.md, then delete this copy\n") in r.stdout
    assert "a conflict copy of notes/Plan.md (Dropbox, from Ann, 2025-01-02)" in r.stdout
    assert ("a conflict copy of notes/Gone.md (Nextcloud, 2025-01-02 10:11:12), which is not in the vault (renamed "
            "or deleted since?)") in r.stdout
    rows = {p["path"]: p for p in json.loads(vaultq(d, "problems", "--json").stdout)["problems"]}
    assert {p: rows[p]["conflict_of"] for p in rows} == {
        COPY: "notes/Deep work.md", DROPBOX: "notes/Plan.md", ORPHAN: "notes/Gone.md"}
    assert "notes/Deep work.md" not in rows and "notes/Plan.md" not in rows


def test_by_default_a_copy_is_folded_into_its_note_and_found_where_only_it_holds_the_words(synced):
    d = synced()
    hits = d.request("search", q="zebrafinch", limit=10)
    assert [h["path"] for h in hits["hits"]] == ["notes/Deep work.md"] and hits["total"] == 1
    assert d.search_paths("kestrel") == ["notes/Plan.md"]
    assert d.search_paths("quokka") == [COPY]  # what only the copy says is still found
    assert d.search_paths("pangolin") == [ORPHAN]  # a copy whose note is gone is a note


def test_below_shows_a_copy_just_after_its_note(synced):
    d = synced("below")
    assert d.search_paths("zebrafinch") == ["notes/Deep work.md", COPY]
    assert d.search_paths("kestrel") == ["notes/Plan.md", DROPBOX]


def test_hide_never_shows_a_copy(synced):
    d = synced("hide")
    assert d.search_paths("zebrafinch") == ["notes/Deep work.md"]
    assert d.search_paths("quokka") == []
    assert vaultq(d, "search", "quokka").returncode == 1


# -- [split] host: the one machine that writes ----------------------------------------------

@pytest.mark.parametrize("here", ["desktop", "laptop"])
def test_only_the_named_host_writes(here, tmp_path, short_dir, monkeypatch):
    """`[split] host = "laptop"`: vaultd on desktop indexes and answers, and writes nothing:
    no auto-split of a note that grew, no split asked for, no remember; status and vaultq say
    why. On laptop itself (the control), the same note is split."""
    monkeypatch.setenv("VAULTD_HOSTNAME", here)
    vault = tmp_path / "vault"
    (vault / "notes").mkdir(parents=True)
    (vault / "notes" / "Big.md").write_text("---\ntitle: Big\n---\n\n## Section 0\n\nSmall yet.\n")
    (vault / "notes" / "Other.md").write_text("[[Big]]\n")
    cfg = tmp_path / "host.toml"
    cfg.write_text('[split]\nhost = "laptop"\nquiet = 0\n[capture]\nfolder = "inbox"\n')
    d = Daemon(vault, tmp_path / "state", short_dir / "h.sock", ["--config", str(cfg)]).start()
    try:
        d.stop()
        (vault / "notes" / "Big.md").write_text(_big_md())  # grew past the threshold while it was stopped
        before = tree(vault)
        d.start()
        if here == "laptop":  # the control: this host writes, and auto-split splits the note
            logged(d, "auto-split is on")
            assert wait_for(lambda: (vault / ".vaultd").is_dir(), timeout=60)
            assert d.status()["writer"] is True and d.status()["writer_why"] is None
            return
        said = "this vault writes only on host laptop; this is desktop"
        logged(d, f"{said}: vaultd here writes nothing into the vault")
        # the auto-split pass that logged it is over once the indexer applies another batch
        g = d.status()["generation"]
        (vault / "notes" / "Later.md").write_text("# Later\n")
        d.wait_generation(g, timeout=60)
        (vault / "notes" / "Later.md").unlink()
        d.wait_generation(g + 1, timeout=60)
        assert tree(vault) == before and not (vault / ".vaultd").exists()

        st = d.status()
        assert st["writer"] is False and st["writer_why"].startswith(f"{said}: only that host splits")
        assert f"writer:     no: {said}: only that host splits, undoes and remembers" in vaultq(d, "status").stdout
        r = subprocess.run([sys.executable, "-m", "vaultd", "check", "--config", str(cfg), "--vault", str(vault),
                            "--socket", str(d.socket)], capture_output=True, text=True, timeout=60)
        assert f"host:      {said}: vaultd here writes nothing into the vault" in r.stdout, r.stdout
        assert f"           {said}: only that host splits" in r.stdout, r.stdout
        assert d.search_paths("lorem") == ["notes/Big.md"]  # it indexes and answers
        assert any(o["path"] == "notes/Big.md" for o in d.request("split", list=True)["over"])  # and proposes
        for args in (("split", "notes/Big.md"), ("split", "--all"), ("remember", "The spare key is under the mat.")):
            r = vaultq(d, *args)
            assert r.returncode == 2 and said in r.stderr, (args, r.stderr)
        assert tree(vault) == before
    finally:
        d.stop()
    shutil.rmtree(tmp_path / "state")


def test_a_denote_link_resolves_to_the_note_not_its_conflict_copy(tmp_path, short_dir):
    """A Syncthing copy of a Denote note holds its identifier (and an Org note's copy its :ID:):
    `[[denote:ID]]` and `[[id:UUID]]` went to ambiguous, broken links. The note is the target."""
    vault = tmp_path / "vault"
    (vault / "notes").mkdir(parents=True)
    note = "20251016T080208--memory-tiers__agents.org"
    body = "#+title: Memory tiers\n:PROPERTIES:\n:ID: 6f1c2f0e-1111-4a5b-9c3d-000000000001\n:END:\nHot and cold.\n"
    (vault / "notes" / note).write_text(body)
    (vault / "notes" / note.replace(".org", ".sync-conflict-20250102-101112-ABCDEFG.org")).write_text(body + "More.\n")
    (vault / "notes" / "Index.md").write_text("[[denote:20251016T080208]] and [[id:6f1c2f0e-1111-4a5b-9c3d-000000000001]]\n")
    d = Daemon(vault, tmp_path / "state", short_dir / "l.sock").start()
    try:
        wait_for(lambda: d.status()["graph"] == "ready", timeout=60)
        assert d.request("broken")["total"] == 0
        links = d.request("links", note="notes/Index.md")["links"]
        assert [(ln["resolved"], ln["broken"]) for ln in links] == [(f"notes/{note}", None)] * 2, links
    finally:
        d.stop()
