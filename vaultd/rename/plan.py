"""What renaming a note or a heading changes: pure (bytes in, file changes out), and checked.

A note renamed (`plan_rename`) keeps its folder and its extension. A Denote note keeps its
identifier, signature and keywords: only the title part of its file name is written anew,
slugged as Denote's default `denote-sluggify-title` slugs it (the punctuation Denote drops
removed, each blank and underscore a hyphen, runs of hyphens one, none at either end, lower
case), and its title keyword (`#+title:` in Org, `title:` in Markdown's YAML or TOML front
matter and in a plain-text note's) says the new title as typed: what `denote-rename-file`
rewrites. Any other note is named by its title (`New Title.md` beside it, as Obsidian names
notes), and its title keyword, where it writes one, says the new title too. A heading
renamed (`plan_heading_rename`) changes the text of its own line only. A note's file named
anew as given (`plan_file_rename`: an editor's own rename of the file, in its folder) keeps
its text whole.

Every link that led to the note (or into the heading) is then read against the vault as it
will be: one that still leads there as written stays as it is (a `denote:` link by the kept
identifier, an `id:` link, a link by an alias or a CUSTOM_ID); the others are written anew
by their syntax's unit (parse/syntaxes.py), in their own form. A label the user wrote is
kept; a label equal to the old title (or heading) follows it. Last, `verify`: every link of
every file the plan writes, and every link elsewhere whose resolution the plan may change,
must lead where it led (to the renamed note at its new name), or the plan is refused. No
line is added or removed anywhere: line numbers stay true in every file.
"""

from __future__ import annotations

import json
import posixpath
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import quote

import msgspec

from ..note import Heading, Link, Note, headings_of, links_of
from ..parse import parse_file
from ..parse.denote import TEXT_SUFFIX, denote_slug, parse_name
from ..parse.links import links_in
from ..parse.syntaxes import DENDRON, Dest, Part, syntax_of
from ..store.graph import Graph
from ..store.journal import FileChange, SplitError

NOTHING = "nothing was renamed"


class RenameError(SplitError):
    """A rename that cannot or must not be done, and why; nothing was changed."""


@dataclass
class Plan:
    """A rename: the files it writes, in the order written (the note at its new name
    first, the notes whose links it rewrites, the note's old name removed last)."""

    note: str
    """The note renamed (or whose heading is), at its path before."""
    to: str
    """Its path after: the same for a heading, or a title whose file name does not change."""
    changes: list[FileChange] = field(default_factory=list)
    rewritten: int = 0
    """Links written anew to lead to the new name (or heading)."""
    relabeled: int = 0
    """Labels that said the old title (or heading) and say the new one."""
    heading: int | None = None
    """The line of the heading renamed, for a heading."""
    parts: list[str] = field(default_factory=list)
    """What a split's journal entry records of its parts: none (store/journal.Writes)."""
    oversized: list[str] = field(default_factory=list)
    """What a split's journal entry records of sections left whole: none."""

    @property
    def record(self) -> dict:
        """What the journal entry keeps besides the files (see journal.apply)."""
        return {"to": self.to, "relabeled": self.relabeled, **({"heading": self.heading} if self.heading else {})}


# -- names and titles -------------------------------------------------------------------------

NAME_BYTES = 200
"""A renamed note's file name at most (its temporary name, state.temp_name, adds to it)."""
NOT_IN_NAMES = '\\/:*?"<>|#^[]'
"""Not in a note's name: what Obsidian refuses in a file name, and what a link to it cannot hold."""


def check_title(title: str, what: str = "title") -> str:
    """`title` as a note's title or a heading's text: blanks around it dropped. RenameError
    when nothing is left, or it holds a line break or another control character."""
    t = title.strip()
    if not t:
        raise RenameError(f"the new {what} is empty; {NOTHING}")
    bad = next((c for c in t if unicodedata.category(c) in ("Cc", "Zl", "Zp")), None)
    if bad is not None:
        raise RenameError(f"the new {what} {t!r} holds {bad!r}, which a {what} on one line cannot; {NOTHING}")
    return t


def new_path(note: Note, title: str) -> str:
    """Where `note` goes when titled `title`: beside itself, its extension kept; a Denote
    name keeps its identifier, signature and keywords. RenameError when the title makes
    no file name (nothing left of it in a Denote name; a character a name or a link cannot
    hold; too long)."""
    folder, name = posixpath.split(note.path)
    stem, _, ext = name.rpartition(".")
    dn = parse_name(stem)
    if dn is not None:
        slug = denote_slug(title)
        if not slug:
            raise RenameError(f"{title!r} leaves nothing for a Denote file name (Denote drops its punctuation); "
                              f"{NOTHING}")
        sig = f"=={dn.signature}" if dn.signature else ""
        kws = "__" + "_".join(dn.keywords) if dn.keywords else ""
        name = f"{dn.id}{sig}--{slug}{kws}.{ext}"
    else:
        bad = sorted({c for c in title if c in NOT_IN_NAMES})
        if bad:
            raise RenameError(f"{title!r} cannot name a note's file: it holds {' '.join(bad)} (not in a file name "
                              f"Obsidian makes, nor in a link to it); {NOTHING}")
        if title.startswith(".") or title.endswith("."):
            raise RenameError(f"{title!r} cannot name a note's file: a name starting or ending with a dot is "
                              f"hidden or changes its extension; {NOTHING}")
        name = f"{title}.{ext}"
    if len(name.encode()) > NAME_BYTES:
        raise RenameError(f"{title!r} makes a file name of {len(name.encode())} bytes, over {NAME_BYTES}; {NOTHING}")
    return posixpath.join(folder, name)


_ORG_TITLE = re.compile(r"^([ \t]*#\+title:[ \t]*)(.*?)([ \t]*)$", re.IGNORECASE)
_KEY_TITLE = re.compile(r"^(title:[ \t]*)(.*?)([ \t]*)$")
_TOML_TITLE = re.compile(r"^(title[ \t]*=[ \t]*)(.*?)([ \t]*)$")
_TEXT_KEY = re.compile(r"^\w+:")
_YAML_BLOCK = re.compile(r"^[|>][-+]?\d*$")
_YAML_CONTINUED = re.compile(r"^([ \t]+)(\S.*?)([ \t]*)$")
_ORG_HEADING = re.compile(r"^\*+[ \t]")
_YAML_SPECIAL = re.compile(r"^[-?:,\[\]{}#&*!|>'\"%@`]|: | #|:$|^(?:true|false|yes|no|on|off|null|~|[-+.\d_eE:]+)$",
                           re.IGNORECASE)


def _title_place(path: str, lines: list[str]) -> tuple[range, re.Pattern, str]:
    """The lines a note's title keyword may be on, its pattern, and its syntax (org, yaml,
    toml, text)."""
    if path.endswith(".org"):
        end = next((i for i, x in enumerate(lines) if _ORG_HEADING.match(x)), len(lines))
        return range(end), _ORG_TITLE, "org"
    if path.lower().endswith(TEXT_SUFFIX):
        end = next((i for i, x in enumerate(lines) if not _TEXT_KEY.match(x)), len(lines))
        return range(end), _KEY_TITLE, "text"
    first = lines[0].strip() if lines else ""
    if first in ("---", "+++"):
        closing = ("---", "...") if first == "---" else ("+++",)
        end = next((i for i in range(1, len(lines)) if lines[i].strip() in closing), None)
        if end is not None:
            return range(1, end), (_KEY_TITLE if first == "---" else _TOML_TITLE), ("yaml" if first == "---" else "toml")
    return range(0), _KEY_TITLE, "none"


def _title_value(syntax: str, old: str, title: str) -> str:
    """`title` as its keyword's value is written, quoted as the old value was where that reads alike."""
    if syntax in ("org", "text"):
        return title
    if old.startswith("'") and "'" not in title:
        return f"'{title}'"
    if syntax == "toml" or old.startswith(("'", '"')) or _YAML_SPECIAL.search(title):
        return json.dumps(title, ensure_ascii=False)  # a JSON string reads alike in YAML and TOML
    return title


def _block_line(path: str, lines: list[str], at: int, where: range) -> tuple[int, re.Match]:
    """The one line of the YAML block scalar whose key is on line `at`, and its match.
    RenameError when the block holds more than one line (none is added or removed)."""
    held = [i for i in range(at + 1, where.stop) if _YAML_CONTINUED.match(lines[i].removesuffix("\r"))]
    held = [i for k, i in enumerate(held) if i == at + 1 + k]  # the lines right after the key
    if len(held) != 1:
        raise RenameError(f"{path}: its title is a YAML block of {len(held)} lines: rename it by hand ({NOTHING})")
    return held[0], _YAML_CONTINUED.match(lines[held[0]].removesuffix("\r"))


def retitle(path: str, data: bytes, title: str) -> bytes | None:
    """The note's bytes with its title keyword saying `title` (its key, spacing and line
    ending kept), None when it writes none. RenameError when it is not UTF-8."""
    bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
    try:
        lines = data[len(bom):].decode().split("\n")
    except UnicodeDecodeError:
        raise RenameError(f"{path} is not UTF-8: its title cannot be written anew; {NOTHING}") from None
    where, pattern, syntax = _title_place(path, lines)
    for i in where:
        m = pattern.match(lines[i].removesuffix("\r"))
        if m and syntax == "yaml" and _YAML_BLOCK.match(m[2]):  # `title: >-`, the title on the next line
            i, m = _block_line(path, lines, i, where)
            syntax = "org"  # that line holds the title as it is
        if m:
            cr = "\r" if lines[i].endswith("\r") else ""
            lines[i] = m[1] + _title_value(syntax, m[2], title) + m[3] + cr
            return bom + "\n".join(lines).encode()
    return None


# -- links written anew ---------------------------------------------------------------------

NO_ANCHOR = "vaultdNoAnchor"
"""The anchor a unit's rewrite is handed for a link that has none, then taken out with its
separator (`#`, `::`): the units write one always, as the splitter's links name a heading."""

Edit = tuple[int, int, str, str]
"""A link written anew: (line, column, its text, its new text)."""


def _org(path: str) -> bool:
    """Whether a note's links read as Org's (an Org note, a Denote plain-text note)."""
    return path.endswith(".org") or path.lower().endswith(TEXT_SUFFIX)


def relabeled(link: Link, label: str, org: bool) -> Link | None:
    """`link` with its label written as `label` (an Org description, a wikilink's alias, a
    Markdown link's text), read back as such; None when its text does not allow it (the
    label is kept then)."""
    raw, old, new = link.raw, link.label, None
    if raw.lstrip("!").startswith("[["):
        for opener in ("][", "|"):
            tail = f"{opener}{old}]]"
            if raw.endswith(tail):
                new = raw[: -len(tail)] + f"{opener}{label}]]"
                break
    else:
        bang = "!" if raw.startswith("!") else ""
        if raw.startswith(head := f"{bang}[{old}]("):
            new = f"{bang}[{label}](" + raw[len(head):]
    back = links_in(new, org) if new is not None else []
    if len(back) != 1 or (back[0].kind, back[0].target, back[0].anchor, back[0].label) != \
            (link.kind, link.target, link.anchor, label):
        return None
    return msgspec.structs.replace(link, raw=new, label=label)


def _own_anchor(link: Link) -> str:
    """The anchor `link` writes (a Dendron link's is in its label)."""
    unit = syntax_of(link)
    return unit.anchor_of(link) if unit is DENDRON else link.anchor


def retargeted(link: Link, src: str, to: Part) -> str:
    """`link`, written in `src`, made by its unit to lead to the note `to`, its own anchor
    kept. RenameError when its syntax cannot be written anew."""
    unit = syntax_of(link)
    if (why := unit.unwritable(link)) is not None:
        raise RenameError(f"{src}:{link.line}: {link.raw} is a {unit.name}, and {why}; {NOTHING}")
    bare = not _own_anchor(link)
    text = unit.rewrite(link, src, msgspec.structs.replace(to, anchor=NO_ANCHOR) if bare else to)
    if bare:
        for sep in ("::", "#"):
            text = text.replace(sep + NO_ANCHOR, "")
    if NO_ANCHOR in text:
        raise RenameError(f"{src}:{link.line}: {link.raw} cannot be written without an anchor ({text}); {NOTHING}")
    return text


def reanchored(link: Link, src: str, old: Heading, new: Heading) -> str:
    """`link`, written in `src`, naming the heading `new` where it named `old`, its anchor in
    the form it had: a slug or CUSTOM_ID as the heading's new anchor, else the heading's
    text (Org's `*Heading`, Obsidian's `#Heading`, the last of `#H1#H2`). RenameError when
    the anchor is not found in its text."""
    unit = syntax_of(link)
    a = _own_anchor(link)
    org = getattr(unit, "org_anchors", False) or (link.kind == "internal" and _org(src))
    if org and a[:1] in ("*", "#"):
        prefix, body = a[0], a[1:]
    elif not org and "#" in a:
        head, _, body = a.rpartition("#")
        prefix = head + "#"
    else:
        prefix, body = "", a
    anchor = prefix + (new.anchor if body == old.anchor else new.text)
    raw = link.raw
    markdown = not raw.lstrip("!").startswith("[[")
    start = raw.find("](") + 2 if markdown else 0
    for written in dict.fromkeys((a, quote(a), a.replace(" ", "%20"))):
        at = raw.find(written, start)
        while at > 0:
            end = at + len(written)
            if raw[at - 1] in "#:[" and (end == len(raw) or raw[end] in "]|)> \t\"'"):
                angle = markdown and raw[start:start + 1] == "<"
                value = quote(anchor) if markdown and not angle else anchor
                return raw[:at] + value + raw[end:]
            at = raw.find(written, at + 1)
    raise RenameError(f"{src}:{link.line}: the anchor of {raw} is not written as it reads; {NOTHING}")


def _followed(link: Link, here: Note, want: tuple[str, int | None], ahead: Graph, old: str, new: str,
              rewrite: Callable[[Link, str], str]) -> tuple[str, bool, bool]:
    """`link`, written in `here` (the note as it will be), as the rename leaves it: its label
    following the old title when it said it, and written anew by `rewrite` when, as written,
    it would no longer lead `want` (the note and line it leads to after) in the vault as it
    will be (`ahead`). Returns its text, whether it was written anew, whether relabeled."""
    org = _org(here.path)
    unit = syntax_of(link)
    relabel = relabeled(link, new, org) if old != new and link.label == old and unit is not DENDRON else None
    written = relabel or link
    # as its target alone says (a wikilink's label may name a note too: no help to Obsidian)
    now = ahead.resolve(here, link if unit is DENDRON else msgspec.structs.replace(link, label=""))
    moved = now.broken is not None or (now.target, now.line) != want
    text = rewrite(written, here.path) if moved else written.raw
    if text != link.raw:
        back = links_in(text, org)
        if len(back) != 1 or shown(back[0]) != shown(written):
            raise RenameError(f"{here.path}:{link.line}: {link.raw} written anew as {text} does not read as one "
                              f"link showing {shown(written)!r}; {NOTHING}")
    return text, moved, relabel is not None


def shown(link: Link) -> str:
    """The label a link shows as its user wrote it: a Dendron link's is its first part
    (`[[label|note.name]]`), rewritten as an Obsidian alias where the new name holds a blank."""
    return link.target if syntax_of(link) is DENDRON else link.label


def edited(data: bytes, path: str, edits: list[Edit]) -> bytes:
    """`data` (the file `path`) with each link of `edits` written anew, right to left, bottom
    up: columns and lines stay true. RenameError when one is not where the index says."""
    bom = b"\xef\xbb\xbf" if data.startswith(b"\xef\xbb\xbf") else b""
    try:
        text = data[len(bom):].decode()
    except UnicodeDecodeError:
        raise RenameError(f"{path} is not UTF-8: its links cannot be rewritten; {NOTHING}") from None
    starts = [0]
    for line in text.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    for ln, col, old, new in sorted(edits, reverse=True):
        at = starts[ln - 1] + col - 1 if ln <= len(starts) - 1 else -1
        if at < 0 or text[at:at + len(old)] != old:
            raise RenameError(f"{path}:{ln}: link {old!r} is not where the index says; try again in a moment "
                              f"({NOTHING})")
        text = text[:at] + new + text[at + len(old):]
    return bom + text.encode()


# -- planning ---------------------------------------------------------------------------------


def _links_edits(plan: Plan, graph: Graph, ahead: Graph, moved: Note, heading: Heading | None,
                 old: str, new: str, rewrite: Callable[[Link, str], str]) -> dict[str, list[Edit]]:
    """Each link into the note (into its heading `heading`, when given) that the rename
    changes, by the file it is in (the note's own at its new path), counted in `plan`."""
    edits: dict[str, list[Edit]] = {}
    into = [(src, r) for src, r in graph.backlinks(plan.note, anchored=heading is not None) if src != plan.note]
    into += [(plan.note, r) for r in graph.links(plan.note) if r.target == plan.note]  # its own: no backlinks
    for src, r in into:
        if heading is not None and r.line != heading.line:
            continue
        here = moved if src == plan.note else graph.notes[src]
        text, rewritten, relabel = _followed(r.link, here, (plan.to, r.line), ahead, old, new, rewrite)
        if text != r.link.raw:
            edits.setdefault(here.path, []).append((r.link.line, r.link.col, r.link.raw, text))
            plan.rewritten += rewritten
            plan.relabeled += relabel
    return edits


def _assemble(plan: Plan, data: bytes, renamed: bytes, edits: dict[str, list[Edit]], read: Callable[[str], bytes]) -> None:
    """The plan's file changes, in the order written: the note at its new name, the notes
    whose links change, the old name removed (or the note replaced, last, when it keeps its name)."""
    mine = edited(renamed, plan.to, edits.pop(plan.to, []))
    others = []
    for src in sorted(edits):
        before = read(src)
        others.append(FileChange(src, before, edited(before, src, edits[src])))
    if plan.to == plan.note:
        plan.changes = [*others, FileChange(plan.note, data, mine)]
    else:
        plan.changes = [FileChange(plan.to, None, mine), *others, FileChange(plan.note, data, None)]


def _checked(plan: Plan, graph: Graph) -> Plan:
    problems = verify(plan, graph)
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise RenameError(f"{plan.note}: the rename would change where links lead: {'; '.join(problems[:3])}{more}; "
                          f"{NOTHING}")
    return plan


def plan_rename(note: Note, data: bytes, title: str, graph: Graph, read: Callable[[str], bytes]) -> Plan:
    """What titling `note` (whose file holds `data`) `title` writes, checked (see `verify`).
    `read(path)`: the bytes of another note whose links change. RenameError when it cannot
    be done: the new name taken, a title that makes no file name, a link that cannot be
    written anew, a link that would lead elsewhere."""
    title = check_title(title)
    to = new_path(note, title)
    if graph.exact(to) not in (None, note.path):
        raise RenameError(f"{graph.exact(to)} exists: {note.path} cannot take its name; {NOTHING}")
    body = retitle(note.path, data, title)
    renamed = data if body is None else body
    if to == note.path and renamed == data:
        raise RenameError(f"{note.path} is already titled {title!r}; {NOTHING}")
    moved = parse_file(to, renamed)
    if body is not None and (moved.title != title or not set(moved.problems) <= set(note.problems)):
        why = next(iter(set(moved.problems) - set(note.problems)), f"it would read as {moved.title!r}")
        raise RenameError(f"{note.path}: its title keyword cannot say {title!r} ({why}); {NOTHING}")
    ahead = graph.what_if({to: moved}, [note.path] if to != note.path else [])
    plan = Plan(note=note.path, to=to)
    part = Part(to, moved.id)  # a Denote note keeps its identifier

    def rewrite(link: Link, src: str) -> str:
        return retargeted(link, src, part)

    edits = _links_edits(plan, graph, ahead, moved, None, note.title, title, rewrite)
    _assemble(plan, data, renamed, edits, read)
    return _checked(plan, graph)


def plan_file_rename(note: Note, data: bytes, to: str, graph: Graph, read: Callable[[str], bytes]) -> Plan:
    """What naming `note`'s file `to` writes (a vault path in the same folder, with the same
    extension), as an editor's own rename of the file means it: the note's text as it is
    (its title keyword too; a title it takes from its file name follows), every link that
    would no longer lead to it written anew (labels kept; one that said its old title says
    the title it reads as at `to`, when that differs), checked (see `verify`). RenameError
    as plan_rename: another folder or extension, a name a file or a link cannot hold, the
    name taken, a link that cannot be written anew or would lead elsewhere."""
    folder, name = posixpath.split(to)
    if folder != posixpath.dirname(note.path) or posixpath.splitext(name)[1] != posixpath.splitext(note.path)[1]:
        raise RenameError(f"{to}: a note renamed keeps its folder and extension ({note.path}); {NOTHING}")
    if to == note.path:
        raise RenameError(f"{note.path} is already named so; {NOTHING}")
    bad = sorted({c for c in name if c in NOT_IN_NAMES})
    if bad or name.startswith(".") or len(name.encode()) > NAME_BYTES:
        why = f"it holds {' '.join(bad)}" if bad else "a hidden name" if name.startswith(".") else "too long"
        raise RenameError(f"{name!r} cannot name a note's file ({why}); {NOTHING}")
    if graph.exact(to) not in (None, note.path):
        raise RenameError(f"{graph.exact(to)} exists: {note.path} cannot take its name; {NOTHING}")
    moved = parse_file(to, data)
    ahead = graph.what_if({to: moved}, [note.path])
    plan = Plan(note=note.path, to=to)
    part = Part(to, moved.id)

    def rewrite(link: Link, src: str) -> str:
        return retargeted(link, src, part)

    edits = _links_edits(plan, graph, ahead, moved, None, note.title, moved.title, rewrite)
    _assemble(plan, data, data, edits, read)
    return _checked(plan, graph)


def _reheaded(note: Note, data: bytes, h: Heading, text: str) -> tuple[bytes, Note, Heading]:
    """The note with the heading `h` saying `text` (the rest of its line as it was: its
    stars or hashes, TODO keyword, tags), parsed, and the heading as it reads then."""
    lines = data.split(b"\n")
    try:
        line = lines[h.line - 1].decode()
    except UnicodeDecodeError:
        raise RenameError(f"{note.path}:{h.line}: the heading's line is not UTF-8; {NOTHING}") from None
    others = [(x.level, x.text, x.line) for x in headings_of(note) if x.line != h.line]
    at = line.find(h.text)
    while at >= 0:  # the first place its text stands that reads as the heading renamed
        lines[h.line - 1] = (line[:at] + text + line[at + len(h.text):]).encode()
        new = b"\n".join(lines)
        moved = parse_file(note.path, new)
        heads = headings_of(moved)
        nh = next((x for x in heads if x.line == h.line), None)
        if nh is not None and (nh.text, nh.level, nh.tags) == (text, h.level, h.tags) and \
                [(x.level, x.text, x.line) for x in heads if x.line != h.line] == others:
            return new, moved, nh
        at = line.find(h.text, at + 1)
    raise RenameError(f"{note.path}:{h.line}: the heading's text is not written as it reads ({h.text!r}: a link or "
                      f"a statistics cookie in it?); {NOTHING}")


def plan_heading_rename(note: Note, data: bytes, line: int, text: str, graph: Graph,
                        read: Callable[[str], bytes]) -> Plan:
    """What renaming the heading on `line` of `note` (whose file holds `data`) to `text`
    writes, checked (see `verify`): its line, and every link into it whose anchor names it
    by its text or slug (a label that said the old heading says the new one)."""
    h = next((x for x in headings_of(note) if x.line == line), None)
    if h is None:
        raise RenameError(f"{note.path}:{line} is not a heading; {NOTHING}")
    text = check_title(text, "heading")
    if text == h.text:
        raise RenameError(f"{note.path}:{line} already says {text!r}; {NOTHING}")
    renamed, moved, nh = _reheaded(note, data, h, text)
    ahead = graph.what_if({note.path: moved})
    plan = Plan(note=note.path, to=note.path, heading=line)

    def rewrite(link: Link, src: str) -> str:
        return reanchored(link, src, h, nh)

    edits = _links_edits(plan, graph, ahead, moved, h, h.text, text, rewrite)
    _assemble(plan, data, renamed, edits, read)
    return _checked(plan, graph)


# -- checking -------------------------------------------------------------------------------


def _show(d: Dest | tuple) -> str:
    if isinstance(d, Dest):
        return f"broken ({d.broken})" if d.broken else f"{d.target}" + (f":{d.line}" if d.line else "")
    return f"{d[0]}" + (f":{d[1]}" if d[1] else "")


def _by_line(links: list) -> dict[int, list]:
    out: dict[int, list] = {}
    for x in links:
        out.setdefault(x.link.line if hasattr(x, "link") else x.line, []).append(x)
    return out


def verify(plan: Plan, graph: Graph) -> list[str]:
    """Every link the rename can affect, resolved against the vault as it will be and
    compared with where it leads now: the links of each file it writes (line by line: it
    adds and removes none), and the links elsewhere into the note or looking up a name,
    alias, identifier or ID it gains or loses. Each must lead to the same note (the renamed
    one at its new path) and heading or block; a broken link may stay broken or come to
    lead somewhere. Returns what would differ, empty when nothing does."""
    after = {c.path: parse_file(c.path, c.after) for c in plan.changes if c.after is not None}
    removed = [c.path for c in plan.changes if c.after is None]
    new = graph.what_if(after, removed)
    problems: list[str] = []

    def check(src: str, link: Link, was: Dest, n: Note) -> None:
        if was.broken:
            return
        want = (plan.to if was.target == plan.note else was.target, was.line)
        now = new.resolve(n, link)
        if now.broken or (now.target, now.line) != want:
            problems.append(f"{src}:{link.line}: {link.raw} would lead to {_show(now)}, not {_show(want)}")

    for path, n in after.items():
        before = _by_line(graph.links(plan.note if path == plan.to else path))
        now = _by_line(links_of(n))
        for ln in sorted(before.keys() | now.keys()):
            was, links = before.get(ln, []), now.get(ln, [])
            if len(was) != len(links):
                problems.append(f"{path}:{ln}: {len(links)} links where there were {len(was)}")
                continue
            for link, r in zip(links, was):
                check(path, link, r.dest, n)
    for src, r in graph.affected(plan.note, after, removed):
        check(src, r.link, r.dest, graph.notes[src])
    return problems
