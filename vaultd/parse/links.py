"""Every link syntax in a line of text -> Link, with 1-based line and column (characters).

Nothing inside code counts: Markdown fences, indented code and `inline code`; Org
src/example/export blocks, `: ` fixed-width lines, =verbatim= and ~code~. Look-alikes
are not links: `[[TIP("...")]]` and `[[/TIP]]` macros, `[[ ]]`, `[[:digit:]]`.
Resolution happens later, in store/graph.py, against the whole vault. `retarget` writes each
syntax read here anew, leading elsewhere (the splitter's rewrites).
"""

from __future__ import annotations

import posixpath
import re
from operator import itemgetter
from urllib.parse import quote, unquote

from ..note import Block, Link
from .common import fence_step

# [[target]] or [[target][description]] (Org), also Obsidian [[target|alias]] and ![[embed]].
# The `!` of an embed is the character before the match (see _scan_line): a pattern that
# begins with a literal lets the regex engine skip straight to candidates.
# Runs of plain characters are matched possessively (`++`), which is much faster than a
# character at a time; they can only end at a bracket, newline or backslash anyway.
_BRACKET = re.compile(r"\[\[((?:[^\[\]\n\\]++|\\.)+)\](?:\[([^\n]*?)\])?\]")
# [text](target "title") and ![alt](target)
_MDLINK = re.compile(
    r"\[((?:[^\[\]\n]++|\[[^\[\]\n]*\])*)\]"
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


_NOTE_KIND = {"file": "file", "file+sys": "file", "file+emacs": "file", "denote": "denote", "id": "id"}
"""Org link types that name a note, and the kind of link each is."""


def _bracket_link(line: str, m: re.Match, start: int, lineno: int, org: bool) -> Link | None:
    """The link a _BRACKET match (found on the masked line) stands for, read from `line`."""
    a, b = m.span(2)
    desc = None if a < 0 else line[a:b].replace("\n", " ")
    a, b = m.span(1)
    target = line[a:b]
    if "\\" in target:
        target = target.replace("\\]", "]").replace("\\[", "[").replace("\\|", "|")  # `\|` inside tables
    col = start + 1
    raw = line[start : m.end()]
    if desc is not None or org or (":" in target and _SCHEME.match(target)):
        # Org syntax: [[type:path::search][description]]
        label = desc or ""
        if target.startswith("<") and target.endswith(">"):
            target = target[1:-1]  # [[<https://...>][]]
        head, sep, rest = target.partition(":")
        kind = _NOTE_KIND.get(head.lower()) if sep else None  # only ASCII letters lower to these
        if kind is not None:
            # [[file:path::search]], [[denote:ID::search]], [[id:UUID::search]]
            path, _, opt = rest.partition("::")
            return Link(line=lineno, col=col, raw=raw, kind=kind, target=path.strip(), anchor=opt.strip(), label=label)
        sm = _SCHEME.match(target) if sep else None
        scheme = sm.group(1).lower() if sm else ""
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
    kind = "embed" if start < m.start() else "wiki"  # the match starts after a `!`
    return Link(line=lineno, col=col, raw=raw, kind=kind, target=name.strip(), anchor=anchor.strip(), label=alias.strip())


def _md_link(line: str, m: re.Match, start: int, lineno: int) -> Link | None:
    """The link an _MDLINK match (found on the masked line) stands for, read from `line`."""
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
        if scheme in ("denote", "id"):  # Denote's Markdown links: [label](denote:ID)
            ident, _, anchor = dest[len(scheme) + 1 :].partition("::")
            return Link(line=lineno, col=col, raw=raw, kind=scheme, target=ident.strip(), anchor=anchor.strip(),
                        label=text)
        if scheme == "file":
            dest = dest[5:]
        elif _SCHEME.match(dest) or "://" in dest:
            return Link(line=lineno, col=col, raw=raw, kind="url", target=dest, label=text)
    path, _, anchor = dest.partition("#")
    if "%" in dest:  # unquote returns text without one as it is
        path, anchor = unquote(path), unquote(anchor)
    if not path:
        return Link(line=lineno, col=col, raw=raw, kind="internal", target="", anchor=anchor, label=text)
    return Link(line=lineno, col=col, raw=raw, kind="md", target=path, anchor=anchor, label=text)


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
        for m in _BRACKET.finditer(masked, at, masked.rfind("]]") + 2):
            start, end = m.span()
            if start and masked[start - 1] == "!":
                start -= 1
            taken.append((start, end))
            link = _bracket_link(line, m, start, lineno, org)
            if link is not None and start < first:
                found.append((start, end, link))
    if not org and "(" in masked and "](" in masked:
        for m in _MDLINK.finditer(masked, masked.find("[")):
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
        for m in _URL.finditer(masked, max(0, at - 5)):  # "https" is the longest scheme before it
            start = m.start()
            if start >= first or taken and any(a <= start < b for a, b in taken):
                continue
            url = m.group().rstrip(".,;:!?*_~")
            found.append((start, start + len(url), Link(line=lineno, col=start + 1, raw=url, kind="url", target=url)))
    if not found:
        return line[:first]
    if len(found) == 1:  # most lines with a link have one
        a, b, link = found[0]
        links.append(link)
        return line[:a] + (_label(link) if link.kind != "url" else line[a:b]) + line[b if b < first else first : first]
    found.sort(key=itemgetter(0))
    out, last = [], 0
    for a, b, link in found:
        links.append(link)
        out += [line[last:a], _label(link) if link.kind != "url" else line[a:b]]
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


# -- writing: each syntax read above, made to lead elsewhere ------------------------------


def retarget(link, src: str, target: str, new_id: str | None = None, new_uuid: str | None = None,
              internal: bool = False, anchor: str | None = None) -> str | None:
    """The text of `link` (written in `src`) made to lead to `target` instead (the splitter's
    part), with the same label and anchor (or `anchor`, the heading's own in the part when
    it is numbered anew there): in the same syntax as the readers above read it, naming the
    part as the link named the note (its identifier `new_id`, its :ID: `new_uuid`), else by
    path. `internal`: a link within the note being split (`[[#H]]`, `[x](#h)`). None when
    the syntax cannot name `target`."""
    k = link.kind
    old_anchor, anchor = link.anchor, anchor or link.anchor
    if k in ("wiki", "embed") and link.label and not link.anchor and ("." in link.label or "#" in link.label) and \
            not any(c.isspace() for c in link.label.split("#")[0]):
        # Dendron's [[label|note.name#anchor]]: the note and its anchor come second
        anchor = anchor or link.label.partition("#")[2]
        name = posixpath.basename(target).rsplit(".", 1)[0]
        if any(c.isspace() for c in name):  # no longer read that way: the Obsidian form, same text shown
            return f"{'!' if k == 'embed' else ''}[[{name}#{anchor}|{link.target}]]"
        return f"{'!' if k == 'embed' else ''}[[{link.target}|{name}#{anchor}]]"
    if internal and k == "internal" and not target.endswith(".org") and "](" in link.raw \
            and not link.raw.lstrip("!").startswith("[["):
        # a Markdown [label](#anchor) stays a Markdown link: a vault of them may read no other kind
        rel = posixpath.relpath(target, posixpath.dirname(src) or ".")
        cut = link.raw.rindex("](")  # its label and #anchor kept as written
        rest = link.raw[cut + 2 : -1]
        if anchor != old_anchor:
            rest = rest.replace(f"#{old_anchor}", f"#{anchor}", 1)
        return f"{link.raw[:cut]}]({quote(rel)}{rest})"
    if k in ("wiki", "embed") or (internal and k == "internal" and not target.endswith(".org")):
        name = posixpath.basename(target).rsplit(".", 1)[0]
        if "/" in link.target:
            name = target.rsplit(".", 1)[0]
        label = f"|{link.label}" if link.label else ""
        bang = "!" if link.raw.startswith("!") else ""
        return f"{bang}[[{name}#{anchor}{label}]]"
    if k == "md":
        if link.target.startswith("/"):  # from the vault's top, as written
            rel = "/" + target
        elif "/" not in link.target.replace("\\", "/"):  # Obsidian's shortest path: the name alone
            rel = posixpath.basename(target)
        else:
            rel = posixpath.relpath(target, posixpath.dirname(src) or ".")
        m = _MDLINK.match(link.raw, link.raw.startswith("!"))  # the parser's own reading of it
        if m is None:
            return None
        if m.group(2).startswith("<"):
            dest = f"<{rel}#{anchor}>" if anchor else f"<{rel}>"
        else:
            dest = quote(rel) + (f"#{quote(anchor)}" if anchor else "")
        return link.raw[: m.start(2)] + dest + link.raw[m.end(2) :]  # its "!", label and title kept
    if k == "file" or (internal and k == "internal"):
        rel = posixpath.relpath(target, posixpath.dirname(src) or ".")
        desc = f"[{link.label}]" if link.label else ""
        return f"[[file:{rel}::{anchor}]{desc}]"
    if k in ("denote", "id"):
        name = f"denote:{new_id}" if k == "denote" and new_id else f"id:{new_uuid}" if k == "id" and new_uuid else None
        if not link.raw.startswith("[["):  # Denote's Markdown form, [label](denote:ID), kept
            dest = name or quote(posixpath.relpath(target, posixpath.dirname(src) or "."))
            sep = "::" if name else "#"
            return f"[{link.label}]({dest}{sep + anchor if anchor else ''})"
        desc = f"[{link.label}]" if link.label else ""
        if name is None:  # the part has no identifier of that kind: by its path
            name = "file:" + posixpath.relpath(target, posixpath.dirname(src) or ".")
        return f"[[{name}::{anchor}]{desc}]"
    return None


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
