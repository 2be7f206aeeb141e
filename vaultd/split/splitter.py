"""Auto-split: an oversized note becomes a hub plus parts, and every link into a moved
heading or block is rewritten. This module plans and checks (`plan_split`, `verify`, the
repair of a stale save, `stale_plan`); the plan is pure (bytes in, files out). It is
written, journaled, recovered and undone by the journaled writer (store/journal.py): only
the vaultd holding the vault's WriterLock applies one. No line is ever dropped: the hub
keeps the preamble, the parts hold the sections, verbatim but for rewritten links; parts
are written first, then the linking notes, the hub last.
"""

from __future__ import annotations

import difflib
import fnmatch
import itertools
import json
import logging
import os
import posixpath
import re
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from ..config import Split
from ..store.graph import Graph
from ..note import ID_ANCHOR, Heading, Note, headings_of, links_of
from ..parse import decode, markdown as md, org as org_parse, parse_file
from ..parse.common import github_slug, numbered
from ..parse.denote import parse_name
from ..parse.syntaxes import DENDRON, DENOTE, MARKDOWN_LINK, MARKDOWN_OR_WIKI, NOT_NOTES, ORG_FILE, WIKI, \
    WITHIN_SOURCE, Part, labels_shown, syntax_of
from ..store.journal import OTHER, SPLIT, STALE, FileChange, Journal, files_of, read_like
from ..store.journal import Raced, SplitError  # noqa: F401  the errors a split raises, as split.SplitError

logger = logging.getLogger("vaultd.split")

_UNSAFE = re.compile(r'[\\/:*?"<>|#^\[\]`=~\n\r\t]+')  # not in file names, nor in links to them
HEADER_ROOM = 512
"""Bytes kept free in each part for its inserted title, tags, identifiers and back link, at
least a quarter of this; more when the biggest header a part would get needs more."""
_SLUG = re.compile(r"[^\w]+", re.UNICODE)


@dataclass
class SplitPlan:
    note: str
    changes: list[FileChange] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)
    rewritten: int = 0
    """Links rewritten (in other notes and in the note itself)."""
    oversized: list[str] = field(default_factory=list)
    """Sections that could not be cut under the threshold (left whole, reported)."""
    line_map: dict[int, tuple[str, int]] = field(default_factory=dict)
    """Each line of the note: the file and line it is at after the split."""
    copied: dict[tuple[str, int], int] = field(default_factory=dict)
    """Footnote and reference definitions copied to a part (or the hub) that uses them:
    (file, line) -> the note's line it copies."""


# -- planning -----------------------------------------------------------------------------


def _sections(lines: list[bytes], heads: list[Heading], threshold: int, limit: int | None = None,
              at: list[int] | None = None):
    """Cut line ranges [first, end) (0-based) at the highest heading level, packing neighbours
    up to `threshold` bytes; a section still too big is cut one level deeper. `limit` is
    where the enclosing section ends. Returns ([(first, end, heading)], [oversized headings])."""
    if not heads:
        return [], []
    limit = len(lines) if limit is None else limit
    at = [0, *itertools.accumulate(map(len, lines))] if at is None else at  # bytes before each line

    def size(a: int, b: int) -> int:  # of lines a..b-1, as len(b"".join(lines[a:b])) (clamped alike)
        n = len(lines)
        return at[min(b, n)] - at[min(a, n)] if b > a else 0

    level = min(h.level for h in heads)
    tops = [h for h in heads if h.level == level]
    chunks: list[tuple[int, int, str]] = []
    oversized: list[str] = []
    packable = False  # may the next section join the last chunk?
    for i, h in enumerate(tops):
        first = h.line - 1
        end = tops[i + 1].line - 1 if i + 1 < len(tops) else limit
        if size(first, end) > threshold:
            inner = [x for x in heads if first + 1 < x.line <= end]
            sub, over = _sections(lines, inner, threshold, end, at) if inner else ([], [])
            if sub:
                # the heading line and the text before the first subheading go with the first chunk
                # when they fit together, else they are a chunk of their own
                intro_end = sub[0][0]
                if size(first, sub[0][1]) <= threshold and sub[0][2] not in over:
                    sub[0] = (first, sub[0][1], h.text)
                else:
                    sub.insert(0, (first, intro_end, h.text))
                    if size(first, intro_end) > threshold:
                        over = [h.text, *over]
                chunks += sub
                oversized += over
            else:
                oversized.append(h.text)
                chunks.append((first, end, h.text))
            packable = False
            continue
        if packable and chunks[-1][1] == first and size(chunks[-1][0], end) <= threshold:
            chunks[-1] = (chunks[-1][0], end, chunks[-1][2])
        else:
            chunks.append((first, end, h.text))
        packable = True
    return chunks, oversized


DENOTE_TIME = "%Y%m%dT%H%M%S"
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[ T]+(?:\w+\.? +)?(\d{1,2}):(\d{2})(?::(\d{2}))?)?")
_SPLIT_UUIDS = uuid.UUID("6f1d2c8e-3b4a-5e7f-9a0b-7661756c7464")
"""The namespace of the parts' :ID:s (uuid5 of the hub's :ID: and the part's path)."""


def _stamp(text: str | None) -> datetime | None:
    """A Denote identifier, or an ISO or Org date (`2025-01-02`, `[2025-01-02 Thu 10:00]`), as a time."""
    if not text:
        return None
    try:
        return datetime.strptime(text, DENOTE_TIME)
    except ValueError:
        pass
    m = _DATE.search(text)
    try:
        return datetime(*(int(g or 0) for g in m.groups())) if m else None
    except ValueError:
        return None


def base_time(note: Note) -> datetime:
    """The time a note's parts are dated from: its Denote identifier (`#+identifier:`, front
    matter, or file name), else its date (`#+date:`, front matter), else the time its file
    was last written (which Syncthing, Dropbox and `rsync -t` carry to the other copies).
    Each is a property of the note the same on every copy of the vault, never a clock's."""
    dn = parse_name(posixpath.basename(note.path).rsplit(".", 1)[0])
    for t in (note.id, dn.id if dn else None, note.date):
        if (when := _stamp(t)) is not None:
            return when
    return datetime.fromtimestamp(note.mtime_ns // 10**9) if note.mtime_ns else datetime.now().replace(microsecond=0)


def part_ids(base: datetime, taken: set[str], n: int, now: datetime | None = None) -> list[str]:
    """n Denote identifiers for the parts of a note dated `base`, in order: the first free
    seconds after it (none used in the vault: `taken`), so the same note in the same vault
    gives the same identifiers on every machine, and a part is dated as the text it holds
    (written after the note was made, before it was split). Never later than `now`: for a
    note made seconds ago (or dated ahead), the free seconds before it make up the rest.
    Local times, counted without a time zone, as Denote writes them."""
    now = (now or datetime.now()).replace(microsecond=0)
    start, second = min(base, now), timedelta(seconds=1)
    out: list[str] = []
    t = start + second
    while len(out) < n and t <= now:
        if (ident := t.strftime(DENOTE_TIME)) not in taken:  # `taken` is left as it is: callers share it
            out.append(ident)
        t += second
    t = start
    while len(out) < n:
        if (ident := t.strftime(DENOTE_TIME)) not in taken and ident not in out:
            out.append(ident)
        t -= second
    return sorted(out)


_DENOTE_ID = re.compile(r"\d{8}T\d{6}")


def _folder_ids(folder: Path) -> set[str]:
    """The Denote identifiers the names of a folder's files start with: its attachments'
    (`20250102T000001--photo.png`) too, which the index does not hold."""
    try:
        return {m.group() for name in os.listdir(folder) if (m := _DENOTE_ID.match(name))}
    except OSError:
        return set()


def file_tags(note: Note, data: bytes) -> list[str]:
    """The note's file-level tags as written (case kept): front matter `tags`, `tag`,
    `keywords`, `category`, `categories` (parse.markdown's meta_tags) or `#+filetags:`. Not its heading tags, nor its inline #tags: those stay in the text they
    belong to. (A Denote name's keywords go into each part's name.)"""
    text = decode(data)[0]
    if note.path.endswith(".org"):
        written = org_parse.filetags(org_parse.front_keywords(text).get("filetags"))
    else:
        written = md.meta_tags(md.front_matter(text.split("\n"))[0])
    return list(dict.fromkeys(written))


_NO_BRACKETS = str.maketrans("[]|", "   ")
_ORG_SETTING = re.compile(rb"[ \t]*#\+(?:todo|seq_todo|typ_todo|link|startup|property|category|options|constants|tags):",
                          re.IGNORECASE)
"""Org's per-file settings: each part gets a copy, or its TODO keywords and link abbreviations would read differently."""
# Footnotes and reference links: a use, and its definition (at a line's start)
_MD_NOTE_USE = re.compile(rb"\[\^([^\]\s]+)\](?!:)|\]\[([^\]\n]+)\]|\[([^\]\n]+)\]\[\]")
_MD_NOTE_DEF = re.compile(rb"^ {0,3}\[(\^?[^\]\n]+)\]:")
_ORG_NOTE_USE = re.compile(rb"\[fn:([^\]:\s]+)[\]:]")
_ORG_NOTE_DEF = re.compile(rb"^\[fn:([^\]:\s]+)\]")
_ESCAPE = re.compile(r"\\(\S)")
_EMPHASIS = re.compile(r"[*=~`]+|(?<!\w)[_+/#]+|[_+/]+(?!\w)")  # a label's leading # reads as an anchor


def plain(text: str) -> str:
    """A heading as readable text: links reduced to their label (`[[a|b]]`, `[[a][b]]`,
    `[b](a)` to b), emphasis marks and the brackets and bars a link label cannot hold
    dropped, runs of blanks made one."""
    text = _ESCAPE.sub(r"\1", text).replace("\\", "")  # Markdown's \* is a *, and no label may end in \
    return " ".join(_EMPHASIS.sub("", labels_shown(text)).translate(_NO_BRACKETS).split())


def _slug(text: str) -> str:
    return _cut(_SLUG.sub("-", plain(text).casefold()).strip("-"), 60).strip("-") or "part"


def _cut(text: str, chars: int, limit: int = 120) -> str:
    """At most `chars` characters and `limit` UTF-8 bytes (a file name holds 255 bytes, and
    the temporary name it is written through more), no blank or separator at the end."""
    text = text[:chars]
    while len(text.encode()) > limit:
        text = text[:-1]
    return text.rstrip(" -.")


def _name_part(title: str) -> str:
    """A heading as a piece of a file name: its plain text, what no file name or link may
    hold made blanks, blanks made one."""
    return " ".join(_UNSAFE.sub(" ", plain(title)).split())


def taken(graph: Graph) -> tuple[set[str], set[str]]:
    """The vault's Denote identifiers and its paths case-folded: what no new part may take."""
    return {n.id for n in graph.notes.values() if n.id}, {p.casefold() for p in graph.notes}


NAME_BYTES = 200
"""A part's file name at most: the temporary name it is written through adds a dot, the pid and .tmp."""


def plan_split(note: Note, data: bytes, graph: Graph, vault: Path, cfg: Split,
               read=lambda p: (Path(p)).read_bytes(), names_taken: tuple[set[str], set[str]] | None = None,
               margin: int = 0) -> SplitPlan:
    """What splitting `note` (whose file holds `data`) would write, checked (see `verify`).
    Raises SplitError. `names_taken`: `taken(graph)`, when the caller plans many notes
    (it reads every note). `margin`: bytes more kept free in each part (see the end)."""
    if note.problems:
        raise SplitError(f"{note.path} has parse problems: {note.problems[0]}")
    if len(data) <= cfg.threshold:
        raise SplitError(f"{note.path} is {len(data)} bytes, not over the {cfg.threshold}-byte threshold")
    lines = data.splitlines(keepends=True)
    nl = b"\r\n" if data.count(b"\r\n") * 2 > data.count(b"\n") else b"\n"  # the note's line ending, in all it writes
    heads = _split_heads(note)
    org = note.path.endswith(".org")
    folder = posixpath.dirname(note.path)
    stem = posixpath.basename(note.path).rsplit(".", 1)[0]
    dn = parse_name(stem)
    if not org and not dn and (why := WIKI.cannot_name(stem)):  # the hub's list and back links may be wikilinks
        raise SplitError(f"{note.path}: {why}")
    # The parts' back link and the hub's list: by identifier only where it names one note
    unique_id = bool(dn) and len(graph.with_id(dn.id)) <= 1
    markdown = not org and _markdown_style(r.link for r in graph.links(note.path))
    title = plain(note.title) or stem
    heading_ids = {b.id[len(ID_ANCHOR):] for b in note.blocks if b.id.startswith(ID_ANCHOR)}
    file_uuid = next((u for u in note.uuids if u not in heading_ids), None)  # :ID: or front-matter id

    first_head = heads[0].line - 1
    settings = [x.rstrip(b"\r\n").decode(errors="replace") for x in lines[:first_head] if _ORG_SETTING.match(x)] \
        if org else []
    tags = file_tags(note, data)

    def header(head: str, ident: str | None, new_uuid: str | None) -> bytes:
        # a part's title names its note too, as its file name does ("Deep work - Rules": a
        # search hit or a link titled "Rules", or "Introduction", said nothing of where it is
        # from); a Denote part's title is its heading, as its file name's title part is
        named = plain(head) or "part"
        return _part_header(org, named if dn else f"{title} - {named}", note, ident, new_uuid,
                            dn.id if unique_id else None, stem, title, markdown, settings, tags).replace(b"\n", nl)

    # Room for the biggest header a part can get (many tags, a long heading): no part is over
    # the threshold but a section that cannot be cut, so no part is ever split again for it
    room = max(len(header(h.text, "20000101T000000" if (dn or note.id) else None,
                          str(uuid.UUID(int=0)) if file_uuid else None)) for h in heads)
    if room > cfg.threshold // 2:
        raise SplitError(f"{note.path}: each part's title, tags and back link would take {room} bytes, "
                         f"more than half the {cfg.threshold}-byte threshold")
    at = [0, *itertools.accumulate(map(len, lines))]  # bytes before each line
    opening = at[first_head]
    if opening >= cfg.threshold:  # what is above the first heading stays in the note: it would stay over
        raise SplitError(f"{note.path}: its opening ({opening} bytes above its first heading) is over the threshold "
                         "and cannot be cut smaller at its headings")
    budget = cfg.threshold - max(room, HEADER_ROOM // 4) - margin
    chunks, oversized = _chunks(note, data, lines, heads, budget, at)
    ids_taken, existing = names_taken or taken(graph)
    # Parts of a note with an identifier get their own, the free seconds after the note's:
    # the same note in the same vault splits alike on every machine (see part_ids)
    ids = part_ids(base_time(note), ids_taken | _folder_ids(vault / folder), len(chunks)) if (dn or note.id) else []
    names = _part_names(note, chunks, dn, ids, existing, vault)
    part_paths = [posixpath.join(folder, n) for n in names]
    # Parts of a note with a file-level :ID: (org-roam) or front-matter id (Dendron) get their
    # own too: of the note's and the part's path, unique as the path is, the same on every machine
    uuids = [str(uuid.uuid5(_SPLIT_UUIDS, f"{file_uuid}/{p}")) for p in part_paths] if file_uuid else []

    # Which part each original line (1-based) went to
    line_part: dict[int, int] = {}
    for i, (first, end, _) in enumerate(chunks):
        for ln in range(first + 1, end + 1):
            line_part[ln] = i
    plan = SplitPlan(note=note.path, parts=part_paths, oversized=oversized)

    renumbered = _renumbered(heads, line_part, len(chunks)) if not org else {}

    tops = [header(head, ids[i] if ids else None, uuids[i] if uuids else None) for i, (_, _, head) in enumerate(chunks)]

    anchor_in_part = _anchor_in_part(line_part, tops, chunks, renumbered)
    edits, own = _link_edits(note, graph, line_part, part_paths, ids, uuids, dn, anchor_in_part)

    hub = _write_parts(plan, note, lines, nl, org, chunks, tops, own, ids if dn else [], markdown, heads, cfg)
    _rewrite_others(plan, edits, vault, read)
    plan.changes.append(FileChange(note.path, data, hub))
    # Links rewritten to name a part are longer: a part they push over the threshold would
    # be split again, so cut smaller (a section that cannot be cut is over it anyway)
    over = max((len(c.after) - cfg.threshold for c, (_, _, head) in zip(plan.changes, chunks)
                if head not in oversized), default=0)
    if over > 0 and margin < cfg.threshold // 4:
        return plan_split(note, data, graph, vault, cfg, read, names_taken, margin + over + 64)
    problems = verify(plan, graph)
    if problems:
        more = f" (and {len(problems) - 3} more)" if len(problems) > 3 else ""
        raise SplitError(f"{note.path}: the split would change where links lead: {'; '.join(problems[:3])}{more}")
    return plan


def _split_heads(note: Note) -> list[Heading]:
    """The headings `note` is split at, in order: all but one heading over all the rest (the
    note's title, which stays in the hub). Raises SplitError when it has none."""
    heads = sorted(headings_of(note), key=lambda h: h.line)
    if not heads:
        raise SplitError(f"{note.path} has no headings to split at")
    top = min(h.level for h in heads)
    if len(heads) > 1 and heads[0].level == top and all(h.level > top for h in heads[1:]):
        heads = heads[1:]  # one heading over all the rest is the note's title: it stays in the hub
    return heads


def _chunks(note: Note, data: bytes, lines: list[bytes], heads: list[Heading], budget: int,
            at: list[int]) -> tuple[list[tuple[int, int, str]], list[str]]:
    """The note's headed text cut into parts within `budget` bytes at its headings (`at`: the
    bytes before each line), and the headings of sections that cannot be cut. Raises
    SplitError when that makes fewer than two parts."""
    chunks, oversized = _sections(lines, heads, budget, at=at)
    if len(chunks) == 1 and not oversized:
        # all its headed text fits in one part (the note is over the threshold by its front
        # matter and opening): that part would be the note again, over the threshold at its
        # next edits; cut smaller, into parts as even as its headings allow (each still
        # within the budget: a section the smaller cut cannot cut is a part of its own)
        for smaller in (budget // 2, budget * 2 // 3):
            cut, _ = _sections(lines, heads, smaller, at=at)
            if len(cut) >= 2 and all(at[min(b, len(lines))] - at[a] <= budget for a, b, _ in cut):
                chunks = cut
                break
    if len(chunks) < 2:
        raise SplitError(f"{note.path}: all of its headed text fits in one part, which cannot be cut smaller "
                         "at its headings" if len(chunks) == 1 and not oversized else
                         f"{note.path} is one section of {len(data)} bytes that cannot be cut smaller")
    return chunks, oversized


def _part_names(note: Note, chunks: list[tuple[int, int, str]], dn, ids: list[str], existing: set[str],
                vault: Path) -> list[str]:
    """Each part's file name, beside the note: a Denote name with its identifier, a Dendron
    child, or "<note> - <heading>", numbered past any name the vault holds (`existing`:
    its paths case-folded) or the folder has."""
    folder = posixpath.dirname(note.path)
    stem = posixpath.basename(note.path).rsplit(".", 1)[0]
    ext = ".org" if note.path.endswith(".org") else ".md"
    names: list[str] = []
    for i, (_, _, head) in enumerate(chunks):
        if dn:
            kws = ("__" + "_".join(dn.keywords)) if dn.keywords else ""
            name = f"{ids[i]}--{_slug(head)}{kws}{ext}"
        else:
            if DENDRON.hierarchy(stem):  # a child note
                base = f"{stem}.{_slug(head)}"
            else:
                room = max(40, NAME_BYTES - 20 - len(stem.encode()))
                base = f"{stem} - {_cut(_name_part(head), 80, room) or 'part'}"
            base = base if len(base.encode()) <= NAME_BYTES else _cut(base, NAME_BYTES, NAME_BYTES)
            name, k = base + ext, 2
            sep = "-" if not any(c.isspace() for c in base) else " "  # a Dendron name stays one word
            while (posixpath.join(folder, name).casefold() in existing or name.casefold() in map(str.casefold, names)
                   or os.path.lexists(vault / folder / name)):
                name, k = f"{base}{sep}{k}{ext}", k + 1
        names.append(name)
    return names


def _renumbered(heads: list[Heading], line_part: dict[int, int], parts: int) -> dict[int, tuple[str, str]]:
    """A Markdown note's headings whose anchor changes in their part: line -> (anchor in the
    note, anchor in its part)."""
    # Markdown anchors are numbered per file (`a`, `a-1`, ...): a heading's own in its part
    renumbered: dict[int, tuple[str, str]] = {}  # line -> (anchor in the note, anchor in its part)
    seen: list[dict[str, int]] = [{} for _ in range(parts)]  # each part's slugs so far
    for h in heads:
        if h.line in line_part:
            mine = numbered(github_slug(h.text), seen[line_part[h.line]])
            if h.anchor != mine:
                renumbered[h.line] = (h.anchor, mine)
    return renumbered


def _anchor_in_part(line_part: dict[int, int], tops: list[bytes], chunks: list[tuple[int, int, str]],
                    renumbered: dict[int, tuple[str, str]]):
    """A function giving a link's anchor as it must read once its target's line is in its
    part (an Org line number counted in the part, a renumbered Markdown anchor), None when
    it stays as it is."""

    def anchor_in_part(r) -> str | None:
        unit = syntax_of(r.link)
        if unit.by_line(r.link) and r.line in line_part:
            i = line_part[r.line]  # Org's ::42 is a line number: the line's number in its part
            return str(tops[i].count(b"\n") + r.line - chunks[i][0])
        old, mine = renumbered.get(r.line, (None, None))
        a = unit.anchor_of(r.link)  # Dendron's [[label|note#a]]: in the label
        prefix = "#" if a.startswith("#") else ""  # denote:ID::#a, file:x::#a
        return prefix + mine if old is not None and a[len(prefix):] == old else None

    return anchor_in_part


def _link_edits(note: Note, graph: Graph, line_part: dict[int, int], part_paths: list[str], ids: list[str],
                uuids: list[str], dn, anchor_in_part) -> tuple[dict[str, list[tuple[int, int, str, str]]], list]:
    """The links to rewrite: other notes' into moved headings and blocks (path -> (line, col,
    old raw, new raw)), and the note's own to its own headings, from wherever they end up."""

    def follows(r) -> bool:
        """Whether a link leads wherever its target's text goes without a rewrite (an `id:`
        link with no anchor names a heading's own :ID:, which moves with the heading)."""
        return syntax_of(r.link).follows_heading(r.link)

    def to(i: int, anchor: str | None) -> Part:
        return Part(part_paths[i], ids[i] if ids else None, uuids[i] if uuids else None, anchor)

    # Rewrite links: from other notes into moved headings/blocks; and the note's own
    edits: dict[str, list[tuple[int, int, str, str]]] = {}  # path -> (line, col, old raw, new raw)
    for src, r in graph.backlinks(note.path, anchored=True):  # a link to the note itself stays as it is
        if r.line is None or r.line not in line_part or follows(r):
            continue
        new = _rewritten(note.path, r.link, src, src, to(line_part[r.line], anchor_in_part(r)))
        if new != r.link.raw:
            edits.setdefault(src, []).append((r.link.line, r.link.col, r.link.raw, new))
    own = []  # the note's links to its own headings, from wherever they end up
    for r in graph.links(note.path):
        if r.target == note.path and r.line in line_part and not follows(r):
            here = line_part.get(r.link.line)
            # `[[#H]]` stays valid within one part; `[[Note#H]]` names the note, which is now the hub
            if here != line_part[r.line] or r.link.kind not in WITHIN_SOURCE or anchor_in_part(r):
                at = part_paths[here] if here is not None else note.path
                own.append((r.link.line, r.link.col, r.link.raw,
                            _rewritten(note.path, r.link, note.path, at, to(line_part[r.line], anchor_in_part(r)))))
        elif r.target == note.path and r.link.kind in WITHIN_SOURCE and r.link.line in line_part \
                and r.line is not None:
            # `[[#H]]` moved into a part, to a heading the hub keeps: it names the hub now
            hub = Part(note.path, dn.id if dn else None)
            own.append((r.link.line, r.link.col, r.link.raw,
                        _rewritten(note.path, r.link, note.path, part_paths[line_part[r.link.line]], hub)))
    return edits, own


def _rewritten(note: str, link, path: str, at: str, part: Part) -> str:
    """`link`, written in `path` (its line going to `at`), made to lead into `part` by its
    syntax's unit. Raises SplitError when that syntax cannot, saying which and why."""
    unit = syntax_of(link)
    why = unit.unwritable(link)
    if why is not None:
        raise SplitError(f"{note}: a link into it cannot be rewritten to lead into {part.target}: {path}:{link.line}: "
                         f"{link.raw} is a {unit.name}, and {why}")
    return unit.rewrite(link, at, part)


def _write_parts(plan: SplitPlan, note: Note, lines: list[bytes], nl: bytes, org: bool,
                 chunks: list[tuple[int, int, str]], tops: list[bytes], own: list, hub_ids: list[str],
                 markdown: bool, heads: list[Heading], cfg: Split) -> bytes:
    """The note's own links rewritten (`own`), each part (its header `tops`, its lines) into
    `plan.changes`, and where every original line went into `plan.line_map`, footnote
    definitions copied where they are used; returns the hub: what is above the first part,
    the list of the parts, and what follows the last."""
    part_paths = plan.parts
    new_lines = list(lines)
    bom = b""
    if new_lines and new_lines[0].startswith(b"\xef\xbb\xbf"):  # the file's, not its first line's: it stays first
        bom, new_lines[0] = b"\xef\xbb\xbf", new_lines[0][3:]
    for ln, col, old, new in sorted(own, key=lambda e: (e[0], -e[1])):  # right to left: columns stay true
        new_lines[ln - 1] = _replace_at(new_lines[ln - 1], col, old, new, note.path, ln)
    plan.rewritten = len(own)

    line_map: dict[int, tuple[str, int]] = {}  # original line -> (file, line) after the split
    for i, (first, end, head) in enumerate(chunks):
        body = b"".join(new_lines[first:end])
        top = tops[i]
        at = top.count(b"\n")
        line_map.update({ln: (part_paths[i], at + ln - first) for ln in range(first + 1, end + 1)})
        plan.changes.append(FileChange(part_paths[i], None, top + body))
    hub = bom + b"".join(new_lines[: chunks[0][0]])
    if hub and not hub.endswith(b"\n"):
        hub += nl
    line_map.update({ln: (note.path, ln) for ln in range(1, chunks[0][0] + 1)})
    held = [[h.text for h in _held(heads, first, end)] for first, end, _ in chunks]
    hub += (nl if hub else b"") + _hub_list(org, part_paths, chunks, hub_ids, markdown, held,
                                            max(1024, cfg.threshold // 4)).replace(b"\n", nl)
    tail_start = chunks[-1][1]
    at = hub.count(b"\n")
    line_map.update({ln: (note.path, at + ln - tail_start) for ln in range(tail_start + 1, len(lines) + 1)})
    hub += b"".join(new_lines[tail_start:])  # nothing normally; kept so no byte is lost
    for c in [*plan.changes, None]:  # the parts so far, and the hub
        text = hub if c is None else c.after
        extra, origin = _definitions(text, new_lines, org, nl)
        at = text.count(b"\n") + 1  # the blank line before them
        plan.copied.update({(c.path if c else note.path, at + k): ln for k, ln in enumerate(origin, 1)})
        if c is None:
            hub += extra
        else:
            c.after += extra
    plan.line_map = line_map
    return hub


def _rewrite_others(plan: SplitPlan, edits: dict[str, list[tuple[int, int, str, str]]], vault: Path, read) -> None:
    """The other notes' links to moved text rewritten (`edits`), each note a change in `plan`."""
    for src, items in edits.items():
        before = read(vault / src)
        text_lines = before.splitlines(keepends=True)
        for ln, col, old, new in sorted(items, key=lambda e: (e[0], -e[1])):
            text_lines[ln - 1] = _replace_at(text_lines[ln - 1], col, old, new, src, ln)
        plan.changes.append(FileChange(src, before, b"".join(text_lines)))
        plan.rewritten += len(items)


def verify(plan: SplitPlan, graph: Graph) -> list[str]:
    """Every link the split can affect, resolved against the vault as it will be and
    compared with where it leads now: the same note (the hub, or the part that now holds
    the text) and the same heading or block, or broken for the same reason. The links
    the split adds (the parts' back links, the hub's list) must lead to the hub and to
    each part. Returns what would differ, empty when nothing does."""
    note, line_map = plan.note, plan.line_map
    after = {c.path: parse_file(c.path, c.after) for c in plan.changes}
    new = graph.what_if(after)
    problems: list[str] = []

    def expect(d, link, here: str) -> tuple:
        """Where a link that led to `d` must lead from `here`, the file that holds it now."""
        if d.broken:
            return (None, None, d.broken)
        if link.kind in WITHIN_SOURCE and d.line is None:  # an Org text search: within its own file
            return (here, None, None)
        if d.target == note and d.line is not None:
            return (*line_map[d.line], None)
        return (d.target, d.line, None)

    def show(t: tuple) -> str:
        return f"broken ({t[2]})" if t[2] else f"{t[0]}" + (f":{t[1]}" if t[1] else "")

    def check(src: str, link, was: tuple, now) -> None:
        got = (now.target, now.line, now.broken) if now.broken is None else (None, None, now.broken)
        if got != was:
            problems.append(f"{src}:{link.line}: {link.raw} would lead to {show(got)}, not {show(was)}")

    def by_line(items, line=lambda link: link.line) -> dict[int, list]:
        out: dict[int, list] = {}
        for it in items:
            out.setdefault(line(it), []).append(it)
        return out

    # Links in the files the split writes: each matched with the one it was, by line and order
    moved: dict[tuple[str, int], int] = {where: ln for ln, where in line_map.items()} | plan.copied
    old_links = {p: by_line(graph.links(p), lambda r: r.link.line) for p in after if p in graph.notes}
    parts = {p: i for i, p in enumerate(plan.parts)}
    added: Counter = Counter()  # (file, the file it links to) for the links the split adds
    for path, n in after.items():
        for ln, links in by_line(links_of(n)).items():
            if (path, ln) in moved:
                orig_path, orig_ln = note, moved[(path, ln)]
            elif path in parts or path == note:  # a line the split adds: a back link, the hub's list
                for link in links:
                    if link.kind in NOT_NOTES:  # in a heading the hub's list shows: it leads out of the vault
                        continue
                    i = _listed(link, plan.parts)
                    want = note if path in parts else plan.parts[i] if i is not None else None
                    if want is None:
                        problems.append(f"{path}:{ln}: {link.raw} is not a link the split means to write")
                    else:
                        check(path, link, (want, None, None), new.resolve(n, link))
                        added[(path, want)] += 1
                continue
            else:
                orig_path, orig_ln = path, ln
            was = old_links.get(orig_path, {}).get(orig_ln, [])
            if len(was) != len(links):
                problems.append(f"{path}:{ln}: {len(links)} links where {orig_path}:{orig_ln} had {len(was)}")
                continue
            for link, r in zip(links, was):
                check(path, link, expect(r.dest, link, path), new.resolve(n, link))
    for p in plan.parts:  # each part listed once by the hub, and linking back to it once
        for src, dst, what in ((note, p, "the hub's list"), (p, note, "its back link")):
            if added[(src, dst)] != 1:
                problems.append(f"{src}: {what} names {dst} {added[(src, dst)]} times, not once (markup in a title?)")
    # Links elsewhere: into the note, or looking up a name, identifier or ID a new file answers to
    for src, r in graph.affected(note, after):
        check(src, r.link, expect(r.dest, r.link, src), new.resolve(graph.notes[src], r.link))
    return problems


def _listed(link, parts: list[str]) -> int | None:
    """Which part a link of the hub's list names (by file name, identifier or stem), if any."""
    for i, p in enumerate(parts):
        name = posixpath.basename(p)
        if syntax_of(link).names_file(link, name):
            return i
    return None


def _replace_at(line: bytes, col: int, old: str, new: str, path: str, ln: int) -> bytes:
    try:
        text = line.decode()
    except UnicodeDecodeError:
        raise SplitError(f"{path}:{ln}: the line of a link to rewrite is not UTF-8; fix it and retry") from None
    if text[col - 1 : col - 1 + len(old)] != old:
        raise SplitError(f"{path}:{ln}: link {old!r} is not where the index says; reindex and retry")
    return (text[: col - 1] + new + text[col - 1 + len(old) :]).encode()


def _part_header(org: bool, head: str, note: Note, ident: str | None, new_uuid: str | None, hub_id: str | None,
                 stem: str, title: str, markdown: bool, settings: list[str] = (), tags: list[str] = ()) -> bytes:
    """A part's title, tags (the note's file-level ones, as written: see file_tags) and
    identifiers, then its back link to the hub (the line `PART_HEADER` reads): by the hub's
    identifier only where that names one note."""
    name = posixpath.basename(note.path)
    if org:
        out = [f":PROPERTIES:\n:ID:       {new_uuid}\n:END:"] if new_uuid else []
        out.append(f"#+title:      {head}")
        if tags:
            out.append(f"#+filetags:   :{':'.join(tags)}:")
        if ident:
            out.append(f"#+identifier: {ident}")
        out += settings  # the note's #+TODO, #+LINK, ...: its headings and links read alike in the part
        back = DENOTE.write(hub_id, title) if hub_id else ORG_FILE.write(name, title)
        return ("\n".join(out) + f"\n\nPart of {back}.\n\n").encode()
    fm = ["---", f"title: {json.dumps(head, ensure_ascii=False)}"]
    if tags:
        fm.append(f"tags: [{', '.join(json.dumps(t, ensure_ascii=False) for t in tags)}]")
    if ident:
        fm.append(f'identifier: "{ident}"')
    if new_uuid:
        fm.append(f'id: "{new_uuid}"')
    fm.append("---")
    back = MARKDOWN_LINK.write(name, title) if markdown else WIKI.write(stem, title)
    return ("\n".join(fm) + f"\n\nPart of {back}.\n\n").encode()


def _definitions(text: bytes, lines: list[bytes], org: bool, nl: bytes = b"\n") -> tuple[bytes, list[int]]:
    """The footnote and reference-link definitions `text` uses but does not hold, copied
    from the note's `lines` (each with the lines that continue it), to go at its end; and
    the line (1-based, in `lines`) each copied line comes from."""
    use, define = (_ORG_NOTE_USE, _ORG_NOTE_DEF) if org else (_MD_NOTE_USE, _MD_NOTE_DEF)
    if b"[" not in text:
        return b"", []
    used = set()
    for m in use.finditer(text):
        name = m.group(1) if org else (b"^" + m.group(1) if m.group(1) else m.group(2) or m.group(3))
        used.add(name.lower())
    held = {m.group(1).lower() for x in text.splitlines() if (m := define.match(x))}
    want = used - held
    if not want:
        return b"", []
    out: list[bytes] = []
    origin: list[int] = []
    for i, x in enumerate(lines):
        m = define.match(x)
        if m and m.group(1).lower() in want:
            want.discard(m.group(1).lower())
            out.append(x if x.endswith(b"\n") else x + nl)
            origin.append(i + 1)
            for j, y in enumerate(lines[i + 1 :], i + 2):  # an indented continuation belongs to it
                if not y.strip() or not y[:1].isspace():
                    break
                out.append(y if y.endswith(b"\n") else y + nl)
                origin.append(j)
    return ((nl + b"".join(out)) if out else b""), origin


def _markdown_style(links) -> bool:
    """Whether a Markdown note's `links` are only [Markdown](links.md), never [[wiki]]: its
    hub lists its parts that way too (its renderer may read no other kind)."""
    wiki = [link.raw.lstrip("!").startswith("[[") for link in links if link.kind in MARKDOWN_OR_WIKI]
    return bool(wiki) and not any(wiki)


def _held(heads: list[Heading], first: int, end: int) -> list[Heading]:
    """The headings a part made of lines [first, end) holds besides its first: the highest
    of them (the sections packed after the first, or the first's subsections)."""
    inner = [h for h in heads if first + 1 < h.line <= end]
    top = min((h.level for h in inner), default=0)
    return [h for h in inner if h.level == top]


_NOT_IN_LIST = str.maketrans("^<>", "   ")
"""Not in a heading the hub's list shows: what could make it a block id or an Org target."""


def _hub_list(org: bool, parts: list[str], chunks, ids: list[str], markdown: bool = False,
              held: list[list[str]] | None = None, budget: int = 4096) -> bytes:
    """The hub's list of its parts, in order, each with the headings it holds besides the
    one it is named after (`held`, as many as `budget` bytes allow for all: the hub stays
    small). `ids`: the parts' identifiers, for `denote:` links (a Denote-named note's
    parts); else links by file name."""
    shown = [[" ".join(plain(t).translate(_NOT_IN_LIST).split())[:80] for t in hs] for hs in (held or [[]] * len(parts))]
    shown = [[t for t in hs if t] for hs in shown]
    for most in (12, 6, 3, 1, 0):  # headings under each part at most, as the budget allows
        size = sum(len(t.encode()) + 8 for hs in shown for t in hs[:most]) + 24 * len(parts)
        if size <= budget:
            break
    out = ["Parts:" if not org else "* Parts"]
    for i, p in enumerate(parts):
        head = plain(chunks[i][2]) or "part"
        name = posixpath.basename(p)
        if org:
            link = DENOTE.write(ids[i], head) if ids else ORG_FILE.write(name, head)
        elif markdown:
            link = MARKDOWN_LINK.write(name, head)
        else:
            link = WIKI.write(name.rsplit(".", 1)[0], head)
        item = f"{i + 1}. "
        out.append(item + link)
        out += [" " * len(item) + "- " + t for t in shown[i][:most]]
        if len(shown[i]) > most:
            out.append(" " * len(item) + f"- … and {len(shown[i]) - most} more")
    return ("\n".join(out) + "\n").encode()


def diff(plan: SplitPlan) -> str:
    out = []
    for c in plan.changes:
        a = (c.before or b"").decode(errors="replace").splitlines(keepends=True)
        b = (c.after or b"").decode(errors="replace").splitlines(keepends=True)
        out += difflib.unified_diff(a, b, "/dev/null" if c.before is None else f"a/{c.path}",
                                    "/dev/null" if c.after is None else f"b/{c.path}")
    return "".join(out)


# -- safety checks ------------------------------------------------------------------------


def editor_busy(vault: Path, rel: str) -> str | None:
    """Why an editor may hold this file (lock or swap file), or None."""
    p = vault / rel
    name = p.name
    for cand in (f".#{name}", f".{name}.swp", f".{name}.swo", f"#{name}#"):
        if os.path.lexists(p.with_name(cand)):
            return f"an editor holds it ({cand} exists)"
    return None


def read_only(vault: Path, path: str) -> str | None:
    """Why the splitter must not write `path` (a file or folder without its owner's write bit:
    the user made it read-only, and root's power to write anyway is not consent), or None."""
    p = vault / path
    target = p if p.exists() else p.parent
    if not os.stat(target).st_mode & 0o200:
        return f"{path} is read-only" if target == p else f"{posixpath.dirname(path) or '.'} is read-only"
    return None


def check_quiet(vault: Path, rel: str, quiet: float) -> None:
    st = os.stat(vault / rel)
    age = time.time() - st.st_mtime
    if age < quiet:
        raise SplitError(f"{rel} changed {age:.0f} s ago; waiting until it has been quiet for {quiet:.0f} s")
    busy = editor_busy(vault, rel)
    if busy:
        raise SplitError(f"{rel}: {busy}")


def excluded(rel: str, cfg: Split) -> bool:
    return any(fnmatch.fnmatch(rel, g) for g in cfg.exclude)


# -- what the journal says of splits ------------------------------------------------------


def last_entries(journal: Journal) -> dict[str, dict]:
    """Each note's last operation that took effect (done or undone), by note."""
    # op names sort by time; an operation that never happened (aborted, rolled back) says nothing
    return {e["note"]: e for e in journal.all() if e.get("note") and e.get("status") in ("done", "undone")
            and e.get("kind", SPLIT) in (SPLIT, STALE)}  # an entry remembered says nothing of splits


def kept_whole(journal: Journal) -> dict[str, str]:
    """Notes the user wants whole, with the op that says so: their last split was undone,
    or a stale save put their text back whole. Auto mode never splits them again (a split
    by hand still does)."""
    return {note: e["op"] for note, e in last_entries(journal).items()
            if (e.get("kind", SPLIT), e["status"]) in ((SPLIT, "undone"), (STALE, "done"))}


def done_splits(journal: Journal) -> dict[str, str]:
    """Notes split now (their last operation is a done split), with that op."""
    return {note: e["op"] for note, e in last_entries(journal).items()
            if e.get("kind", SPLIT) == SPLIT and e["status"] == "done"}


def stale_plan(entry: dict, vault: Path) -> SplitPlan | None:
    """When the hub of the done split `entry` was saved with the text its parts hold (an
    editor's stale buffer of the whole note): the plan that removes the duplicate, so that
    the vault is what the user saved. The parts, as the split wrote them, are removed and
    the links rewritten to point into them are put back; the hub stays as saved. None when
    the hub does not hold the parts' text again. Raises SplitError when that cannot be done
    without losing an edit made since (a part or a rewritten line changed)."""
    changes = files_of(entry, vault)
    hub = next(c for c in changes if c.path == entry["note"])
    now = read_like(vault / hub.path, hub.before, room=1 << 20)  # a stale buffer is about the note before the split
    if now is None or now is OTHER or now == hub.after:
        return None
    moved = _lines(hub.before) - _lines(hub.after)  # the lines that went into the parts
    if not moved or sum((_lines(now) & moved).values()) * 2 < sum(moved.values()):
        return None  # an edit of the hub, not the whole text saved back
    plan = SplitPlan(note=hub.path, parts=[c.path for c in changes if c.before is None])
    for c in changes:
        p = vault / c.path
        cur = read_like(p, c.before, c.after, room=1 << 20)
        if cur is OTHER:
            raise SplitError(f"{c.path} grew much bigger since the split: put it back by hand (nothing was changed)")
        if c is hub or cur == c.before:
            continue
        if c.before is None:  # a part
            if cur is None:
                continue
            if cur != c.after:
                raise SplitError(f"{hub.path} was saved with the text of its parts again, but {c.path} was edited "
                                 "since the split: merge the two by hand (nothing was changed)")
            plan.changes.append(FileChange(c.path, cur, None))
        elif cur == c.after:  # a note whose links the split rewrote
            plan.changes.append(FileChange(c.path, cur, c.before))
        else:  # edited since: put back only the lines the split rewrote
            plan.changes.append(FileChange(c.path, cur, _unrewrite(c, cur)))
    return plan if plan.changes else None


def _lines(data: bytes | None) -> Counter:
    return Counter(x for x in (data or b"").splitlines() if x.strip())


def _unrewrite(c: FileChange, cur: bytes) -> bytes:
    """`cur` with each line the split rewrote in `c` put back as it was before."""
    before, after = c.before.splitlines(keepends=True), c.after.splitlines(keepends=True)
    lines = cur.splitlines(keepends=True)
    for old, new in zip(before, after):
        if old != new:
            at = [i for i, x in enumerate(lines) if x.rstrip(b"\r\n") == new.rstrip(b"\r\n")]
            if not at:
                raise SplitError(f"{c.path} changed where the split rewrote a link ({new.strip()[:80]!r}): "
                                 "put it back by hand (nothing was changed)")
            for i in at:
                lines[i] = old if old.endswith(b"\n") or not lines[i].endswith(b"\n") else old + b"\n"
    return b"".join(lines)
