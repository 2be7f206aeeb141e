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
