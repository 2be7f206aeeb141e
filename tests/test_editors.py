"""The operations and output editors use: `resolve` (where a link goes), `list` (every note),
`grep` (every matching line), and one column rule per output format, against the real daemon
on tests/fixtures/editors (Korean and Japanese lines, a part name with ` - `, folded Org)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EDITORS_VAULT = Path(__file__).parent / "fixtures" / "editors"
TOKYO = "notes/20251201T090000--東京旅行__travel.org"
PART = "notes/가치관 - 선택.md"


def vaultq(*args, cwd=None, sock=None):
    env = {**os.environ, **({"VAULTD_SOCKET": sock} if sock else {})}
    return subprocess.run([sys.executable, "-m", "vaultd.vaultq", *args], capture_output=True, timeout=30,
                          cwd=cwd, env=env)


@pytest.fixture
def ed(tmp_path, make_daemon):
    """The daemon on a copy of the editors' fixture vault."""
    v = tmp_path / "ed"
    shutil.copytree(EDITORS_VAULT, v)
    return make_daemon(v)


def q(ed, *args, cwd=None):
    """vaultq's (exit code, stdout, stderr), run in the vault unless `cwd`."""
    r = vaultq(*args, cwd=cwd or ed.vault, sock=str(ed.socket))
    return r.returncode, r.stdout.decode(), r.stderr.decode()


# -- resolve -----------------------------------------------------------------------------


@pytest.mark.parametrize("link, src, path, line, heading", [
    ("[[Deep work#Rules]]", PART, "Deep work.md", 8, "Rules"),
    ("[[Deep work]]", None, "Deep work.md", None, None),
    ("![[Deep work#Rules]]", None, "Deep work.md", 8, "Rules"),
    ("[t](../Deep%20work.md#rules)", PART, "Deep work.md", 8, "Rules"),
    ("[[file:../Deep work.md::Rules][Deep work]]", TOKYO, "Deep work.md", 8, "Rules"),
    ("[[denote:20251201T090000::*持ち物]]", None, TOKYO, 7, "持ち物"),
    ("denote:20251201T090000", None, TOKYO, None, None),
    ("[[*日程]]", TOKYO, TOKYO, 9, "日程"),
    ("[[가치관 - 선택]]", "notes/가치관.md", PART, None, None),
    ("[[몰입]]", None, "Deep work.md", None, None),  # an alias
    ("Deep work#Rules", None, "Deep work.md", 8, "Rules"),  # a name, as a wikilink says it
])
def test_resolve_each_link_syntax(ed, link, src, path, line, heading):
    res = ed.request("resolve", link=link, **({"from": src} if src else {}))
    assert (res["path"], res["line"], res["heading"], res["broken"]) == (path, line, heading, None)
    assert res["vault"] == str(ed.vault)


def test_resolve_at_a_column_of_a_line(ed):
    line = "선택을 할 때 splitter 가 아니라 [[Deep work#Rules]] 를 본다. 다시 Splitter."
    at = line.index("[[") + 1  # 1-based, characters
    for col in (at, at + 5, at + len("[[Deep work#Rules]]") - 1):
        res = ed.request("resolve", link=line, col=col, **{"from": PART})
        assert (res["path"], res["line"], res["col"], res["end_col"]) == ("Deep work.md", 8, at, at + 19)
    code, out, err = q(ed, "resolve", "--from", PART, "--col", "3", line)
    assert (code, out, err) == (1, "", "vaultq: no link at column 3\n")


def test_resolve_broken_ambiguous_and_urls(ed):
    (ed.vault / "other").mkdir()
    (ed.vault / "other" / "가치관.md").write_text("# 가치관\n")  # a second note of that name, as near the top
    ed.wait_generation(ed.status()["generation"], timeout=5)
    res = ed.request("resolve", link="[[Nowhere]]")
    assert (res["path"], res["broken"]) == (None, "no such note")
    res = ed.request("resolve", link="[[가치관]]")  # from the top of the vault: either
    assert (res["broken"], res["candidates"]) == ("ambiguous", ["notes/가치관.md", "other/가치관.md"])
    res = ed.request("resolve", link="[[가치관]]", **{"from": PART})  # the one in its own folder
    assert (res["path"], res["broken"]) == ("notes/가치관.md", None)
    res = ed.request("resolve", link="[[Deep work#Nope]]")
    assert (res["path"], res["broken"]) == ("Deep work.md", "no such heading")
    res = ed.request("resolve", link="https://example.com/x")
    assert (res["kind"], res["url"], res["path"], res["broken"]) == ("url", "https://example.com/x", None, None)

    assert q(ed, "resolve", "[[Nowhere]]") == (1, "", "vaultq: [[Nowhere]]: no such note\n")
    code, out, err = q(ed, "resolve", "[[가치관]]", "--format", "vimgrep")
    assert code == 1 and out == ("notes/가치관.md:1:1:ambiguous: [[가치관]]\n"
                                 "other/가치관.md:1:1:ambiguous: [[가치관]]\n")
    assert err == "vaultq: [[가치관]]: ambiguous (it may be any of the notes above)\n"
    assert q(ed, "resolve", "https://example.com/x") == (0, "https://example.com/x  (a URL)\n", "")


def test_resolve_output_and_paths(ed):
    assert q(ed, "resolve", "[[Deep work#Rules]]") == (0, "Deep work.md:8  Deep work > Rules\n", "")
    assert q(ed, "resolve", "[[Deep work#Rules]]", cwd=ed.vault / "notes") == \
        (0, "../Deep work.md:8  Deep work > Rules\n", "")
    assert q(ed, "resolve", "[[Deep work#Rules]]", "--format", "vimgrep", "--null") == \
        (0, "Deep work.md\x008:1:Deep work > Rules\n", "")
    code, out, _ = q(ed, "resolve", "--json", "--from", str(ed.vault / PART), "[[Deep work]]", cwd="/")
    res = json.loads(out)
    assert code == 0 and res["from"] == PART and res["path"] == "Deep work.md"  # --json: paths as in the vault


def test_resolve_from_a_note_not_yet_saved_and_bad_input(ed):
    res = ed.request("resolve", link="[[가치관]]", **{"from": "notes/new note.md"})  # not in the vault yet
    assert res["path"] == "notes/가치관.md"
    res = ed.request("resolve", link="[[#Rules]]", **{"from": "notes/new note.md"})
    assert res["path"] is None and res["broken"].startswith("no such heading")
    before = sorted(p.relative_to(ed.vault) for p in ed.vault.rglob("*"))
    for bad in (["--from", "/etc/passwd", "x"], ["--from", "../x.md", "x"]):
        code, out, err = q(ed, "resolve", *bad)
        assert (code, out) == (2, "") and "is outside the vault" in err
    assert q(ed, "resolve", "--col", "0", "[[x]]")[0] == 2
    assert q(ed, "resolve", "[[x]]", "--null")[0] == 2  # --null needs a format with file names
    assert q(ed, "resolve", "   ")[:2] == (2, "")
    assert sorted(p.relative_to(ed.vault) for p in ed.vault.rglob("*")) == before  # nothing changed


# -- list --------------------------------------------------------------------------------


def test_list_every_note_with_title_aliases_id_and_tags(ed):
    res = ed.request("list")
    assert [n["path"] for n in res["notes"]] == sorted(["Deep work.md", "journal/2025-12-01.md", TOKYO, PART,
                                                        "notes/가치관.md"])
    tokyo = next(n for n in res["notes"] if n["path"] == TOKYO)
    assert (tokyo["title"], tokyo["id"], tokyo["tags"]) == ("東京旅行", "20251201T090000", ["travel"])
    deep = next(n for n in res["notes"] if n["path"] == "Deep work.md")
    assert (deep["aliases"], deep["tags"], "headings" in deep) == (["몰입"], ["focus"], False)
    res = ed.request("list", tag=["travel"], headings=True)
    assert [(h["level"], h["text"], h["line"]) for h in res["notes"][0]["headings"]] == \
        [(1, "準備", 5), (2, "持ち物", 7), (1, "日程", 9)]
    assert [n["path"] for n in ed.request("list", path=["notes"])["notes"]] == [TOKYO, PART, "notes/가치관.md"]
    assert ed.request("list", path=["journal/2025"])["total"] == 1


def test_list_output(ed):
    code, out, _ = q(ed, "list", "--tag", "focus")
    assert (code, out) == (0, "Deep work.md  Deep work  [focus]  (also: 몰입)\n")
    assert q(ed, "list", "--path", "notes", "--format", "paths", "--null") == \
        (0, f"{TOKYO}\0{PART}\0notes/가치관.md\0", "")
    assert q(ed, "list", "--tag", "travel", "--format", "vimgrep")[1] == f"{TOKYO}:1:1:東京旅行\n"
    assert q(ed, "list", "--tag", "nosuchtag") == (1, "", "")
    assert q(ed, "list", "--null")[0] == 2
