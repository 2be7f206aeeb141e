"""Org-mode through orgparse: #+keywords, file and heading :ID:/:CUSTOM_ID:, headings."""

from __future__ import annotations

import bisect
import re

from orgparse.node import lines_to_chunks, parse_comment, parse_heading_priority, parse_seq_todo

from ..note import Heading
from .common import github_slug

# At the file's front: #+KEY: value, or a block's first line (#+begin_NAME, or #+BEGIN: of
# a dynamic block), counted only at the start of a line (after spaces or tabs; see
# front_keywords): a pattern that starts with a literal is found much faster than one
# anchored at ^.
_FRONT_LINE = re.compile(r"#\+(?:begin(?:_(\S+)|:)|(\w+):[ \t]*(.*?)[ \t]*$)", re.MULTILINE | re.IGNORECASE)
_END_LINE = re.compile(r"#\+end(?:_(\S+)|:?)[ \t]*$", re.MULTILINE | re.IGNORECASE)  # Org: ^[ \t]*#\+END_NAME[ \t]*$
_FIRST_HEADING = re.compile(r"\n\*+ ")  # a heading line after the first (orgparse's test: ^\*+ )
_HEADING = re.compile(r"^(\*+)[ \t]+(.*)$", re.MULTILINE)
_STATS = re.compile(r"(?<!\s)\s*\[\d*(?:%|/\d*)\]")  # tried at a blank run's start only: no square
_NODE_HEADER = re.compile(r"^\*+ ")  # orgparse's own heading test
# Lines we read something from besides headings: #+ keywords (#+TODO) and property
# drawers. Each alternative starts with a literal, which keeps the search fast.
_ORGPARSE_LINE = re.compile(r"#\+|:(?:PROPERTIES|END):")
_DRAWER_LINE = re.compile(r"\s*:")  # property lines (orgparse: `^\s*:(.*?):`)


_BLOCK_BEGIN = re.compile(r"#\+begin_", re.IGNORECASE)


class OrgFacts:
    __slots__ = ("keywords", "headings", "uuids", "id_lines", "problems", "code")


def parse(text: str) -> OrgFacts:
    out = OrgFacts()
    out.problems = []
    out.code = _BLOCK_BEGIN.search(text) is not None  # a src/example/export block may be there
    out.keywords = front_keywords(text)
    out.headings = []
    out.uuids = []
    out.id_lines = []  # (uuid, heading line) for heading-level :ID:s
    try:
        lines, numbers = _orgparse_lines(text)
        nodes = _read_plain(lines)
        root_props = nodes[0][3]
        if root_props.get("ID"):
            out.uuids.append(str(root_props["ID"]))
        for level, heading, linenumber, props, tags in nodes[1:]:
            title = (_STATS.sub("", heading) if "[" in heading else heading).strip()
            anchor = str(props.get("CUSTOM_ID") or "") or github_slug(title)
            line = numbers[linenumber - 1]
            out.headings.append(Heading(level, title, line, anchor, _tag_set(tags)))
            if props.get("ID"):
                out.uuids.append(str(props["ID"]))
                out.id_lines.append((str(props["ID"]), line))
    except Exception as e:  # orgparse is strict in places; fall back to plain heading lines
        out.problems.append(f"org structure not fully parsed: {e}")
        out.headings = []
        for m in _HEADING.finditer(text):
            title, tags = _tagged(m.group(2).strip())
            out.headings.append(Heading(len(m.group(1)), title, text.count("\n", 0, m.start()) + 1,
                                        github_slug(title), _tag_set(tags)))
    return out


def front_keywords(text: str) -> dict[str, str]:
    """The file-level #+KEY: values (lower-case keys; the first of each counts): those at
    the file's front, before its first heading, and not inside a block. A block runs from
    a #+begin_NAME line to the next #+end_NAME line (any case; #+BEGIN: to #+END: for a
    dynamic block); a begin line with no end line before the first heading starts no
    block, as in Org, which reads it as a paragraph. Only the front is read: most of a
    note is past its first heading. Each line is looked at once or twice, whatever it
    holds (every begin line looking for its end would take the square of a front of
    unclosed ones)."""
    if text[:1] == "*" and _NODE_HEADER.match(text):
        return {}
    m = _FIRST_HEADING.search(text)
    end = m.start() + 1 if m else len(text)
    keywords: dict[str, str] = {}
    ends: dict[str | None, list[int]] | None = None  # where each block's end lines end
    pos = 0
    while (m := _FRONT_LINE.search(text, pos, end)) is not None:
        pos = m.end()
        if not _at_line_start(text, m.start()):
            pos = text.find("\n", pos) + 1 or end  # nothing later on this line is either
            continue
        if m.group(2) is not None:
            keywords.setdefault(m.group(2).lower(), m.group(3))
            continue
        if ends is None:
            ends = _block_ends(text, m.start(), end)
        name = m.group(1)  # None: a dynamic block
        spots = ends.get(name.lower() if name is not None else None, ())
        k = bisect.bisect_right(spots, pos)
        if k < len(spots):
            pos = spots[k]
    return keywords


def _at_line_start(text: str, i: int) -> bool:
    """Whether only blanks are before `i` on its line."""
    return not text[text.rfind("\n", 0, i) + 1 : i].strip(" \t")


def _block_ends(text: str, start: int, end: int) -> dict[str | None, list[int]]:
    """Where the lines that end a block (#+end_NAME, #+END: of a dynamic block) between
    `start` and `end` end, in order, by lower-case block name (None: a dynamic block's)."""
    out: dict[str | None, list[int]] = {}
    for m in _END_LINE.finditer(text, start, end):
        if _at_line_start(text, m.start()):
            out.setdefault(m.group(1).lower() if m.group(1) is not None else None, []).append(m.end())
    return out


def _orgparse_lines(text: str) -> tuple[list[str], list[int]]:
    """The lines the heading reader needs, with their 1-based numbers: headings, #+
    keywords and drawer lines; most of a note is prose it would only pass over.
    Lines are numbered as everywhere else: split at line ends only (splitlines would also
    cut at form feeds and U+2028, and number every later line wrong).
    """
    lines: list[str] = []
    numbers: list[int] = []
    for n, line in enumerate(text.split("\n"), 1):
        if line and (
            (line[0] == "*" and _NODE_HEADER.match(line) is not None)
            # every pattern below needs one of these characters; most prose has none
            or (":" in line or "#" in line) and (_ORGPARSE_LINE.search(line) or _DRAWER_LINE.match(line))
        ):
            lines.append(line)
            numbers.append(n)
    return lines, numbers


Node = tuple[int, str, int, dict, list[str]]
"""What we read of an orgparse node: level, plain heading (no TODO keyword, priority or
tags: Org's search text of a heading, which `[[*Heading]]` links name), first line
(1-based), properties, tags."""


def _read_plain(lines: list[str]) -> list[Node]:
    """The nodes `orgparse.loadi(lines)` gives, root first, with orgparse's line splitting
    and #+TODO reading but our own heading and property readers. Theirs are regexes that
    take the square or the cube of a line's length on some lines (a 256-character line of
    colons: 0.1 s; 4 KB of them: 6 minutes); ours give the same on every line and take its
    length. Neither builds orgparse's date objects, which cost more than the rest and only
    ever raised on an impossible date somewhere in the file, which lost its headings' IDs.
    As in orgparse, #+TODO keywords anywhere apply to every heading.
    """
    chunks = list(lines_to_chunks(lines))
    rest = "\n".join(lines[len(chunks[0]) :])  # the headings and their sections
    todos, dones, default = ["TODO"], ["DONE"], True
    for chunk in chunks if "#+" in rest else chunks[:1]:
        comments: dict[str, list[str]] = {}
        for parsed in map(parse_comment, (line for line in chunk if "#+" in line)):
            if parsed:
                comments.setdefault(parsed[0].upper(), []).extend(parsed[1])
        for key in ("TODO", "SEQ_TODO", "TYP_TODO"):
            for value in comments.get(key, []):
                if default:  # the first one replaces orgparse's TODO/DONE
                    todos, dones, default = [], [], False
                more_todos, more_dones = parse_seq_todo(value)
                todos += more_todos
                dones += more_dones
    keywords = set(todos + dones)
    nodes: list[Node] = [(0, "", 1, _properties(chunks[0]), [])]
    linenumber = 1 + len(chunks[0])
    for chunk in chunks[1:]:
        heading, level = chunk[0], None
        stars = _level(heading)
        if stars is not None:
            heading, level = stars
        heading, tags = _tagged(heading)
        heading = _untodo(heading, keywords)
        heading = parse_heading_priority(heading)[0]  # anchored: one pass
        nodes.append((level, _plain(heading), linenumber, _properties(chunk[1:]), tags))
        linenumber += len(chunk)
    return nodes


# orgparse's heading and property readers (parse_heading_level, parse_heading_tags,
# parse_heading_todos, to_plain_text, parse_property), each giving what it gives, in one
# pass (tests/test_parse.py checks every string of a few characters against them).


def _level(line: str) -> tuple[str, int] | None:
    """(text, stars) of a heading line (`^(\\*+)\\s+(.*?)\\s*$`), or None."""
    stars = len(line) - len(line.lstrip("*"))
    if not stars or stars == len(line) or not line[stars].isspace():
        return None
    return line[stars:].strip(), stars


def _tagged(heading: str) -> tuple[str, list[str]]:
    """(`heading` without its trailing :tag1:tag2:, those tags), as orgparse's
    parse_heading_tags gives them (`(.*?)\\s*:([\\w@:]+):\\s*$`)."""
    t = heading.rstrip()
    if not t.endswith(":"):
        return heading, []
    i = len(t) - 1
    while i > 0 and (t[i - 1].isalnum() or t[i - 1] in "_@:"):
        i -= 1
    p = t.find(":", i, len(t) - 2)  # the run's first colon with a tag after it
    return (heading, []) if p < 0 else (heading[:p].rstrip(), t[p + 1 : -1].split(":"))


def _tag_set(tags: list[str]) -> tuple[str, ...]:
    """Heading tags as a Heading keeps them: lower-cased (as every tag of a note), once each."""
    return tuple(dict.fromkeys(t.lower() for t in tags if t)) if tags else ()


def _untodo(heading: str, keywords: set[str]) -> str:
    """`heading` without a leading TODO keyword."""
    if heading in keywords:
        return ""
    first, space, rest = heading.partition(" ")
    return rest if space and first in keywords else heading


def _plain(text: str) -> str:
    """[[link]] and [[link][description]] as their text."""
    if "[[" not in text:
        return text
    out: list[str] = []
    last, i, close = 0, text.find("[["), -1
    while i >= 0:
        if close < i + 2:  # the first "]" after the "[[", the same for a run of "[[[["
            close = text.find("]", i + 2)
            if close < 0:
                break
        end = desc = None
        if close > i + 2:
            if text.startswith("]", close + 1):
                end, desc = close + 2, text[i + 2 : close]
            elif text.startswith("[", close + 1):
                k = text.find("]", close + 2)
                if k > close + 2 and text.startswith("]", k + 1):
                    end, desc = k + 2, text[close + 2 : k]
        if end is None:
            i = text.find("[[", i + 1)
            continue
        out += (text[last:i], desc)
        last = end
        i = text.find("[[", end)
    return "".join(out) + text[last:] if out else text


def _property(line: str) -> tuple[str | None, str | None]:
    """(key, value) of a `:KEY: value` line (`^\\s*:(.*?):\\s*(.*?)\\s*$`), or (None, None).
    Values stay text (orgparse reads Effort as minutes; nothing here uses it)."""
    s = line.lstrip()
    q = s.find(":", 1) if s.startswith(":") else -1
    return (s[1:q], s[q + 1 :].strip()) if q > 0 else (None, None)


def _properties(lines: list[str]) -> dict:
    """The first :PROPERTIES: drawer in `lines`, read as orgparse reads it."""
    props = {}
    in_drawer = False
    for line in lines:
        if in_drawer:
            if line.find(":END:") >= 0:
                break
            key, value = _property(line)
            if key is not None and value is not None:
                props[key] = value
        elif line.find(":PROPERTIES:") >= 0:
            in_drawer = True
    return props


def filetags(value: str | None) -> list[str]:
    """`:a:b:` or `a b` as a list."""
    if not value:
        return []
    return [t for t in re.split(r"[:\s]+", value) if t]
