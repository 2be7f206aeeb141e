"""An oracle for the splitter, independent of its own verification.

It reads a vault as files on disk (or as a {path: bytes} tree), parses every note with
`vaultd.parse.parse_file` and resolves every link with a fresh `vaultd.store.graph.Graph`
(those are the vault's own resolution rules), and says what each link *means*, not where
it points: so a vault before a split and after it can be compared link by link.

- A link's identity survives the split: the note it was written in (a part counts as the
  note it was cut from: `origin`), the text of its line with every link replaced by a hole
  (the splitter rewrites a link's text, never the text around it), and its place among the
  holes of that line. Lines alike are compared as a multiset.
- A link's meaning: for a link into a heading, that heading (level, text) and a fingerprint
  of its section's lines (links masked) in the note it comes from: after a split a link that
  leads to the part holding that section means the same; for a block, its line; for a link
  to a whole note, that note's path (a link to the whole split note must still lead to the
  hub, which keeps the path); for a broken link, why. Plus what the link shows (its alias,
  whether it embeds), which a rewrite must keep.
- Lines the splitter adds (each part's header down to its `Part of ...` back link, the hub's
  list of parts) are left out of the comparison and checked on their own (`scaffold_problems`):
  every hub-list link resolves to its part, every back link to the hub.

    before = View(read_tree(root))
    ... split ...
    after = View(read_tree(root), origin={part: hub, ...})
    compare(before, after) -> [Mismatch]   # [] when every link means what it meant
    lines_lost(before, after) -> Counter   # lines of the vault before not found after
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from vaultd.ingest.filters import NoteFilter
from vaultd.store.graph import Graph, key, stem_of
from vaultd.note import ID_ANCHOR, Note, headings_of, links_of
from vaultd.parse import decode, parse_file

HOLE = "\x00"
"""What a link's text becomes in a masked line."""
_IS_NOTE = NoteFilter()
_ITEM = re.compile(r"^\d+\. ")
_HELD = re.compile(r"^ {3,}- ")


def read_tree(root: Path) -> dict[str, bytes]:
    """Every regular file under `root` (vault-relative POSIX path -> bytes); symlinks and
    the vault's ignored folders are left as the vault leaves them: read as files or not."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(dirpath, f)
            if os.path.isfile(p) and not os.path.islink(p):
                with open(p, "rb") as fh:
                    out[os.path.relpath(p, root).replace(os.sep, "/")] = fh.read()
    return out


def _root_of(origin: dict[str, str], path: str) -> str:
    """The note a file was cut from, through any number of splits (a part split again)."""
    seen = set()
    while path in origin and path not in seen:
        seen.add(path)
        path = origin[path]
    return path


def _masked(text: str, note: Note) -> list[str]:
    """The note's lines (as the parser numbers them) with every link's text a HOLE; a link
    whose text runs onto the next line (an Org description) leaves that line's share blank,
    so lines keep their numbers."""
    starts = [0]
    for line in text.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    spans = []
    for link in links_of(note):
        if link.line - 1 >= len(starts) - 1:
            continue
        at = starts[link.line - 1] + link.col - 1
        if text.startswith(link.raw, at):
            spans.append((at, at + len(link.raw), link.raw.count("\n")))
    if not spans:
        return text.split("\n")
    out, last = [], 0
    for a, b, nl in sorted(spans):
        if a < last:  # overlapping spans never come from one parse; keep the first
            continue
        out += [text[last:a], HOLE + "\n" * nl]
        last = b
    out.append(text[last:])
    return "".join(out).split("\n")


def is_dendron(link) -> bool:
    """Whether `[[label|note.name#anchor]]` looks like Dendron's form, the note named second
    (the graph tries that reading first; see `shown`)."""
    if link.kind not in ("wiki", "embed") or not link.label:
        return False
    label = link.label.strip()
    name = label.partition("#")[0]
    return bool(label) and not any(c.isspace() for c in name) and ("." in name or "#" in label or label != link.label)


def shown(link, target: str | None) -> tuple[str, bool]:
    """What a link shows in the note: its alias, and whether it embeds. A link read as
    Dendron's (the second name is the note it leads to) shows its first part; any other
    `[[note#h|alias]]` its alias."""
    if is_dendron(link) and target:
        name = link.label.strip().partition("#")[0].rsplit("/", 1)[-1]
        if key(stem_of(name)) == key(stem_of(target)):
            return link.target, link.raw.startswith("!")
    return link.label, link.raw.startswith("!")


@dataclass
class Mismatch:
    kind: str
    """re-targeted, newly broken, lost, new, newly resolved, shown changed."""
    src: str
    line: str
    """The masked line (links as HOLE)."""
    index: int
    before: list = field(default_factory=list)
    after: list = field(default_factory=list)
    raws_before: list = field(default_factory=list)
    raws_after: list = field(default_factory=list)

    def __str__(self) -> str:
        line = self.line.replace(HOLE, "⟦⟧")
        return (f"{self.kind}: link #{self.index} of {self.src}: {line!r}\n"
                f"    before {self.raws_before} -> {self.before}\n    after  {self.raws_after} -> {self.after}")


class View:
    """A vault as the oracle reads it: notes, a fresh graph, masked lines, added lines."""

    def __init__(self, tree: dict[str, bytes], origin: dict[str, str] | None = None):
        self.tree = tree
        self.origin = dict(origin or {})
        self.notes: dict[str, Note] = {}
        self.masked: dict[str, list[str]] = {}
        for path, data in tree.items():
            if _IS_NOTE(path):
                note = self.notes[path] = parse_file(path, data)
                self.masked[path] = _masked(decode(data)[0], note)
        self.graph = Graph(self.notes)
        self.hubs: dict[str, list[str]] = {}
        for part, hub in self.origin.items():
            self.hubs.setdefault(hub, []).append(part)
        self.headers: dict[str, set[int]] = {}  # part -> its header's line numbers (title ... back link)
        self.lists: dict[str, set[int]] = {}  # hub -> the line numbers of its list of parts
        self.problems: list[str] = []  # the added lines not found where they should be
        for part in self.origin:
            lines = self.masked.get(part)
            if lines is None:
                self.problems.append(f"part {part} is not a note on disk")
                continue
            k = next((i for i, x in enumerate(lines) if x.startswith("Part of ")), None)
            if k is None:
                self.problems.append(f"part {part} has no 'Part of' line")
                continue
            self.headers[part] = set(range(1, k + 2))
        for hub, parts in self.hubs.items():
            lines = self.masked.get(hub)
            if lines is None:
                self.problems.append(f"hub {hub} is not a note on disk")
                continue
            found = None
            for i, x in enumerate(lines):
                if x.rstrip() in ("Parts:", "* Parts"):
                    j = i + 1  # the items, each with the headings its part holds under it
                    while j < len(lines) and (_ITEM.match(lines[j]) or _HELD.match(lines[j])):
                        j += 1
                    if sum(1 for k in range(i + 1, j) if _ITEM.match(lines[k])) == len(parts):
                        found = (i, j)  # the last such list: the one after the preamble
            if found is None:
                self.problems.append(f"hub {hub} has no list of its {len(parts)} parts")
                continue
            i, j = found
            self.lists[hub] = set(range(i + 1, j + 1))
        self.added: dict[str, set[int]] = {}  # path -> line numbers the splitter added
        for table in (self.headers, self.lists):
            for path, lines in table.items():
                self.added.setdefault(path, set()).update(lines)
        self._heads = {p: sorted(headings_of(n), key=lambda h: h.line) for p, n in self.notes.items()}

    # -- what a link means -------------------------------------------------------------

    def _section(self, path: str, line: int) -> str:
        """A fingerprint of the lines under the heading at `line`, up to the next heading."""
        heads = self._heads[path]
        end = next((h.line for h in heads if h.line > line), None)
        lines = self.masked[path]
        added = self.added.get(path, ())
        body = [x.rstrip() for n, x in enumerate(lines[line : (end - 1) if end else len(lines)], line + 1)
                if n not in added and x.strip()]
        return hashlib.blake2b("\n".join(body).encode(), digest_size=6).hexdigest()

    def meaning(self, r) -> tuple:
        link, d = r.link, r.dest
        show = shown(link, d.target)
        if d.broken:
            return ("broken", d.broken, *show)
        if d.target is None:
            return ("nowhere", link.kind, link.target, *show)
        target = _root_of(self.origin, d.target)
        if d.line is None:
            return ("note", d.target, *show)  # the whole note: the same path
        note = self.notes[d.target]
        if not link.anchor.lstrip().startswith("^"):
            h = next((h for h in self._heads[d.target] if h.line == d.line), None)
            if h is not None:
                return ("heading", target, h.level, h.text, self._section(d.target, h.line), *show)
        b = next((b for b in note.blocks if b.line == d.line and not b.id.startswith(ID_ANCHOR)), None)
        text = self.masked[d.target][d.line - 1].rstrip() if d.line <= len(self.masked[d.target]) else ""
        if b is not None:
            return ("block", target, b.id, text, *show)
        return ("line", target, text, *show)

    def link_map(self) -> dict[tuple[str, str, int], Counter]:
        """(note it was written in, masked line, index in the line) -> Counter of meanings,
        for every link but those on lines the splitter added."""
        out: dict[tuple[str, str, int], Counter] = {}
        self.raws: dict[tuple[str, str, int], list[str]] = {}
        for src in sorted(self.notes):
            added = self.added.get(src, ())
            origin = _root_of(self.origin, src)
            by_line: dict[int, list] = {}
            for r in self.graph.links(src):
                if r.link.line not in added:
                    by_line.setdefault(r.link.line, []).append(r)
            lines = self.masked[src]
            defs = _definition_lines(lines)
            for ln, rs in by_line.items():
                text = lines[ln - 1] if ln <= len(lines) else ""
                for i, r in enumerate(sorted(rs, key=lambda r: r.link.col)):
                    k = (origin, text, i)
                    c = out.setdefault(k, Counter())
                    # a footnote or reference definition may stand in several parts (the splitter
                    # copies it to each part that uses it): counted once
                    c[self.meaning(r)] = 1 if ln in defs else c[self.meaning(r)] + 1
                    self.raws.setdefault(k, []).append(r.link.raw)
        return out

    def scaffold_problems(self) -> list[str]:
        """The links the splitter added: each hub lists each of its parts once (a link that
        resolves to the part), each part's header links back to its hub. Neither broken nor
        ambiguous."""
        out = list(self.problems)
        for hub, parts in self.hubs.items():
            listed = [r for r in self.graph.links(hub) if r.link.line in self.lists.get(hub, ())]
            got = Counter(r.target for r in listed if not r.broken and r.line is None and r.link.kind != "url")
            if got != Counter(parts):
                out.append(f"hub {hub}: its list links {[(r.link.raw, r.target or r.broken) for r in listed]}, "
                           f"not its parts {parts}")
        for part, hub in self.origin.items():
            header = [r for r in self.graph.links(part) if r.link.line in self.headers.get(part, ())]
            if not header:
                out.append(f"part {part}: no link back to {hub}")
            for r in header:
                if r.target != hub or r.broken:
                    why = f"{r.broken} {r.candidates}" if r.broken else f"leads to {r.target}"
                    out.append(f"part {part}: back link {r.link.raw} {why}, not to its hub {hub}")
        return out

    def line_counter(self) -> Counter:
        """Every non-blank line of every note, links masked (the splitter's added lines too)."""
        c: Counter = Counter()
        for lines in self.masked.values():
            c.update(x for x in lines if x.strip())
        return c


_DEFINITION = re.compile(r"^ {0,3}\[\^?[^\]\n]+\]:|^\[fn:[^\]:\s]+\]")


def _definition_lines(lines: list[str]) -> set[int]:
    """Line numbers (1-based) of footnote and reference-link definitions, with the indented
    lines that continue each."""
    out: set[int] = set()
    inside = False
    for n, x in enumerate(lines, 1):
        if _DEFINITION.match(x):
            inside = True
        elif not x.strip() or not x[:1].isspace():
            inside = False
        if inside:
            out.add(n)
    return out


def link_map(root: Path, origin: dict[str, str] | None = None) -> dict:
    """Every link of the vault at `root`: identity -> Counter of meanings (see View)."""
    return View(read_tree(Path(root)), origin).link_map()


def compare(before: View, after: View) -> list[Mismatch]:
    """Every link of `before` whose meaning changed in `after` (or that is gone), and every
    link of `after` that was not there (the splitter's added lines aside)."""
    a, b = before.link_map(), after.link_map()
    out = []
    for k in sorted(a.keys() | b.keys(), key=repr):
        x, y = a.get(k, Counter()), b.get(k, Counter())
        if x == y:
            continue
        gone, new = sorted((x - y).elements(), key=repr), sorted((y - x).elements(), key=repr)
        if not y:
            kind = "lost"
        elif Counter(m[:-2] for m in x.elements()) == Counter(m[:-2] for m in y.elements()):
            kind = "shown changed"  # it leads where it did, but shows another alias, or no longer embeds
        elif not x:
            kind = "new"
        elif new and all(m[0] == "broken" for m in new) and not any(m[0] == "broken" for m in gone):
            kind = "newly broken"
        elif gone and all(m[0] == "broken" for m in gone) and not any(m[0] == "broken" for m in new):
            kind = "newly resolved"
        else:
            kind = "re-targeted"
        out.append(Mismatch(kind, k[0], k[1], k[2], gone, new, before.raws.get(k, []), after.raws.get(k, [])))
    return out


def lines_lost(before: View | dict[str, bytes], after: View | dict[str, bytes]) -> Counter:
    """Non-blank lines of the notes before (links masked) missing after, as a multiset."""
    before = before if isinstance(before, View) else View(before)
    after = after if isinstance(after, View) else View(after)
    return before.line_counter() - after.line_counter()


def doubled_spaces(names) -> list[str]:
    """Names (of files, the last path segment) holding two blanks in a row."""
    return [n for n in names if "  " in n.rsplit("/", 1)[-1]]
