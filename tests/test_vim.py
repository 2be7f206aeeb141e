"""editors/vim in the real Vim and Neovim, headless, against the real daemon on
tests/fixtures/editors (Korean and Japanese lines, a part name with ` - `): every hit of
:VaultSearch, :VaultBacklinks, :grep and gf puts the cursor on the exact byte the daemon
says. Without the editor installed, its tests are skipped, saying so."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from test_editors import EDITORS_VAULT, PART, TOKYO

ROOT = Path(__file__).resolve().parents[1]
DRIVER = ROOT / "tests" / "editors" / "vim_jumps.vim"


def _editor(name: str):
    exe = shutil.which(name)
    return pytest.param(name, marks=pytest.mark.skipif(
        exe is None, reason=f"{name} is not installed (apt-get install {'neovim' if name == 'nvim' else name})"))


EDITORS = [_editor("vim"), _editor("nvim")]


@pytest.fixture
def ed(tmp_path, make_daemon):
    v = tmp_path / "ed"
    shutil.copytree(EDITORS_VAULT, v)
    return make_daemon(v)


def run(editor: str, ed, steps: list[str], tmp_path: Path) -> list[list[str]]:
    """Run `steps` in `editor` in the vault (see tests/editors/vim_jumps.vim): each landing as
    [file, line, byte column, text from the cursor on], `ITEMS n` as ["ITEMS", n]."""
    (tmp_path / "steps.vim").write_text("\n".join(
        [f"let g:vaultd_vaultq = '{sys.executable}'", "let g:vaultd_args = ['-m', 'vaultd.vaultq']", *steps]) + "\n")
    out = tmp_path / "out.txt"
    out.unlink(missing_ok=True)
    cmd = ["vim", "-Nu", "NONE", "-i", "NONE", "-n", "-es", "-S", str(DRIVER)] if editor == "vim" else \
        ["nvim", "--headless", "-u", "NONE", "-i", "NONE", "-n", "-S", str(DRIVER)]
    env = {**os.environ, "VAULT": str(ed.vault), "VAULTD_VIM": str(ROOT / "editors" / "vim"),
           "VAULTD_STEPS": str(tmp_path / "steps.vim"), "VAULTD_OUT": str(out), "VAULTD_SOCKET": str(ed.socket),
           "PYTHONPATH": os.pathsep.join(sys.path)}
    r = subprocess.run(cmd, env=env, capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
    assert out.exists(), f"{editor} wrote nothing (exit {r.returncode}): {r.stdout!r} {r.stderr!r}"
    rows = [line.split("\t") if "\t" in line else line.split(" ", 1) for line in out.read_text().splitlines()]
    assert not [r for r in rows if r[0] == "ERROR"], rows
    return rows


def landings(rows) -> list[tuple[str, int, int, str]]:
    return [(f, int(ln), int(col), rest) for f, ln, col, rest in (r for r in rows if len(r) == 4)]


@pytest.mark.parametrize("editor", EDITORS)
def test_vault_search_lands_on_the_byte_of_every_hit(editor, ed, tmp_path):
    res = ed.request("search", q="splitter", paths="absolute")
    want = [(h["path"], s["line"], s["byte_col"]) for h in res["hits"] for s in h["snippets"]]
    rows = run(editor, ed, ["VaultSearch splitter", "visit qf"], tmp_path)
    got = landings(rows)
    assert rows[0] == ["ITEMS", str(len(want))] and [g[:3] for g in got] == want
    assert all(rest.lower().startswith("splitter") for *_, rest in got), got
    assert {f for f, *_ in got} >= {str(ed.vault / TOKYO), str(ed.vault / PART)}  # Japanese, Korean, ` - `
    assert any(col > 1 + len("splitter") and rest for _, _, col, rest in got)


@pytest.mark.parametrize("editor", EDITORS)
def test_vault_backlinks_lands_on_the_byte_of_every_link(editor, ed, tmp_path):
    res = ed.request("backlinks", note="Deep work", paths="absolute")
    want = [(b["path"], b["line"], b["byte_col"], b["raw"]) for b in res["backlinks"]]
    rows = run(editor, ed, [r"edit Deep\ work.md", "VaultBacklinks", "visit loc"], tmp_path)
    got = landings(rows)
    assert rows[0] == ["ITEMS", str(len(want))] and [g[:3] for g in got] == [w[:3] for w in want]
    for (*_, rest), (*_, raw) in zip(got, want):
        assert rest.startswith(raw), (rest, raw)
    assert {f for f, *_ in got} == {str(ed.vault / p) for p in (TOKYO, PART, "journal/2025-12-01.md",
                                                                   "notes/가치관.md")}


@pytest.mark.parametrize("editor", EDITORS)
def test_grep_through_grepprg_lands_on_every_occurrence(editor, ed, tmp_path):
    res = ed.request("grep", q="splitter", paths=str(ed.vault))
    want = [(str(ed.vault / m["path"]), m["line"], m["byte_col"]) for m in res["matches"]]
    rows = run(editor, ed, [r"edit Deep\ work.md", "silent grep splitter", "visit qf"], tmp_path)
    got = landings(rows)
    assert [g[:3] for g in got] == want and len(want) == 11
    assert all(rest.lower().startswith("splitter") for *_, rest in got)


@pytest.mark.parametrize("editor", EDITORS)
def test_gf_follows_links_to_their_heading(editor, ed, tmp_path):
    part_line = (ed.vault / PART).read_text().split("\n")[4]
    tokyo_line = (ed.vault / TOKYO).read_text().split("\n")[7]
    at = len(part_line[: part_line.index("[[Deep")].encode()) + 4  # inside the link, past Korean text
    at2 = len(tokyo_line[: tokyo_line.index("[[file")].encode()) + 10
    rows = run(editor, ed, [
        r"edit notes/가치관\ -\ 선택.md", f"call cursor(5, {at})", "normal gf", "land",
        "edit " + TOKYO, f"call cursor(8, {at2})", "normal gf", "land",
        r"edit journal/2025-12-01.md", "call cursor(3, 68)", "normal gf", "land",  # [[denote:ID]]
    ], tmp_path)
    deep = str(ed.vault / "Deep work.md")
    assert landings(rows) == [(deep, 8, 1, "## Rules"), (deep, 8, 1, "## Rules"),
                              (str(ed.vault / TOKYO), 1, 1, "#+title:      東京旅行")]


@pytest.mark.parametrize("editor", EDITORS)
def test_vault_context_lists_its_sections(editor, ed, tmp_path):
    res = ed.request("context", q="splitter", paths=str(ed.vault))
    rows = run(editor, ed, ["VaultContext splitter", "visit qf"], tmp_path)
    assert [(f, ln) for f, ln, *_ in landings(rows)] == [(str(ed.vault / it["path"]), it["first"])
                                                          for it in res["items"]]


@pytest.mark.parametrize("editor", EDITORS)
def test_a_file_name_with_colons_and_numbers_is_read_right(editor, ed, tmp_path):
    """`odd/a:1:2:b.md` would be `odd/a` line 1 column 2 to a `%f:%l:%c:%m` reader: the plugin
    reads vaultq's --null rows, so every command lands in that file, on the exact byte."""
    odd = ed.vault / "odd" / "a:1:2:b.md"
    g = ed.status()["generation"]  # before the write: its commit may come before a status after it
    odd.parent.mkdir()
    odd.write_text("# Zebra\n\n한국어 zebra 줄: [[Deep work]] and [[Nowhere zebra]]\n")
    ed.wait_generation(g)
    line = odd.read_text().split("\n")[2]
    col = lambda s: len(line[: line.index(s)].encode()) + 1  # noqa: E731
    rows = run(editor, ed, [
        "VaultGrep zebra", "visit qf", "VaultSearch zebra", "visit qf",
        r"edit Deep\ work.md", "VaultBacklinks", "visit loc",
        "edit " + str(odd).replace(":", r"\:").replace(" ", r"\ "), "VaultLinks", "visit loc",
        "VaultBroken", "visit qf", "VaultContext zebra", "visit qf"], tmp_path)
    f = str(odd)
    got = landings(rows)
    grep = [g for g in got[:3]]
    assert rows[0] == ["ITEMS", "3"] and [g[:3] for g in grep] == [(f, 1, 3), (f, 3, col("zebra")),
                                                                    (f, 3, col("zebra]]"))]
    rest = got[3:]
    assert (f, 1, 3, "Zebra") in [g[:4] for g in rest]  # search: its title's line
    assert (f, 3, col("[[Deep"), "[[Deep work]] and [[Nowhere zebra]]") in rest  # a backlink, and a link out
    assert (f, 3, col("[[Nowhere"), "[[Nowhere zebra]]") in rest  # links, broken
    assert sum(g[:3] == (f, 3, col("[[Nowhere")) for g in rest) == 2
    assert (f, 1, 1, "# Zebra") in rest  # context: its section
    assert not [g for g in got if not g[0].startswith(str(ed.vault)) or g[0].endswith("/odd/a")]


EMOJI = "notes/emoji.md"
EMOJI_TEXT = "# Emoji\n\n🗂️ 정리 ✍️ then [[Deep work#Rules]] here\n❤️❤️❤️ [[Deep work]]\n"
"""Links after emoji with a variation selector (U+FE0F), which Vim counts with the emoji it
follows (one character short each, to charcol()): a link at its end too."""


def _emoji_note(ed) -> list[str]:
    g = ed.status()["generation"]  # before the write: its commit may come before a status after it
    (ed.vault / EMOJI).write_text(EMOJI_TEXT)
    ed.wait_generation(g)
    return EMOJI_TEXT.split("\n")


def _byte(line: str, char: int) -> int:
    """The 1-based byte column of `line`'s 0-based character `char`."""
    return len(line[:char].encode()) + 1


@pytest.mark.parametrize("editor", EDITORS)
def test_gf_after_emoji_with_a_variation_selector(editor, ed, tmp_path):
    """gf on a link after 🗂️ and ✍️ (and three ❤️), at its first character, inside it and on its
    last `]`: the heading or the note, where charcol() gave a column one short per U+FE0F."""
    lines = _emoji_note(ed)
    first, second = lines[2], lines[3]
    a, b = first.index("[["), second.index("[[")
    steps = []
    for ln, line, at, raw in ((3, first, a, "[[Deep work#Rules]]"), (4, second, b, "[[Deep work]]")):
        for char in (at, at + 3, at + len(raw) - 1):
            steps += [f"edit {EMOJI}", f"call cursor({ln}, {_byte(line, char)})", "normal gf", "land"]
    rows = run(editor, ed, steps, tmp_path)
    deep = str(ed.vault / "Deep work.md")
    assert landings(rows) == [(deep, 8, 1, "## Rules")] * 3 + [(deep, 1, 1, "---")] * 3  # the note: its first line


@pytest.mark.parametrize("editor", EDITORS)
def test_gf_just_past_a_link_is_not_on_it(editor, ed, tmp_path):
    """The rule in every face: the character just past `]]` is not on the link (gf is Vim's
    own there: here it finds no file `here`); the last `]` is."""
    lines = _emoji_note(ed)
    line = lines[2]
    past = line.index("]]") + 2  # the space after the link
    rows = run(editor, ed, [
        f"edit {EMOJI}", f"call cursor(3, {_byte(line, past)})",
        "try | execute 'normal gf' | catch | call add(s:out, 'CAUGHT ' . v:exception) | endtry", "land",
        f"call cursor(3, {_byte(line, past - 1)})", "normal gf", "land"], tmp_path)
    emoji, deep = str(ed.vault / EMOJI), str(ed.vault / "Deep work.md")
    caught = [r for r in rows if r[0] == "CAUGHT"]
    assert len(caught) == 1 and "E447" in caught[0][1] and "here" in caught[0][1], rows
    assert landings(rows) == [(emoji, 3, _byte(line, past), " here"), (deep, 8, 1, "## Rules")]


STATE = ROOT / "tests" / "editors" / "vim_state.vim"
ADDED = "추가한 줄, 저장 전."
"""What the rename test types into PART before renaming (written by :VaultRename)."""


def _tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in root.rglob("*")
            if p.is_file() and not p.name.startswith(".") and ".vaultd" not in p.parts}


@pytest.mark.parametrize("editor", EDITORS)
def test_vault_rename_rewrites_links_follows_the_buffer_and_undo_restores(editor, ed, tmp_path):
    """:VaultRename from a link (in a modified buffer: refused with g:vaultd_save_before_write
    = 0, then written), of the current note, :VaultRename! of a heading; :VaultHistory;
    :VaultUndo three times. Swap files on, beside the files, as Vim's default puts them: the
    plugin's own do not refuse the rename. Each step's files, buffers and windows as
    tests/editors/vim_state.vim records them."""
    before = _tree(ed.vault)
    line = before[PART].split("\n")[4]
    at = len(line[: line.index("[[Deep work#Rules]]")].encode()) + 4  # inside the link, past Korean text
    state = tmp_path / "state.jsonl"
    rows = run(editor, ed, [
        f"let $VAULTD_STATE = '{state}'", f"source {STATE}", "set swapfile directory=. updatecount=200",
        r"edit notes/가치관\ -\ 선택.md", r"split Deep\ work.md", "wincmd p",
        f"call append('$', '{ADDED}')", "let g:vaultd_save_before_write = 0", f"call cursor(5, {at})",
        "VaultRename Shallow work", "call VaultdTestState('refused')",
        "let g:vaultd_save_before_write = 1", "VaultRename Shallow work", "call VaultdTestState('from a link')",
        "wincmd p", "call cursor(1, 1)", "VaultRename Deep focus", "call VaultdTestState('this note')",
        "call cursor(8, 1)", "VaultRename! Principles", "call VaultdTestState('a heading')",
        "VaultHistory", "call add(s:out, 'HISTORY ' . join(map(getqflist(), 'v:val.text'), '|'))", "cclose",
        r"execute bufwinnr('Deep focus.md') . 'wincmd w'", "VaultUndo", "call VaultdTestState('undo 1')", "VaultUndo", "call VaultdTestState('undo 2')",
        "VaultUndo", "call VaultdTestState('undo 3')"], tmp_path)
    step = {r["what"]: r for r in map(json.loads, state.read_text().splitlines())}
    saved = {**before, PART: before[PART] + ADDED + "\n"}

    refused = step["refused"]
    assert refused["tree"] == before and (PART, 1) in {(b["file"], b["modified"]) for b in refused["buffers"]}
    assert all(b["swap"] for b in refused["buffers"])  # Vim's swap files, beside the files

    tree = step["from a link"]["tree"]
    assert "Deep work.md" not in tree and tree["Shallow work.md"] == saved["Deep work.md"].replace(
        "title: Deep work", "title: Shallow work")
    assert "[[Shallow work#Rules]]" in tree[PART] and tree[PART].endswith(ADDED + "\n")
    assert "See [[Shallow work]] and" in tree["journal/2025-12-01.md"]
    assert "[[file:../Shallow work.md::Rules][Shallow work]]" in tree[TOKYO]
    assert not [t for t in tree.values() if "[[Deep work" in t or "Deep work.md" in t]
    here = step["from a link"]
    assert here["current"] == PART and sorted(here["windows"]) == sorted(["Shallow work.md", PART])
    assert {(b["file"], b["modified"], b["same"]) for b in here["buffers"]} == \
        {(PART, 0, True), ("Shallow work.md", 0, True)}
    assert all(b["swap"] for b in here["buffers"])  # on again

    this = step["this note"]
    assert this["current"] == "Deep focus.md" and "Shallow work.md" not in this["tree"]
    assert "[[Deep focus#Rules]]" in this["tree"][PART]
    assert {(b["file"], b["modified"], b["same"]) for b in this["buffers"]} == \
        {(PART, 0, True), ("Deep focus.md", 0, True)}

    head = step["a heading"]["tree"]
    assert "## Principles\n" in head["Deep focus.md"] and "[[Deep focus#Principles]]" in head[PART]
    assert "[[file:../Deep focus.md::Principles][Deep focus]]" in head[TOKYO]

    history = next(r[1] for r in rows if r[0] == "HISTORY").split("|")
    assert len(history) == 3 and all(" done " in h and " rename " in h for h in history), history
    assert history[2].endswith("Deep work.md -> Shallow work.md")

    assert step["undo 1"]["tree"] == this["tree"]
    assert step["undo 2"]["tree"] == here["tree"]
    assert (step["undo 1"]["current"], step["undo 2"]["current"]) == ("Deep focus.md", "Shallow work.md")
    assert step["undo 3"]["tree"] == saved and step["undo 3"]["current"] == "Deep work.md"
    assert sorted(step["undo 3"]["windows"]) == sorted(["Deep work.md", PART])
    assert all(b["same"] and not b["modified"] for r in ("undo 1", "undo 2", "undo 3") for b in step[r]["buffers"])
    assert {p.relative_to(ed.vault).as_posix(): p.read_bytes() for p in ed.vault.rglob("*")
            if p.is_file() and ".vaultd" not in p.parts and not p.name.endswith(".swp")} == \
        {k: v.encode() for k, v in saved.items()}
