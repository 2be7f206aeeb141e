"""Every link syntax x every target form, through read, resolve and rewrite (DESIGN "The Note"
link syntaxes; "Auto-split").

One table: each row names a big note (the target form: how the note is known, and the
heading, custom id, :ID: or block the link points into), the link written in another note
(or in the big note itself, for links within it), how the parser must read it, and what
the splitter must make of it. For each row:

1. READ: `parse_file` of the linking note gives the link's kind, target, anchor and label;
2. RESOLVE: in a real vault (`Vault.reconcile`), the link leads to the big note, at the
   line of that heading or block (no line: the whole note);
3. REWRITE: the big note is split (threshold 2048 bytes); the link now leads to the part
   that holds that heading or block (same heading text), or still to the hub for a link
   to the whole note; nothing in the vault is broken or ambiguous; the link keeps its
   syntax and label; or, where refusing is the right answer, the split is refused with
   its reason and not a byte changes. Then undo restores the vault byte for byte.

Each link syntax is one unit of vaultd/parse/syntaxes.py; adding one is its unit plus its
row(s) here. `test_every_link_syntax_has_a_row` fails for a unit that leads to notes with
no row; `test_the_links_each_unit_writes_read_back_as_its_own` checks the links a unit
writes (the splitter's hub list and back links, an editor's completion) read back as it.

Vaults are made in /dev/shm where there is one (see `fast_tmp`): the whole file then
runs in under 20 s.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import get_args

import msgspec
import pytest

from vaultd.config import Config
from vaultd.note import Kind, headings_of
from vaultd.parse import parse_file
from vaultd.parse.syntaxes import BY_KIND, SYNTAXES, syntax_of
from vaultd.vault import Vault

THRESHOLD = 2048
OLD = time.time() - 3600
MARK = "xyzzy"  # on the line of a link written inside the big note: found again after the split

# -- the big notes: one per target form ---------------------------------------------------

HEADS = ["Alpha Part", "Bravo Part", "Charlie Part", "Delta Plans", "Echo Part", "Foxtrot Part"]
"""Every big note's sections; links point into "Delta Plans" (anchor delta-plans, CUSTOM_ID delta)."""
FILLER = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do.\n" * 7  # ~460 bytes a section
BLOCK = "A paragraph worth quoting on its own. ^blk-delta\n"
TARGET = "A line holding an Org <<delta target>> to link to.\n"
HEAD_UUID = "9a8b7c6d-0000-4000-8000-00000000d17a"  # an Org heading's own :ID: (on Delta Plans)
FILE_UUID = "5b9a0f3e-1111-4111-8111-0000000f11e0"  # an Org note's file-level :ID: (org-roam)
FM_UUID = "7d0e5c2a-2222-4222-8222-000000000f3d"  # a Markdown note's front-matter id
DENOTE_ID = "20240101T101010"  # in the file name
ORG_IDENT = "20240202T202020"  # #+identifier: of an Org note without a Denote name
MD_IDENT = "20240303T030303"  # identifier: in a Markdown note's front matter
DENDRON_ID = "4f3k2j1h0g9f8e7d6c5b"  # Dendron's front-matter id


def _md(front: str, at: dict[str, str]) -> str:
    """A big Markdown note; `at` puts a line at the end of the preamble ("intro") or first in a section."""
    out = front + "\nIntro paragraph of the big note.\n" + at.get("intro", "") + "\n"
    for h in HEADS:
        out += f"## {h}\n\n" + at.get(h, "") + FILLER
        if h == "Delta Plans":
            out += BLOCK + "\n### Delta Detail\n\nThe fine print.\n"
        out += "\n"
    return out


def _org(front: str, at: dict[str, str], head_id: bool = False) -> str:
    """A big Org note, every heading with a CUSTOM_ID (its first word, lower-cased)."""
    out = front + "\nIntro paragraph of the big note.\n" + at.get("intro", "") + "\n"
    for h in HEADS:
        cid = h.split()[0].lower()
        props = f":CUSTOM_ID: {cid}\n" + (f":ID:       {HEAD_UUID}\n" if head_id and cid == "delta" else "")
        out += f"* {h}\n:PROPERTIES:\n{props}:END:\n" + at.get(h, "") + FILLER
        if h == "Delta Plans":
            out += TARGET + "** Delta Detail\nThe fine print.\n"
        out += "\n"
    return out


FORMS = {
    # form: (path, builder(lines to put in) -> text)
    "obsidian-md": ("notes/big.md", lambda at: _md("---\ntitle: Big\naliases: [Grand Plan]\n---\n", at)),
    "md-blank-name": ("notes/big note.md", lambda at: _md("", at)),
    "md-hash-name": ("notes/C# notes.md", lambda at: _md("", at)),
    "denote-org": (f"notes/{DENOTE_ID}--big__kw.org",
                   lambda at: _org("#+title:      Big\n#+date:       [2024-01-01 Mon 10:10]\n#+filetags:   :kw:\n", at)),
    "denote-md": (f"notes/{DENOTE_ID}--big__kw.md",
                  lambda at: _md('---\ntitle: "Big"\ndate: 2024-01-01T10:10:10\ntags: ["kw"]\n---\n', at)),
    "org-identifier": ("notes/big.org", lambda at: _org(f"#+title: Big\n#+identifier: {ORG_IDENT}\n", at)),
    "md-identifier": ("notes/big.md", lambda at: _md(f'---\ntitle: Big\nidentifier: "{MD_IDENT}"\n---\n', at)),
    "md-fm-id": ("notes/big.md", lambda at: _md(f"---\nid: {FM_UUID}\ntitle: Big\n---\n", at)),
    "org-file-id": ("notes/roam.org", lambda at: _org(f":PROPERTIES:\n:ID:       {FILE_UUID}\n:END:\n#+title: Roam\n", at)),
    "org-plain": ("notes/big.org", lambda at: _org("#+title: Big\n", at, head_id=True)),
    "dendron": ("notes/proj.big.md",
                lambda at: _md(f"---\nid: {DENDRON_ID}\ntitle: Big\ndesc: ''\nupdated: 1700000000000\n"
                               f"created: 1700000000000\n---\n", at)),
}


@dataclass
class Row:
    form: str
    """Which big note (FORMS)."""
    link: str
    """The link as written."""
    read: tuple[str, str, str, str]
    """(kind, target, anchor, label) as the parser must read it."""
    src: str | None = None
    """The linking note; None: the big note itself (`where` says where in it)."""
    where: str = "intro"
    """For a link inside the big note: in its preamble ("intro") or first in the section of that heading."""
    to: str | None = "Delta Plans"
    """The heading, `^block` or `<<target>>` it points into; None: the whole note."""
    kind: str | None = None
    """Its kind after the split (default: as read)."""
    keep: dict = field(default_factory=dict)
    """Fields of the rewritten link that must hold these values (default: its label as read)."""
    shape: str | None = None
    """A regex the rewritten link's text must match (a form the user chose, kept)."""
    refuse: str | None = None
    """A regex of the reason the split must be refused with (nothing changes)."""


P = pytest.param
ROWS = [
    # -- Obsidian wikilinks and embeds (notes/big.md, linked from notes/ref.md) --
    P(Row("obsidian-md", "[[big]]", ("wiki", "big", "", ""), "notes/ref.md", to=None), id="wiki-whole"),
    P(Row("obsidian-md", "[[big#Delta Plans]]", ("wiki", "big", "Delta Plans", ""), "notes/ref.md"), id="wiki-heading"),
    P(Row("obsidian-md", "[[big#^blk-delta]]", ("wiki", "big", "^blk-delta", ""), "notes/ref.md", to="^blk-delta"),
      id="wiki-block"),
    P(Row("obsidian-md", "[[big|The big one]]", ("wiki", "big", "", "The big one"), "notes/ref.md", to=None),
      id="wiki-alias-whole"),
    P(Row("obsidian-md", "[[big#Delta Plans|the plans]]", ("wiki", "big", "Delta Plans", "the plans"), "notes/ref.md"),
      id="wiki-heading-alias"),
    P(Row("obsidian-md", "[[big#^blk-delta|quoted]]", ("wiki", "big", "^blk-delta", "quoted"), "notes/ref.md",
          to="^blk-delta"), id="wiki-block-alias"),
    P(Row("obsidian-md", "![[big#Delta Plans]]", ("embed", "big", "Delta Plans", ""), "notes/ref.md", shape=r"^!\[\["),
      id="embed-heading"),
    P(Row("obsidian-md", "![[big#^blk-delta]]", ("embed", "big", "^blk-delta", ""), "notes/ref.md", to="^blk-delta",
          shape=r"^!\[\["), id="embed-block"),
    P(Row("obsidian-md", "[[notes/big#Delta Plans]]", ("wiki", "notes/big", "Delta Plans", ""), "other/ref.md"),
      id="wiki-vault-path-heading"),
    P(Row("obsidian-md", "[[big.md#Delta Plans]]", ("wiki", "big.md", "Delta Plans", ""), "notes/ref.md"),
      id="wiki-with-extension-heading"),
    P(Row("obsidian-md", "[[BIG#delta plans]]", ("wiki", "BIG", "delta plans", ""), "notes/ref.md"),
      id="wiki-case-insensitive"),
    P(Row("obsidian-md", "[[big#Delta Plans#Delta Detail]]", ("wiki", "big", "Delta Plans#Delta Detail", ""),
          "notes/ref.md", to="Delta Detail"), id="wiki-nested-heading"),
    P(Row("obsidian-md", "[[big#Delta Detail]]", ("wiki", "big", "Delta Detail", ""), "other/ref.md",
          to="Delta Detail"), id="wiki-subheading-from-other-folder"),
    P(Row("obsidian-md", "[[Grand Plan#Delta Plans]]", ("wiki", "Grand Plan", "Delta Plans", ""), "notes/ref.md"),
      id="wiki-by-alias-heading"),
    # -- Markdown links: relative, other folder, vault-absolute, URL-encoded, <angle brackets> --
    P(Row("obsidian-md", "[t](big.md#delta-plans)", ("md", "big.md", "delta-plans", "t"), "notes/ref.md"),
      id="md-same-folder-slug"),
    P(Row("obsidian-md", "[t](big.md)", ("md", "big.md", "", "t"), "notes/ref.md", to=None), id="md-whole"),
    P(Row("obsidian-md", "[t](../notes/big.md#delta-plans)", ("md", "../notes/big.md", "delta-plans", "t"),
          "other/ref.md"), id="md-relative-other-folder"),
    P(Row("obsidian-md", "[t](../notes/big.md#^blk-delta)", ("md", "../notes/big.md", "^blk-delta", "t"),
          "other/ref.md", to="^blk-delta"), id="md-relative-block"),
    # the path style the user chose is kept: a bare name (Obsidian's shortest path), vault-absolute
    P(Row("obsidian-md", "[t](big.md#delta-plans)", ("md", "big.md", "delta-plans", "t"), "other/ref.md",
          shape=r"^\[t\]\((?!\.\./)"), id="md-shortest-path-other-folder"),
    P(Row("obsidian-md", "[t](/notes/big.md#delta-plans)", ("md", "/notes/big.md", "delta-plans", "t"),
          "other/ref.md", shape=r"^\[t\]\(/notes/"), id="md-vault-absolute"),
    P(Row("md-blank-name", "[t](big%20note.md#delta-plans)", ("md", "big note.md", "delta-plans", "t"),
          "notes/ref.md"), id="md-url-encoded"),
    P(Row("md-blank-name", "[t](../notes/big%20note.md#Delta%20Plans)", ("md", "../notes/big note.md", "Delta Plans",
          "t"), "other/ref.md"), id="md-url-encoded-heading-text"),
    P(Row("md-blank-name", "[t](<big note.md#delta-plans>)", ("md", "big note.md", "delta-plans", "t"),
          "notes/ref.md", shape=r"^\[t\]\(<"), id="md-angle-brackets"),
    P(Row("md-blank-name", "[[big note#Delta Plans]]", ("wiki", "big note", "Delta Plans", ""), "notes/ref.md"),
      id="wiki-blank-name"),
    # -- links within the big note itself --
    P(Row("obsidian-md", f"[[#Delta Plans]] {MARK}", ("internal", "", "Delta Plans", ""), kind="wiki"),
      id="md-internal-wiki-from-intro"),
    P(Row("obsidian-md", f"[[#Delta Plans]] {MARK}", ("internal", "", "Delta Plans", ""), where="Alpha Part", kind="wiki"),
      id="md-internal-wiki-from-section"),
    P(Row("obsidian-md", f"[[#Delta Plans|plans]] {MARK}", ("internal", "", "Delta Plans", "plans"), kind="wiki"),
      id="md-internal-wiki-alias"),
    P(Row("obsidian-md", f"[[#^blk-delta]] {MARK}", ("internal", "", "^blk-delta", ""), to="^blk-delta", kind="wiki"),
      id="md-internal-block"),
    P(Row("obsidian-md", f"![[#Delta Plans]] {MARK}", ("internal", "", "Delta Plans", ""), kind="embed",
          shape=r"^!\[\["), id="md-internal-embed"),
    P(Row("obsidian-md", f"[x](#delta-plans) {MARK}", ("internal", "", "delta-plans", "x"), kind="md"),
      id="md-internal-mdlink-from-intro"),
    P(Row("obsidian-md", f"[x](#delta-plans) {MARK}", ("internal", "", "delta-plans", "x"), where="Alpha Part", kind="md"),
      id="md-internal-mdlink-from-section"),
    P(Row("obsidian-md", f"[[#Delta Detail]] {MARK}", ("internal", "", "Delta Detail", ""), where="Delta Plans",
          to="Delta Detail", kind="internal"), id="md-internal-within-its-part-stays"),
    P(Row("obsidian-md", f"[x](#delta-detail) {MARK}", ("internal", "", "delta-detail", "x"), where="Delta Plans",
          to="Delta Detail", kind="internal"), id="md-internal-mdlink-within-its-part-stays"),
    P(Row("md-blank-name", f"[x](#delta-plans) {MARK}", ("internal", "", "delta-plans", "x"), kind="md"),
      id="md-blank-name-internal-mdlink"),
    P(Row("denote-md", f"[[#Delta Plans|plans]] {MARK}", ("internal", "", "Delta Plans", "plans"), kind="wiki"),
      id="denote-md-internal-wiki"),
    P(Row("org-plain", f"[[*Delta Plans][plans]] {MARK}", ("internal", "", "*Delta Plans", "plans"), kind="file"),
      id="org-internal-star-heading"),
    P(Row("org-plain", f"[[#delta]] {MARK}", ("internal", "", "#delta", ""), where="Alpha Part", kind="file"),
      id="org-internal-custom-id"),
    P(Row("org-plain", f"[[delta target]] {MARK}", ("internal", "", "delta target", ""), to="<<delta target>>",
          kind="file"), id="org-internal-target"),
    P(Row("org-plain", f"[[*Delta Detail]] {MARK}", ("internal", "", "*Delta Detail", ""), where="Delta Plans",
          to="Delta Detail", kind="internal"), id="org-internal-within-its-part-stays"),
    P(Row("denote-org", f"[[*Delta Plans][plans]] {MARK}", ("internal", "", "*Delta Plans", "plans"), kind="file"),
      id="denote-org-internal-star-heading"),
    # -- Org file: links (notes/big.org with CUSTOM_IDs and a heading :ID:) --
    P(Row("org-plain", "[[file:big.org]]", ("file", "big.org", "", ""), "notes/ref.org", to=None), id="file-whole"),
    P(Row("org-plain", "[[file:big.org::*Delta Plans][plans]]", ("file", "big.org", "*Delta Plans", "plans"),
          "notes/ref.org"), id="file-star-heading"),
    P(Row("org-plain", "[[file:big.org::#delta]]", ("file", "big.org", "#delta", ""), "notes/ref.org"),
      id="file-custom-id"),
    P(Row("org-plain", "[[file:big.org::Delta Plans]]", ("file", "big.org", "Delta Plans", ""), "notes/ref.org"),
      id="file-text-search-heading"),
    P(Row("org-plain", "[[file:big.org::delta target][there]]", ("file", "big.org", "delta target", "there"),
          "notes/ref.org", to="<<delta target>>"), id="file-dedicated-target"),
    P(Row("org-plain", "[[file:big.org::*Delta Detail]]", ("file", "big.org", "*Delta Detail", ""), "notes/ref.org",
          to="Delta Detail"), id="file-star-subheading"),
    P(Row("org-plain", "[[file:../notes/big.org::*Delta Plans]]", ("file", "../notes/big.org", "*Delta Plans", ""),
          "other/ref.org"), id="file-relative-other-folder"),
    P(Row("org-plain", f"[[id:{HEAD_UUID}][plans]]", ("id", HEAD_UUID, "", "plans"), "notes/ref.org"),
      id="id-heading-level"),
    # -- Org :ID: of the whole file (org-roam) --
    P(Row("org-file-id", f"[[id:{FILE_UUID}][Roam]]", ("id", FILE_UUID, "", "Roam"), "notes/ref.org", to=None),
      id="id-file-level-whole"),
    P(Row("org-file-id", f"[[id:{FILE_UUID}::*Delta Plans][plans]]", ("id", FILE_UUID, "*Delta Plans", "plans"),
          "notes/ref.org"), id="id-file-level-star-heading"),
    P(Row("org-file-id", f"[[id:{FILE_UUID}::#delta]]", ("id", FILE_UUID, "#delta", ""), "notes/ref.org"),
      id="id-file-level-custom-id"),
    # -- Denote: identifier in the file name (Org and Markdown), #+identifier:, front matter --
    P(Row("denote-org", f"[[denote:{DENOTE_ID}][Big]]", ("denote", DENOTE_ID, "", "Big"), "notes/ref.org", to=None),
      id="denote-whole"),
    P(Row("denote-org", f"[[denote:{DENOTE_ID}::#delta][plans]]", ("denote", DENOTE_ID, "#delta", "plans"),
          "notes/ref.org"), id="denote-custom-id"),
    P(Row("denote-org", f"[[denote:{DENOTE_ID}::*Delta Plans]]", ("denote", DENOTE_ID, "*Delta Plans", ""),
          "notes/ref.org"), id="denote-star-heading"),
    P(Row("denote-org", f"[[file:{DENOTE_ID}--big__kw.org::*Delta Plans][plans]]",
          ("file", f"{DENOTE_ID}--big__kw.org", "*Delta Plans", "plans"), "notes/ref.org"), id="denote-org-by-file-name"),
    P(Row("denote-md", f"[[{DENOTE_ID}--big__kw#Delta Plans]]", ("wiki", f"{DENOTE_ID}--big__kw", "Delta Plans", ""),
          "notes/ref.md"), id="denote-md-wiki-heading"),
    P(Row("denote-md", f"[t]({DENOTE_ID}--big__kw.md#delta-plans)",
          ("md", f"{DENOTE_ID}--big__kw.md", "delta-plans", "t"), "notes/ref.md"), id="denote-md-mdlink-heading"),
    P(Row("denote-md", f"[[denote:{DENOTE_ID}::#delta-plans][plans]]", ("denote", DENOTE_ID, "#delta-plans", "plans"),
          "notes/ref.org"), id="denote-md-from-org"),
    P(Row("denote-md", f"[Big](denote:{DENOTE_ID})", ("denote", DENOTE_ID, "", "Big"), "notes/ref.md", to=None),
      id="denote-md-markdown-form-whole"),  # how Denote writes links in its Markdown notes: [desc](denote:ID)
    P(Row("org-identifier", f"[[denote:{ORG_IDENT}::*Delta Plans][plans]]", ("denote", ORG_IDENT, "*Delta Plans",
          "plans"), "notes/ref.org"), id="org-identifier-denote-star-heading"),
    P(Row("org-identifier", f"[[denote:{ORG_IDENT}::#delta]]", ("denote", ORG_IDENT, "#delta", ""), "notes/ref.org"),
      id="org-identifier-denote-custom-id"),
    P(Row("org-identifier", f"[[denote:{ORG_IDENT}]]", ("denote", ORG_IDENT, "", ""), "notes/ref.org", to=None),
      id="org-identifier-denote-whole"),
    P(Row("md-identifier", f"[[denote:{MD_IDENT}::#delta-plans][plans]]", ("denote", MD_IDENT, "#delta-plans", "plans"),
          "notes/ref.org"), id="md-identifier-denote-slug"),
    # id: stays id: as for org-roam parts: each part a front-matter id of its own
    P(Row("md-fm-id", f"[[id:{FM_UUID}::*Delta Plans][plans]]", ("id", FM_UUID, "*Delta Plans", "plans"),
          "notes/ref.org"), id="md-front-matter-id-star-heading"),
    P(Row("md-fm-id", f"[[id:{FM_UUID}][Big]]", ("id", FM_UUID, "", "Big"), "notes/ref.org", to=None),
      id="md-front-matter-id-whole"),
    # -- Dendron: hierarchy names, the note second in [[label|note.name#anchor]] --
    P(Row("dendron", "[[plans|proj.big#delta-plans]]", ("wiki", "plans", "", "proj.big#delta-plans"), "notes/ref.md",
          keep={"target": "plans"}), id="dendron-label-note-anchor"),
    P(Row("dendron", "[[proj.big#delta-plans]]", ("wiki", "proj.big", "delta-plans", ""), "notes/ref.md"),
      id="dendron-note-anchor"),
    P(Row("dendron", "[[Big plans|proj.big#delta-plans]]", ("wiki", "Big plans", "", "proj.big#delta-plans"),
          "notes/ref.md", keep={"target": "Big plans"}), id="dendron-blank-label"),
    P(Row("dendron", "[[proj.big]]", ("wiki", "proj.big", "", ""), "notes/ref.md", to=None), id="dendron-whole"),
    # -- refused: no wikilink can name a part of a note whose name holds `#` --
    P(Row("md-hash-name", "[t](C%23%20notes.md#delta-plans)", ("md", "C# notes.md", "delta-plans", "t"),
          "notes/ref.md", refuse="a wikilink to its parts cannot"), id="refused-hash-in-name"),
    # -- refused where the rewrite is, naming the syntax: code in a Markdown link's label
    # (masked where it is read) leaves text that does not read as a Markdown link alone --
    P(Row("obsidian-md", "[a `]` b](big.md#delta-plans)", ("md", "big.md", "delta-plans", "a `]` b"), "notes/ref.md",
          refuse=r"notes/ref\.md:2: .* is a Markdown link, and its text does not read as a Markdown link on its own"),
      id="refused-markdown-link-with-code-in-its-label"),
]


# -- helpers -------------------------------------------------------------------------------


def _vault(tmp_path: Path, files: dict[str, str]) -> Vault:
    root = tmp_path / "vault"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(text.encode())
    for p in root.rglob("*"):
        if p.is_file():
            os.utime(p, (OLD, OLD))
    cfg = Config(vault=str(root), state_dir=str(tmp_path / "state"))
    cfg = msgspec.structs.replace(cfg, index=msgspec.structs.replace(cfg.index, heap_mb=15))
    cfg = msgspec.structs.replace(cfg, split=msgspec.structs.replace(cfg.split, threshold=THRESHOLD, quiet=0)).load()
    v = Vault(cfg)
    v.reconcile()
    return v


def _tree(root: Path) -> dict[str, bytes]:
    """The vault's files, but for vaultd's split journal (.vaultd/, see split.JOURNAL)."""
    return {rel: p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not (rel := p.relative_to(root).as_posix()).startswith(".vaultd/")}


def _the_link(links, row: Row, text: str):
    """The row's link among `links` (of Link or Resolved), found on the line it was written on."""
    lineno = next(i for i, line in enumerate(text.split("\n"), 1) if (MARK if row.src is None else "LINK:") in line)
    found = [x for x in links if getattr(x, "link", x).line == lineno]
    assert len(found) == 1, f"one link on line {lineno} of {text.splitlines()[lineno - 1]!r}, not {found}"
    return found[0]


def _lands(v: Vault, r) -> str | None:
    """What a resolved link points at in its note: the heading's text, `^block`, or None (the whole note)."""
    if r.line is None:
        return None
    note = v.notes[r.target]
    head = next((h.text for h in headings_of(note) if h.line == r.line), None)
    if head is not None:
        return head
    line = (v.root / r.target).read_text().split("\n")[r.line - 1]
    m = re.search(r"\^([\w-]+)\s*$", line) or re.search(r"(<<[^<>]+>>)", line)
    return (m.group(1) if m.group(1).startswith("<<") else f"^{m.group(1)}") if m else f"line {r.line}: {line!r}"


def _holder(v: Vault, parts: list[str], to: str) -> str:
    """The part that holds heading or block `to`."""
    for p in parts:
        text = (v.root / p).read_text()
        if to.startswith("^") and re.search(rf"\{to}\s*$", text, re.M) or to.startswith("<<") and to in text:
            return p
        if not to.startswith(("^", "<<")) and any(h.text == to for h in headings_of(v.notes[p])):
            return p
    raise AssertionError(f"no part holds {to!r}: {parts}")


def _where_now(v: Vault, row: Row, big: str, parts: list[str]) -> tuple[str, str]:
    """The file the row's linking line is in after the split, and its text."""
    if row.src is not None:
        return row.src, (v.root / row.src).read_text()
    for p in [big, *parts]:
        text = (v.root / p).read_text()
        if MARK in text:
            return p, text
    raise AssertionError(f"the line with {MARK} is in no file of the split")


@pytest.fixture
def fast_tmp(tmp_path):
    """A folder in memory where there is one: each row commits the index three times, and
    on a disk each commit's fsyncs cost as much as all the rest of the row."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    d = Path(tempfile.mkdtemp(prefix="vaultd-link-syntax-", dir=shm))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


# -- the test --------------------------------------------------------------------------------


@pytest.mark.parametrize("row", ROWS)
def test_link_syntax(fast_tmp, row: Row):
    big, build = FORMS[row.form]
    if row.src is None:
        line = f"LINK: {row.link}\n"
        big_text = build({row.where: line})
        files = {big: big_text}
        src, src_text = big, big_text
    else:
        big_text = build({})
        src, src_text = row.src, f"A note that links.\nLINK: {row.link} here.\n"
        files = {big: big_text, src: src_text}
    assert len(big_text.encode()) > THRESHOLD

    # 1. READ
    link = _the_link(parse_file(src, src_text.encode()).links, row, src_text)
    assert (link.kind, link.target, link.anchor, link.label) == row.read, f"read {link.raw!r}"

    # 2. RESOLVE
    v = _vault(fast_tmp, files)
    try:
        r = _the_link(v.graph.links(src), row, src_text)
        assert (r.target, r.broken) == (big, None), f"{r.link.raw!r} resolves to {r.target} ({r.broken}, {r.candidates})"
        assert _lands(v, r) == row.to, f"{r.link.raw!r} resolves to line {r.line}"
        assert v.broken()["total"] == 0, v.broken()["broken"]
        before = _tree(v.root)

        # 3. REWRITE
        if row.refuse:
            with pytest.raises(Exception, match=row.refuse):
                v.split_note(big, check_quiet=False)
            assert _tree(v.root) == before, "a refused split changed the vault"
            return
        res = v.split_note(big, check_quiet=False)
        parts = res["parts"]
        assert len(parts) >= 2, res
        where, text = _where_now(v, row, big, parts)
        now = _the_link(v.graph.links(where), row, text)
        want = big if row.to is None else _holder(v, parts, row.to)
        assert now.broken is None and not now.candidates, \
            f"{now.link.raw!r} in {where} is broken after the split: {now.broken} {now.candidates}"
        assert now.target == want, f"{now.link.raw!r} in {where} leads to {now.target}, not {want}"
        assert _lands(v, now) == row.to, f"{now.link.raw!r} leads to line {now.line} of {now.target}"
        if row.to is None and row.src is not None:
            assert now.link.raw == row.link, "a link to the whole note is left as it was"
        assert now.link.kind == (row.kind or row.read[0]), f"{row.link!r} became {now.link.raw!r}"
        for f, value in (row.keep or {"label": row.read[3]}).items():
            assert getattr(now.link, f) == value, f"{row.link!r} became {now.link.raw!r}: its {f} is not {value!r}"
        if row.shape:
            assert re.search(row.shape, now.link.raw), f"{row.link!r} became {now.link.raw!r}"
        assert v.broken()["total"] == 0, f"broken after the split: {v.broken()['broken']}"

        # undo: byte for byte
        v.split_undo(res["op"])
        assert _tree(v.root) == before, "undo did not restore the vault byte for byte"
        r = _the_link(v.graph.links(src), row, src_text)
        assert (r.target, _lands(v, r)) == (big, row.to)
    finally:
        v.close()


@pytest.mark.parametrize("form", ["obsidian-md", "org-plain", "denote-org"])
def test_each_part_links_back_to_the_hub_shown_by_the_hub_title(fast_tmp, form):
    """The link the split writes atop each part (DESIGN: the original "becomes a hub linking
    to its parts"; each part's `Part of` line): it leads to the hub and reads as its title."""
    big, build = FORMS[form]
    v = _vault(fast_tmp, {big: build({})})
    try:
        parts = v.split_note(big, check_quiet=False)["parts"]
        for p in parts:
            back = [r for r in v.graph.links(p) if r.target == big]
            assert back, f"{p} has no link back to {big}"
            shown = back[0].link.label or back[0].link.target
            assert shown == "Big", f"{p}: {back[0].link.raw!r} reads as {shown!r}, not the hub's title 'Big'"
    finally:
        v.close()


# -- the table covers every syntax -------------------------------------------------------------


def _unit_of(row: Row):
    """The unit that reads (and rewrites) the row's link."""
    src = row.src or FORMS[row.form][0]
    (link,) = parse_file(src, f"LINK: {row.link}\n".encode()).links
    return syntax_of(link)


def test_every_link_syntax_has_a_row():
    """A unit of parse/syntaxes.py whose links lead to notes is read, resolved and rewritten
    by at least one row of ROWS (a URL leads to no note: tests/test_links.py reads them)."""
    covered = {_unit_of(p.values[0]) for p in ROWS}
    missing = [u.name for u in SYNTAXES if u.leads_to_notes and u not in covered]
    assert not missing, f"no row of ROWS reads a link of these syntaxes: {missing}"


def test_the_kinds_are_the_units_kinds():
    """note.Kind lists exactly the kinds the units read, each read by one unit."""
    kinds = [u.kind for u in SYNTAXES if u.kind is not None]
    assert sorted(kinds) == sorted(set(kinds)) == sorted(get_args(Kind)) == sorted(BY_KIND)


def test_the_links_each_unit_writes_read_back_as_its_own():
    """What a unit writes for a note (the splitter's hub list and back links, the LSP's
    completion) is read back by that unit, naming that note, shown as written."""
    wrote = []
    for unit in SYNTAXES:
        if unit.kind is None:  # Dendron's: wikilinks and embeds write theirs
            continue
        try:
            text = unit.write("big", "Big")
        except ValueError:  # it writes none: a URL, an :ID: (none to offer), a place within a note
            continue
        (link,) = parse_file("ref.org" if unit.org_anchors else "ref.md", f"{text}\n".encode()).links
        assert (syntax_of(link), link.target, link.label) == (unit, "big", "Big"), f"{unit.name} wrote {text!r}"
        wrote.append(unit.kind)
    assert sorted(wrote) == ["denote", "embed", "file", "md", "wiki"]
