"""The link graph: every note's links resolved against the whole vault, and the reverse.

Resolution rules (DESIGN "Link syntaxes"):
- wikilinks and embeds as Obsidian does: a path (relative to the note, then to the
  vault, then as a path suffix), else the file name, unique, else the one in the
  note's own folder, else the single shallowest one, else ambiguous; then aliases.
  Case-insensitive, extension optional.
- Markdown links: relative to the note (or the vault for `/x`), URL-decoded; a
  target not found there is looked up by file name as a wikilink would be.
- `file:` relative to the note; `id:` through Org `:ID:`; `denote:` through the
  identifier. Anchors: `#Heading`, `#^block`, `::*Heading`, `::#custom-id`.
A link that cannot be resolved records why. Links to non-note files (images,
PDFs) and URLs are kept but are not edges.
"""

from __future__ import annotations

import os
import posixpath
import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable

import msgspec

from .note import Link, Note

NOTE_EXTS = (".md", ".org")
ATTACHMENT_EXTS = frozenset(
    "png jpg jpeg gif svg webp bmp ico tif tiff avif heic pdf mp3 mp4 m4a wav ogg oga flac webm mov mkv avi "
    "canvas excalidraw base csv tsv json yaml yml txt html htm zip tar gz xlsx docx pptx epub drawio ics".split()
)
_LOOSE = re.compile(r"[\W_]+", re.UNICODE)
_FUZZY_CHARS = re.compile(r"[\[\]#|^:]")

# Reasons a link is broken
NO_NOTE, AMBIGUOUS, NO_HEADING, NO_BLOCK, NO_ID, OUTSIDE = (
    "no such note", "ambiguous", "no such heading", "no such block", "no such ID", "outside the vault",
)


class Resolved(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A link and where it leads."""

    link: Link
    target: str | None = None
    """Vault path of the note it resolves to (None for URLs, attachments and broken links)."""
    line: int | None = None
    """Line of the heading or block it points at, when it has an anchor."""
    broken: str | None = None
    """Why it does not resolve (no such note, ambiguous: a | b, no such heading, ...)."""
    candidates: list[str] = []


def key(s: str) -> str:
    return unicodedata.normalize("NFC", s).casefold()


def loose(s: str) -> str:
    """A slug that both GitHub's and Obsidian's anchors reduce to."""
    return _LOOSE.sub("-", key(s)).strip("-")


def _fuzzy(s: str) -> str:
    return " ".join(_FUZZY_CHARS.sub(" ", key(s)).split())


def stem_of(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    root, ext = os.path.splitext(name)
    return root if ext.lower() in NOTE_EXTS else name


def _has_attachment_ext(target: str) -> bool:
    ext = os.path.splitext(target)[1][1:].lower()
    return ext in ATTACHMENT_EXTS


class Graph:
    """Rebuilt whole from the note table at start; `update()` after each batch."""

    def __init__(self) -> None:
        self.notes: dict[str, Note] = {}
        self.out: dict[str, list[Resolved]] = {}
        self.back: dict[str, list[tuple[str, Resolved]]] = {}
        self._by_path: dict[str, str] = {}
        self._by_stem: dict[str, list[str]] = defaultdict(list)
        self._by_alias: dict[str, list[str]] = defaultdict(list)
        self._by_id: dict[str, list[str]] = defaultdict(list)
        self._by_uuid: dict[str, list[str]] = defaultdict(list)

    # -- building ---------------------------------------------------------------

    def rebuild(self, notes: dict[str, Note]) -> None:
        self.notes = notes
        by_path, by_stem, by_alias, by_id, by_uuid = {}, defaultdict(list), defaultdict(list), defaultdict(list), defaultdict(list)
        for path, n in notes.items():
            by_path[key(path)] = path
            by_stem[key(stem_of(path))].append(path)
            for a in n.aliases:
                by_alias[key(a)].append(path)
            if n.id:
                by_id[n.id].append(path)
            for u in n.uuids:
                by_uuid[u].append(path)
        self._by_path, self._by_stem, self._by_alias, self._by_id, self._by_uuid = by_path, by_stem, by_alias, by_id, by_uuid
        out = {path: [self.resolve(n, link) for link in n.links] for path, n in notes.items()}
        back: dict[str, list[tuple[str, Resolved]]] = defaultdict(list)
        for src, rs in out.items():
            for r in rs:
                if r.target is not None and r.target != src:
                    back[r.target].append((src, r))
        self.out, self.back = out, dict(back)

    update = rebuild  # every batch re-resolves the vault: a new or renamed note can change any link

    # -- resolution -------------------------------------------------------------

    def resolve(self, src: Note, link: Link) -> Resolved:
        kind = link.kind
        if kind == "url":
            return Resolved(link=link)
        if kind == "internal":
            return self._anchor(Resolved(link=link, target=src.path), src, link.anchor, org=src.path.endswith(".org"))
        if kind in ("wiki", "embed"):
            r = self._by_name(src.path, link.target, link)
        elif kind == "md":
            r = self._by_relpath(src.path, link.target, link, fallback=True)
        elif kind == "file":
            r = self._by_relpath(src.path, link.target, link, fallback=False)
        elif kind == "denote":
            r = self._unique(self._by_id.get(link.target, []), link, "no such identifier")
        elif kind == "id":
            r = self._unique(self._by_uuid.get(link.target, []), link, NO_ID)
        else:
            return Resolved(link=link)
        if r.target is None or not link.anchor:
            return r
        return self._anchor(r, self.notes[r.target], link.anchor, org=kind in ("file", "denote", "id"))

    def _unique(self, paths: list[str], link: Link, missing: str) -> Resolved:
        if len(paths) == 1:
            return Resolved(link=link, target=paths[0])
        if not paths:
            return Resolved(link=link, broken=missing)
        return Resolved(link=link, broken=AMBIGUOUS, candidates=sorted(paths))

    def _pick(self, src_path: str, paths: list[str], link: Link) -> Resolved:
        """Several notes share a name: the one in the note's own folder, else the single
        shallowest one, else ambiguous."""
        if len(paths) <= 1:
            return self._unique(paths, link, NO_NOTE)
        folder = posixpath.dirname(src_path)
        here = [p for p in paths if posixpath.dirname(p) == folder]
        if len(here) == 1:
            return Resolved(link=link, target=here[0])
        depth = min(p.count("/") for p in paths)
        top = [p for p in paths if p.count("/") == depth]
        if len(top) == 1:
            return Resolved(link=link, target=top[0])
        return Resolved(link=link, broken=AMBIGUOUS, candidates=sorted(paths))

    def _exact(self, path: str) -> str | None:
        """The note at this vault path, trying the note extensions when it has none."""
        k = key(path)
        if k in self._by_path:
            return self._by_path[k]
        if not k.endswith(NOTE_EXTS):
            for ext in NOTE_EXTS:
                if k + ext in self._by_path:
                    return self._by_path[k + ext]
        return None

    def _by_name(self, src_path: str, target: str, link: Link) -> Resolved:
        t = target.replace("\\", "/").strip()
        if "/" in t.strip("/"):
            t = t.lstrip("/")
            for cand in (posixpath.normpath(posixpath.join(posixpath.dirname(src_path), t)), posixpath.normpath(t)):
                found = self._exact(cand)
                if found:
                    return Resolved(link=link, target=found)
            kt = key(t)
            suffixes = (kt,) if kt.endswith(NOTE_EXTS) else tuple(kt + e for e in NOTE_EXTS)
            paths = [p for p in self._by_stem.get(key(stem_of(t)), []) if key(p).endswith(tuple("/" + s for s in suffixes))]
            if paths:
                return self._pick(src_path, paths, link)
        else:
            t = t.strip("/")
            name = stem_of(t)
            paths = self._by_stem.get(key(name), [])
            if t.lower().endswith(NOTE_EXTS):
                paths = [p for p in paths if key(p.rsplit("/", 1)[-1]) == key(t)]
            if paths:
                return self._pick(src_path, paths, link)
            aliases = self._by_alias.get(key(t), [])
            if aliases:
                return self._pick(src_path, sorted(set(aliases)), link)
        if _has_attachment_ext(t):
            return Resolved(link=link)  # an attachment, not a note
        return Resolved(link=link, broken=NO_NOTE)

    def _by_relpath(self, src_path: str, target: str, link: Link, fallback: bool) -> Resolved:
        t = target.strip()
        if t.startswith("~") or (t.startswith("/") and link.kind == "file"):
            return Resolved(link=link, broken=OUTSIDE)
        if t.startswith("/"):
            rel = posixpath.normpath(t.lstrip("/"))
        else:
            rel = posixpath.normpath(posixpath.join(posixpath.dirname(src_path), t))
        if rel.startswith("../") or rel == "..":
            return Resolved(link=link, broken=OUTSIDE)
        found = self._exact(rel)
        if found:
            return Resolved(link=link, target=found)
        if t.endswith("/"):
            return Resolved(link=link)  # a folder
        if fallback:
            r = self._by_name(src_path, t.rsplit("/", 1)[-1], link)
            if r.target or r.broken == AMBIGUOUS:
                return r
        if _has_attachment_ext(t) or not t.lower().endswith(NOTE_EXTS) and "." in t.rsplit("/", 1)[-1]:
            return Resolved(link=link)
        return Resolved(link=link, broken=NO_NOTE)

    def _anchor(self, r: Resolved, note: Note, anchor: str, org: bool) -> Resolved:
        a = anchor.strip()
        if not a:
            return r
        if a.startswith("^"):
            for b in note.blocks:
                if b.id == a[1:]:
                    r.line = b.line
                    return r
            return self._broken_anchor(r, NO_BLOCK)
        if org and a.startswith("*"):
            want = _fuzzy(a[1:])
            for h in note.headings:
                if _fuzzy(h.text) == want:
                    r.line = h.line
                    return r
            return self._broken_anchor(r, NO_HEADING)
        if org and a.startswith("#"):
            want = a[1:]
            for h in note.headings:
                if h.anchor == want or loose(h.text) == loose(want):
                    r.line = h.line
                    return r
            return self._broken_anchor(r, NO_HEADING)
        if org and (a.isdigit() or not a.startswith(("*", "#"))):
            for b in note.blocks:  # <<target>>
                if key(b.id) == key(a):
                    r.line = b.line
                    return r
            r.line = next((h.line for h in note.headings if _fuzzy(h.text) == _fuzzy(a)), None)
            return r  # a line number or a text search: Org finds those anywhere
        # Obsidian `#Heading` (nested `#H1#H2`: the last one), GitHub `#slug`
        last = a.rsplit("#", 1)[-1]
        want_f, want_l = _fuzzy(last), loose(last)
        for h in note.headings:
            if _fuzzy(h.text) == want_f or h.anchor == last or loose(h.text) == want_l:
                r.line = h.line
                return r
        return self._broken_anchor(r, NO_HEADING)

    @staticmethod
    def _broken_anchor(r: Resolved, reason: str) -> Resolved:
        r.broken = reason
        return r

    # -- queries ----------------------------------------------------------------

    def edges(self, path: str) -> set[str]:
        """Notes `path` links to (resolved, not itself)."""
        return {r.target for r in self.out.get(path, []) if r.target and r.target != path}

    def backlinks(self, path: str) -> list[tuple[str, Resolved]]:
        return sorted(self.back.get(path, []), key=lambda t: (t[0], t[1].link.line, t[1].link.col))

    def broken(self) -> Iterable[tuple[str, Resolved]]:
        for src in sorted(self.out):
            for r in self.out[src]:
                if r.broken:
                    yield src, r

    def orphans(self) -> list[str]:
        return sorted(p for p in self.notes if not self.back.get(p) and not self.edges(p))

    def neighbours(self, path: str, depth: int) -> tuple[list[str], list[tuple[str, str]]]:
        """Notes within `depth` links of `path` in either direction, and the edges among them."""
        seen = {path}
        frontier = {path}
        for _ in range(depth):
            nxt = set()
            for p in frontier:
                nxt |= self.edges(p)
                nxt |= {s for s, _ in self.back.get(p, [])}
            frontier = nxt - seen
            seen |= frontier
        edges = sorted({(s, t) for s in seen for t in self.edges(s) if t in seen})
        return sorted(seen), edges

    def find(self, name: str, vault_root: str | None = None) -> list[str]:
        """Notes a user may mean by `name`: a path (vault-relative or absolute), a Denote
        identifier, an Org ID, or a wikilink-style name or alias."""
        n = name.strip()
        if vault_root and os.path.isabs(n):
            try:
                n = os.path.relpath(os.path.realpath(n), os.path.realpath(vault_root)).replace(os.sep, "/")
            except ValueError:
                return []
            if n.startswith("../"):
                return []
        if n.startswith("[[") and n.endswith("]]"):
            n = n[2:-2].split("|")[0].split("#")[0]
        for prefix in ("denote:", "id:"):
            if n.startswith(prefix):
                n = n[len(prefix):]
        found = self._exact(n)
        if found:
            return [found]
        for table in (self._by_id, self._by_uuid):
            if n in table:
                return sorted(table[n])
        r = self._by_name("", n, Link(line=0, col=0, raw=n, kind="wiki", target=n))
        if r.target:
            return [r.target]
        return r.candidates
