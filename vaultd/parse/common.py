"""Helpers shared by the Org and Markdown parsers."""

from __future__ import annotations

import re
import unicodedata

_SLUG_DROP = re.compile(r"[^\w\- ]", re.UNICODE)
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})(.*)$")  # any indent: fences nest in list items


PART_HEADER = re.compile(
    r"Part of (?:"
    r"\[\[[^\[\]|#\n]+\|[^\[\]\n]*\]\]"  # Markdown: [[STEM|HUB TITLE]]
    r"|\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\]\([^\s()<>]+\)"  # Markdown: [HUB TITLE](relative/path.md)
    # Org: [[denote:ID][HUB TITLE]], file:, id:; a title may hold brackets, not "]]"
    r"|(?P<org>\[\[(?:denote|file|id):[^\[\]\n]+\]\[(?:[^\]\n]|\](?!\]))*\]?\]\])"
    r")\."
)
"""The back-link line the splitter (split/splitter.py) writes at the top of each part of a split
note, fully matched (without its newline): `Part of [[STEM|HUB TITLE]].` or `Part of [HUB
TITLE](relative/path.md).` in Markdown, `Part of [[denote:IDENTIFIER][HUB TITLE]].`
(or `file:`, `id:`) in Org, where the group `org` is set. A title in [[...|...]] holds
no bracket, and one in an Org link no "]]": the link would not read as one. In its
place (part_header) the parser keeps its link but blanks it in the searchable body: a
part would otherwise match every search for its hub's title."""

_ORG_KEYWORD_LINE = re.compile(r"[ \t]*#\+(?!(?:begin|end):)\w+:", re.IGNORECASE)  # not a dynamic block's ends


def part_header(lines: list[str], start: int, org: bool) -> int:
    """The index in `lines` of a part's header line (PART_HEADER, of the file's own format),
    or -1. It is the first non-blank line from `start` (the line after a Markdown note's
    front matter); in Org, after the leading #+KEYWORD: lines and one :PROPERTIES: drawer.
    Only the first few lines of a file are looked at."""
    i, n, drawer = start, len(lines), False
    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
        elif org and line[:1] in "# \t" and _ORG_KEYWORD_LINE.match(line):
            i += 1
        elif org and not drawer and line.strip() == ":PROPERTIES:":
            drawer = True
            while i < n and lines[i].strip() != ":END:":
                i += 1
            i += 1
        else:
            m = PART_HEADER.fullmatch(line) if line.startswith("Part of ") else None
            return i if m is not None and (m.group("org") is not None) == org else -1
    return -1


def may_fence(text: str) -> bool:
    """Whether `text` can hold a code fence. A note without one is read only at the lines
    that matter: one character is found at memchr speed, three take ten times longer."""
    return ("`" in text and "```" in text) or ("~" in text and "~~~" in text)


_QUOTE_MARK = re.compile(r" {0,3}> ?")


def _unquote(line: str, most: int) -> tuple[int, str]:
    """(block quote depth, the line after its `>` markers), taking at most `most` markers."""
    depth, i = 0, 0
    while depth < most and (m := _QUOTE_MARK.match(line, i)):
        depth, i = depth + 1, m.end()
    return depth, line[i:]


def fence_step(line: str, fence: tuple[str, int, int] | None) -> tuple[bool, tuple[str, int, int] | None]:
    """Track Markdown code fences line by line: (is this a fence line, the open fence after it).

    A fence closes with the same character, at least as long, and nothing after it. A
    fence opened indented (inside a list item) also ends, unclosed, at the first
    non-blank line indented less than it: the list item, and the fence with it, is over.
    A fence may stand in a block quote (an Obsidian callout: `> ```md`): its lines carry
    the quote's `>` markers, and it ends with the quote. Inside a fence outside any quote,
    a line starting with `>` is code (a shell prompt), never a quote.
    """
    depth, body = _unquote(line, 64 if fence is None else fence[2]) if ">" in line else (0, line)
    if fence is not None and depth < fence[2]:
        fence = None  # the block quote holding it is over
    if fence is not None and body.strip() and fence[1] and len(body) - len(body.lstrip()) < fence[1]:
        fence = None
    m = _FENCE.match(body)
    if not m:
        return False, fence
    mark, rest = m.groups()
    if fence is None:
        if mark[0] == "`" and "`" in rest:
            return False, None  # ``` inside an info string is not a fence
        return True, (mark, len(body) - len(body.lstrip()), depth)
    if mark[0] == fence[0][0] and len(mark) >= len(fence[0]) and not rest.strip():
        return True, None
    return False, fence


def github_slug(text: str) -> str:
    """GitHub's heading anchor: lower-case, punctuation dropped, spaces to hyphens."""
    text = unicodedata.normalize("NFC", text).strip().lower()
    return _SLUG_DROP.sub("", text).replace(" ", "-")


def numbered(slug: str, seen: dict[str, int]) -> str:
    """GitHub's anchor for the next heading of `slug` in a file (`a`, then `a-1`, `a-2`, ...);
    `seen` counts the file's slugs so far."""
    k = seen.get(slug, 0)
    seen[slug] = k + 1
    return f"{slug}-{k}" if k else slug


def is_scalar(value) -> bool:
    """A front matter value that reads as one piece of text: not a list or mapping (never
    made text: YAML aliases can nest one nine deep in 300 bytes, a billion items as text),
    not bytes (`!!binary`)."""
    return value is not None and not isinstance(value, (list, tuple, set, dict, bytes, bytearray))


def split_tags(value) -> list[str]:
    """Front matter tags as a list or a string ("a, b", "#a #b"), cleaned."""
    if value is None:
        return []
    if isinstance(value, str):
        items = re.split(r"[,\s]+", value)
    elif isinstance(value, (list, tuple, set)):
        items = []
        for v in value:
            items.extend(split_tags(v) if isinstance(v, str) else [str(v)] if is_scalar(v) else [])
    else:
        items = [str(value)] if is_scalar(value) else []
    return [t.lstrip("#").strip() for t in items if t and t.lstrip("#").strip()]


def dedupe(items) -> list[str]:
    seen: dict[str, None] = {}
    for it in items:
        seen.setdefault(it, None)
    return list(seen)
