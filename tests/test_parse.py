import random
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vaultd.parse import parse_file
from vaultd.parse.denote import parse_name


def test_denote_name_parts():
    d = parse_name("20251016T080208==1a2--memory-tiers-for-agents__agents_memory")
    assert (d.id, d.signature, d.title, d.keywords) == ("20251016T080208", "1a2", "memory tiers for agents", ["agents", "memory"])
    assert d.date == "2025-10-16T08:02:08"
    assert parse_name("19691231T235959--before-the-epoch").id == "19691231T235959"
    assert parse_name("20251016T080208").title is None
    assert parse_name("Deep work") is None
    assert parse_name("2025-11-20") is None


def test_org_note():
    src = b"""#+title:      Memory tiers
#+filetags:   :agents:memory:
#+identifier: 20251016T080208
:PROPERTIES:
:ID: file-uuid
:END:

* HOT set [1/2]
:PROPERTIES:
:ID: h-uuid
:CUSTOM_ID: hot
:END:
text
** TODO Nested
"""
    n = parse_file("notes/20251016T080208--ignored-slug__x.org", src)
    assert n.title == "Memory tiers"
    assert n.id == "20251016T080208"
    assert n.tags == ["x", "agents", "memory"]
    assert n.uuids == ["file-uuid", "h-uuid"]
    assert [(h.level, h.text, h.line, h.anchor) for h in n.headings] == [
        (1, "HOT set", 8, "hot"),
        (2, "Nested", 14, "nested"),
    ]
    assert n.problems == []


def test_markdown_note_with_front_matter_keeps_line_numbers():
    src = """---
title: Deep work
aliases: [focus, "deep focus"]
tags: "#productivity, reading"
date: 2025-11-01
id: md-uuid
---

# Heading One

Body with #inline-tag and `#not-a-tag` and #123.

```
# not a heading #nor-a-tag
```
## Sub Heading!
""".encode()
    n = parse_file("Deep work.md", src)
    assert n.title == "Deep work"
    assert n.aliases == ["focus", "deep focus"]
    assert n.tags == ["productivity", "reading", "inline-tag"]
    assert n.date == "2025-11-01"
    assert n.uuids == ["md-uuid"]
    assert [(h.text, h.line, h.anchor) for h in n.headings] == [("Heading One", 9, "heading-one"), ("Sub Heading!", 16, "sub-heading")]
    lines = n.body.split("\n")
    assert lines[0] == "" and lines[8] == "# Heading One", "front matter is blanked, not dropped"


def test_title_falls_back_to_denote_slug_then_stem_never_a_heading():
    assert parse_file("20250101T000000--from-the-slug.md", b"# Heading\n").title == "from the slug"
    assert parse_file("plain.md", b"text\n## Second level\n").title == "plain"
    assert parse_file("plain.md", b"# First level\n").title == "plain"
    assert parse_file("dir/plain.org", b"* Heading\n").title == "plain"
    assert parse_file("dir/plain.org", b"no headings\n").title == "plain"
    assert parse_file("20250101T000000.org", b"* Heading\n").title == "20250101T000000"


def test_bad_yaml_is_a_problem_not_an_exception():
    n = parse_file("x.md", b"---\ntitle: [unclosed\n---\n\nbody survives\n")
    assert n.problems and n.problems[0].startswith("front matter ignored")
    assert "body survives" in n.body
    assert n.title == "x"


def test_non_utf8_empty_nul_and_oversized():
    n = parse_file("latin.md", "caf\xe9 au lait\n".encode("latin-1"))
    assert "not valid UTF-8" in n.problems[0] and "caf\ufffd au lait" in n.body
    assert parse_file("empty.org", b"").title == "empty"
    assert "NUL" in parse_file("nul.md", b"a\x00b").problems[0]
    blob = random.Random(7).randbytes(200_000)
    for data in (blob, "# Note\nText in UTF-16.\n".encode("utf-16")):
        n = parse_file("20250101T000000--blob__pic.md", data)  # an image or archive named .md
        assert "binary" in n.problems[0] and n.body == "" and n.links == [] and n.headings == []
        assert (n.title, n.tags, n.size) == ("blob", ["pic"], len(data))  # its name, as of any note
    assert not parse_file("ko.md", "# 가치관\n가치관이 드러난다.\n".encode()).problems
    assert "binary" not in parse_file("fr.md", "été à côté, déjà là\n".encode("latin-1")).problems[0]
    big = parse_file("big.md", b"line\n" * 1000, max_bytes=100)
    assert big.size == 5000 and "only the first" in big.problems[0] and big.body.count("line") == 20


def test_crlf_and_bom():
    n = parse_file("w.md", "\ufeff---\r\ntitle: Win\r\n---\r\n# H\r\n".encode())
    assert n.title == "Win" and n.headings[0].line == 4


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2000), st.sampled_from(["a.md", "b.org", "20250101T000000--x__y.md", "c.org"]))
def test_parsing_arbitrary_bytes_never_raises(data, name):
    n = parse_file(name, data)
    assert n.path == name and isinstance(n.title, str)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["---", "* ", "** ", "#+title: ", ":PROPERTIES:", ":END:", ":ID: x", "# ", "```",
                                 "#tag", "[[x]]", "가치관", "\n", "title: [", "---\n", "\t", "~~~"]), max_size=40),
       st.sampled_from(["a.md", "b.org"]))
def test_parsing_markup_soup_never_raises(parts, name):
    n = parse_file(name, "".join(parts).encode())
    assert [h.line for h in n.headings] == sorted(h.line for h in n.headings)  # snippets bisect them


def test_vaultd_parse_cli(tmp_path):
    import json
    import subprocess
    import sys

    f = tmp_path / "20251016T080208--memory-tiers__agents.org"
    f.write_text("#+title: Memory tiers\n* HOT\nSee [[denote:20250101T000000][x]].\n")
    r = subprocess.run([sys.executable, "-m", "vaultd", "parse", "--json", str(f)], capture_output=True, text=True)
    note = json.loads(r.stdout)
    assert r.returncode == 0 and note["title"] == "Memory tiers" and note["id"] == "20251016T080208"
    assert note["links"][0][3] == "denote" and "body" not in note
    r = subprocess.run([sys.executable, "-m", "vaultd", "parse", str(f)], capture_output=True, text=True)
    assert "title:    Memory tiers" in r.stdout and "      2  # HOT  (#hot)" in r.stdout


def test_vaultd_parse_reads_a_file_as_the_daemon_does(tmp_path):
    """`vaultd parse` on what is no note (a FIFO hung it, /dev/zero took 3 GB) says so; on a
    terminal a title's escape sequences are printed as text, as vaultq prints them."""
    import os
    import subprocess
    import sys

    from conftest import on_a_terminal

    fifo = tmp_path / "pipe.md"
    os.mkfifo(fifo)
    for what in (fifo, "/dev/zero"):
        r = subprocess.run([sys.executable, "-m", "vaultd", "parse", str(what)], capture_output=True, text=True,
                           timeout=30)
        assert r.returncode == 1 and "is not a regular file" in r.stderr, r
    f = tmp_path / "clip.md"
    f.write_text('---\ntitle: "Evil \\u001b]0;pwned\\u0007 title"\n---\nbody\n')
    code, out = on_a_terminal([sys.executable, "-m", "vaultd", "parse", str(f)])
    assert code == 0 and b"Evil ^[]0;pwned^G title" in out and b"\x1b" not in out
    piped = subprocess.run([sys.executable, "-m", "vaultd", "parse", str(f)], capture_output=True, text=True)
    assert "Evil \x1b]0;pwned\x07 title" in piped.stdout  # a pipe gets the title as it is


def test_org_heading_and_property_readers_give_what_orgparses_give():
    # ours read a line in one pass; orgparse's regexes, the same, in the square or cube of it
    import itertools

    from orgparse.inline import to_plain_text
    from orgparse.node import parse_heading_level, parse_heading_tags, parse_property

    from vaultd.parse.org import _level, _plain, _property, _tagged

    cases = [("* a\t", parse_heading_level, _level), (": a@_\t가", parse_heading_tags, _tagged),
             ("[]a\n", to_plain_text, _plain), (": a\t", parse_property, _property)]
    for alphabet, theirs, ours in cases:
        for n in range(7):
            for chars in itertools.product(alphabet, repeat=n):
                s = "".join(chars)
                assert theirs(s) == ours(s), (theirs.__name__, s)


HOSTILE = {  # lines that took seconds to minutes each (the time grew with their square or cube)
    "heading of [[": "# " + "[[" * 20000, "org heading of [[": "* " + "[[" * 20000, "[[a][ unclosed": "[[a][" * 8000,
    "heading of [a](": "# " + "[a](" * 10000, "heading with a blank run": "# a" + " " * 40000 + "x",
    "org heading of [": "* " + "[" * 40000, "org heading of :a": "* x " + ":a" * 20000 + " x",
    "property of colons": ":PROPERTIES:\n:" + ":" * 40000 + "x\n:END:", "timestamps": "* h\n" + "<2025-01-01 " * 3000,
    "org heading of colons": "* " + ":" * 40000 + "x", "cookie after blanks": "* a" + " " * 40000 + "[1/2]",
    # blocks at an Org file's front, each looking for its end
    "unclosed blocks": "".join(f"#+begin_b{i}\n" for i in range(3000)), "line of begins": "#+begin_a " * 4000,
    "begins and ends": "#+begin_a\n" * 2000 + "#+end_a\n" * 2000, "unclosed of one name": "#+begin_a\n" * 4000,
}


PROSE = "Some ordinary words in a line of prose, with a [link](x.md) and *stress*.\n"


def cpu_seconds(parse) -> float:
    """The least CPU time of three runs of `parse()`. CPU time, not wall-clock: the other
    processes of a loaded machine add to how long a run takes, not to its CPU time."""
    runs = []
    for _ in range(3):
        t = time.process_time()
        parse()
        runs.append(time.process_time() - t)
    return min(runs)


def ordinary(ext: str, size: int) -> bytes:
    """A note of prose under a heading, `size` bytes long."""
    text = ("* Heading\n\n" if ext == ".org" else "# Heading\n\n") + PROSE * (size // len(PROSE) + 1)
    return text[:size].encode()


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_lines_parse_in_about_their_length(name):
    # each is 40 KB and costs at most 15 times the CPU of 40 KB of prose; the bound is 200
    # times, and the old regexes took from 2 s to hours (thousands of times)
    for ext in (".md", ".org"):
        data = (HOSTILE[name] + "\n").encode()
        n = parse_file("x" + ext, data)
        assert n.size > 20000
        ratio = cpu_seconds(lambda: parse_file("x" + ext, data)) / cpu_seconds(
            lambda: parse_file("x" + ext, ordinary(ext, len(data))))
        assert ratio < 200, (name, ext, ratio)


def test_yaml_aliases_nested_nine_deep_stay_small():
    fm, prev = "---\na: &a [x, x, x, x, x, x, x, x, x]\n", "a"
    for name in "bcdefgh":  # 9^8 items, 43 million, in 330 bytes
        fm += f"{name}: &{name} [{', '.join(['*' + prev] * 9)}]\n"
        prev = name
    fm += "tags: [*h, ok, 3]\naliases: [*h, Other]\ntitle: *h\nid: !!binary aGVsbG8=\n---\nbody\n"
    n = parse_file("bomb.md", fm.encode())
    flat = "---\n" + "".join(f"{c}: [{', '.join(['x'] * 9)}]\n" for c in "abcdefgh") + "tags: [ok, 3]\n---\nbody\n"
    ratio = cpu_seconds(lambda: parse_file("bomb.md", fm.encode())) / cpu_seconds(lambda: parse_file("f.md", flat.encode()))
    assert ratio < 100, ratio  # about 1: the aliases are never expanded (43 million items would be 100,000s)
    assert (n.tags, n.aliases, n.title, n.id) == (["ok", "3"], ["Other"], "bomb", None)


# -- Org file-level keywords count only at the file's front ----------------------------------

MANUAL = """#+title: Denote manual
#+date: 2022-06-08

#+begin_example
#+title:      This is a sample note
#+date:       [2022-06-30 Thu 16:09]
#+filetags:   :testing:
#+identifier: 20220630T160934
#+end_example

#+BEGIN_SRC emacs-lisp
#+identifier: 19990101T000000
#+END_SRC
  #+begin_quote
  #+filetags: :quoted:
  #+end_quote
#+begin_verse
#+filetags: :verse:
#+end_verse
#+BEGIN: denote-files :regexp "x"
#+filetags: :dynamic:
#+END:
#+filetags: :real:
* Overview
#+filetags: :after-heading:
#+identifier: 20000101T000000
#+title: Not the title
"""


def test_org_keywords_inside_blocks_or_after_the_first_heading_do_not_count():
    n = parse_file("denote.org", MANUAL.encode())
    assert n.title == "Denote manual"
    assert n.date == "2022-06-08"
    assert n.tags == ["real"]
    assert n.id is None


def test_org_block_names_match_in_any_case_and_need_their_own_end():
    src = "#+Begin_Example\n#+filetags: :a:\n#+END_SRC\n#+filetags: :b:\n#+end_EXAMPLE\n#+filetags: :c:\n"
    assert parse_file("x.org", src.encode()).tags == ["c"]


def test_org_unterminated_block_is_no_block():
    # as in Org, a #+begin_ line with no #+end_ line before the first heading starts no
    # block (Org reads it as a paragraph): the keywords after it are the file's
    src = "#+title: T\n#+begin_example\n#+filetags: :a:\n* H\n#+end_example\n"
    n = parse_file("x.org", src.encode())
    assert (n.title, n.tags) == ("T", ["a"])


def test_org_legitimate_front_keywords_are_still_read():
    src = "\n  #+TITLE:  Spaced  \n#+FileTags: :x:y:\nsome prose\n#+date: [2025-01-02 Thu]\n\t#+identifier: 20250102T030405\n* H\n"
    n = parse_file("x.org", src.encode())
    assert (n.title, n.tags, n.date, n.id) == ("Spaced", ["x", "y"], "[2025-01-02 Thu]", "20250102T030405")
    # the first of a keyword counts, and a keyword not at a line's start is text
    n = parse_file("x.org", b"#+title: One\n#+title: Two\nsee #+filetags: :no:\n")
    assert (n.title, n.tags) == ("One", [])
    # no heading at all: the whole file is the front
    assert parse_file("x.org", b"text\n#+title: Late\n").title == "Late"
    # a heading on the first line: no front
    assert parse_file("x.org", b"* H\n#+title: Late\n").title == "x"  # (the file name, not Late)


def test_denote_org_note_keeps_its_file_name_identifier_when_the_keyword_is_in_a_block():
    src = b"#+title: Sample\n#+begin_example\n#+identifier: 19990101T000000\n#+filetags: :bogus:\n#+end_example\n"
    n = parse_file("20251016T080208--sample__notes.org", src)
    assert (n.id, n.tags, n.date) == ("20251016T080208", ["notes"], "2025-10-16T08:02:08")


def test_markdown_front_matter_only_on_the_first_line():
    n = parse_file("x.md", b"A paragraph.\n\n---\ntitle: Not front matter\ntags: [no]\n---\n\nText.\n")
    assert (n.title, n.tags, n.problems) == ("x", [], [])
    assert "title: Not front matter" in n.body
    n = parse_file("x.md", b"\n---\ntitle: Nor this\n---\n")
    assert n.title == "x" and "title: Nor this" in n.body
    n = parse_file("x.md", "\ufeff---\ntitle: After a BOM\n---\n".encode())
    assert n.title == "After a BOM"


# -- a split part's header line is a link, not text ------------------------------------------

PARTS = {
    "wiki": ("notes/Big - Part.md", '---\ntitle: "Part"\ntags: ["x"]\n---\n\nPart of [[sub/Big|Zanzibar #quux plans]].\n\n# Part\n\nbody\n', "wiki", "sub/Big"),
    "mdlink": ("Big - Part.md", '---\ntitle: "Part"\n---\n\nPart of [Zanzibar [v2] plans](Big%20note.md).\n\n# Part\n', "md", "Big note.md"),
    "denote": ("20250101T000001--part.org", "#+title:      Part\n#+filetags:   :x:\n#+identifier: 20250101T000001\n\nPart of [[denote:20250101T000000][Zanzibar plans]].\n\n* Part\n", "denote", "20250101T000000"),
    "file": ("part.org", ":PROPERTIES:\n:ID: p-uuid\n:END:\n#+title: Part\n\nPart of [[file:big.org][Zanzibar plans]].\n* Part\n", "file", "big.org"),
    "bracketed": ("part.org", "#+title: Part\n\nPart of [[file:big.org][[2025] Zanzibar [v2]]].\n", "file", "big.org"),
    "id": ("part.org", "#+title: Part\n:PROPERTIES:\n:ID: p-uuid\n:END:\nPart of [[id:4a1b-22][Zanzibar plans]].\n", "id", "4a1b-22"),
}


@pytest.mark.parametrize("name", list(PARTS))
def test_part_header_line_is_blanked_and_its_link_kept(name):
    from vaultd.parse.common import PART_HEADER

    path, src, kind, target = PARTS[name]
    header = next(line for line in src.split("\n") if line.startswith("Part of"))
    assert PART_HEADER.fullmatch(header)
    n = parse_file(path, src.encode())
    lines = n.body.split("\n")
    assert len(lines) == src.count("\n") + 1, "line structure kept"
    assert lines[src.split("\n").index(header)] == ""
    assert "zanzibar" not in n.body.lower() and "quux" not in n.tags
    assert [(ln.kind, ln.target, ln.line) for ln in n.links] == [(kind, target, src.split("\n").index(header) + 1)]


@pytest.mark.parametrize("path, src", [
    ("a.md", "Intro.\n\nPart of [[Big|Zanzibar]].\n"),  # not the first line after the front matter
    ("a.md", "---\ntitle: A\n---\nPart of [[Big|Zanzibar]]. And more.\n"),  # other text around it
    ("a.md", "---\ntitle: A\n---\nSee: Part of [[Big|Zanzibar]].\n"),
    ("a.md", "---\ntitle: A\n---\nPart of [[Big|Zanzibar]]\n"),  # no full stop
    ("a.md", "---\ntitle: A\n---\nPart of [[denote:20250101T000000][Zanzibar]].\n"),  # an Org form in Markdown
    ("a.md", "# H\nPart of [[Big|Zanzibar]].\n"),
    ("a.org", "#+title: A\nPart of [[Big|Zanzibar]].\n"),  # a Markdown form in Org
    ("a.org", "#+title: A\n* H\nPart of [[denote:20250101T000000][Zanzibar]].\n"),
    ("a.org", "#+title: A\ntext\nPart of [[file:big.org][Zanzibar]].\n"),
    ("a.org", "#+title: A\n#+begin_quote\nPart of [[file:big.org][Zanzibar]].\n#+end_quote\n"),
    ("a.org", "Part of [[file:big.org][Zanzibar]] and [[file:c.org][Other]].\n"),
    ("a.org", "Part of [[file:big.org][Zanzibar]] [[file:c.org][Other]].\n"),
])
def test_a_part_of_line_anywhere_else_is_text(path, src):
    assert "Zanzibar" in parse_file(path, src.encode()).body


def test_search_for_the_hub_title_does_not_find_a_part_by_its_header(tmp_path):
    from vaultd.config import Config
    from vaultd.vault import Vault

    vault = tmp_path / "vault"
    vault.mkdir()
    (vault / "Zanzibar plans.md").write_text("---\ntitle: Zanzibar plans\n---\n\nParts:\n\n- [[Zanzibar plans - Boats]]\n")
    (vault / "Zanzibar plans - Boats.md").write_text(
        '---\ntitle: "Boats"\n---\n\nPart of [[Zanzibar plans|Zanzibar plans]].\n\n# Boats\n\nDhows and ferries.\n')
    (vault / "20250101T000000--spice-trade.org").write_text("#+title: Spice trade\n\n* Cloves\nGrown on islands.\n")
    (vault / "20250101T000001--cloves.org").write_text(
        "#+title:      Cloves\n#+identifier: 20250101T000001\n\nPart of [[denote:20250101T000000][Spice trade]].\n\n"
        "* Cloves\nGrown on islands.\n")
    (vault / "other.md").write_text("Zanzibar is an island.\n")
    vlt = Vault(Config(vault=str(vault), state_dir=str(tmp_path / "state")).load())
    try:
        vlt.reconcile()
        hits = {h["path"] for h in vlt.search("zanzibar")["hits"]}
        assert hits == {"Zanzibar plans.md", "other.md"}
        assert {h["path"] for h in vlt.search("spice")["hits"]} == {"20250101T000000--spice-trade.org"}
        assert {h["path"] for h in vlt.search("dhows")["hits"]} == {"Zanzibar plans - Boats.md"}
        # the header's link is still a graph edge
        assert [b["path"] for b in vlt.backlinks("Zanzibar plans.md")["backlinks"]] == ["Zanzibar plans - Boats.md"]
        assert [b["path"] for b in vlt.backlinks("20250101T000000--spice-trade.org")["backlinks"]] == [
            "20250101T000001--cloves.org"]
    finally:
        vlt.close()


@pytest.mark.parametrize("front,tags", [
    ("layout: wiki\ntag : unix bell-labs", ["unix", "bell-labs"]),  # Jekyll: singular key, space before the colon
    ("tag: project, important", ["project", "important"]),
    ("category: RFCs\ncategories: [web, dev]", ["rfcs", "web", "dev"]),
    ("Tags: [a]\nKeywords: b c", ["a", "b", "c"]),
    ("tags: [x]\ntag: y\nkeywords: [z]\ncategories: [x]", ["x", "y", "z"]),
    ("tags: {a: 1}\ncategory: 3", ["3"]),  # a mapping is no tag; a number is
])
def test_tags_from_every_common_front_matter_key(front, tags):
    assert parse_file("n.md", f"---\n{front}\n---\nbody\n".encode()).tags == tags


def test_tags_from_toml_front_matter_and_zola_taxonomies():
    src = '+++\ntitle = "T"\ncategories = ["hugo"]\n[taxonomies]\ntags = ["zola", "ssg"]\n+++\nbody\n'
    assert parse_file("n.md", src.encode()).tags == ["hugo", "zola", "ssg"]


@pytest.mark.parametrize("front,aliases", [
    ("alias: Deep work", ["Deep work"]),
    ("aliases: [focus, deep focus]\nalias: Flow, focus", ["focus", "deep focus", "Flow"]),
])
def test_aliases_from_aliases_and_alias(front, aliases):
    assert parse_file("n.md", f"---\n{front}\n---\nbody\n".encode()).aliases == aliases
