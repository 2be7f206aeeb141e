"""Rename, history and undo as operations (issue 42): through the real daemon on a real
socket, asked by the real vaultq (and by the MCP SDK's client): a note renamed with its
Markdown, Org and Denote links rewritten (labels kept), listed by `vaultq history` as a
rename, undone by `vaultq undo OP` byte for byte; a heading renamed by `--line`; a refusal
that changes nothing; `split --history/--undo` as aliases; and a split hub renamed stays a
hub (what splits keep by path follows it, across a restart)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_mcp import session
from test_split import _big_md, _tree, _vault

OLD = time.time() - 3600
DENOTE = "20240125T164237--old-title__emacs_notes.org"
NEW = "20240125T164237--a-new-title__emacs_notes.org"
FILES = {
    DENOTE: "#+title:      Old Title\n#+filetags:   :emacs:notes:\n#+identifier: 20240125T164237\n\n"
            "* Part A\n\nText.\n",
    "index.org": "#+title: Index\n\n- [[denote:20240125T164237][Old Title]] and [[denote:20240125T164237][my words]]\n"
                 f"- [[file:{DENOTE}][Old Title]] and [[file:{DENOTE}::*Part A][part]]\n",
    "notes/a.md": f"# A\n\nSee [the org note](../{DENOTE}) and [Old Title](denote:20240125T164237).\n\n"
                  "## Plans\n\nSoon.\n",
    "notes/b.md": "[[a#Plans]] and [[a#Plans|my plans]] and [[a]].\n",
    "notes/c.md": "# C\n\nUnrelated [[b]].\n",
}


@pytest.fixture
def tree(tmp_path) -> Path:
    v = tmp_path / "v"
    for rel, text in FILES.items():
        (v / rel).parent.mkdir(parents=True, exist_ok=True)
        (v / rel).write_text(text)
        os.utime(v / rel, (OLD, OLD))
    return v


@pytest.fixture
def d(tree, make_daemon):
    return make_daemon(tree)


def vaultq(d, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vaultd.vaultq", *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "VAULTD_SOCKET": str(d.socket)}, cwd=d.vault)


def test_rename_rewrites_markdown_org_and_denote_links_history_lists_it_and_undo_restores(d):
    v = d.vault
    before = _tree(v)
    r = vaultq(d, "rename", "20240125T164237", "A new title")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == f"renamed {DENOTE} -> {NEW}: 3 links rewritten, 3 labels followed"
    assert sorted(lines[1:-1]) == sorted(f"  {p}" for p in (NEW, "index.org", "notes/a.md", DENOTE))
    op = lines[-1].removeprefix("undo: vaultq undo ")
    assert lines[-1] == f"undo: vaultq undo {op}" and len(op) == 22
    after = _tree(v)
    assert DENOTE not in after  # the identifier kept, the title in the name and the keyword anew
    assert after[NEW].decode() == FILES[DENOTE].replace("#+title:      Old Title", "#+title:      A new title")
    assert after["index.org"].decode() == (  # Denote links by the identifier kept; labels that said the title follow
        "#+title: Index\n\n- [[denote:20240125T164237][A new title]] and [[denote:20240125T164237][my words]]\n"
        f"- [[file:{NEW}][A new title]] and [[file:{NEW}::*Part A][part]]\n")
    assert after["notes/a.md"].decode() == (
        f"# A\n\nSee [the org note](../{NEW}) and [A new title](denote:20240125T164237).\n\n## Plans\n\nSoon.\n")
    assert after["notes/b.md"] == before["notes/b.md"] and after["notes/c.md"] == before["notes/c.md"]
    assert d.request("broken")["broken"] == []
    assert d.request("resolve", link=f"[[file:{NEW}::*Part A]]", **{"from": "index.org"})["path"] == NEW

    history = vaultq(d, "history")
    assert history.returncode == 0, history.stderr
    assert history.stdout.splitlines() == [f"{op}  done        {DENOTE} -> {NEW} (rename: 3 links rewritten)"]
    [entry] = json.loads(vaultq(d, "history", "--json").stdout)["history"]
    assert {k: entry[k] for k in ("op", "kind", "note", "to", "status", "rewritten", "relabeled")} == {
        "op": op, "kind": "rename", "note": DENOTE, "to": NEW, "status": "done", "rewritten": 3, "relabeled": 3}
    assert "heading" not in entry

    undone = vaultq(d, "undo", op)
    assert undone.returncode == 0, undone.stderr
    assert undone.stdout == f"undid {op}\nrestored 4 files\n"
    assert _tree(v) == before, "undo restores the tree byte for byte"
    assert d.request("broken")["broken"] == [] and d.request("resolve", link="denote:20240125T164237")["path"] \
        == DENOTE
    assert [(e["op"], e["status"]) for e in d.request("history")["history"]] == [(op, "undone")]
    again = vaultq(d, "undo", op)  # undone already: said, exit non-zero, nothing changed
    assert again.returncode != 0 and f"rename {op} is undone, not done: nothing to undo" in again.stderr
    assert _tree(v) == before


def test_rename_line_renames_a_heading_and_its_anchors(d):
    v = d.vault
    before = _tree(v)
    r = vaultq(d, "rename", "notes/a.md", "Next plans", "--line", "5")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "renamed the heading on line 5 of notes/a.md: 2 links rewritten"
    assert sorted(lines[1:-1]) == ["  notes/a.md", "  notes/b.md"]
    op = lines[-1].removeprefix("undo: vaultq undo ")
    assert (v / "notes/a.md").read_text().endswith("## Next plans\n\nSoon.\n")
    assert (v / "notes/b.md").read_text() == "[[a#Next plans]] and [[a#Next plans|my plans]] and [[a]].\n"
    assert d.request("broken")["broken"] == []
    [entry] = d.request("history")["history"]
    assert (entry["kind"], entry["heading"], entry["note"], entry["to"]) == ("rename", 5, "notes/a.md", "notes/a.md")
    assert vaultq(d, "history").stdout == f"{op}  done        notes/a.md -> heading on line 5 renamed " \
                                          "(rename: 2 links rewritten)\n"
    assert vaultq(d, "undo", "--all").returncode == 0
    assert _tree(v) == before


def test_a_refused_rename_exits_non_zero_with_its_reason_and_changes_nothing(d):
    v = d.vault
    before = _tree(v)
    r = vaultq(d, "rename", "notes/a.md", "c")  # notes/c.md exists
    assert r.returncode == 2 and r.stdout == ""
    assert "notes/c.md exists: notes/a.md cannot take its name; nothing was renamed" in r.stderr, r.stderr
    r = vaultq(d, "rename", "notes/a.md", "New", "--line", "1000")
    assert r.returncode != 0 and "nothing was renamed" in r.stderr, r.stderr
    r = vaultq(d, "rename", "No such note", "New")
    assert r.returncode != 0 and "No such note" in r.stderr, r.stderr
    assert _tree(v) == before and not (v / ".vaultd").exists()
    empty = vaultq(d, "history")
    assert (empty.returncode, empty.stdout) == (1, "") and "written nothing" in empty.stderr
    assert vaultq(d, "undo").returncode == 2 and vaultq(d, "undo", "x", "--all").returncode == 2
    nothing = vaultq(d, "undo", "--all")
    assert nothing.returncode == 1 and "nothing to undo" in nothing.stderr


def test_dry_run_shows_the_diff_and_writes_nothing(d):
    v = d.vault
    before = _tree(v)
    r = vaultq(d, "rename", "--dry-run", "20240125T164237", "A new title")
    assert r.returncode == 0, r.stderr
    assert f"+++ b/{NEW}" in r.stdout and "+- [[denote:20240125T164237][A new title]]" in r.stdout
    assert _tree(v) == before and d.request("history")["history"] == []


def test_split_history_and_undo_stay_aliases(d):
    v = d.vault
    before = _tree(v)
    first = json.loads(vaultq(d, "rename", "notes/c.md", "See", "--json").stdout)
    second = json.loads(vaultq(d, "rename", "20240125T164237", "A new title", "--json").stdout)
    assert (first["to"], second["to"], first["dry_run"]) == ("notes/See.md", NEW, False)
    # the history op newest first; split --history as it always listed, oldest first
    assert [e["op"] for e in d.request("history")["history"]] == [second["op"], first["op"]]
    assert [e["op"] for e in d.request("split", history=True)["history"]] == [first["op"], second["op"]]
    listed = vaultq(d, "split", "--history")
    assert listed.returncode == 0 and listed.stdout.splitlines() == [
        f"{first['op']}  done        notes/c.md -> notes/See.md (rename: 0 links rewritten)",
        f"{second['op']}  done        {DENOTE} -> {NEW} (rename: 3 links rewritten)"]
    undone = vaultq(d, "split", "--undo", first["op"], second["op"])
    assert undone.returncode == 0, undone.stderr
    assert undone.stdout.splitlines()[:2] == [f"undid {second['op']}", f"undid {first['op']}"]  # newest first
    assert _tree(v) == before


def test_the_mcp_tools_have_rename(d):
    v = d.vault
    before = _tree(v)

    async def steps(c):
        names = [t.name for t in (await c.list_tools()).tools]
        preview = await c.call_tool("rename", {"note": "20240125T164237", "title": "A new title", "dry_run": True})
        done = await c.call_tool("rename", {"note": "notes/c.md", "title": "See"})
        return names, preview, done

    names, preview, done = session(str(d.socket), steps)
    assert "rename" in names
    assert not preview.is_error and preview.content[0].text.startswith("Nothing written (dry run)")
    assert not done.is_error, done.content[0].text
    res = done.structured_content
    assert (res["note"], res["to"]) == (f"{v}/notes/c.md", f"{v}/notes/See.md")  # absolute, as every MCP path
    assert f"`vaultq undo {res['op']}`" in done.content[0].text
    assert (v / "notes/See.md").read_bytes() == before["notes/c.md"]
    assert vaultq(d, "undo", res["op"]).returncode == 0
    assert _tree(v) == before


def test_a_split_hub_renamed_stays_a_hub_across_a_restart(tmp_path):
    v = _vault(tmp_path, {"notes/Big.md": _big_md(), "notes/Other.md": "[[Big#Section 5]] [[Big]]\n"}, quiet=0)
    try:
        split = v.split_note("notes/Big.md")["op"]
        assert v.splits.done == {"notes/Big.md": split}
        renamed = v.rename("notes/Big.md", "Huge")
        assert renamed["to"] == "notes/Huge.md" and v.broken()["broken"] == []
        assert v.splits.done == {"notes/Huge.md": split}, "the hub renamed is still the split's hub"
        v.splits.read_journal()  # as a restart reads it: the rename followed
        assert v.splits.done == {"notes/Huge.md": split}
        v.undo(renamed["op"])
        assert v.splits.done == {"notes/Big.md": split}
        v.splits.read_journal()
        assert v.splits.done == {"notes/Big.md": split}
        v.undo(split)  # undone: the note kept whole, and still when renamed
        assert (v.splits.kept_whole, v.splits.done) == ({"notes/Big.md": split}, {})
        v.rename("notes/Big.md", "Huge")
        assert v.splits.kept_whole == {"notes/Huge.md": split}
        v.splits.read_journal()
        assert (v.splits.kept_whole, v.splits.done) == ({"notes/Huge.md": split}, {})
    finally:
        v.close()
