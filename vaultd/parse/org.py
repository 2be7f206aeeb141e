"""Org-mode through orgparse: #+keywords, file and heading :ID:/:CUSTOM_ID:, headings."""

from __future__ import annotations

import re

import orgparse

from ..note import Heading
from .common import github_slug

_KEYWORD = re.compile(r"^[ \t]*#\+(\w+):[ \t]*(.*?)[ \t]*$", re.MULTILINE)
_HEADING = re.compile(r"^(\*+)[ \t]+(.*)$", re.MULTILINE)
_STATS = re.compile(r"\s*\[\d*(?:%|/\d*)\]")
_NODE_HEADER = re.compile(r"^\*+ ")  # orgparse's own heading test
# Lines orgparse reads something we keep from (#+ keywords such as #+TODO, property
# drawers) or may fail on: any timestamp or CLOCK line, since an impossible date raises
# and we report that. Every orgparse date pattern holds a YYYY-MM-DD or CLOCK:. Each
# alternative starts with a literal, which keeps the search fast.
_ORGPARSE_LINE = re.compile(r"#\+|:(?:PROPERTIES|END):|CLOCK:|-\d\d-\d\d")
_DRAWER_LINE = re.compile(r"\s*:")  # property lines (orgparse: `^\s*:(.*?):`)


class OrgFacts:
    __slots__ = ("keywords", "headings", "uuids", "id_lines", "problems")


def parse(text: str) -> OrgFacts:
    out = OrgFacts()
    out.problems = []
    out.keywords = {}
    for m in _KEYWORD.finditer(text):
        out.keywords.setdefault(m.group(1).lower(), m.group(2))
    out.headings = []
    out.uuids = []
    out.id_lines = []  # (uuid, heading line) for heading-level :ID:s
    try:
        lines, numbers = _orgparse_lines(text)
        root = orgparse.loadi(lines, filename="<string>")
        if root.properties.get("ID"):
            out.uuids.append(str(root.properties["ID"]))
        for node in root[1:]:
            title = _STATS.sub("", node.heading).strip()
            props = node.properties
            anchor = str(props.get("CUSTOM_ID") or "") or github_slug(title)
            line = numbers[node.linenumber - 1]
            out.headings.append(Heading(node.level, title, line, anchor))
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
        heading = line[:1] == "*" and _NODE_HEADER.match(line) is not None
        if heading or after_heading or _ORGPARSE_LINE.search(line) or _DRAWER_LINE.match(line):
            lines.append(line)
            numbers.append(n)
        after_heading = heading
    return lines, numbers


def filetags(value: str | None) -> list[str]:
    """`:a:b:` or `a b` as a list."""
    if not value:
        return []
    return [t for t in re.split(r"[:\s]+", value) if t]
