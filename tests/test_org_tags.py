"""Org tags as Org has them (issue 19): #+filetags and heading tags, inherited by
sub-headings; `tag:X` finds a note by any of them, and a hit on a heading tag points its
snippet at that heading."""

import pytest

from vaultd.config import Config
from vaultd.parse import parse_file
from vaultd.vault import Vault

READING = """#+title: Reading list
#+filetags: :reading:

* Background
Few-shot learning is everywhere now.

* Papers :paper:
Things I read.
** TODO [#A] Entailment as Few-Shot Learner :nlp:ToRead:
Reformulates tasks as entailment.
*** Results
Few-shot results beat GPT-3 on GLUE.

* Ideas
Few-shot again, but under no tag.
"""

NOTES = {
    "reading.org": READING,
    "links.org": "#+title: Links\n\n[[file:reading.org::*Entailment as Few-Shot Learner][the paper]]\n"
                 "[[file:reading.org::*Papers]]\n",
    "plain.md": "# Plain\n\nA #paper in Markdown, and few-shot words.\n",
}


@pytest.fixture(scope="module")
def v(tmp_path_factory):
    root = tmp_path_factory.mktemp("orgtags")
    for rel, text in NOTES.items():
        (root / "vault").mkdir(exist_ok=True)
        (root / "vault" / rel).write_text(text)
    vlt = Vault(Config(vault=str(root / "vault"), state_dir=str(root / "state")).load())
    vlt.reconcile()
    yield vlt
    vlt.close()


def test_heading_tags_are_parsed_inherited_and_not_part_of_the_heading_text():
    from vaultd.note import heading_tags

    n = parse_file("reading.org", READING.encode())
    assert [(h.text, h.tags) for h in n.headings] == [
        ("Background", ()), ("Papers", ("paper",)), ("Entailment as Few-Shot Learner", ("nlp", "toread")),
        ("Results", ()), ("Ideas", ())]
    assert heading_tags(n.headings) == [set(), {"paper"}, {"paper", "nlp", "toread"}, {"paper", "nlp", "toread"}, set()]
    assert n.tags == ["reading", "paper", "nlp", "toread"]  # file tags, then each heading's


def test_tag_finds_a_note_by_file_heading_and_sub_heading_tags(v):
    for tag in ("reading", "nlp", "ToRead"):
        assert [h["path"] for h in v.search(f"tag:{tag}")["hits"]] == ["reading.org"], tag
    assert {h["path"] for h in v.search("tag:paper")["hits"]} == {"reading.org", "plain.md"}  # Markdown #tags as before
    assert v.search("tag:nonesuch")["hits"] == []


def test_a_heading_tag_hit_points_its_snippet_at_the_heading(v):
    (hit,) = [h for h in v.search("tag:paper")["hits"] if h["path"] == "reading.org"]
    assert [(s["line"], s["text"], s["heading"]) for s in hit["snippets"]] == [(7, "* Papers :paper:", "Papers")]
    s = hit["snippets"][0]
    assert s["text"][slice(*s["highlights"][0])] == "paper" and s["col"] == 11


def test_words_under_a_tag_come_from_the_headings_that_carry_it_or_inherit_it(v):
    (hit,) = [h for h in v.search("tag:paper few-shot results")["hits"] if h["path"] == "reading.org"]
    lines = [s["line"] for s in hit["snippets"]]
    # the tagged heading, and the best lines under it: line 12 sits under *** Results,
    # which inherits :paper: from * Papers; lines 5 and 15 (no tag) hold the words too
    assert lines[0] == 7 and 12 in lines and not {5, 15} & set(lines)
    assert [s["heading"] for s in hit["snippets"] if s["line"] == 12] == ["Results"]
    # a sub-heading's own tag: its line, and the lines below it
    (hit,) = v.search("tag:nlp few-shot")["hits"]
    assert [s["line"] for s in hit["snippets"]] == [9, 12]
    # a file tag points at no heading: the note's best lines, wherever they are
    (hit,) = v.search("tag:reading few-shot")["hits"]
    assert 5 in [s["line"] for s in hit["snippets"]]


def test_links_to_a_tagged_heading_resolve_by_its_text_without_tags_or_todo(v):
    links = v.links("links.org")["links"]
    assert [(ln["resolved"], ln["resolved_line"], ln["broken"]) for ln in links] == [
        ("reading.org", 9, None), ("reading.org", 7, None)]


def test_tags_counts_heading_tags(v):
    counts = {t["tag"]: t["count"] for t in v.tags()["tags"]}
    assert counts["paper"] == 2  # an Org heading tag and a Markdown #tag
    assert counts["nlp"] == counts["toread"] == counts["reading"] == 1


def test_vaultd_parse_shows_each_headings_tags_and_what_it_inherits(tmp_path):
    import subprocess
    import sys

    f = tmp_path / "reading.org"
    f.write_text(READING)
    out = subprocess.run([sys.executable, "-m", "vaultd", "parse", str(f)], capture_output=True, text=True).stdout
    assert "      7  # Papers  (#papers)  :paper:\n" in out
    assert "## Entailment as Few-Shot Learner  (#entailment-as-few-shot-learner)  :nlp:toread:  (inherits paper)\n" in out
    assert "### Results  (#results)  (inherits nlp, paper, toread)\n" in out
