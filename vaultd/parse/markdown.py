"""Obsidian-flavoured Markdown: YAML front matter (python-frontmatter) or TOML front
matter (tomllib), ATX headings, inline #tags outside code."""

from __future__ import annotations

import datetime as dt
import re
import tomllib

import frontmatter

from ..note import Heading
from .common import dedupe, fence_step, github_slug, is_scalar, may_fence, numbered, part_header, split_tags

# Every pattern here stops at the next bracket or space run it cannot use, so no line costs
# the square of its length (a 24 KB heading of "[[" froze the daemon for 7 s).
ATX = re.compile(r"^\s{0,3}(#{1,6})[ \t]+(.*)$")  # the closing #s are cut in _atx_text
_HEADING_LINK = re.compile(r"!?\[([^\[\]\n]*)\]\((?:[^()\n]|\([^()\n]*\))*\)|\[\[(?:[^\[\]|\n]*\|)?([^\[\]\n]*)\]\]")
_INLINE_CODE = re.compile(r"`[^`\n]*`")
# `#` first, then "not after a non-space": a literal start keeps the search fast
_TAG = re.compile(r"#(?<!\S#)([\w/-]*[^\W\d_][\w/-]*)")
_TAG_LINE = re.compile(r"[ \t]*#[\w/-]*[^\W\d_][\w/-]*(?:[ \t]+#[\w/-]*[^\W\d_][\w/-]*)*[ \t]*")
"""A line of nothing but #tags: right under a heading, the heading's own tags (as Org's
`* Heading :a:b:`), and the note's as every #tag is."""


_FM_ENDS = {"---": ("---", "..."), "+++": ("+++",)}
"""A front matter block's first line, and the lines that may end it: YAML between `---`
lines, TOML between `+++` lines (Denote's markdown-toml notes, Hugo)."""


def split_front_matter(lines: list[str]) -> int:
    """Number of lines the front matter block takes (0 when there is none)."""
    ends = _FM_ENDS.get(lines[0].rstrip()) if lines else None
    if ends is None:
        return 0
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ends:
            return i + 1
    return 0


_SIMPLE_LINE = re.compile(
    r"([A-Za-z_][A-Za-z0-9_-]*): "  # a key YAML reads as text
    r"(?:\"([^\"\\]*)\"|'([^']*)'"  # "text" (no escape), 'text'
    r"|\[((?:[^\W\d_][\w.-]*|\"[^\"\\,]*\")(?:, (?:[^\W\d_][\w.-]*|\"[^\"\\,]*\"))*)?\]"  # [word, "text"]
    r"|([0-9]{4})-([0-9]{2})-([0-9]{2})"  # a date
    r"|([^\W\d_](?:[\w .,-]*[\w.,-])?))"  # plain words: a letter first, no indicator, no trailing blank
)
"""A front matter line YAML reads in one way we can too: `key: value`, the value a quoted
text without escapes, a flow list of words or such texts, a date, or plain words."""
_YAML_WORDS = frozenset("yes Yes YES no No NO true True TRUE false False FALSE on On ON off Off OFF null Null NULL".split())
"""Plain words YAML 1.1 reads as a boolean or null, as a key or a value."""


def simple_front_matter(lines: list[str]) -> dict | None:
    """The values of a YAML front matter block (`lines`: from its `---` to its `---`) of
    nothing but _SIMPLE_LINE lines, as YAML (python-frontmatter) reads them; None when a line
    is anything else (a nested value, a comment, an escape, a number, a boolean word, an
    impossible date, a character YAML refuses): YAML reads those. Most notes' front matter
    is simple, and YAML takes 5x as long as the rest of its note's parse."""
    if lines[0] != "---" or lines[-1] != "---":
        return None
    meta: dict = {}
    for line in lines[1:-1]:
        m = _SIMPLE_LINE.fullmatch(line)
        if m is None or m[1] in _YAML_WORDS or not line.isprintable():
            return None
        key, dq, sq, items, year, plain = m[1], m[2], m[3], m[4], m[5], m[8]
        if dq is not None or sq is not None:
            meta[key] = dq if dq is not None else sq
        elif plain is not None:
            if plain in _YAML_WORDS:
                return None
            meta[key] = plain
        elif year is not None:
            try:
                meta[key] = dt.date(int(year), int(m[6]), int(m[7]))
            except ValueError:
                return None
        else:
            words = items.split(", ") if items else []
            if any(w in _YAML_WORDS for w in words):
                return None
            meta[key] = [w[1:-1] if w.startswith('"') else w for w in words]
    return meta


def front_matter(lines: list[str]) -> tuple[dict, int, str | None]:
    """The front matter's values, the lines it takes, and why it was ignored (None when read)."""
    n = split_front_matter(lines)
    if not n:
        return {}, 0, None
    if (meta := simple_front_matter(lines[:n])) is not None:
        return meta, n, None
    try:
        if lines[0].rstrip() == "+++":
            meta = tomllib.loads("\n".join(lines[1 : n - 1]))
        else:
            meta, _ = frontmatter.parse("\n".join(lines[:n]) + "\n")
        return (meta if isinstance(meta, dict) else {}), n, None
    except Exception as e:  # yaml errors, bad dates, anything: the body still counts
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        return {}, n, f"front matter ignored: {first}"


class MarkdownFacts:
    __slots__ = ("lines", "meta", "fm_lines", "part_header", "headings", "tags", "problems", "code")


def parse(text: str) -> MarkdownFacts:
    lines = text.split("\n")
    out = MarkdownFacts()
    out.lines = lines
    out.meta, out.fm_lines, problem = front_matter(lines)
    out.problems = [problem] if problem else []
    out.part_header = part_header(lines, out.fm_lines, org=False)  # no tags from it
    out.headings = []
    slugs: dict[str, int] = {}
    tags: list[str] = []
    fence = None
    rows = enumerate(lines[out.fm_lines :], start=out.fm_lines + 1)
    fences = may_fence(text)
    if not fences:  # only a line with "#" can hold a heading or a tag
        rows = [(n, line) for n, line in rows if "#" in line]
    # where code may be: fences, or indented lines (the other kind of code block). An
    # indented first line needs no test: read first, it meets the state it would anyway.
    out.code = fences or "\t" in text or "\n    " in text
    for n, line in rows:
        if "#" not in line and fence is None and not ("`" in line and "```" in line) and not ("~" in line and "~~~" in line):
            continue  # neither heading, tag nor fence: the common case, kept cheap
        if fence is not None or "`" in line and "```" in line or "~" in line and "~~~" in line:
            is_fence, fence = fence_step(line, fence)
            if is_fence or fence is not None:
                continue
        if line.startswith(("    ", "\t")):
            continue
        h = ATX.match(line)
        if h:
            text_ = _atx_text(h.group(2))
            if "[" in text_:  # both link forms need one
                text_ = _HEADING_LINK.sub(lambda m: m.group(1) or m.group(2) or "", text_)
            text_ = text_.strip()
            out.headings.append(Heading(len(h.group(1)), text_, n, numbered(github_slug(text_), slugs)))
            continue
        if "#" in line and n != out.part_header + 1:
            found = _TAG.findall(_INLINE_CODE.sub("", line) if "`" in line else line)
            tags.extend(found)
            if found and out.headings and out.headings[-1].line == n - 1 and _TAG_LINE.fullmatch(line):
                h = out.headings[-1]  # a line of nothing but #tags right under a heading tags that heading
                out.headings[-1] = Heading(h.level, h.text, h.line, h.anchor, tuple(dict.fromkeys(t.lower() for t in found)))
    out.tags = dedupe(tags)
    return out


def _atx_text(rest: str) -> str:
    """An ATX heading's text: without trailing blanks, nor a closing run of #s after a blank."""
    text = rest.rstrip(" \t")
    bare = text.rstrip("#")
    if bare != text and bare and bare[-1] in " \t":
        text = bare.rstrip(" \t")
    return text


def meta_str(value) -> str | None:
    """A front matter scalar as text (dates in ISO form)."""
    if value is None:
        return None
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    return str(value).strip() or None if is_scalar(value) else None


TAG_KEYS = ("tags", "tag", "keywords", "category", "categories")
"""Front matter keys whose values are a note's tags: Obsidian's and Hugo's `tags`, Jekyll's
singular `tag`, Denote's `keywords`, Jekyll's and Hugo's `category`/`categories`; and the
same under Zola's `[taxonomies]`. Key case aside."""
ALIAS_KEYS = ("aliases", "alias")


def _keyed(meta: dict) -> dict:
    """`meta`'s text keys lower-cased (`Tags:` as `tags:`), the first of a case kept."""
    out: dict = {}
    for k, v in meta.items():
        if isinstance(k, str):
            out.setdefault(k.strip().lower(), v)
    return out


def meta_tags(meta: dict) -> list[str]:
    """The tags of every key of TAG_KEYS, each a list or a string split on spaces or commas
    (`tag : unix bell-labs`, `categories: [a, b]`), in that order."""
    keyed = _keyed(meta)
    taxonomies = keyed.get("taxonomies")
    zola = _keyed(taxonomies) if isinstance(taxonomies, dict) else {}
    return [t for source in (keyed, zola) for k in TAG_KEYS for t in split_tags(source.get(k))]


def meta_aliases(meta: dict) -> list[str]:
    """The aliases of `aliases` and `alias`: a list, or a string split on commas."""
    keyed, out = _keyed(meta), []
    for val in (keyed.get(k) for k in ALIAS_KEYS):
        if isinstance(val, str):
            out += [a.strip() for a in val.split(",") if a.strip()]
        elif isinstance(val, (list, tuple)):
            out += [str(a).strip() for a in val if is_scalar(a) and str(a).strip()]
    return list(dict.fromkeys(out))
