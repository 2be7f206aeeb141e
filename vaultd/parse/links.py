"""Where the links of a note are, -> Link, with 1-based line and column (characters).

Nothing inside code counts: Markdown fences, indented code and `inline code`; Org
src/example/export blocks, `: ` fixed-width lines, =verbatim= and ~code~. Look-alikes
are not links: `[[TIP("...")]]` and `[[/TIP]]` macros, `[[ ]]`, `[[:digit:]]`.
This module finds the written forms (`[[…]]`, `[…](…)`, bare URLs: syntaxes.BRACKET,
MARKDOWN, BARE_URL) in each line and hands each to the unit of its syntax
(parse/syntaxes.py), which reads it into a Link and says what it reads as in the body;
resolving and rewriting are the units' too.
"""

from __future__ import annotations

import re
from operator import itemgetter
from urllib.parse import unquote

from ..note import Block, Link
from .common import fence_step
from .syntaxes import BARE_URL, BRACKET, BY_KIND, DENDRON, EMBED, INTERNAL, LOOKALIKE, MARKDOWN, MARKDOWN_LINK, \
    MD_SCHEMES, ORG_TYPES, SCHEME, URL, WIKI

_OPEN_DESC = re.compile(r"\[\[[^\[\]\n]+\]\[[^\]\n]*$")  # an Org description that goes on next line
_MD_BLOCK_ID = re.compile(r"(?:^|(?<=[\s\])]))\^([A-Za-z0-9_-]+)\s*$")
_ORG_TARGET = re.compile(r"<<([^<>\n]+)>>")
_MD_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")
_ORG_VERBATIM = re.compile(r"(?:^|(?<=[\s(\"'{]))([=~])(?=\S)(?:(?!\1).)*?(?<=\S)\1(?=$|[\s\-.,:!?;'\")}\[])")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")
_ORG_META = re.compile(r"^\s*(?::[\w-]+:|#\+\w+:)")
_ORG_KEYWORD = re.compile(r"^\s*#\+(?:title|subtitle|filetags|description|author|keywords):\s*(.*)$", re.IGNORECASE)
_ORG_BLOCK = re.compile(r"^\s*#\+begin_(src|example|export|verse_src)\b", re.IGNORECASE)


def _mask(line: str, pattern: re.Pattern) -> str:
    """The line with every match of `pattern` blanked, so columns stay put."""
    return pattern.sub(lambda m: " " * len(m.group()), line)


def _bracket_link(line: str, m: re.Match, start: int, lineno: int, org: bool) -> Link | None:
    """The link a BRACKET match (found on the masked line) stands for, read from `line` by
    its unit: an Org link of a type that names a note (syntaxes.ORG_TYPES), a URL, an Org
    link within the note, else a wikilink, embed or link within the note."""
    a, b = m.span(2)
    desc = None if a < 0 else line[a:b].replace("\n", " ")
    a, b = m.span(1)
    target = line[a:b]
    if "\\" in target:
        target = target.replace("\\]", "]").replace("\\[", "[").replace("\\|", "|")  # `\|` inside tables
    col = start + 1
    raw = line[start : m.end()]
    if desc is not None or org or (":" in target and SCHEME.match(target)):
        # Org syntax: [[type:path::search][description]]
        label = desc or ""
        if target.startswith("<") and target.endswith(">"):
            target = target[1:-1]  # [[<https://...>][]]
        head, sep, rest = target.partition(":")
        unit = ORG_TYPES.get(head.lower()) if sep else None  # only ASCII letters lower to these
        if unit is not None:
            return unit.read(lineno, col, raw, rest, label)
        sm = SCHEME.match(target) if sep else None
        scheme = sm.group(1).lower() if sm else ""
        if scheme == "dendron":  # [[dendron://vault/note.name]]
            target = DENDRON.strip_vault(target)
        elif scheme:
            return URL.read(lineno, col, raw, target, label)
        elif org:
            if not target.strip():
                return None
            # [[*Heading]], [[#custom-id]], [[fuzzy]]: a place in this same file
            return INTERNAL.read(lineno, col, raw, target.strip(), label)
    # Obsidian wikilink or embed: [[target#anchor|alias]]
    name, _, alias = target.partition("|")
    if LOOKALIKE.match(name):
        return None
    name, _, anchor = name.partition("#")
    if not name.strip():
        return INTERNAL.read(lineno, col, raw, anchor.strip(), alias.strip())
    unit = EMBED if start < m.start() else WIKI  # the match starts after a `!`
    return unit.read(lineno, col, raw, name.strip(), anchor.strip(), alias.strip())


def _md_link(line: str, m: re.Match, start: int, lineno: int) -> Link | None:
    """The link a MARKDOWN match (found on the masked line) stands for, read from `line` by
    its unit: of a scheme that names a note (syntaxes.MD_SCHEMES), a URL, a link within the
    note, else a Markdown link to a file."""
    a, b = m.span(2)
    dest = line[a:b]
    if dest.startswith("<"):
        dest = dest[1:-1]
    if not dest:
        return None
    a, b = m.span(1)
    text = line[a:b]
    col = start + 1
    raw = line[start : m.end()]
    if ":" in dest:  # both a scheme and "://" need one
        scheme = dest.split(":", 1)[0].lower()
        unit = MD_SCHEMES.get(scheme)
        if unit is not None:  # Denote's Markdown links: [label](denote:ID)
            return unit.read(lineno, col, raw, dest[len(scheme) + 1 :], text)
        if scheme == "file":
            dest = dest[5:]
        elif SCHEME.match(dest) or "://" in dest:
            return URL.read(lineno, col, raw, dest, text)
    path, _, anchor = dest.partition("#")
    if "%" in dest:  # unquote returns text without one as it is
        path, anchor = unquote(path), unquote(anchor)
    if not path:
        return INTERNAL.read(lineno, col, raw, anchor, text)
    return MARKDOWN_LINK.read(lineno, col, raw, path, anchor, text)


def _shown(link: Link, written: str) -> str:
    """What a link reads as in the body: its label (syntaxes), or its text as `written` there."""
    unit = BY_KIND[link.kind]
    return written if unit.as_written else unit.label(link)


def _scan_line(line: str, lineno: int, org: bool, links: list[Link], cont: str = "") -> str:
    """Add the links of one line to `links`; return the line with links read as their labels.
    `cont` is the next line, for an Org link whose description goes on there.

    Each pattern runs only when its literal part ("[[", "](", "://") is in the line, and
    from where that part first is: no match can start before it (a link of a note is
    most often at the end of a long line of prose)."""
    first = len(line)
    if cont:
        line = line + "\n" + cont
        masked = line.replace("\n", " ")
    else:
        masked = line
    if ("=" in masked or "~" in masked) if org else "`" in masked:
        masked = _mask(masked, _ORG_VERBATIM if org else _MD_INLINE_CODE)
    found: list[tuple[int, int, Link]] = []  # (start, end, link); starts never repeat
    taken: list[tuple[int, int]] = []
    at = masked.find("[[")
    if at >= 0:
        # Not past the last "]]", which every such link ends with: a description is looked
        # for up to the next "]]", and a line of "[[a][" with none would be scanned to its
        # end from every "[[" (its square: 2 s for 40 KB).
        for m in BRACKET.finditer(masked, at, masked.rfind("]]") + 2):
            start, end = m.span()
            if start and masked[start - 1] == "!":
                start -= 1
            taken.append((start, end))
            link = _bracket_link(line, m, start, lineno, org)
            if link is not None and start < first:
                found.append((start, end, link))
    if not org and "(" in masked and "](" in masked:
        for m in MARKDOWN.finditer(masked, masked.find("[")):
            start, end = m.span()
            if start and masked[start - 1] == "!":
                start -= 1
            if taken and any(a <= start < b for a, b in taken):
                continue
            taken.append((start, end))
            link = _md_link(line, m, start, lineno)
            if link is not None and start < first:
                found.append((start, end, link))
    at = masked.find("://") if ":" in masked else -1
    if at >= 0:
        for m in BARE_URL.finditer(masked, max(0, at - 5)):  # "https" is the longest scheme before it
            start = m.start()
            if start >= first or taken and any(a <= start < b for a, b in taken):
                continue
            url = m.group().rstrip(".,;:!?*_~")
            found.append((start, start + len(url), URL.read(lineno, start + 1, url, url)))
    if not found:
        return line[:first]
    if len(found) == 1:  # most lines with a link have one
        a, b, link = found[0]
        links.append(link)
        return line[:a] + _shown(link, line[a:b]) + line[b if b < first else first : first]
    found.sort(key=itemgetter(0))
    out, last = [], 0
    for a, b, link in found:
        links.append(link)
        out += [line[last:a], _shown(link, line[a:b])]
        last = b if b < first else first
    out.append(line[last:first])
    return "".join(out)


def links_in(text: str, org: bool) -> list[Link]:
    """Every link in one line of text, as a note's line is read (inline code and Org
    verbatim aside), but with no block around it: the text an editor has at its cursor
    (`resolve`). Line 1; columns in characters of `text`."""
    links: list[Link] = []
    _scan_line(text.replace("\n", " "), 1, org, links)
    return links


def extract(lines: list[str], first: int, org: bool, code: bool = True) -> tuple[list[Link], list[Block], list[str]]:
    """Links and block ids in `lines` (numbered from `first`), and the lines as body text.
    `code`: whether code blocks may be there; when not, only the lines that can hold a
    link or an id are looked at.

    Most lines are plain prose: each test below is guarded by a substring that its
    pattern cannot match without, so such lines cost a few `in` checks."""
    if org:
        return _extract_org(lines, first, code)
    return _extract_md(lines, first, code)


def _extract_org(lines: list[str], first: int, code: bool) -> tuple[list[Link], list[Block], list[str]]:
    links: list[Link] = []
    blocks: list[Block] = []
    body = lines.copy()  # most lines are body text as they are; the others are replaced
    org_block: str | None = None
    rows = enumerate(lines)
    if not code:  # no block to be inside of: the lines the loop below would skip are left out
        rows = [(i, line) for i, line in rows if ":" in line or "[" in line or "<" in line and "<<" in line]  # (a URL has a ":")
    for i, line in rows:
        if not line:
            continue
        if org_block is not None:
            if "#" in line and "#+" in line and re.match(rf"^\s*#\+end_{org_block}\b", line, re.IGNORECASE):
                org_block = None
            continue
        if "#" in line and "#+" in line:
            bm = _ORG_BLOCK.match(line)
            if bm:
                org_block = bm.group(1)
                continue
        if ":" in line:
            if line.lstrip().startswith(": ") or line.strip() == ":":
                continue
            if line[:1] in (":", "#", " ", "\t") and _ORG_META.match(line):
                km = _ORG_KEYWORD.match(line)  # keep what a keyword says, drop drawer lines
                body[i] = km.group(1) if km and km.group(1) else ""
                continue
        if "<" in line and "<<" in line:
            blocks.extend(Block(t.group(1).strip(), i + first) for t in _ORG_TARGET.finditer(line))
        if "[" not in line and ("://" not in line if ":" in line else True):
            continue
        # an open description ends the line, so its "][" holds the line's last "]"
        cont = lines[i + 1] if i + 1 < len(lines) and line.startswith("[", line.rfind("]") + 1) \
            and _OPEN_DESC.search(line) else ""
        body[i] = _scan_line(line, i + first, True, links, cont)
    return links, blocks, body


def _extract_md(lines: list[str], first: int, code: bool) -> tuple[list[Link], list[Block], list[str]]:
    links: list[Link] = []
    blocks: list[Block] = []
    body = lines.copy()  # most lines are body text as they are; the others are replaced
    fence: tuple[str, int] | None = None
    prev_blank, in_list = True, False
    rows = enumerate(lines)
    if not code:  # no fence, no indented line: the state below never counts, the lines left out do nothing
        rows = [(i, line) for i, line in rows if "[" in line or "^" in line or ":" in line and "://" in line]
    for i, line in rows:
        if fence is not None or "`" in line and "```" in line or "~" in line and "~~~" in line:
            is_fence, fence = fence_step(line, fence)
            if is_fence or fence is not None:
                continue
        if not line:
            prev_blank = True
            continue
        blank = not line.strip()
        if line.startswith(("    ", "\t")) and prev_blank and not in_list and not _LIST_ITEM.match(line):
            prev_blank = blank  # indented code block
            continue
        if not blank:
            # a line that starts with a letter is no list item
            in_list = (not line[0].isalpha() and _LIST_ITEM.match(line) is not None) or (in_list and line[:1] in " \t")
        prev_blank = blank
        if "^" in line:
            bid = _MD_BLOCK_ID.search(line)
            if bid:
                blocks.append(Block(bid.group(1), i + first))
        if "[" in line or ":" in line and "://" in line:
            body[i] = _scan_line(line, i + first, False, links)
    return links, blocks, body
