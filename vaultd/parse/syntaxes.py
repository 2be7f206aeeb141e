"""Every link syntax vaultd reads, one unit each, and what they share.

A unit (a `LinkSyntax`) holds all that is true of one syntax: how its text is read into a
Link (`read`), what the link reads as in running text (`label`), where it leads (`resolve`,
against a `Lookup` of the vault: store/graph.Graph is one) and which lookup keys that
depends on (`deps`), how it is written anew to lead to another note or heading (`rewrite`,
the splitter's), and why not when it cannot be (`unwritable`), the link the splitter and
an editor write in it (`write`, `complete`), and whether it can name a part at all
(`cannot_name`). `SYNTAXES` lists the units; `BY_KIND` finds the one that reads each
`Link.kind` (note.Kind). Dendron's `[[label|note.name#anchor]]` is a unit of its own with
no kind of its own: wikilinks and embeds are read, resolved and rewritten through it too.

The written forms several syntaxes share are here as well: `[[…]]` (`BRACKET`: wikilinks,
embeds, Dendron, Org's typed and internal links), `[…](…)` (`MARKDOWN`) and a bare URL
(`BARE_URL`); parse/links.py finds them in a line (outside code) and hands each to its unit.

Pure: no store, no index. What resolution needs of the vault comes through `Lookup`.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
import unicodedata
from typing import Protocol
from urllib.parse import quote, unquote

import msgspec

from ..note import ID_ANCHOR, Kind, Link, Note, headings_of
from .conflicts import conflict_copy

# -- the written forms --------------------------------------------------------------------

# [[target]] or [[target][description]] (Org), also Obsidian [[target|alias]] and ![[embed]].
# The `!` of an embed is the character before the match (see links._scan_line): a pattern
# that begins with a literal lets the regex engine skip straight to candidates.
# Runs of plain characters are matched possessively (`++`), which is much faster than a
# character at a time; they can only end at a bracket, newline or backslash anyway.
BRACKET = re.compile(r"\[\[((?:[^\[\]\n\\]++|\\.)+)\](?:\[([^\n]*?)\])?\]")
# [text](target "title") and ![alt](target)
MARKDOWN = re.compile(
    r"\[((?:[^\[\]\n]++|\[[^\[\]\n]*\])*)\]"
    r"\(\s*(<[^<>\n]*>|[^\s()<>]*(?:\([^\s()]*\)[^\s()<>]*)*)(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?\s*\)"
)
BARE_URL = re.compile(r"\b(?:https?|ftp)://[^\s<>\[\]()\"'`]+")
SCHEME = re.compile(r"^([a-zA-Z][\w+.-]*):")
# [[TIP("...")]] and [[/TIP]] macros, [[:digit:]] character classes, [[ ]]
LOOKALIKE = re.compile(r"^(?:\w+\(.*\)|/\w+|:.*|\s*)$")
# A link in a heading, reduced to what it shows: [[a|b]], [[a][b]], [b](a)
_LINK_TEXT = re.compile(r"\[\[(?:[^\]\[]*\]\[)?([^\]\[]*)\]\]|!?\[([^\]\[]*)\]\([^)]*\)")


def _shown(m: re.Match) -> str:
    if m.group(2) is not None:
        return m.group(2)
    t = m.group(1)
    return t.split("|", 1)[1] if "|" in t else t


def labels_shown(text: str) -> str:
    """`text` with each link reduced to what it shows (`[[a|b]]`, `[[a][b]]`, `[b](a)` to b,
    `[[a]]` to a): how the splitter reads a heading to name a part after it."""
    return _LINK_TEXT.sub(_shown, text)


# -- names and destinations ---------------------------------------------------------------

NOTE_EXTS = (".md", ".org")
ATTACHMENT_EXTS = frozenset(
    "png jpg jpeg gif svg webp bmp ico tif tiff avif heic pdf mp3 mp4 m4a wav ogg oga flac webm mov mkv avi "
    "canvas excalidraw base csv tsv json yaml yml txt html htm zip tar gz xlsx docx pptx epub drawio ics".split()
)
_LOOSE = re.compile(r"[\W_]+", re.UNICODE)

# Reasons a link is broken
NO_NOTE, AMBIGUOUS, NO_HEADING, NO_BLOCK, NO_ID, OUTSIDE = (
    "no such note", "ambiguous", "no such heading", "no such block", "no such ID", "outside the vault",
)
NO_IDENTIFIER = "no such identifier"

# Lookup keys (see `LinkSyntax.deps`): a note answers to its file name, aliases, IDs and identifier
BY_NAME, BY_ALIAS, BY_UUID, BY_IDENT = "n:", "a:", "u:", "d:"


def key(s: str) -> str:
    """Case- and normalisation-insensitive form of a name (macOS writes NFD file names)."""
    return s.lower() if s.isascii() else unicodedata.normalize("NFC", s).casefold()


@functools.lru_cache(maxsize=1 << 16)  # heading names repeat: 527,000 headings, 66,000 names
def loose(s: str) -> str:
    """A slug that both GitHub's and Obsidian's anchors reduce to."""
    return _LOOSE.sub("-", key(s)).strip("-")


def stem_of(path: str) -> str:
    """A path's file name less a note extension (`os.path.splitext`'s reading of it: the
    last dot, with something other than dots before it), found without splitext's cost:
    a graph's build asks it of every link."""
    name = path.rsplit("/", 1)[-1]
    i = name.rfind(".")
    return name[:i] if i > 0 and name[i:].lower() in NOTE_EXTS and name[:i].strip(".") else name


def has_attachment_ext(target: str) -> bool:
    ext = os.path.splitext(target)[1][1:].lower()
    return ext in ATTACHMENT_EXTS


class Dest(msgspec.Struct, kw_only=True, omit_defaults=True, gc=False):
    """Where a link leads. Shared by every link that resolves alike."""

    target: str | None = None
    """Vault path of the note it resolves to (None for URLs, attachments and broken links)."""
    line: int | None = None
    """Line of the heading or block it points at, when it has an anchor."""
    broken: str | None = None
    """Why it does not resolve (no such note, ambiguous: a | b, no such heading, ...)."""
    candidates: list[str] = []


NOWHERE = Dest()
"""URLs and attachments: not notes, not broken."""


def one_of(paths: list[str], missing: str) -> Dest:
    """The one note of `paths`, broken with `missing` when none, ambiguous when several
    (but for sync tools' conflict copies of one of them, parse/conflicts)."""
    if len(paths) == 1:
        return Dest(target=paths[0])
    if not paths:
        return Dest(broken=missing)
    copies = {p: c for p in paths if (c := conflict_copy(p)) is not None}
    rest = [p for p in paths if p not in copies]
    if len(rest) == 1 and all(c.of == rest[0] for c in copies.values()):
        return Dest(target=rest[0])  # the others are sync tools' conflict copies of it
    return Dest(broken=AMBIGUOUS, candidates=sorted(paths))


class Anchors:
    """A note's headings and blocks, by every form a link may name them in: line numbers."""

    __slots__ = ("loose", "ids", "blocks", "blocks_key")

    def __init__(self, note: Note):
        self.loose: dict[str, int] = {}
        self.ids: dict[str, int] = {}
        for h in reversed(headings_of(note)):  # the first heading of a name wins
            self.loose[loose(h.text)] = h.line
            self.ids[h.anchor] = h.line
        self.blocks = {b.id: b.line for b in note.blocks}
        self.blocks_key = {key(b.id): b.line for b in note.blocks}


def _broken(r: Dest, reason: str) -> Dest:
    r.broken = reason
    return r


def find_anchor(r: Dest, idx: Anchors, a: str, org: bool) -> Dest:
    """`r` at the line anchor `a` (stripped, not empty) names in its note (`idx`), read as
    Org reads a search option (`org`) or as Obsidian and GitHub read `#anchor`."""
    if a.startswith("^"):
        r.line = idx.blocks.get(a[1:])
        return r if r.line else _broken(r, NO_BLOCK)
    if org and a.startswith("*"):
        r.line = idx.loose.get(loose(a[1:]))
        return r if r.line else _broken(r, NO_HEADING)
    if org and a.startswith("#"):
        r.line = idx.ids.get(a[1:]) or idx.loose.get(loose(a[1:]))
        return r if r.line else _broken(r, NO_HEADING)
    if org:
        # <<target>>, a line number or a text search: Org finds those anywhere
        r.line = idx.blocks_key.get(key(a)) or idx.loose.get(loose(a))
        return r
    # Obsidian `#Heading` (nested `#H1#H2`: the last one), GitHub `#slug`
    last = a.rsplit("#", 1)[-1]
    r.line = idx.ids.get(last) or idx.loose.get(loose(last))
    return r if r.line else _broken(r, NO_HEADING)


class Lookup(Protocol):
    """What a link syntax resolves against: the vault's notes by every name a link may use
    (store/graph.Graph is the vault's). Read without a lock: the caller holds the graph's."""

    def note(self, path: str) -> Note:
        """The note at this vault path (one a lookup below gave)."""

    def exact(self, path: str) -> str | None:
        """The note at this vault path (case aside), trying the note extensions when it has none."""

    def by_name(self, folder: str, target: str, strict: bool = False) -> Dest:
        """The note a name leads to from `folder`, as Obsidian finds it (a path, a path's end,
        a file name, an alias); `strict`: a name typed, from no folder, never guessed."""

    def ids(self, ident: str) -> list[str]:
        """The notes with this Denote identifier."""

    def id_keyword(self, ident: str) -> list[str]:
        """The notes whose `identifier` keyword is `ident` but whose file name says another."""

    def uuids(self, uuid: str) -> list[str]:
        """The notes holding this Org :ID: (or front-matter id), the file's or a heading's."""

    def anchors(self, note: Note) -> Anchors:
        """The note's headings and blocks by every form a link names them in."""


def _by_path(vault: Lookup, folder: str, target: str, from_top: bool, by_name: bool) -> Dest:
    """A path written relative to `folder` (`/x`: from the vault's top when `from_top`, else
    outside it); `by_name`: a bare name not found there is looked up as a wikilink's."""
    t = target.strip()
    if t.startswith("~") or (t.startswith("/") and not from_top):
        return Dest(broken=OUTSIDE)
    if t.startswith("/"):
        rel = posixpath.normpath(t.lstrip("/"))
    else:
        rel = posixpath.normpath(folder + t if not folder or folder.endswith("/") else folder + "/" + t)  # join's
    if rel.startswith("../") or rel == "..":
        return Dest(broken=OUTSIDE)
    found = vault.exact(rel)
    if found:
        return Dest(target=found)
    if t.endswith("/"):
        return NOWHERE  # a folder
    if by_name and "/" not in t:
        r = vault.by_name(folder, t)
        if r.target or r.broken == AMBIGUOUS:
            return r
    if has_attachment_ext(t) or not t.lower().endswith(NOTE_EXTS) and "." in t.rsplit("/", 1)[-1]:
        return NOWHERE
    return Dest(broken=NO_NOTE)


def _name_deps(target: str) -> list[str]:
    """The lookup keys a link by path or name depends on: its file name and, as an alias, its text."""
    t = target.replace("\\", "/").rstrip("/")
    base = t.rsplit("/", 1)[-1]
    return [BY_NAME + key(stem_of(base)), BY_ALIAS + key(t), BY_ALIAS + key(base)]


def _rel(target: str, src: str) -> str:
    """`target` relative to the folder of `src` (both vault paths)."""
    return posixpath.relpath(target, posixpath.dirname(src) or ".")


def _stem(path: str) -> str:
    return posixpath.basename(path).rsplit(".", 1)[0]


class Part(msgspec.Struct, frozen=True):
    """What a rewritten link must name: a note (the splitter's part, or the hub), its Denote
    identifier and :ID: when it has them, and the anchor in it (None: the link's own)."""

    target: str
    new_id: str | None = None
    new_uuid: str | None = None
    anchor: str | None = None


# -- the units ------------------------------------------------------------------------------


class LinkSyntax:
    """One link syntax. The defaults are those of a syntax that names no note (a URL)."""

    name = "link"
    """What the syntax is called, in a refusal."""
    kind: Kind | None = None
    """The Link.kind it reads to (None: a reading of another unit's kind, Dendron)."""
    leads_to_notes = True
    """False: its links are kept but are never edges (URLs)."""
    as_written = False
    """Its text stays in the searchable body as written, not as its label (URLs)."""
    within_source = False
    """It leads within the note it is written in: resolved against that note's own headings
    (an unsaved buffer's too), and unchanged while that text stays together."""
    org_anchors = False
    """Its anchor is an Org search option (`*Heading`, `#custom-id`, `<<target>>`, text)."""
    markdown_or_wiki = False
    """A Markdown note may write it as a [Markdown](link) or a [[wikilink]]: the form its
    links take tells the splitter which its renderer reads (see splitter._markdown_style)."""
    org_types: tuple[str, ...] = ()
    """The Org link types (`[[type:...]]`) it reads."""
    md_schemes: tuple[str, ...] = ()
    """The schemes of a Markdown link (`[x](scheme:...)`) it reads."""
    typed = ""
    """What an editor types after `[[` for it, before a `:` (an Org link type): completion."""

    # reading
    def label(self, link: Link) -> str:
        """What the link reads as in running text (the searchable body)."""
        return link.label

    # resolving
    def resolve(self, link: Link, src: Note, folder: str, vault: Lookup) -> Dest:
        """Where `link`, written in `src` (in `folder`), leads."""
        return NOWHERE

    def deps(self, link: Link) -> list[str]:
        """The lookup keys the link's resolution depends on: a note appearing or vanishing
        under one of them may change where it leads."""
        return []

    def place(self, r: Dest, anchor: str, vault: Lookup) -> Dest:
        """`r` at the place `anchor` names in its note."""
        if r.target is None or not anchor:
            return r
        a = anchor.strip()
        return find_anchor(r, vault.anchors(vault.note(r.target)), a, self.org_anchors) if a else r

    # rewriting (the splitter's)
    def unwritable(self, link: Link) -> str | None:
        """Why `link` cannot be written anew to name another note, or None when it can."""
        return "a URL names no note of the vault"

    def rewrite(self, link: Link, src: str, to: Part) -> str:
        """The text of `link` (written in `src`) made to lead to `to` instead, with the same
        label, in the same syntax; only when `unwritable(link)` is None."""
        raise ValueError(f"{self.name}: {self.unwritable(link)}")

    def anchor_of(self, link: Link) -> str:
        """The anchor as the link writes it."""
        return link.anchor

    def by_line(self, link: Link) -> bool:
        """Whether its anchor is a line number (which a split changes)."""
        return False

    def follows_heading(self, link: Link) -> bool:
        """Whether it leads wherever its target's heading goes, without a rewrite."""
        return False

    def names_file(self, link: Link, file_name: str) -> bool:
        """Whether it names the file `file_name` (beside it) as the splitter writes it."""
        return link.target in (file_name, file_name.rsplit(".", 1)[0], unquote(file_name))

    def cannot_name(self, name: str) -> str | None:
        """Why this syntax cannot name a note called `name` (its file name, no extension)."""
        return None

    # writing and completing
    def write(self, name: str, shown: str) -> str:
        """A new link to the note `name` (as this syntax names a note), shown as `shown`."""
        return "[[" + self.complete(name, shown, "]]")

    def complete(self, name: str, shown: str | None, close: str) -> str:
        """What an editor inserts after `[[` for a link to `name` shown as `shown` (None:
        as its name), `close` the brackets still to write."""
        raise ValueError(f"{self.name}: no link of this syntax is offered as a completion")

    def heading(self, text: str) -> str:
        """How the link names a heading of that text, as completion offers it."""
        return text


class Wiki(LinkSyntax):
    """Obsidian's `[[name#anchor|alias]]`: a note by path or name, case-insensitive,
    extension optional, then by alias (Lookup.by_name); anchors `#Heading`, `#^block`. One
    with an alias may be Dendron's, whose note comes second: see `Dendron`."""

    name = "wikilink"
    kind: Kind | None = "wiki"
    markdown_or_wiki = True
    UNSAFE = "#|[]^"
    opener = "[["
    """What is written before the name (an embed's `!` too)."""

    def read(self, line: int, col: int, raw: str, name: str, anchor: str, alias: str) -> Link:
        return Link(line=line, col=col, raw=raw, kind=self.kind, target=name, anchor=anchor, label=alias)

    def label(self, link: Link) -> str:
        if link.label:
            return link.label
        shown = link.anchor and not link.anchor.startswith("^")  # a heading reads as words, a block does not
        return link.target.rsplit("/", 1)[-1] + (f" {link.anchor}" if shown else "")

    def resolve(self, link: Link, src: Note, folder: str, vault: Lookup) -> Dest:
        if link.label:  # its alias may name the note, as Dendron writes them
            return DENDRON.resolve(link, src, folder, vault)
        return self.place(vault.by_name(folder, link.target), DENDRON.whole(link.anchor), vault)

    def deps(self, link: Link) -> list[str]:
        deps = _name_deps(link.target)
        return deps + DENDRON.label_deps(link) if link.label else deps

    def unwritable(self, link: Link) -> str | None:
        return None

    def rewrite(self, link: Link, src: str, to: Part) -> str:
        if DENDRON.reads(link):
            return DENDRON.rewrite(link, src, to)
        name = to.target.rsplit(".", 1)[0] if "/" in link.target else _stem(to.target)
        label = f"|{link.label}" if link.label else ""
        bang = "!" if link.raw.startswith("!") else ""
        return f"{bang}[[{name}#{to.anchor or link.anchor}{label}]]"

    def anchor_of(self, link: Link) -> str:
        return link.anchor or link.label.partition("#")[2]  # Dendron's [[label|note#a]]: in the label

    def cannot_name(self, name: str) -> str | None:
        if any(c in name for c in self.UNSAFE):
            return "its name holds one of # | [ ] ^, which a wikilink to its parts cannot"
        return None

    def complete(self, name: str, shown: str | None, close: str) -> str:
        return (name if shown is None else f"{name}|{shown}") + close

    def write(self, name: str, shown: str) -> str:
        return self.opener + self.complete(name, shown, "]]")


class Dendron(Wiki):
    """Dendron's `[[label|note.name#anchor]]` (and `dendron://vault/note.name`): a wikilink
    or embed whose note comes second, named by its hierarchy (dots) with no blank. No kind
    of its own: a wikilink or embed with an alias is resolved through this unit (read the
    Dendron way first when it looks so, else when the first name names no note), and
    rewritten through it when the alias holds the note."""

    name = "Dendron link"
    kind: Kind | None = None
    VAULT = re.compile(r"^dendron://[^/]*/")
    RANGE = re.compile(r"(?:,\d+.*|:#.*)$|^\*$")  # `#heading,1:#*`: from that heading on

    def hierarchy(self, name: str) -> bool:
        """Whether a note's name (no extension) is a Dendron hierarchy's (`proj.big`): its
        parts are its children (`proj.big.delta-plans`), as links name them."""
        return "." in name and not any(c.isspace() for c in name)

    def strip_vault(self, target: str) -> str:
        """`dendron://vault/note.name` as the note's name."""
        return self.VAULT.sub("", target)

    def whole(self, anchor: str) -> str:
        """The heading a range anchor (`#heading,1:#*`) starts at."""
        return self.RANGE.sub("", anchor)

    def resolve(self, link: Link, src: Note, folder: str, vault: Lookup) -> Dest:
        label = link.label.strip()
        name, _, alt_anchor = self.VAULT.sub("", label).partition("#")
        if label and not any(c.isspace() for c in name) and ("." in name or "#" in label or label != link.label):
            # read the Dendron way first: the note comes second
            if "://" in name:
                return NOWHERE  # [[text|https://...]]: a URL
            alt = Dest(target=src.path) if not name else vault.by_name(folder, name)
            if alt.target:
                return self.place(alt, self.whole(alt_anchor), vault)
        r, anchor = vault.by_name(folder, link.target), link.anchor
        if r.broken == NO_NOTE and name and "://" not in name:  # no note by the first name: try the second
            alt = vault.by_name(folder, name)
            if alt.target:
                r, anchor = alt, alt_anchor
        return self.place(r, self.whole(anchor), vault)

    def label_deps(self, link: Link) -> list[str]:
        """The lookup keys of the note its alias may name."""
        name = self.VAULT.sub("", link.label.strip()).partition("#")[0]
        return [BY_NAME + key(stem_of(name.rsplit("/", 1)[-1])), BY_ALIAS + key(name)]

    def reads(self, link: Link) -> bool:
        """Whether the link is rewritten in Dendron's form: its alias holds the note."""
        return bool(link.label) and not link.anchor and ("." in link.label or "#" in link.label) and \
            not any(c.isspace() for c in link.label.split("#")[0])

    def rewrite(self, link: Link, src: str, to: Part) -> str:
        anchor = to.anchor or link.anchor or link.label.partition("#")[2]
        name = _stem(to.target)
        bang = "!" if link.kind == "embed" else ""
        if any(c.isspace() for c in name):  # no longer read that way: the Obsidian form, same text shown
            return f"{bang}[[{name}#{anchor}|{link.target}]]"
        return f"{bang}[[{link.target}|{name}#{anchor}]]"


class Embed(Wiki):
    """Obsidian's `![[name#anchor|size]]`: a wikilink whose target is shown in place."""

    name = "embed"
    kind: Kind | None = "embed"
    opener = "![["


class Markdown(LinkSyntax):
    """`[label](path#anchor "title")` and `![alt](path)`: a path relative to the note (or to
    the vault for `/x`), URL-decoded; a bare name not found there is looked up as a
    wikilink's (Obsidian's shortest paths); anchors as GitHub's and Obsidian's."""

    name = "Markdown link"
    kind: Kind = "md"
    markdown_or_wiki = True

    def read(self, line: int, col: int, raw: str, path: str, anchor: str, text: str) -> Link:
        return Link(line=line, col=col, raw=raw, kind=self.kind, target=path, anchor=anchor, label=text)

    def label(self, link: Link) -> str:
        return link.label

    def resolve(self, link: Link, src: Note, folder: str, vault: Lookup) -> Dest:
        return self.place(_by_path(vault, folder, link.target, from_top=True, by_name=True), link.anchor, vault)

    def deps(self, link: Link) -> list[str]:
        return _name_deps(link.target)

    def unwritable(self, link: Link) -> str | None:
        if MARKDOWN.match(link.raw, link.raw.startswith("!")) is None:
            return "its text does not read as a Markdown link on its own (code in its label?), so it cannot be " \
                   "written anew"
        return None

    def rewrite(self, link: Link, src: str, to: Part) -> str:
        anchor = to.anchor or link.anchor
        if link.target.startswith("/"):  # from the vault's top, as written
            rel = "/" + to.target
        elif "/" not in link.target.replace("\\", "/"):  # Obsidian's shortest path: the name alone
            rel = posixpath.basename(to.target)
        else:
            rel = _rel(to.target, src)
        m = MARKDOWN.match(link.raw, link.raw.startswith("!"))  # the parser's own reading of it
        if m.group(2).startswith("<"):
            dest = f"<{rel}#{anchor}>" if anchor else f"<{rel}>"
        else:
            dest = quote(rel) + (f"#{quote(anchor)}" if anchor else "")
        return link.raw[: m.start(2)] + dest + link.raw[m.end(2) :]  # its "!", label and title kept

    def write(self, name: str, shown: str) -> str:
        return f"[{shown}]({quote(name)})"


class OrgTyped(LinkSyntax):
    """An Org link of a type that names a note: `[[type:name::search][description]]` (also,
    for some, `[description](type:name::search)`, as Denote writes Markdown notes)."""

    org_anchors = True

    def read(self, line: int, col: int, raw: str, rest: str, label: str) -> Link:
        """The link whose text after `type:` is `rest` (`name::search`)."""
        name, _, opt = rest.partition("::")
        return Link(line=line, col=col, raw=raw, kind=self.kind, target=name.strip(), anchor=opt.strip(), label=label)

    def unwritable(self, link: Link) -> str | None:
        return None

    def complete(self, name: str, shown: str | None, close: str) -> str:
        """`type:name][shown]` then `close` (empty before a `]]` already written); with no
        `shown`, no description (one is written after the cursor already: it is kept)."""
        return f"{self.typed}:{name}" + (f"][{shown}" if shown is not None else "") + close

    def heading(self, text: str) -> str:
        return "*" + text


class OrgFile(OrgTyped):
    """Org's `[[file:path::search][description]]`: a path relative to the note (`/x` and `~`
    lead outside the vault); `::42` is a line, else an Org search option."""

    name = "Org file: link"
    kind: Kind = "file"
    org_types = ("file", "file+sys", "file+emacs")
    typed = "file"

    def resolve(self, link: Link, src: Note, folder: str, vault: Lookup) -> Dest:
        r = _by_path(vault, folder, link.target, from_top=False, by_name=False)
        anchor = link.anchor
        if r.target is not None and anchor and anchor.strip().isdigit():  # file:x.org::42, line 42
            r.line = int(anchor) or None
            return r
        return self.place(r, anchor, vault)

    def deps(self, link: Link) -> list[str]:
        return _name_deps(link.target)

    def rewrite(self, link: Link, src: str, to: Part) -> str:
        desc = f"[{link.label}]" if link.label else ""
        return f"[[file:{_rel(to.target, src)}::{to.anchor or link.anchor}]{desc}]"

    def by_line(self, link: Link) -> bool:
        return link.anchor.strip().isdigit()


def _by_identity(link: Link, src: str, to: Part, name: str | None) -> str:
    """An `id:` or `denote:` link written anew: by the part's own identity `name` when it
    has one of that kind, else (none) by its path; in its Markdown form when so written."""
    anchor = to.anchor or link.anchor
    if not link.raw.startswith("[["):  # Denote's Markdown form, [label](denote:ID), kept
        dest = name or quote(_rel(to.target, src))
        sep = "::" if name else "#"
        return f"[{link.label}]({dest}{sep + anchor if anchor else ''})"
    desc = f"[{link.label}]" if link.label else ""
    if name is None:  # the part has no identifier of that kind: by its path
        name = "file:" + _rel(to.target, src)
    return f"[[{name}::{anchor}]{desc}]"


class Denote(OrgTyped):
    """Denote's `[[denote:ID::search][description]]` and `[description](denote:ID)`: the
    note whose file name's identifier is ID (a disagreeing `identifier` keyword says why
    none is)."""

    name = "denote: link"
    kind: Kind = "denote"
    org_types = ("denote",)
    md_schemes = ("denote",)
    typed = "denote"

    def resolve(self, link: Link, src: Note, folder: str, vault: Lookup) -> Dest:
        r = one_of(vault.ids(link.target), NO_IDENTIFIER)
        if r.broken == NO_IDENTIFIER and (named := vault.id_keyword(link.target)):
            r = Dest(broken=self._keyword_only(link.target, [vault.note(p) for p in named]))
        return self.place(r, link.anchor, vault)

    @staticmethod
    def _keyword_only(ident: str, notes: list[Note]) -> str:
        """Why a `denote:` link by an identifier only a keyword carries leads nowhere."""
        n = notes[0]
        return (f"no such identifier: {ident} is only the identifier keyword of {n.path}, whose file name "
                f"says {n.id}; Denote follows the file name (link denote:{n.id}, or fix the keyword)")

    def deps(self, link: Link) -> list[str]:
        return [BY_IDENT + link.target]

    def rewrite(self, link: Link, src: str, to: Part) -> str:
        return _by_identity(link, src, to, f"denote:{to.new_id}" if to.new_id else None)

    def names_file(self, link: Link, file_name: str) -> bool:
        return super().names_file(link, file_name) or file_name.startswith(link.target + "--")


class OrgId(OrgTyped):
    """Org's `[[id:UUID::search][description]]`: the note, or the heading, holding that :ID:
    (org-roam; a Markdown note's front-matter id too)."""

    name = "id: link"
    kind: Kind = "id"
    org_types = ("id",)
    md_schemes = ("id",)
    typed = "id"

    def resolve(self, link: Link, src: Note, folder: str, vault: Lookup) -> Dest:
        r = one_of(vault.uuids(link.target), NO_ID)
        if r.target and not link.anchor:  # a heading's :ID:: its line
            r.line = vault.anchors(vault.note(r.target)).blocks.get(ID_ANCHOR + link.target)
        return self.place(r, link.anchor, vault)

    def deps(self, link: Link) -> list[str]:
        return [BY_UUID + link.target]

    def rewrite(self, link: Link, src: str, to: Part) -> str:
        return _by_identity(link, src, to, f"id:{to.new_uuid}" if to.new_uuid else None)

    def follows_heading(self, link: Link) -> bool:
        # with no anchor it names a heading's own :ID:, which moves with the heading
        return not link.anchor

    def complete(self, name: str, shown: str | None, close: str) -> str:
        raise ValueError(f"{self.name}: none is offered as a completion (the daemon lists no :ID:)")


class Internal(LinkSyntax):
    """A place in the note it is written in: Obsidian's `[[#Heading]]`, `![[#Heading]]`,
    `[text](#anchor)`; Org's `[[*Heading]]`, `[[#custom-id]]`, `[[target]]` (and text)."""

    name = "link within its note"
    kind: Kind = "internal"
    within_source = True
    markdown_or_wiki = True

    def read(self, line: int, col: int, raw: str, anchor: str, label: str) -> Link:
        return Link(line=line, col=col, raw=raw, kind=self.kind, target="", anchor=anchor, label=label)

    def label(self, link: Link) -> str:
        return link.label or link.anchor.lstrip("*#")

    def resolve(self, link: Link, src: Note, folder: str, vault: Lookup) -> Dest:
        a = link.anchor.strip()
        r = Dest(target=src.path)
        return find_anchor(r, vault.anchors(src), a, src.path.endswith(".org")) if a else r

    def within(self, note: Note, link: Link) -> Dest:
        """Where `link` leads within `note` alone (an editor's buffer, saved or not)."""
        a = link.anchor.strip()
        r = Dest(target=note.path)
        return find_anchor(r, Anchors(note), a, note.path.endswith(".org")) if a else r

    def unwritable(self, link: Link) -> str | None:
        return None

    def rewrite(self, link: Link, src: str, to: Part) -> str:
        """Written from `src` (where the line now is) to name `to` (where the place now is):
        a Markdown link stays one, a wikilink or embed names the note, Org a `file:` link."""
        anchor = to.anchor or link.anchor
        org = to.target.endswith(".org")
        if not org and "](" in link.raw and not link.raw.lstrip("!").startswith("[["):
            # a Markdown [label](#anchor) stays a Markdown link: a vault of them may read no other kind
            cut = link.raw.rindex("](")  # its label and #anchor kept as written
            rest = link.raw[cut + 2 : -1]
            if anchor != link.anchor:
                rest = rest.replace(f"#{link.anchor}", f"#{anchor}", 1)
            return f"{link.raw[:cut]}]({quote(_rel(to.target, src))}{rest})"
        if not org:
            label = f"|{link.label}" if link.label else ""
            bang = "!" if link.raw.startswith("!") else ""
            return f"{bang}[[{_stem(to.target)}#{anchor}{label}]]"
        desc = f"[{link.label}]" if link.label else ""
        return f"[[file:{_rel(to.target, src)}::{anchor}]{desc}]"


class Url(LinkSyntax):
    """A URL: `https://...` bare, `[text](https://...)`, `[[https://...][text]]`, and any
    other scheme (`[[zk:1234]]`, `mailto:`). Kept as a link, never an edge."""

    name = "URL"
    kind: Kind = "url"
    leads_to_notes = False
    as_written = True

    def read(self, line: int, col: int, raw: str, target: str, label: str = "") -> Link:
        return Link(line=line, col=col, raw=raw, kind=self.kind, target=target, label=label)

    def label(self, link: Link) -> str:
        return link.label or link.target


WIKI, DENDRON, EMBED, MARKDOWN_LINK = Wiki(), Dendron(), Embed(), Markdown()
ORG_FILE, DENOTE, ORG_ID, INTERNAL, URL = OrgFile(), Denote(), OrgId(), Internal(), Url()

SYNTAXES: tuple[LinkSyntax, ...] = (WIKI, EMBED, DENDRON, MARKDOWN_LINK, ORG_FILE, DENOTE, ORG_ID, INTERNAL, URL)
"""Every link syntax vaultd reads."""

BY_KIND: dict[str, LinkSyntax] = {u.kind: u for u in SYNTAXES if u.kind is not None}
"""The unit that reads each Link.kind."""
ORG_TYPES: dict[str, LinkSyntax] = {t: u for u in SYNTAXES for t in u.org_types}
"""Org link types that name a note (`[[file:...]]`), and the unit of each."""
MD_SCHEMES: dict[str, LinkSyntax] = {s: u for u in SYNTAXES for s in u.md_schemes}
"""Schemes of a Markdown link that name a note (`[x](denote:...)`), and the unit of each."""
TYPED: dict[str, LinkSyntax] = {u.typed: u for u in SYNTAXES if u.typed}
"""What is typed after `[[` before a `:` (completion), and the unit of each."""
NOT_NOTES = frozenset(u.kind for u in SYNTAXES if u.kind and not u.leads_to_notes)
"""The kinds that never lead to a note."""
WITHIN_SOURCE = frozenset(u.kind for u in SYNTAXES if u.kind and u.within_source)
"""The kinds that lead within the note they are written in."""
MARKDOWN_OR_WIKI = frozenset(u.kind for u in SYNTAXES if u.kind and u.markdown_or_wiki)
"""The kinds a Markdown note may write as a Markdown link or a wikilink."""


def syntax_of(link: Link) -> LinkSyntax:
    """The unit that reads, resolves and rewrites `link` (Dendron's for a wikilink or embed
    the splitter rewrites in Dendron's form)."""
    unit = BY_KIND[link.kind]
    return DENDRON if unit in (WIKI, EMBED) and DENDRON.reads(link) else unit

