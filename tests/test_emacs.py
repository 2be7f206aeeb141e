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
}
FOLLOW = [
    ("notes/가치관 - 선택.md", "[[Deep w", "## Rules"),
    ("notes/가치관.md", "[[가치관 - ", "# 가치관 - 선택"),
    (ORG, "[[file:../Deep", "## Rules"),
    ("notes/links.md", "[[20251201T090000", "** 持ち物"),
    ("notes/links.org", "[[denote:", "* 日程"),
]


def test_emacs_search_backlinks_and_follow_link_land_exactly(make_daemon, tmp_path):
    vault = tmp_path / "ed"
    shutil.copytree(EDITORS, vault)
    for rel, text in EXTRA.items():
        (vault / rel).write_text(text)
    d = make_daemon(vault)
    out = tmp_path / "landed.jsonl"
    env = {**os.environ, "VAULTD_SOCKET": str(d.socket), "VAULTD_TEST_VAULT": str(vault),
           "VAULTD_TEST_OUT": str(out), "VAULTD_TEST_VAULTQ": str(Path(sys.executable).with_name("vaultq")),
           "VAULTD_TEST_FOLLOW": "\n".join(f"{f}\t{n}" for f, n, _ in FOLLOW)}
    run = subprocess.run(["emacs", "--batch", "-Q", "-L", str(ROOT / "editors" / "emacs"), "-l", "vaultd-test.el",
                          "-f", "ert-run-tests-batch-and-exit"], env=env, cwd=vault, capture_output=True, text=True,
                         timeout=180)
    assert run.returncode == 0, run.stdout + run.stderr
    landed = [json.loads(line) for line in out.read_text().splitlines()]

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
    # every landing visible, and those in Org files inside a file that was folded
    assert all(r["visible"] for r in landed)
    in_org = [r for r in landed if r["file"].endswith(".org")]
    assert len(in_org) >= 4 and all(r["folded"] for r in in_org)
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
