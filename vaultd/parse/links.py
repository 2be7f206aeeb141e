"""Every link syntax in a line of text -> Link, with 1-based line and column (characters).

Nothing inside code counts: Markdown fences, indented code and `inline code`; Org
src/example/export blocks, `: ` fixed-width lines, =verbatim= and ~code~. Look-alikes
are not links: `[[TIP("...")]]` and `[[/TIP]]` macros, `[[ ]]`, `[[:digit:]]`.
Resolution happens later, in graph.py, against the whole vault.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

from ..note import Block, Link
from .common import fence_step

# [[target]] or [[target][description]] (Org), also Obsidian [[target|alias]] and ![[embed]]
_BRACKET = re.compile(r"(!?)\[\[((?:[^\[\]\n\\]|\\.)+?)\](?:\[([^\n]*?)\])?\]")
# [text](target "title") and ![alt](target)
_MDLINK = re.compile(
    r"(!?)\[((?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]"
    r"\(\s*(<[^<>\n]*>|[^\s()<>]*(?:\([^\s()]*\)[^\s()<>]*)*)(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?\s*\)"
)
_OPEN_DESC = re.compile(r"\[\[[^\[\]\n]+\]\[[^\]\n]*$")  # an Org description that goes on next line
_URL = re.compile(r"\b(?:https?|ftp)://[^\s<>\[\]()\"'`]+")
_SCHEME = re.compile(r"^([a-zA-Z][\w+.-]*):")
# [[TIP("...")]] and [[/TIP]] macros, [[:digit:]] character classes, [[ ]]
_LOOKALIKE = re.compile(r"^(?:\w+\(.*\)|/\w+|:.*|\s*)$")
_MD_BLOCK_ID = re.compile(r"(?:^|(?<=[\s\])]))\^([A-Za-z0-9_-]+)\s*$")
_ORG_TARGET = re.compile(r"<<([^<>\n]+)>>")
_MD_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
_ORG_VERBATIM = re.compile(r"(?:^|(?<=[\s(\"'{]))([=~])(?=\S)(?:(?!\1).)*?(?<=\S)\1(?=$|[\s\-.,:!?;'\")}\[])")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")
_ORG_META = re.compile(r"^\s*(?::[\w-]+:|#\+\w+:)")
_ORG_KEYWORD = re.compile(r"^\s*#\+(?:title|subtitle|filetags|description|author|keywords):\s*(.*)$", re.IGNORECASE)
_ORG_BLOCK = re.compile(r"^\s*#\+begin_(src|example|export|verse_src)\b", re.IGNORECASE)

NOTE_SCHEMES = ("file", "id", "denote")


def _mask(line: str, pattern: re.Pattern) -> str:
    """The line with every match of `pattern` blanked, so columns stay put."""
    return pattern.sub(lambda m: " " * len(m.group()), line)


def _split_search(target: str) -> tuple[str, str]:
    """`rel.org::*Heading` -> ("rel.org", "*Heading")."""
    path, sep, opt = target.partition("::")
    return path, opt if sep else ""


def _bracket_link(m: re.Match, lineno: int, org: bool) -> Link | None:
    bang, desc = m.group(1), m.group(3) and m.group(3).replace("\n", " ")
    target = m.group(2).replace("\\]", "]").replace("\\[", "[").replace("\\|", "|")  # `\|` inside tables
    col = m.start() + 1
    raw = m.group()
    if desc is not None or _SCHEME.match(target) or org:
        # Org syntax: [[type:path::search][description]]
        label = desc or ""
        if target.startswith("<") and target.endswith(">"):
            target = target[1:-1]  # [[<https://...>][]]
        sm = _SCHEME.match(target)
        scheme = sm.group(1).lower() if sm else ""
        rest = target[sm.end():] if sm else target
        if scheme in ("file", "file+sys", "file+emacs"):
            path, opt = _split_search(rest)
            return Link(line=lineno, col=col, raw=raw, kind="file", target=path.strip(), anchor=opt.strip(), label=label)
        if scheme == "denote":
            ident, opt = _split_search(rest)
            return Link(line=lineno, col=col, raw=raw, kind="denote", target=ident.strip(), anchor=opt.strip(), label=label)
        if scheme == "id":
            ident, opt = _split_search(rest)
            return Link(line=lineno, col=col, raw=raw, kind="id", target=ident.strip(), anchor=opt.strip(), label=label)
        if scheme == "dendron":  # [[dendron://vault/note.name]]
            target = re.sub(r"^dendron://[^/]*/", "", target)
        elif scheme:
            return Link(line=lineno, col=col, raw=raw, kind="url", target=target, label=label)
        elif org:
            if not target.strip():
                return None
            # [[*Heading]], [[#custom-id]], [[fuzzy]]: a place in this same file
            return Link(line=lineno, col=col, raw=raw, kind="internal", target="", anchor=target.strip(), label=label)
    # Obsidian wikilink or embed: [[target#anchor|alias]]
    name, _, alias = target.partition("|")
    if _LOOKALIKE.match(name):
        return None
    name, _, anchor = name.partition("#")
    if not name.strip():
        return Link(line=lineno, col=col, raw=raw, kind="internal", target="", anchor=anchor.strip(), label=alias.strip())
    kind = "embed" if bang else "wiki"
    return Link(line=lineno, col=col, raw=raw, kind=kind, target=name.strip(), anchor=anchor.strip(), label=alias.strip())


def _md_link(m: re.Match, lineno: int) -> Link | None:
    text, dest = m.group(2), m.group(3)
    if dest.startswith("<"):
        dest = dest[1:-1]
    if not dest:
        return None
    col = m.start() + 1
    if (_SCHEME.match(dest) or "://" in dest) and not dest.lower().startswith("file:"):
        return Link(line=lineno, col=col, raw=m.group(), kind="url", target=dest, label=text)
    if dest.lower().startswith("file:"):
        dest = dest[5:]
    path, _, anchor = dest.partition("#")
    path = unquote(path)
    anchor = unquote(anchor)
    if not path:
        return Link(line=lineno, col=col, raw=m.group(), kind="internal", target="", anchor=anchor, label=text)
    return Link(line=lineno, col=col, raw=m.group(), kind="md", target=path, anchor=anchor, label=text)


def _label(link: Link) -> str:
    """What a link reads as in running text (for the searchable body)."""
    if link.label:
        return link.label
    if link.kind in ("wiki", "embed"):
        return link.target.rsplit("/", 1)[-1] + (f" {link.anchor}" if link.anchor and not link.anchor.startswith("^") else "")
    if link.kind == "internal":
        return link.anchor.lstrip("*#")
    if link.kind == "url":
        return link.target
    return ""


def _scan_line(line: str, lineno: int, org: bool, links: list[Link], cont: str = "") -> str:
    """Add the links of one line to `links`; return the line with links read as their labels.
    `cont` is the next line, for an Org link whose description goes on there."""
    first = len(line)
    if cont:
        line = line + "\n" + cont
    masked = line.replace("\n", " ")
    if ("=" in masked or "~" in masked) if org else "`" in masked:
        masked = _mask(masked, _ORG_VERBATIM if org else _MD_INLINE_CODE)
    found: list[tuple[int, int, Link]] = []
    taken: list[tuple[int, int]] = []
    for m in _BRACKET.finditer(masked):
        link = _bracket_link(_Same(m, line), lineno, org)
        taken.append(m.span())
        if link is not None:
            found.append((m.start(), m.end(), link))
    if not org:
        for m in _MDLINK.finditer(masked):
            if any(a <= m.start() < b for a, b in taken):
                continue
            link = _md_link(_Same(m, line), lineno)
            taken.append(m.span())
            if link is not None:
                found.append((m.start(), m.end(), link))
    for m in _URL.finditer(masked):
        if any(a <= m.start() < b for a, b in taken):
            continue
        url = m.group().rstrip(".,;:!?*_~")
        found.append((m.start(), m.start() + len(url), Link(line=lineno, col=m.start() + 1, raw=url, kind="url", target=url)))
    found = [f for f in found if f[0] < first]
    if not found:
        return line[:first]
    found.sort(key=lambda t: t[0])
    out, last = [], 0
    for a, b, link in found:
        links.append(link)
        out += [line[last:a], _label(link) if link.kind != "url" else line[a:b]]
        last = min(b, first)
    out.append(line[last:first])
    return "".join(out)


class _Same:
    """A match object over the original line for a match found on the masked one."""

    __slots__ = ("_m", "_line")

    def __init__(self, m: re.Match, line: str):
        self._m, self._line = m, line

    def group(self, i: int = 0):
        a, b = self._m.span(i)
        return None if a < 0 else self._line[a:b]

    def start(self, i: int = 0) -> int:
        return self._m.start(i)

    def end(self, i: int = 0) -> int:
        return self._m.end(i)

    def span(self, i: int = 0):
        return self._m.span(i)


def extract(lines: list[str], first: int, org: bool) -> tuple[list[Link], list[Block], list[str]]:
    """Links and block ids in `lines` (numbered from `first`), and the lines as body text."""
    links: list[Link] = []
    blocks: list[Block] = []
    body: list[str] = []
    fence: tuple[str, int] | None = None
    org_block: str | None = None
    prev_blank, in_list = True, False
    for n, line in enumerate(lines, start=first):
        if org:
            if org_block is not None:
                if re.match(rf"^\s*#\+end_{org_block}\b", line, re.IGNORECASE):
                    org_block = None
                body.append(line)
                continue
            bm = _ORG_BLOCK.match(line)
            if bm:
                org_block = bm.group(1)
                body.append(line)
                continue
            if line.lstrip().startswith(": ") or line.strip() == ":":
                body.append(line)
                continue
            if line[:1] in (":", "#", " ", "\t") and _ORG_META.match(line):
                km = _ORG_KEYWORD.match(line)  # keep what a keyword says, drop drawer lines
                body.append(km.group(1) if km and km.group(1) else "")
                continue
            if "[" not in line and "://" not in line:
                if "<<" in line:
                    blocks.extend(Block(t.group(1).strip(), n) for t in _ORG_TARGET.finditer(line))
                body.append(line)
                continue
            for t in _ORG_TARGET.finditer(line):
                blocks.append(Block(t.group(1).strip(), n))
            i = n - first
            cont = lines[i + 1] if i + 1 < len(lines) and _OPEN_DESC.search(line) else ""
            body.append(_scan_line(line, n, True, links, cont))
            continue
        is_fence, fence = fence_step(line, fence)
        if is_fence or fence is not None:
            body.append(line)
            continue
        blank = not line.strip()
        if line.startswith(("    ", "\t")) and prev_blank and not in_list and not _LIST_ITEM.match(line):
            body.append(line)  # indented code block
            prev_blank = blank
            continue
        if not blank:
            in_list = bool(_LIST_ITEM.match(line)) or (in_list and line[:1] in " \t")
        prev_blank = blank
        if "^" in line:
            bid = _MD_BLOCK_ID.search(line)
            if bid:
                blocks.append(Block(bid.group(1), n))
        body.append(_scan_line(line, n, False, links) if "[" in line or "://" in line else line)
    return links, blocks, body
