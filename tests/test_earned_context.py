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
                      "inner tube, pump it up again.\n\n## Commuting\n\nRiding to work beats the bus; it works in the rain "
                      "too.\n",
    "notes/가치관.md": "# 가치관\n\n가치관은 선택의 기준이다. 무엇을 중요하게 여기는지가 곧 가치관이다.\n",
    "notes/deploy.md": "# Deploying the wiki\n\nWe push the wiki with rsync from the laptop.\n",
    "notes/hidden.md": "# Espresso\n\n<!-- gid:20240928T141333 -->\n%% private: the grinder setting is a secret %%\n"
                       "Espresso needs a fine grind and 9 bar of pressure.\n"
                       "![[crema.png]]\n"
                       "[![build](https://img.shields.io/badge/x.svg)](https://ci)\n"
                       "Pull the espresso shot for 25 seconds. <!-- inline note --> Then taste.\n",
    # the words of a prompt in the bodies only (not in a title, heading or opening paragraph)
    "notes/trip.md": "# Trip\n\nPlans for the summer.\n\n## Packing\n\nBring the brass compass and the oilcloth map.\n",
    "notes/hike.md": "# Hike\n\nThe ridge walk in May.\n\n## Kit\n\nA brass compass, an oilcloth map case.\n",
    "notes/garden.md": "# Garden\n\nThe vegetable patch by the fence.\n\n## Heap\n\nTurn it weekly: lawn clippings, "
                       "potato peelings and a shovel of loam. Keep it damp, not wet.\n",
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
                                    "what's the capital of australia",
                                    "nice work", "great, that works now"])  # plain words only: no topic
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


def test_a_prompt_that_names_a_section_gets_it_alone_within_half_the_budget(kitchen, tmp_path):
    """`flat tyre on a tandem`: the section holds two of its three words, under a heading
    that names both; less than min_evidence, but the prompt names it: one item."""
    r = hook(kitchen, "flat tyre on a tandem", tmp_path)
    assert r.returncode == 0 and cited(r.stdout) == ["bikes.md"], r.stdout
    [it] = kitchen.request("context", q="flat tyre on a tandem", budget=1000, explain=True)["items"]
    e = it["explain"]
    assert e["earned"] == "named" and e["share"] < e["threshold"] and {"flat", "tyre"} <= set(e["names"]), e
    assert it["cost"] <= 1000 * ctx.ITEM_BUDGET


def test_words_only_in_a_body_earn_one_item_and_none_when_some_are_lacking(kitchen, tmp_path):
    """Two notes hold every word of the prompt in their text, none in a title, heading or
    opening paragraph: the first is given, not both. A note that holds most of a prompt's
    words in its text but lacks one, and names none of them, is a coincidence: nothing."""
    items = kitchen.request("context", q="brass compass oilcloth", budget=1000, explain=True)["items"]
    assert len(items) == 1 and os.path.basename(items[0]["path"]) in ("trip.md", "hike.md"), items
    assert items[0]["explain"]["earned"] == "held"
    r = hook(kitchen, "potato peelings, lawn clippings and loam for a wormery", tmp_path)
    assert (r.returncode, r.stdout) == (0, ""), r.stdout


def E(share: float, lacks=(), named: float = 0.0, names=(), about=()) -> ctx.Evidence:  # noqa: N802
    return ctx.Evidence(share, [], list(lacks), named, list(names), list(about) or list(names))


@pytest.mark.parametrize("evidence, want", [
    ([E(1.0, about=["a"]), E(0.9, about=["b"]), E(1.0, about=["c"])], [(0, "strong"), (1, "strong")]),
    ([E(1.0), E(1.0), E(1.0)], [(0, "held")]),  # in the text only: the first, no more
    ([E(1.0), E(0.9, about=["b"])], [(0, "held"), (1, "strong")]),
    ([E(0.8, lacks=["x"]), E(0.8, lacks=["x"], about=["b"])], [(1, "strong")]),  # lacking, named by nothing
    ([E(0.6, ["x"], 0.6, ["a", "b"]), E(0.3)], [(0, "named")]),
    ([E(0.6, ["x"], 0.6, ["a"]), E(0.3)], []),  # one word in common: a coincidence
    ([E(0.3), E(0.6, ["x"], 0.6, ["a", "b"])], []),  # only the top hit is named so
    ([E(0.6, ["x"], 0.6, ["a", "b"]), E(0.9, about=["c"])], [(0, "named"), (1, "strong")]),
    ([E(1.0, about=["a"]), E(0.7, about=["b"])], [(0, "strong")]),  # far behind the best
    ([None, E(0.5)], []),
])
def test_what_earns_a_place(evidence, want):
    assert ctx.earned(evidence, 0.75) == want


def test_a_korean_word_held_in_part_counts_for_its_part():
    u = ctx.Unit("컨벤션", (), "컨벤션", 1.0)
    assert u.part("컨벤셔널 커밋") == 0.5 and not u.held(set(), "컨벤셔널 커밋") and u.held(set(), "커밋 컨벤션")
    assert ctx.Unit("설정", (), "설정", 1.0).part("설치") == 0.0


@pytest.mark.parametrize("word, core", [("점프하는", "점프"), ("설정하는", "설정"), ("처리돼", "처리"), ("가치관이", "가치관")])
def test_a_korean_words_core_is_its_noun(word, core):
    assert ctx.core(word) == core


@pytest.mark.parametrize("run", ["이랑", "뭐가", "알려줘"])
def test_a_particle_alone_or_on_a_request_word_weighs_nothing(run):
    assert ctx.idle_ko(run)


def test_a_notes_lead_is_its_first_paragraph_past_its_headings():
    class H:
        def __init__(self, line):
            self.line = line
    lines = ["# Title", "", "## Part", "first line", "second", "", "more"]
    assert ctx.lead(lines, 1, [H(1), H(3)]) == ["first line", "second"]
    assert ctx.lead(["a", "b", "c", "d"], 1, []) == ["a", "b", "c"][: ctx.LEAD_LINES]


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
