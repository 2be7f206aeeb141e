"""Front matter read without YAML (markdown.simple_front_matter) is read as YAML reads it.

Every block the fast path takes must give exactly what python-frontmatter gives (the
values and their types: text, lists, dates), and every block it cannot read the same way
(numbers, booleans, escapes, impossible dates, nesting, comments) must be left to YAML.
"""

from __future__ import annotations

import datetime as dt

import frontmatter
from hypothesis import given, settings
from hypothesis import strategies as st

from vaultd.parse import markdown, parse_file


def by_yaml(lines: list[str]) -> tuple[dict | None, str | None]:
    """What python-frontmatter reads of the block, or the error it raises (as its name)."""
    try:
        meta, _ = frontmatter.parse("\n".join(lines) + "\n")
    except Exception as e:
        return None, type(e).__name__
    return meta, None


TAKEN = [
    ['title: "Hot Demote Memory Agent"', "tags: [denote, idea, journal]", "date: 2023-04-03",
     'identifier: "20230222T192928"'],
    ["title: Bell Labs, the early years.", "aliases: []", "tags: [a-b, c.d, \"x y\"]", "Tags: 'quoted: text'"],
    ["title: 가치관이 바뀌다", "tags: [철학, 가치]", "id: 'not-an-id'", "date: 2024-02-29"],
    ["title: first", "title: second"],  # YAML keeps the last value of a key
    [],
]

LEFT_TO_YAML = [
    ["draft: true"], ["on: x"], ["title: null"], ["tags: [yes, no]"], ["date: 2023-02-30"],
    ["n: 12"], ["title: a: b"], ["title: x # comment"], ['title: "esc \\" aped"'], ["tags:", "  - a"],
    ["title: trailing "], ["title:\tx"], ["title: x\x01"], ["# a comment"], ["date: 2023-04-03T10:00:00"],
    ["tags: [1, 2]"], ["title: [a,b]"], ["title: 'it''s'"],
]


def test_simple_blocks_are_read_without_yaml_as_yaml_reads_them():
    for body in TAKEN:
        block = ["---", *body, "---"]
        meta = markdown.simple_front_matter(block)
        assert meta is not None, block
        assert meta == by_yaml(block)[0], block
        assert [type(v) for v in meta.values()] == [type(v) for v in by_yaml(block)[0].values()]
    assert markdown.simple_front_matter(["---", "date: 2023-04-03", "---"]) == {"date": dt.date(2023, 4, 3)}


def test_what_yaml_reads_otherwise_is_left_to_it():
    for body in LEFT_TO_YAML:
        assert markdown.simple_front_matter(["---", *body, "---"]) is None, body
    assert markdown.simple_front_matter(["---", "title: x", "..."]) is None  # YAML's other end line


def test_a_note_reads_the_same_whichever_path_reads_its_front_matter():
    text = '---\ntitle: "Memory Context Cache"\ntags: [active, journal]\ndate: 2024-02-25\n---\n\n# Throughput 1\n'
    note = parse_file("20230415T090313--memory-context-cache__active.md", text.encode())
    assert (note.title, note.tags, note.date) == ("Memory Context Cache", ["active", "journal"], "2024-02-25")
    bad = parse_file("x.md", b"---\ndate: 2023-02-30\n---\nbody\n")  # YAML's error, as before
    assert bad.problems and bad.problems[0].startswith("front matter ignored")


_CHARS = st.sampled_from(list("aZ9 _-.,:#'\"[]{}!&*|>%@`?\\\t") + ["é", "가", "\u00a0", "\x01", "1", "yes", "on",
                                                                    "null", "2023-04-03", ", "])


_TEXT = st.lists(_CHARS, max_size=8).map("".join)
_VALUE = st.one_of(_TEXT, _TEXT.map(lambda t: f'"{t}"'), _TEXT.map(lambda t: f"'{t}'"),
                   st.lists(_TEXT, max_size=3).map(lambda ts: "[" + ", ".join(ts) + "]"),
                   st.dates().map(dt.date.isoformat), st.from_regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", fullmatch=True))


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["title", "tags", "date", "on", "a_b", "Key-2", "_x", "yes"]), _VALUE),
                max_size=4))
def test_any_block_reads_as_yaml_reads_it(pairs):
    block = ["---", *(f"{k}: {v}" for k, v in pairs), "---"]
    meta = markdown.simple_front_matter(block)
    if meta is not None:
        want, error = by_yaml(block)
        assert error is None and meta == want, block
        assert [type(v) for v in meta.values()] == [type(v) for v in want.values()], block
