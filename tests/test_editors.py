"""The operations and output editors use: `resolve` (where a link goes), `list` (every note),
`grep` (every matching line), and one column rule per output format, against the real daemon
on tests/fixtures/editors (Korean and Japanese lines, a part name with ` - `, folded Org)."""

from __future__ import annotations

import json
import os
import re
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
    g = ed.status()["generation"]  # before the write: its commit may come before a status after it
    (ed.vault / "other").mkdir()
    (ed.vault / "other" / "가치관.md").write_text("# 가치관\n")  # a second note of that name, as near the top
    ed.wait_generation(g)
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


@pytest.mark.parametrize("link, src", [
    ("[[Deep work#Nope]]", None), ("[[Deep work#^nob]]", None), ("[[file:Deep work.md::*Nope]]", None),
    ("[t](Deep%20work.md#nope)", None),
])
def test_resolve_a_missing_heading_or_block_is_broken(ed, link, src):
    """The note is there, the heading or block is not: broken (exit 1, why on stderr), as
    --json says, and the note is still given, so an editor can go there."""
    res = ed.request("resolve", link=link)
    assert res["path"] == "Deep work.md" and res["broken"] in ("no such heading", "no such block")
    why = res["broken"]
    assert q(ed, "resolve", link) == (1, f"Deep work.md  Deep work  (broken: {why})\n",
                                      f"vaultq: {link}: {why} (the note is above)\n")
    assert q(ed, "resolve", link, "--format", "vimgrep") == (
        1, f"Deep work.md:1:1:Deep work  (broken: {why})\n", f"vaultq: {link}: {why} (the note is above)\n")
    code, out, err = q(ed, "resolve", link, "--json")
    assert (code, json.loads(out)["broken"], err) == (1, why, "")


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
    for col in (["--col", "-3"], ["--col=-3"], ["--col", "0"]):  # a negative one too, said plainly
        code, out, err = q(ed, "resolve", *col, "[[x]]")
        assert (code, out) == (2, "") and err.endswith(f"error: argument --col: --col must be at least 1, "
                                                       f"got {col[-1].split('=')[-1]}\n"), err
    assert q(ed, "resolve", "--col", "3", "--", "--col -3 [[Deep work]]")[0] == 1  # after --: the line's text
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


# -- grep --------------------------------------------------------------------------------

CORPORA = Path(__file__).resolve().parents[1].parent / "shared" / "corpora"
RG = shutil.which("rg")


def rg_rows(vault: Path, word: str, files: list[str]) -> list[tuple[str, int, int, str]]:
    """`rg --vimgrep -i WORD` on these files of the vault: (path, line, byte column, text); with
    -F for a word that would be a regular expression to rg (`[[`)."""
    literal = ["-F"] if re.escape(word) != word else []
    r = subprocess.run(["rg", "--vimgrep", "-i", "--no-config", *literal, "--", word, *files], cwd=vault,
                       capture_output=True, timeout=60)
    assert r.returncode in (0, 1), r.stderr
    return sorted(_row(line) for line in r.stdout.decode("utf-8", "replace").splitlines())


def _row(line: str) -> tuple[str, int, int, str]:
    path, ln, col, text = line.split(":", 3)
    return path, int(ln), int(col), text


def same_as_rg(ed, words: list[str]) -> None:
    files = q(ed, "list", "--format", "paths")[1].splitlines()
    for word in words:
        want = rg_rows(ed.vault, word, files)
        code, out, _ = q(ed, "grep", word)
        got = sorted(_row(line) for line in out.splitlines())
        assert code == (0 if want else 1), word
        assert [r[:3] for r in got] == [r[:3] for r in want], word  # every occurrence, same line and byte column
        for (*_, mine), (*_, theirs) in zip(got, want):  # the line's text; a line over 1,000 characters: a part of it
            assert mine == theirs.removesuffix("\r") or len(theirs) > 1000 and mine in theirs, word


@pytest.mark.skipif(RG is None, reason="ripgrep (rg) is not installed: apt-get install ripgrep")
def test_grep_gives_the_lines_rg_gives(ed):
    same_as_rg(ed, ["splitter", "SPLITTER", "deep", "가치관", "東京", "は", "[[", "e"])


@pytest.mark.skipif(RG is None, reason="ripgrep (rg) is not installed: apt-get install ripgrep")
def test_grep_folds_case_as_rg_does(ed):
    """Unicode simple case folding, a character at a time, as rg -i: İ finds only İ (its
    lowercase is two characters, `i̇`), `k` the Kelvin sign, ß not `ss`, ﬁ not `fi`."""
    g = ed.status()["generation"]
    (ed.vault / "cases.md").write_text(
        "# Cases\n\nİstanbul and istanbul, ISTANBUL, ıtır\nKelvin: 5 K, k, K\nStraße STRASSE STRAẞE\n"
        "ﬁle and file\nſtrong strong\nΣίσυφος ΣΊΣΥΦΟΣ σς\nǅungla ǄUNGLA ǆungla\nµs μs Μs\nÅngström Å\n")
    ed.wait_generation(g)
    same_as_rg(ed, ["İ", "i", "I", "ı", "İstanbul", "K", "k", "K", "ß", "ẞ", "ss", "ﬁ", "fi", "ſ", "s", "Σ", "ς",
                    "ǅ", "µ", "μ", "Å", "å", "Å"])


@pytest.mark.skipif(RG is None, reason="ripgrep (rg) is not installed: apt-get install ripgrep")
@pytest.mark.skipif(not (CORPORA / "denote-manual").is_dir(), reason=f"no corpus at {CORPORA}")
def test_grep_gives_the_lines_rg_gives_on_a_corpus_copy(tmp_path, make_daemon):
    v = tmp_path / "corpus"
    shutil.copytree(CORPORA / "junghan-denote-docs", v)
    shutil.copytree(CORPORA / "denote-manual", v / "manual")
    ed = make_daemon(v)
    same_as_rg(ed, ["denote", "link", "the", "한국어", "org-mode", "identifier", "zzzqx"])


def test_grep_rules(ed):
    def rows(*args):
        code, out, err = q(ed, "grep", *args)
        return code, [tuple(line.split(":", 3)[:3]) for line in out.splitlines()]

    code, got = rows("splitter")
    assert code == 0 and ("journal/2025-12-01.md", "4", "15") in got  # inside a longer word: `splitters`
    assert ("journal/2025-12-01.md", "3", "25") in got  # SPLITTER: case ignored
    assert ("journal/2025-12-01.md", "3", "25") not in rows("-s", "splitter")[1]
    assert [r for r in rows("-w", "splitter")[1] if r[0].startswith("journal")] == \
        [("journal/2025-12-01.md", "3", "5"), ("journal/2025-12-01.md", "3", "25")]  # whole words only
    # several words: the lines that hold each, every occurrence of any
    assert rows("splitter", "deeply")[1] == [("Deep work.md", "10", "6"), ("Deep work.md", "10", "18")]
    assert rows('"ran twice"')[1] == [("journal/2025-12-01.md", "3", "14")]  # a phrase is one word
    assert rows("ran", "twice;", "zzz")[0] == 1
    assert {r[0] for r in rows("splitter", "--tag", "travel")[1]} == {TOKYO}
    assert {r[0] for r in rows("splitter", "--path", "notes")[1]} == {TOKYO, PART, "notes/가치관.md"}
    code, out, err = q(ed, "grep", "splitter", "-n", "2")
    assert (code, len(out.splitlines()), err) == (0, 2, "vaultq: only the first 2 matches (--limit); the next: "
                                                        "--offset 2\n")
    res = ed.request("grep", q="splitter", limit=2)
    assert (res["total"], res["truncated"]) == (2, True)
    assert q(ed, "grep")[0] == 2 and q(ed, "grep", "x", "-n", "0")[0] == 2
    assert q(ed, "grep", "e", "--null")[0] == 0 and q(ed, "grep", "e", "--format", "human", "--null")[0] == 2
    assert q(ed, "grep", "zzzqx") == (1, "", "")


# -- the column rules, format by format ---------------------------------------------------


def _located(out: str, null: bool = False) -> list[tuple[str, int, int, str]]:
    rows = []
    for line in out.splitlines():
        if null:
            path, _, rest = line.partition("\0")
            ln, col, text = rest.split(":", 2)
        else:
            path, ln, col, text = line.split(":", 3)
        rows.append((path, int(ln), int(col), text))
    return rows


COMMANDS = [("search", "splitter"), ("grep", "splitter"), ("grep", "は"), ("backlinks", "Deep work"),
            ("links", PART), ("links", TOKYO), ("broken",)]
"""Each command that prints located rows, with what it lands on in the fixture's Korean and
Japanese lines."""


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: " ".join(c))
def test_vimgrep_columns_are_bytes_emacs_columns_characters_json_both(ed, cmd):
    lines = {p: (ed.vault / p).read_text().split("\n") for p in q(ed, "list", "--format", "paths")[1].splitlines()}
    expect = "[[" if cmd[0] in ("backlinks", "links", "broken") else cmd[1]
    vim_rows = _located(q(ed, *cmd, "--format", "vimgrep")[1])
    emacs_rows = _located(q(ed, *cmd, "--format", "emacs")[1])
    assert vim_rows and len(vim_rows) == len(emacs_rows)
    multibyte = 0
    for (path, ln, bcol, _), (path2, ln2, ccol, _) in zip(vim_rows, emacs_rows):
        line = lines[path][ln - 1]
        assert (path2, ln2) == (path, ln)
        assert line.encode()[bcol - 1 :].decode().lower().startswith(expect.lower()), (path, ln, bcol)
        assert line[ccol - 1 :].lower().startswith(expect.lower()), (path, ln, ccol)
        multibyte += bcol != ccol
    assert multibyte, "no row on a line with multi-byte characters before the hit"
    # --null: the same rows, a NUL after the path; grep: no column; JSON: both columns
    assert _located(q(ed, *cmd, "--format", "vimgrep", "--null")[1], null=True) == vim_rows
    grep_rows = [tuple(r.split(":", 2)) for r in q(ed, *cmd, "--format", "grep")[1].splitlines()]
    assert [(p, int(n), t) for p, n, t in grep_rows] == [(p, n, t) for p, n, _, t in vim_rows]
    res = json.loads(q(ed, *cmd, "--json")[1])
    items = {"search": lambda: [s for h in res["hits"] for s in h["snippets"]], "grep": lambda: res["matches"],
             "backlinks": lambda: res["backlinks"], "links": lambda: res["links"], "broken": lambda: res["broken"]}
    for it in items[cmd[0]]():
        line = it["text"] if cmd[0] != "search" else None
        assert it["byte_col"] >= it["col"] >= 1
        if line is not None and len(line) < 1000:
            assert len(line[: it["col"] - 1].encode()) + 1 == it["byte_col"]


def test_human_output_columns_are_bytes(ed):
    out = q(ed, "backlinks", "Deep work")[1]
    assert "notes/가치관 - 선택.md:5:42: 선택을 할 때" in out  # byte 42, character 26
    assert q(ed, "links", PART)[1].splitlines()[1] == \
        "    5:42   [[Deep work#Rules]]  -> Deep work.md:8"
