"""Denote file names: IDENTIFIER==SIGNATURE--TITLE__KEYWORDS.EXT (every part but the
identifier optional). https://protesilaos.com/emacs/denote#h:4e9c7512-84dc-4dfb-9fa9-e15d51178e5d"""

from __future__ import annotations

import re

import msgspec

IDENTIFIER = re.compile(r"\d{8}T\d{6}")
_NAME = re.compile(
    r"^(?P<id>\d{8}T\d{6})"
    r"(?:==(?P<sig>[^-_]+?(?:=[^-_]+?)*))?"
    r"(?:--(?P<title>.*?))?"
    r"(?:__(?P<kw>.*?))?$",
    re.DOTALL,
)


class DenoteName(msgspec.Struct):
    id: str
    signature: str | None
    title: str | None
    keywords: list[str]

    @property
    def date(self) -> str:
        i = self.id
        return f"{i[0:4]}-{i[4:6]}-{i[6:8]}T{i[9:11]}:{i[11:13]}:{i[13:15]}"


def parse_name(stem: str) -> DenoteName | None:
    """The parts of a Denote file name (without extension), or None if it is not one."""
    m = _NAME.match(stem)
    if not m:
        return None
    title = m["title"]
    kws = [k for k in (m["kw"] or "").split("_") if k]
    return DenoteName(
        id=m["id"],
        signature=m["sig"] or None,
        title=title.replace("-", " ").strip() or None if title else None,
        keywords=kws,
    )


TEXT_SUFFIX = ".txt"
"""Denote's plain-text file type: a `.txt` file is a note when its name is a Denote name."""


def is_text_note(name: str) -> bool:
    """Whether a file name (no folder) is a Denote plain-text note: `.txt`, its stem a Denote name."""
    return name.lower().endswith(TEXT_SUFFIX) and parse_name(name[: -len(TEXT_SUFFIX)]) is not None


_TEXT_KEY = re.compile(r"^(title|date|tags|identifier|signature):[ \t]*(.*)$")
_TEXT_RULE = re.compile(r"^-{3,}[ \t]*$")


def text_front_matter(lines: list[str]) -> tuple[dict[str, str], int]:
    """The front matter Denote writes atop a plain-text note (`title:      ...`, `date:`,
    `tags:` (space-separated), `identifier:`, then a line of dashes), as a dict of its
    values, and how many lines it takes (0 when the note has none)."""
    meta: dict[str, str] = {}
    i = 0
    while i < len(lines) and (m := _TEXT_KEY.match(lines[i])):
        meta.setdefault(m[1], m[2].strip())
        i += 1
    if meta and i < len(lines) and _TEXT_RULE.match(lines[i]):
        i += 1
    return meta, i if meta else 0


_DENOTE_DROPPED = re.compile(r"[\]\[{}!@#$%^&*()+'\"?,.|;:~`‘’“”/=]")
"""What Denote's default title slug drops (`denote-sluggify-title`, as Denote's manual gives it)."""


def denote_slug(title: str) -> str:
    """The title part of a Denote file name, as Denote's default `denote-sluggify-title`
    makes it: its punctuation dropped, each blank and underscore a hyphen, runs of hyphens
    one, none at either end, lower case (any script: 가치관 stays itself)."""
    s = re.sub(r"[_ ]", "-", _DENOTE_DROPPED.sub("", title))
    return re.sub(r"-{2,}", "-", s).strip("-").lower()


def mismatch(name_id: str, keyword_id: str) -> str:
    """The problem of a note whose identifier keyword disagrees with its file name."""
    return (f"file name says {name_id}, identifier keyword says {keyword_id}; Denote follows the file name "
            f"(fix the keyword to {name_id}, or rename the file)")
