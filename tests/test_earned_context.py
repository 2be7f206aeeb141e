"""Earned, clean context (issue 39), through the real daemon and the real prompt hook: small
talk and tasks about other code get nothing, a real question gets its note (Korean with
its particles too), and what a note's own tool hides is elided with exact line ranges."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import Daemon
from vaultd.query import context as ctx

HEADER = re.compile(r"^## (.+?):(\d+)-(\d+) ", re.M)

NOTES = {
    "notes/sourdough.md": "# Sourdough\n\n## Feeding the starter\n\nFeed the sourdough starter twice a day with rye flour "
                          "and water, equal weights.\n\n## Baking\n\nBake the loaf at 250 degrees in a dutch oven.\n",
    "notes/bikes.md": "# Bicycle repair\n\n## Fixing a flat tyre\n\nLever the tyre off, find the puncture, patch the "
                      "inner tube, pump it up again.\n",
    "notes/가치관.md": "# 가치관\n\n가치관은 선택의 기준이다. 무엇을 중요하게 여기는지가 곧 가치관이다.\n",
    "notes/deploy.md": "# Deploying the wiki\n\nWe push the wiki with rsync from the laptop.\n",
    "notes/hidden.md": "# Espresso\n\n<!-- gid:20240928T141333 -->\n%% private: the grinder setting is a secret %%\n"
                       "Espresso needs a fine grind and 9 bar of pressure.\n"
                       "![[crema.png]]\n"
                       "[![build](https://img.shields.io/badge/x.svg)](https://ci)\n"
                       "Pull the espresso shot for 25 seconds. <!-- inline note --> Then taste.\n",
    "notes/orgnote.org": "#+title: Tea\n\n* Brewing green tea\n# a private comment line\n#+begin_comment\nsecret one\n"
                         "secret two\n#+end_comment\nBrew green tea at 80 degrees for two minutes.\n"
                         "#+begin_src sh\n# a shell comment stays\nboil --temp 80\n#+end_src\n",
}


@pytest.fixture
def kitchen(tmp_path, short_dir):
    vault = tmp_path / "vault"
    for rel, text in NOTES.items():
        p = vault / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    d = Daemon(vault, tmp_path / "state", short_dir / "k.sock").start()
    yield d
    d.stop()


def hook(d: Daemon, prompt: str, cwd: Path) -> subprocess.CompletedProcess:
    data = {"session_id": "s1", "cwd": str(cwd), "hook_event_name": "UserPromptSubmit", "prompt": prompt}
    return subprocess.run([sys.executable, "-m", "vaultd.vaultq", "--socket", str(d.socket), "hook", "prompt"],
                          input=json.dumps(data), capture_output=True, text=True, timeout=60, cwd=cwd,
                          env={**os.environ})


def cited(out: str) -> list[str]:
    return [os.path.basename(p) for p, *_ in HEADER.findall(out)]


@pytest.mark.parametrize("prompt", ["ok", "thanks!", "commit and push", "sounds good", "고마워!", "좋아 계속해",
                                    "fix the failing pytest in tests/test_api.py", "explain TCP slow start",
                                    "what's the capital of australia"])
def test_the_hook_says_nothing_to_small_talk_and_other_work(kitchen, tmp_path, prompt):
    r = hook(kitchen, prompt, tmp_path)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", ""), (prompt, r.stdout)


@pytest.mark.parametrize("prompt, note", [
    ("how often should I feed my sourdough starter?", "sourdough.md"),
    ("remind me how to fix a flat tyre", "bikes.md"),
    ("가치관이 뭐야?", "가치관.md"),  # with its particle: 가치관이 finds 가치관
    ("내 가치관의 기준이 뭐였지", "가치관.md"),
])
def test_a_real_question_gets_its_note(kitchen, tmp_path, prompt, note):
    r = hook(kitchen, prompt, tmp_path)
    assert r.returncode == 0 and r.stderr == ""
    assert cited(r.stdout)[:1] == [note], r.stdout


def test_explain_says_why_each_item_passed(kitchen):
    res = kitchen.request("context", q="how often should I feed my sourdough starter?", budget=1000, explain=True)
    [it] = res["items"]
    e = it["explain"]
    assert it["path"] == "notes/sourdough.md" and e["share"] >= e["threshold"] > 0
    assert {"feed", "sourdough", "starter"} <= set(e["held"]) and "should" in e["ignored"]
    assert "holds" in it["why"]
    r = subprocess.run([sys.executable, "-m", "vaultd.vaultq", "--socket", str(kitchen.socket), "context", "--explain",
                        "feed", "the", "sourdough", "starter"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "holds feed, sourdough, starter" in r.stdout, r.stdout


def test_hot_notes_are_not_repeated_at_prompt_time(kitchen):
    """Every note here changed just now: all HOT. A prompt's context gives only what answers
    it; the openings come with no words (the session start), or when asked for."""
    q = "how often should I feed my sourdough starter?"
    assert {it["kind"] for it in kitchen.request("context", q=q, budget=2000)["items"]} == {"hit"}
    assert {it["kind"] for it in kitchen.request("context", q="", budget=2000)["items"]} == {"hot"}
    assert "hot" in {it["kind"] for it in kitchen.request("context", q=q, budget=2000, hot=True)["items"]}


def test_comments_and_images_are_elided_with_exact_line_ranges(kitchen):
    [it] = kitchen.request("context", q="espresso shot grind pressure", budget=1000)["items"]
    lines = (kitchen.vault / "notes/hidden.md").read_text().split("\n")
    assert it["path"] == "notes/hidden.md"
    assert "secret" not in it["text"] and "gid:" not in it["text"] and "inline note" not in it["text"]
    assert "crema.png" not in it["text"] and "shields.io" not in it["text"]
    assert "[… 2 lines elided …]" in it["text"], it["text"]
    assert "Pull the espresso shot for 25 seconds.  Then taste." in it["text"]
    # first and last are the file's real lines; every line given is that line, less its comments
    assert lines[it["first"] - 1].startswith(("# Espresso", "Espresso")) and lines[it["last"] - 1].startswith("Pull")
    shown = [ln for ln in it["text"].split("\n") if not ln.startswith("[… ")]
    cut = [re.sub(r"<!--.*?-->", "", ln) for ln in lines[it["first"] - 1 : it["last"]]]
    assert all(s in cut for s in shown), (shown, cut)

    [tea] = kitchen.request("context", q="brew green tea", budget=1000)["items"]
    assert "private comment" not in tea["text"] and "secret" not in tea["text"]
    assert "# a shell comment stays" in tea["text"], "a # in a source block is code, not an Org comment"
    assert "[… 5 lines elided …]" in tea["text"], tea["text"]


@pytest.mark.parametrize("path, text, hidden", [
    ("a.md", "a\n%% one\ntwo %%\nb `%%` c\n", [False, True, True, False]),
    ("a.md", "```\n<!-- code -->\n```\n<!-- x -->\n", [False, False, False, True]),
    ("a.md", "x <!-- y -->\n\n![](i.png) ![b](j.jpg)\n", [False, False, True]),
    ("a.org", "# c\n#+BEGIN_COMMENT\nz\n#+END_COMMENT\n#+begin_example\n# kept\n#+end_example\n#tag\n",
     [True, True, True, True, False, False, False, False]),
])
def test_visible_hides_what_the_notes_tool_hides(path, text, hidden):
    lines = text.split("\n")[:-1]
    assert ctx.visible(lines, path)[1] == hidden


def test_an_item_never_begins_or_ends_on_an_elided_line():
    seen, hidden = ctx.visible(["<!-- a -->", "text", "<!-- b -->", "more", "%% c %%"], "n.md")
    assert ctx.trimmed(hidden, 1, 5) == (2, 4)
    assert ctx.shown(seen, hidden, 2, 4) == "text\n[… 1 line elided …]\nmore"
    assert ctx.trimmed(hidden, 1, 1)[1] < ctx.trimmed(hidden, 1, 1)[0], "all hidden: nothing"


def test_the_setting_zero_fills_the_budget_as_before(tmp_path, short_dir):
    vault = tmp_path / "vault"
    shutil.copytree(Path(__file__).parent / "fixtures" / "vault", vault)
    cfg = tmp_path / "c.toml"
    cfg.write_text("[context]\nmin_evidence = 0.0\n")
    d = Daemon(vault, tmp_path / "state", short_dir / "z.sock", ["--config", str(cfg)]).start()
    try:
        assert d.request("context", q="deep work and zebras", budget=2000)["items"], "0: every top hit"
    finally:
        d.stop()
    cfg.write_text("[context]\nmin_evidence = 0.75\n")
    d = Daemon(vault, tmp_path / "state", short_dir / "z.sock", ["--config", str(cfg)]).start()
    try:
        assert d.request("context", q="zebras in the savannah", budget=2000)["items"] == []
    finally:
        d.stop()
