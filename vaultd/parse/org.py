"""Org-mode through orgparse: #+keywords, file and heading :ID:/:CUSTOM_ID:, headings."""

from __future__ import annotations

import re

import orgparse
from orgparse.date import OrgDate
from orgparse.inline import to_plain_text
from orgparse.node import (
    lines_to_chunks,
    parse_comment,
    parse_heading_level,
    parse_heading_priority,
    parse_heading_tags,
    parse_heading_todos,
    parse_property,
    parse_seq_todo,
)

from ..note import Heading
from .common import github_slug

# #+KEY: value, counted only at the start of a line (after spaces or tabs; see parse):
# a pattern that starts with a literal is found much faster than one anchored at ^.
_KEYWORD = re.compile(r"#\+(\w+):[ \t]*(.*?)[ \t]*$", re.MULTILINE)
_HEADING = re.compile(r"^(\*+)[ \t]+(.*)$", re.MULTILINE)
_STATS = re.compile(r"\s*\[\d*(?:%|/\d*)\]")
_NODE_HEADER = re.compile(r"^\*+ ")  # orgparse's own heading test
# Lines orgparse reads something we keep from (#+ keywords such as #+TODO, property
# drawers) or may fail on: any timestamp or CLOCK line, since an impossible date raises
# and we report that. Every orgparse date pattern holds a YYYY-MM-DD or CLOCK:. Each
# alternative starts with a literal, which keeps the search fast.
_ORGPARSE_LINE = re.compile(r"#\+|:(?:PROPERTIES|END):|CLOCK:|-\d\d-\d\d")
_DRAWER_LINE = re.compile(r"\s*:")  # property lines (orgparse: `^\s*:(.*?):`)
_DATE_HINT = re.compile(r"CLOCK:|-\d\d-\d\d")  # no orgparse date or clock without one


_BLOCK_BEGIN = re.compile(r"#\+begin_", re.IGNORECASE)


class OrgFacts:
    __slots__ = ("keywords", "headings", "uuids", "id_lines", "problems", "code")


def parse(text: str) -> OrgFacts:
    out = OrgFacts()
    out.problems = []
    out.code = _BLOCK_BEGIN.search(text) is not None  # a src/example/export block may be there
    out.keywords = {}
    for m in _KEYWORD.finditer(text):
        start = m.start()
        if not text[text.rfind("\n", 0, start) + 1 : start].strip(" \t"):
            out.keywords.setdefault(m.group(1).lower(), m.group(2))
    out.headings = []
    out.uuids = []
    out.id_lines = []  # (uuid, heading line) for heading-level :ID:s
    try:
        lines, numbers = _orgparse_lines(text)
        try:
            nodes = _read_plain(lines)
        except Exception:  # orgparse itself says what is wrong, as it would have
            nodes = None
        if nodes is None:
            root = orgparse.loadi(lines, filename="<string>")
            nodes = [(node.level, node.heading, node.linenumber, node.properties) for node in root]
        root_props = nodes[0][3]
        if root_props.get("ID"):
            out.uuids.append(str(root_props["ID"]))
        for level, heading, linenumber, props in nodes[1:]:
            title = (_STATS.sub("", heading) if "[" in heading else heading).strip()
            anchor = str(props.get("CUSTOM_ID") or "") or github_slug(title)
            line = numbers[linenumber - 1]
            out.headings.append(Heading(level, title, line, anchor))
            if props.get("ID"):
                out.uuids.append(str(props["ID"]))
                out.id_lines.append((str(props["ID"]), line))
    except Exception as e:  # orgparse is strict in places; fall back to plain heading lines
        out.problems.append(f"org structure not fully parsed: {e}")
        out.headings = [
            Heading(len(m.group(1)), m.group(2).strip(), text.count("\n", 0, m.start()) + 1, github_slug(m.group(2)))
            for m in _HEADING.finditer(text)
        ]
    return out


def _orgparse_lines(text: str) -> tuple[list[str], list[int]]:
    """The lines orgparse needs, with their 1-based numbers: most of a note is prose that
    orgparse would only scan for timestamps, clocks and drawers we never read.

    Leaving a line out changes nothing when orgparse would have ignored it. Every heading
    is kept, and so is the line after it (orgparse reads SCHEDULED/DEADLINE only there).
    Lines are split exactly as `orgparse.loads` splits them.
    """
    lines: list[str] = []
    numbers: list[int] = []
    after_heading = False
    for n, line in enumerate(text.splitlines(), 1):
        if not line:  # blank: kept only after a heading
            if after_heading:
                lines.append(line)
                numbers.append(n)
            after_heading = False
            continue
        heading = line[0] == "*" and _NODE_HEADER.match(line) is not None
        if heading or after_heading or (
            # every pattern below needs one of these characters; most prose has none
            (":" in line or "#" in line or "-" in line)
            and (_ORGPARSE_LINE.search(line) or _DRAWER_LINE.match(line))
        ):
            lines.append(line)
            numbers.append(n)
        after_heading = heading
    return lines, numbers


Node = tuple[int, str, int, dict]
"""What we read of an orgparse node: level, plain heading, first line (1-based), properties."""


def _read_plain(lines: list[str]) -> list[Node] | None:
    """The nodes `orgparse.loadi(lines)` would give, root first, read with orgparse's own
    line parsers but without building its date objects, which cost more than the rest.

    Only for files whose headings and sections hold no timestamp or clock (the root may:
    its timestamps are parsed, so an impossible date still raises); None otherwise. As in
    orgparse, #+TODO keywords anywhere apply to every heading.
    """
    chunks = list(lines_to_chunks(lines))
    rest = "\n".join(lines[len(chunks[0]) :])  # the headings and their sections
    if _DATE_HINT.search(rest):
        return None
    for line in chunks[0]:
        if _DATE_HINT.search(line):
            OrgDate.list_from_str(line)
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
    keywords = todos + dones
    nodes: list[Node] = [(0, "", 1, _properties(chunks[0]))]
    linenumber = 1 + len(chunks[0])
    for chunk in chunks[1:]:
        heading, level = chunk[0], None
        stars = parse_heading_level(heading)
        if stars is not None:
            heading, level = stars
        heading = parse_heading_tags(heading)[0]
        heading = parse_heading_todos(heading, keywords)[0]
        heading = parse_heading_priority(heading)[0]
        nodes.append((level, to_plain_text(heading), linenumber, _properties(chunk[1:])))
        linenumber += len(chunk)
    return nodes


def _properties(lines: list[str]) -> dict:
    """The first :PROPERTIES: drawer in `lines`, read as orgparse reads it."""
    props = {}
    in_drawer = False
    for line in lines:
        if in_drawer:
            if line.find(":END:") >= 0:
                break
            key, value = parse_property(line)
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
