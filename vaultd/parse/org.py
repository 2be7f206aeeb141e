"""Org-mode through orgparse: #+keywords, file and heading :ID:/:CUSTOM_ID:, headings."""

from __future__ import annotations

import re

import orgparse

from ..note import Heading
from .common import github_slug

_KEYWORD = re.compile(r"^[ \t]*#\+(\w+):[ \t]*(.*?)[ \t]*$", re.MULTILINE)
_HEADING = re.compile(r"^(\*+)[ \t]+(.*)$", re.MULTILINE)
_STATS = re.compile(r"\s*\[\d*(?:%|/\d*)\]")


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
        root = orgparse.loads(text)
        if root.properties.get("ID"):
            out.uuids.append(str(root.properties["ID"]))
        for node in root[1:]:
            title = _STATS.sub("", node.heading).strip()
            props = node.properties
            anchor = str(props.get("CUSTOM_ID") or "") or github_slug(title)
            out.headings.append(Heading(node.level, title, node.linenumber, anchor))
            if props.get("ID"):
                out.uuids.append(str(props["ID"]))
                out.id_lines.append((str(props["ID"]), node.linenumber))
    except Exception as e:  # orgparse is strict in places; fall back to plain heading lines
        out.problems.append(f"org structure not fully parsed: {e}")
        out.headings = [
            Heading(len(m.group(1)), m.group(2).strip(), text.count("\n", 0, m.start()) + 1, github_slug(m.group(2)))
            for m in _HEADING.finditer(text)
        ]
    return out


def filetags(value: str | None) -> list[str]:
    """`:a:b:` or `a b` as a list."""
    if not value:
        return []
    return [t for t in re.split(r"[:\s]+", value) if t]
