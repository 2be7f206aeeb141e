"""editors/emacs/vaultd.el in Emacs (batch, ERT) against the real daemon on tests/fixtures/editors:
search (its hits buffer and consult's preview), backlinks and follow-link land on the exact
line and character of each place, on Korean and Japanese lines, in a part named `가치관 - 선택`,
inside Org files opened folded."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
EDITORS = Path(__file__).parent / "fixtures" / "editors"
ORG = "notes/20251201T090000--東京旅行__travel.org"

pytestmark = pytest.mark.skipif(shutil.which("emacs") is None,
                                reason="emacs is not installed (apt-get install emacs-nox)")

# Links whose landing is checked: (file, text just past the cursor's place, the line it must land on)
EXTRA = {  # notes the test adds to its copy of the fixture: links into the folded Org file's headings
    "notes/links.md": "# Links\n\n한국어: [[20251201T090000--東京旅行__travel#持ち物]] 를 본다.\n",
    "notes/links.org": "#+title: links\n#+startup: overview\n\n* 日本語\n** 深い\n"
                       "旅行: [[denote:20251201T090000::*日程][日程]] を見る。\n",
    "notes/emoji.md": "# Emoji\n\n🗂️ 정리 ✍️ then [[Deep work#Rules]] here\n❤️ [[Nowhere at all]]\n",
}
EMOJI = "notes/emoji.md"
"""Links after emoji with a variation selector (U+FE0F), one of them broken."""
LINKS_OF = "notes/가치관 - 선택.md"
"""The note whose links out vaultd-links lists in the test."""
ADDED = "\n추가한 줄, 저장 전.\n"
"""What the rename test types into LINKS_OF before renaming (saved by vaultd-rename)."""
FOLLOW = [
    ("notes/가치관 - 선택.md", "[[Deep w", "## Rules"),
    ("notes/가치관.md", "[[가치관 - ", "# 가치관 - 선택"),
    (ORG, "[[file:../Deep", "## Rules"),
    ("notes/links.md", "[[20251201T090000", "** 持ち物"),
    ("notes/links.org", "[[denote:", "* 日程"),
]


def run_ert(make_daemon, tmp_path, selector: str):
    """Run the ERT tests of editors/emacs/vaultd-test.el that `selector` selects, in batch
    Emacs, against the daemon on a copy of the fixture (with EXTRA): (vault, daemon, rows)."""
    vault = tmp_path / "ed"
    shutil.copytree(EDITORS, vault)
    for rel, text in EXTRA.items():
        (vault / rel).write_text(text)
    d = make_daemon(vault)
    out = tmp_path / "landed.jsonl"
    env = {**os.environ, "VAULTD_SOCKET": str(d.socket), "VAULTD_TEST_VAULT": str(vault),
           "VAULTD_TEST_OUT": str(out), "VAULTD_TEST_VAULTQ": str(Path(sys.executable).with_name("vaultq")),
           "VAULTD_TEST_FOLLOW": "\n".join(f"{f}\t{n}" for f, n, _ in FOLLOW),
           "VAULTD_TEST_LINKS": LINKS_OF, "VAULTD_TEST_EMOJI": EMOJI, "VAULTD_TEST_PART": LINKS_OF,
           "VAULTD_TEST_ADDED": ADDED}
    run = subprocess.run(["emacs", "--batch", "-Q", "-L", str(ROOT / "editors" / "emacs"), "-l", "vaultd-test.el",
                          "--eval", f"(ert-run-tests-batch-and-exit '{selector})"], env=env, cwd=vault,
                         capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stdout + run.stderr
    return vault, d, [json.loads(line) for line in out.read_text().splitlines()]


def test_emacs_search_backlinks_and_follow_link_land_exactly(make_daemon, tmp_path):
    vault, d, landed = run_ert(make_daemon, tmp_path, "(not (or (tag parity) (tag rename)))")

    def text_at(row: dict) -> str:
        return Path(row["file"]).read_text().split("\n")[row["line"] - 1][row["col"]:]

    # search: each hit's line and character, where the word is
    res = d.request("search", q="splitter", limit=30)
    want = []
    for hit in res["hits"]:
        for s in hit["snippets"]:
            line = (vault / hit["path"]).read_text().split("\n")[s["line"] - 1]
            assert len(line[: s["col"] - 1].encode()) == s["byte_col"] - 1  # the same spot, in bytes
            want.append((str(vault / hit["path"]), s["line"], s["col"] - 1))
    for what in ("search", "preview"):
        rows = [r for r in landed if r["what"] == what]
        assert [(r["file"], r["line"], r["col"]) for r in rows] == want, what
        assert all(text_at(r).lower().startswith("splitter") for r in rows), what
    # backlinks: each link's own first character
    bl = d.request("backlinks", note="Deep work")["backlinks"]
    rows = [r for r in landed if r["what"] == "backlinks"]
    assert [(r["file"], r["line"], r["col"]) for r in rows] == [(str(vault / b["path"]), b["line"], b["col"] - 1)
                                                                for b in bl]
    assert all(text_at(r).startswith(b["raw"]) for r, b in zip(rows, bl))
    # follow-link: the heading's line, its first character
    rows = [r for r in landed if r["what"].startswith("follow ")]
    assert [(r["what"], Path(r["file"]).read_text().split("\n")[r["line"] - 1], r["col"]) for r in rows] == \
        [(f"follow {n}", heading, 0) for _, n, heading in FOLLOW]
    # every landing visible, and the first in each Org file in a buffer that was folded (the
    # rows' JSON false is `:json-false'; a `:false' was the string "false", and true)
    assert all(r["visible"] for r in landed)
    in_org = [r for r in landed if r["file"].endswith(".org")]
    first_in_each = {r["file"]: r for r in reversed(in_org)}.values()  # later ones: others were revealed
    assert len(in_org) >= 4 and all(r["folded"] for r in first_in_each)
    hits = {r["what"]: 0 for r in landed}
    for r in landed:
        hits[r["what"]] += 1
    assert len(landed) >= 12, hits
    lines = {Path(r["file"]).read_text().split("\n")[r["line"] - 1] for r in landed}
    assert any("한국어" in x or "선택을" in x for x in lines) and any("東京" in x or "集中" in x for x in lines)
    assert any(" - " in Path(r["file"]).name for r in landed)


EGLOT = r"""
(require 'eglot)
(add-to-list 'eglot-server-programs `((markdown-mode org-mode) . ,(split-string (getenv "VAULTD_TEST_LSP") "\t")))
(find-file (getenv "VAULTD_TEST_FILE"))
(eglot-ensure)
(run-hooks 'post-command-hook)
(with-timeout (60 (error "eglot did not connect"))
  (while (not (eglot-current-server)) (accept-process-output nil 0.1)))
(goto-char (point-min))
(search-forward "[[file:../Deep")
(org-reveal)
(call-interactively #'xref-find-definitions)
(princ (format "%s\t%d\t%d\n" buffer-file-name (line-number-at-pos) (- (point) (line-beginning-position))))
"""


def test_eglot_goes_to_the_definition_through_vaultd_lsp(make_daemon, tmp_path):
    has = subprocess.run(["emacs", "--batch", "--eval", "(kill-emacs (if (require 'eglot nil t) 0 1))"],
                         capture_output=True)
    if has.returncode:
        pytest.skip("eglot is not installed (Emacs 29, or apt-get install elpa-eglot)")
    vault = tmp_path / "ed"
    shutil.copytree(EDITORS, vault)
    d = make_daemon(vault)
    script = tmp_path / "eglot.el"
    script.write_text(EGLOT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "VAULTD_TEST_FILE": str(vault / ORG),
           "VAULTD_TEST_LSP": "\t".join([sys.executable, "-m", "vaultd", "lsp", "--socket", str(d.socket)])}
    run = subprocess.run(["emacs", "--batch", "-l", str(script)], env=env, cwd=vault, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    file, line, col = run.stdout.strip().split("\n")[-1].split("\t")
    assert (file, (vault / file).read_text().split("\n")[int(line) - 1], col) == \
        (str(vault / "Deep work.md"), "## Rules", "0")


CONSULT = any(Path("/usr/share/emacs/site-lisp/elpa").glob("consult-*"))
"""Debian's elpa-consult is installed: the consult test must run, not skip."""


def test_emacs_grep_links_broken_and_just_past_a_link(make_daemon, tmp_path):
    """vaultd-grep (its grep-mode buffer, and consult's reading of its rows when consult is
    here), vaultd-links and vaultd-broken-links land on each match's and link's character;
    just past a link's `]]` vaultd-follow-link follows nothing, on its last `]` it does."""
    vault, d, landed = run_ert(make_daemon, tmp_path, "(tag parity)")

    def rows(what: str) -> list[tuple[str, int, int]]:
        return [(r["file"], r["line"], r["col"]) for r in landed if r["what"] == what]

    def text_at(place: tuple[str, int, int]) -> str:
        return Path(place[0]).read_text().split("\n")[place[1] - 1][place[2]:]

    matches = d.request("grep", q="splitter")["matches"]
    want = [(str(vault / m["path"]), m["line"], m["col"] - 1) for m in matches]
    assert rows("grep") == want and len(want) > 4
    line_of = lambda f, n: Path(f).read_text().split("\n")[n - 1]  # noqa: E731
    assert any(f.endswith(".org") for f, *_ in want)  # a file opened folded
    assert any(len(line_of(f, n)[:c].encode()) != c for f, n, c in want)  # characters, not bytes
    assert all(text_at(p).lower().startswith("splitter") for p in rows("grep"))
    # consult reads `--format grep` rows (no column): it lands on each line's first match
    first = list(dict.fromkeys((f, n) for f, n, _ in want))
    firsts = [next((f, n, c) for f, n, c in want if (f, n) == fn) for fn in first]
    if CONSULT:
        assert list(dict.fromkeys(rows("consult"))) == firsts
    links = d.request("links", note=LINKS_OF)["links"]
    assert rows("links") == [(str(vault / LINKS_OF), x["line"], x["col"] - 1) for x in links] and len(links) > 1
    assert all(text_at(p).startswith(x["raw"]) for p, x in zip(rows("links"), links))
    labels = [r["text"] for r in landed if r["what"] == "links label"]
    assert any(x.endswith("[[Deep work#Rules]]  -> Deep work.md:8") for x in labels), labels
    broken = d.request("broken")["broken"]
    assert rows("broken") == [(str(vault / b["path"]), b["line"], b["col"] - 1) for b in broken]
    assert {b["raw"] for b in broken} >= {"[[Nowhere]]", "[[Nowhere at all]]"}
    labels = [r["text"] for r in landed if r["what"] == "broken label"]
    assert f"{EMOJI}:4:4: [[Nowhere at all]]  (broken: no such note)" in labels, labels  # ❤, U+FE0F, space
    # just past `]]` on the line of 🗂️ and ✍️ (U+FE0F each): no link, point stays
    line = EXTRA[EMOJI].split("\n")[2]
    past = [r for r in landed if r["what"].startswith("past: ")]
    assert [(r["what"], r["file"], r["line"], r["col"]) for r in past] == \
        [("past: vaultd: no link at point", str(vault / EMOJI), 3, line.index("]]") + 2)]
    deep = str(vault / "Deep work.md")
    assert rows("follow last ]") == rows("follow first [") == [(deep, 8, 0)]
    assert all(r["visible"] for r in landed if "file" in r)


def test_vaultd_el_byte_compiles_without_warnings(tmp_path):
    """A warning is an error (`byte-compile-error-on-warn'): vaultd.el compiles clean in a bare
    Emacs (-Q: no consult, no grep loaded), a copy in a temp folder (no .elc left in editors/)."""
    el = tmp_path / "vaultd.el"
    shutil.copy(ROOT / "editors" / "emacs" / "vaultd.el", el)
    run = subprocess.run(["emacs", "--batch", "-Q", "--eval", "(setq byte-compile-error-on-warn t)",
                          "-f", "batch-byte-compile", str(el)], capture_output=True, text=True, timeout=120)
    assert (run.returncode, run.stderr.count("Warning"), run.stderr.count("Error")) == (0, 0, 0), run.stderr
    assert el.with_suffix(".elc").stat().st_size > 0


def test_emacs_rename_rewrites_links_moves_the_buffer_and_undo_restores(make_daemon, tmp_path):
    """vaultd-rename from a link (in a buffer left modified: refused, then saved), of the
    current buffer's note, of a heading; then vaultd-undo three times. Each step's files and
    buffers as editors/emacs/vaultd-test.el recorded them."""
    before = {p.relative_to(EDITORS).as_posix(): p.read_text() for p in EDITORS.rglob("*") if p.is_file()}
    before.update(EXTRA)
    vault, d, rows = run_ert(make_daemon, tmp_path, "(tag rename)")
    step = {r["what"].split(":")[0]: r for r in rows if "tree" in r}
    offered = [(r["prompt"], r["default"]) for r in rows if r["what"] == "offered"]
    assert offered == [("Rename note \u201cDeep work\u201d to: ", "Deep work")] + [  # refused before asking
        ("Rename note \u201cShallow work\u201d to: ", "Shallow work"),
        ("Rename heading \u201cRules\u201d to: ", "Rules")]

    refused = next(r for r in rows if r["what"].startswith("refused: "))
    assert "save" in refused["what"] and Path(LINKS_OF).name in refused["what"]
    assert refused["tree"] == before, "a refusal writes nothing"
    saved = {**before, LINKS_OF: before[LINKS_OF] + ADDED}

    # from the link [[Deep work#Rules]]: every link in every syntax rewritten on disk
    tree = step["from a link"]["tree"]
    assert "Deep work.md" not in tree and tree["Shallow work.md"] == saved["Deep work.md"].replace(
        "title: Deep work", "title: Shallow work")
    assert "[[Shallow work#Rules]]" in tree[LINKS_OF] and tree[LINKS_OF].endswith(ADDED)
    assert "See [[Shallow work]] and" in tree["journal/2025-12-01.md"]
    assert "[[file:../Shallow work.md::Rules][Shallow work]]" in tree[ORG]  # a label that said the title follows
    assert "[[Shallow work#Rules]]" in tree[EMOJI]
    assert not [t for t in tree.values() if "[[Deep work" in t or "Deep work.md" in t]
    # each buffer says what its file says: the part's reverted, Deep work's at its new name
    assert step["from a link"]["current"] == LINKS_OF
    assert {(b["file"], b["modified"], b["same"]) for b in step["from a link"]["buffers"]} == \
        {(LINKS_OF, False, True), ("Shallow work.md", False, True)}

    # the current buffer's own note: the buffer follows it
    this = step["this note"]
    assert this["current"] == "Deep focus.md" and "Shallow work.md" not in this["tree"]
    assert "[[Deep focus#Rules]]" in this["tree"][LINKS_OF]
    assert all(b["same"] and not b["modified"] for b in this["buffers"])
    assert {b["file"] for b in this["buffers"]} == {LINKS_OF, "Deep focus.md"}

    # a heading: its line, and the links into it
    head = step["a heading"]["tree"]
    assert "## Principles\n" in head["Deep focus.md"] and "[[Deep focus#Principles]]" in head[LINKS_OF]
    assert "[[file:../Deep focus.md::Principles][Deep focus]]" in head[ORG]
    assert all(b["same"] and not b["modified"] for b in step["a heading"]["buffers"])

    history = [r["text"] for r in rows if r["what"] == "history"]
    assert len(history) == 3 and all(" done " in h and " rename " in h for h in history), history
    assert history[2].endswith("Deep work.md -> Shallow work.md")

    # undone, newest first: the heading, the note, the rename from the link; byte for byte
    assert step["undo 1"]["tree"] == this["tree"]
    assert step["undo 2"]["tree"] == step["from a link"]["tree"]
    assert step["undo 3"]["tree"] == saved
    assert [step[f"undo {i}"]["current"] for i in (1, 2, 3)] == ["Deep focus.md", "Shallow work.md", "Deep work.md"]
    assert all(b["same"] and not b["modified"] for r in ("undo 1", "undo 2", "undo 3") for b in step[r]["buffers"])
    assert {p.relative_to(vault).as_posix(): p.read_bytes() for p in vault.rglob("*")
            if p.is_file() and ".vaultd" not in p.parts} == {k: v.encode() for k, v in saved.items()}
