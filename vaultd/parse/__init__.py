"""Parsing is pure: bytes in, Note out, and it never raises on content.

A file that cannot be parsed fully is indexed as far as it goes and carries a
`problems` list saying what was skipped.
"""

from __future__ import annotations

import hashlib
from itertools import accumulate

from ..note import ID_ANCHOR, Block, Link, Note
from . import markdown, org
from .links import extract
from .common import dedupe, part_header
from .denote import TEXT_SUFFIX, mismatch, parse_name, text_front_matter

__all__ = ["parse_file", "parse_lines", "decode"]


def decode(data: bytes) -> tuple[str, list[str]]:
    """UTF-8 text (BOM dropped, CRLF folded), with a problem noted where bytes were replaced."""
    problems = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        problems.append(f"not valid UTF-8 (first bad byte at offset {e.start}); bad bytes replaced")
        text = data.decode("utf-8", errors="replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    if b"\r" in data:  # bytes are quicker to search; \r and NUL decode as themselves
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if b"\x00" in data:
        problems.append("NUL bytes replaced by spaces")
        text = text.replace("\x00", " ")
    return text, problems


BINARY_HEAD = 8192
BINARY = "binary, not text"
"""How a binary file's problem begins (see binary): grep passes such a note by."""


_CONTROL_BYTES = bytes(c for c in range(32) if c not in b"\t\n\r\x0c\x1b")


def binary(head: bytes) -> bool:
    """Whether a file's first bytes are not text: over 1% of them (and at least 16) control
    bytes that text does not hold (NUL and the like: UTF-16, images, archives, random
    bytes); a stray NUL, or a Latin-1 note's accented letters, are text."""
    controls = len(head) - len(head.translate(None, _CONTROL_BYTES))
    return controls >= 16 and controls * 100 > len(head)


def _stem_suffix(path: str) -> tuple[str, str]:
    """`PurePosixPath(path).stem` and `.suffix`, without building the path object."""
    name = next((part for part in reversed(path.split("/")) if part not in ("", ".")), "")
    i = name.rfind(".")
    return (name[:i], name[i:]) if 0 < i < len(name) - 1 else (name, "")


def _line_offsets(data: bytes, links: list[Link]) -> None:
    """Give each link the byte offset of its line in `data` (see Link.at)."""
    lines = data.split(b"\n", max(link.line for link in links) - 1)
    sums = list(accumulate(map(len, lines), initial=0))  # line k starts after k-1 lines and their k-1 LFs
    for link in links:
        link.at = sums[link.line - 1] + link.line - 1


def parse_file(path: str, data: bytes, *, max_bytes: int = 20 << 20, mtime_ns: int = 0) -> Note:
    """Parse one file's bytes into a Note. `path` is vault-relative with POSIX separators."""
    note, lines = parse_lines(path, data, max_bytes=max_bytes, mtime_ns=mtime_ns)
    note.body = "\n".join(lines)
    return note


def parse_lines(path: str, data: bytes, *, max_bytes: int = 20 << 20, mtime_ns: int = 0) -> tuple[Note, list[str]]:
    """As parse_file, but the body as its lines, not joined (the Note's body is left empty):
    an index document is made from the lines as they are (see index.fields). Joined, a
    note with one Hangul letter is two bytes a character all through."""
    problems: list[str] = []
    size = len(data)
    digest = hashlib.blake2b(data, digest_size=16).hexdigest()
    if size > max_bytes:
        cut = data.rfind(b"\n", 0, max_bytes) + 1 or max_bytes
        data = data[:cut]
        problems.append(f"file is {size / 2**20:.1f} MB; only the first {max_bytes / 2**20:.0f} MB are indexed")
    if binary(data[:BINARY_HEAD]):  # an image or archive named .md: its bytes would read as words and tags
        problems.append(BINARY + " (NUL and other control bytes in its first 8 KB): only its name is indexed")
        data = b""
    text, decode_problems = decode(data)
    problems += decode_problems

    stem, suffix = _stem_suffix(path)
    dn = parse_name(stem)
    note = Note(path=path, title=stem, mtime_ns=mtime_ns, size=size, hash=digest)
    tags: list[str] = list(dn.keywords) if dn else []
    title = None
    date = dn.date if dn else None
    ident = dn.id if dn else None

    keyword_id = None
    if suffix.lower() == TEXT_SUFFIX and dn is not None:  # Denote's plain-text file type
        lines = text.split("\n")
        meta, fm_lines = text_front_matter(lines)
        title, title_from = meta.get("title") or None, "front matter"
        tags += meta.get("tags", "").split()
        date = meta.get("date") or date
        keyword_id = meta.get("identifier") or None
        note.links, note.blocks, body = extract(lines, 1, org=True, code=False)  # Denote links as in Org
        body[:fm_lines] = [""] * fm_lines
        header = -1
    elif suffix.lower() == ".org":
        f = org.parse(text)
        problems += f.problems
        kw = f.keywords
        title, title_from = kw.get("title") or None, "#+title"
        tags += org.filetags(kw.get("filetags"))
        date = kw.get("date") or date
        keyword_id = kw.get("identifier") or None
        note.uuids = f.uuids
        note.headings = f.headings
        tags += [t for h in f.headings if h.tags for t in h.tags]
        lines = text.split("\n")
        note.links, note.blocks, body = extract(lines, 1, org=True, code=f.code)
        header = part_header(lines, 0, org=True)
        note.blocks += [Block(ID_ANCHOR + u, line) for u, line in f.id_lines]
    else:
        f = markdown.parse(text)
        problems += f.problems
        meta = f.meta
        title, title_from = markdown.meta_str(meta.get("title")), "front matter"
        tags += markdown.meta_tags(meta) + f.tags
        date = markdown.meta_str(meta.get("date")) or date
        keyword_id = markdown.meta_str(meta.get("identifier")) or None
        fm_id = markdown.meta_str(meta.get("id"))
        if fm_id:
            note.uuids = [fm_id]
        note.aliases = markdown.meta_aliases(meta)
        note.headings = f.headings
        note.links, note.blocks, body = extract(f.lines, 1, org=False, code=f.code)
        # Front matter lines are blanked, not dropped, so body lines stay file lines.
        body[: f.fm_lines] = [""] * f.fm_lines
        header = f.part_header
    if note.links and b"\r" not in data:  # a CR ends a line as decode reads it: no offsets then
        _line_offsets(data, note.links)
    if header >= 0:
        body[header] = ""  # a split part's back-link to its hub: its link counts, its hub's title is no text of its

    # The title as the note's own tools show it (Obsidian, Foam, Dendron, Denote, Org):
    # never a heading, which is often a section's ("History", "Example").
    if not title:
        title, title_from = (dn.title, "Denote name") if dn and dn.title else (stem, "file name")
    note.title, note.title_from = title, title_from
    # Denote follows the identifier in the file name; the keyword names a note whose name has none.
    if ident and keyword_id and keyword_id != ident:
        problems.append(mismatch(ident, keyword_id))
        note.id_keyword = keyword_id
    note.id = ident or keyword_id
    note.signature = dn.signature if dn else None
    note.date = date
    note.tags = dedupe(t.lower() for t in tags)
    note.problems = problems
    return note, body
