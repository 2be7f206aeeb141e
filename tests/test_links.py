"""Link extraction: every syntax, with line and column; nothing in code; no look-alikes."""

from hypothesis import given, settings
from hypothesis import strategies as st

from vaultd.parse import parse_file


def links(name, text):
    return [(l.line, l.col, l.kind, l.target, l.anchor, l.label) for l in parse_file(name, text.encode()).links]


def test_obsidian_wikilinks_and_embeds():
    assert links("a.md", "x [[Note]] [[Note#Head|alias]] [[Note#^blk]] ![[Pic.png|100]] [[dir/Other.md]]") == [
        (1, 3, "wiki", "Note", "", ""),
        (1, 12, "wiki", "Note", "Head", "alias"),
        (1, 32, "wiki", "Note", "^blk", ""),
        (1, 46, "embed", "Pic.png", "", "100"),
        (1, 63, "wiki", "dir/Other.md", "", ""),
    ]


def test_markdown_links_url_encoded_and_angle_brackets():
    assert links("a.md", "[t](rel/My%20Note.md#sec-1) [u](<my note.md>) ![i](pic.png) [w](https://x.y/a)") == [
        (1, 1, "md", "rel/My Note.md", "sec-1", "t"),
        (1, 29, "md", "my note.md", "", "u"),
        (1, 47, "md", "pic.png", "", "i"),
        (1, 61, "url", "https://x.y/a", "", "w"),
    ]


def test_org_links():
    text = "[[file:../a.org::*Some Head][A]] [[file:b.org::#cid]] [[id:U-1]] [[denote:20250101T000000::#x][D]] [[*Local]]"
    assert links("n.org", text) == [
        (1, 1, "file", "../a.org", "*Some Head", "A"),
        (1, 34, "file", "b.org", "#cid", ""),
        (1, 55, "id", "U-1", "", ""),
        (1, text.index("[[denote") + 1, "denote", "20250101T000000", "#x", "D"),
        (1, text.index("[[*Local") + 1, "internal", "", "*Local", ""),
    ]


def test_org_typed_links_in_markdown_files():
    assert [l[2] for l in links("a.md", "[[denote:20250101T000000]] and [[id:abc][x]] and [[file:x.org]]")] == [
        "denote", "id", "file",
    ]


def test_line_and_column_count_characters():
    assert links("a.md", "# 제목\n\n한국어 [[노트]] 링크")[0][:2] == (3, 5)


def test_nothing_inside_code():
    md = "```\n[[fenced]]\n```\n~~~\n[[tilde]]\n~~~\n\n    [[indented]]\n\n`[[inline]]` and ``[[double]]``\n[[real]]"
    assert [l[3] for l in links("a.md", md)] == ["real"]
    # a note without fences is read only at some lines: whether an indented line is code
    # depends on the line before, which must still be read
    assert [l[3] for l in links("a.md", "para\n    [[lazy]]\n\n    [[code]]\n\n[[real]]")] == ["lazy", "real"]
    assert [l[3] for l in links("a.md", "para\n\t[[lazy]]\n\n\t[[code]]\n\n[[real]]")] == ["lazy", "real"]
    assert [l[3] for l in links("a.org", "#+Begin_Src sh\n[[file:x.org]]\n#+end_src\n[[file:real.org]]")] == ["real.org"]
    org = "#+begin_src sh\n[[file:x.org]]\n#+end_src\n#+BEGIN_EXAMPLE\n[[y]]\n#+END_EXAMPLE\n: [[fixed]]\n=[[v]]= ~[[c]]~ [[file:real.org]]"
    assert [l[3] for l in links("a.org", org)] == ["real.org"]


def test_nested_fences_close_only_on_a_long_enough_fence():
    md = "````md\n```\n[[inner example]]\n```\n````\n[[after]]\n```python\nx = '[[in code]]'\n```\n[[end]]"
    assert [l[3] for l in links("a.md", md)] == ["after", "end"]


def test_a_fence_in_a_block_quote_or_callout_is_code_until_it_or_the_quote_ends():
    """Obsidian's help writes examples as `> ```md` in callouts: the links and tags in them
    are code (the splitter rewrote them, backlinks counted them). A `>` line in a fence
    outside any quote is code too (a shell prompt), not a quote."""
    md = ("> [!example]\n> ```md\n> [[example]] #ff0000\n> ```\n> [[in quote]]\n\n"
          ">> ```\n>> [[deeper]]\n> [[quote ended the fence]]\n\n"
          "```sh\n> echo [[prompt]]\n> ```\n[[still code]]\n```\n[[after]] #real")
    assert [l[3] for l in links("a.md", md)] == ["in quote", "quote ended the fence", "after"]
    assert parse_file("a.md", md.encode()).tags == ["real"]


def test_list_items_indented_under_a_list_still_link():
    assert [l[3] for l in links("a.md", "- item\n    - [[Nested]]\n\t- [[Tabbed]]")] == ["Nested", "Tabbed"]


def test_lookalikes_are_not_links():
    md = '[[TIP("note")]] text [[/TIP]] [[ ]] [[]] [[:digit:]] [[|x]]'
    assert links("a.md", md) == []


def test_other_schemes_are_urls_not_notes():
    assert [(l[2], l[3]) for l in links("a.org", "[[zk:1234]] [[https://a.b][web]] [[mailto:x@y]]")] == [
        ("url", "zk:1234"), ("url", "https://a.b"), ("url", "mailto:x@y"),
    ]


def test_bare_urls_drop_trailing_punctuation():
    assert [l[3] for l in links("a.md", "see https://example.com/a_b. and (http://x.y/z)")] == [
        "https://example.com/a_b", "http://x.y/z",
    ]


def test_org_description_across_a_line_break():
    n = parse_file("a.org", b"see [[id:X-1][Information Bottleneck\nin Deep Networks]] and [[id:X-2]]\n")
    assert [(l.line, l.target, l.label) for l in n.links] == [(1, "X-1", "Information Bottleneck in Deep Networks"),
                                                           (2, "X-2", "")]


def test_block_ids_and_org_targets():
    n = parse_file("a.md", b"para one ^blk-1\n\n- item ^item2\n")
    assert [(b.id, b.line) for b in n.blocks] == [("blk-1", 1), ("item2", 3)]
    n = parse_file("a.org", b"* H\n<<here>> text\n")
    assert [(b.id, b.line) for b in n.blocks] == [("here", 2)]


def test_body_reads_links_as_their_labels_and_keeps_lines():
    n = parse_file("a.md", b"---\ntitle: t\n---\nSee [[Deep work|focus]] and [doc](x.md).\nline 5\n")
    lines = n.body.split("\n")
    assert lines[3] == "See focus and doc." and lines[4] == "line 5"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["[[", "]]", "[", "]", "(", ")", "!", "#", "^", "|", "::", "*", "file:", "id:",
                                 "denote:", "http://", "<", ">", "`", "=", "~", "\n", " ", "a", "노트", "%20", "\\"]),
                max_size=60),
       st.sampled_from(["a.md", "b.org"]))
def test_link_soup_never_raises_and_positions_are_real(parts, name):
    text = "".join(parts)
    lines = text.replace("\r", "\n").split("\n")
    for l in parse_file(name, text.encode()).links:
        first, *rest = l.raw.split("\n")
        assert lines[l.line - 1][l.col - 1 :].startswith(first)
        assert not rest or lines[l.line].startswith(rest[0])


_pieces = st.sampled_from(["[[a]]", "[t](b.md)", "![[c#H]]", "https://x.y/z", " ^blk", "<<tgt>>", "#+title: T",
                           ":PROPERTIES:", ": fixed", "- item [[d]]", "* Head [[e]]", "# Head", "plain words", "",
                           "[[f][desc", "more]]", "=[[g]]=", "`[[h]]`", "#tag", "a:b", "[x]"])


@settings(max_examples=400, deadline=None)
@given(lines=st.lists(st.lists(_pieces, max_size=3).map(" ".join), max_size=12), org=st.booleans())
def test_notes_without_code_read_only_some_lines_and_give_the_same(lines, org):
    """A note where no code block can start is read only at the lines that can hold a link
    or an id: that must give what reading every line gives."""
    from vaultd.parse.links import extract

    assert extract(lines, 1, org, code=False) == extract(lines, 1, org, code=True)


def test_each_link_knows_where_its_line_begins_in_the_file():
    data = "---\ntitle: 제목\n---\n한국어 첫 줄\n\n앞 [[A]] 뒤 [[B]]\n\tsee [x](x.md)".encode()
    got = {(l.line, l.target): l.at for l in parse_file("a.md", data).links}
    starts = [0] + [i + 1 for i, b in enumerate(data) if b == 0x0A]
    assert got == {(6, "A"): starts[5], (6, "B"): starts[5], (7, "x.md"): starts[6]}
    assert data[starts[5]:].startswith("앞 [[A]]".encode())
    # Org, a BOM and bad bytes before: offsets are the file's bytes, not the decoded text's
    org = b"\xef\xbb\xbf#+title: t\n\xff\xfe bad\n* H\n[[file:b.org][b]]"
    [link] = parse_file("n.org", org).links
    assert org[link.at:].startswith(b"[[file:b.org]")
    # a CR ends a line as the parser reads it, not as the bytes are counted: no offset
    assert [l.at for l in parse_file("c.md", b"one\r\ntwo\r[[A]]\n[[B]]").links] == [-1, -1]
