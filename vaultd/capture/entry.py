"""What `remember` writes, and how it tells an entry the vault already holds. Pure: text
in, text out (remember.py does the reading, searching and writing).

A capture note is one note a day in the capture folder, named as Denote names a note
made then: `20261201T143205--capture-2026-12-01__capture.md` (the identifier is the time
the day's first entry was remembered; the title "Capture 2026-12-01"; the keyword
`capture`), with Denote's front matter (`#+title:` and the rest in Org). Each entry is a
top-level heading, the time it was remembered, then its text, then one line saying who
remembered it (source, session, time with its offset) and its tags:

    # 14:32:05

    The user prefers tabs to spaces in Python.

    Remembered by claude-code, session 9f2c1d7e, 2026-12-01T14:32:05+09:00. #python #style

In Org the heading carries the tags (`* 14:32:05 :python:style:`) and the rest goes in
its property drawer (SOURCE, SESSION, CREATED). An entry is inert there (see _safe): its
lines that would read as a heading are escaped (Markdown `\\#` and setext underlines, Org
a leading space, Org keyword lines a comma, Org's own comma inside blocks), and a code
fence or comment (`<!--`, `%%`) it leaves open is closed, so each entry stays one section
and never swallows the next. Its source and session are plain names (no #tag, no link).

Keywords (what dedup compares): the entry's words as the index stems them (English
Snowball stems, lower-cased), less stop words and one-letter words, plus the bigrams of
its Hangul/Han/Kana runs (as the index matches Korean: `가치관이` gives 가치, 치관, 관이).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from ..parse.common import fence_step
from ..parse.markdown import ATX
from ..query.analysis import STOP, bigrams, split
from ..query.search import SUPERSEDED  # the tag a superseded entry carries: search shows it last

MAX_BYTES = 64 << 10
"""The most text one entry may hold, in UTF-8 bytes: a thing to remember, not a document."""
MAX_TAGS = 16
MAX_FIELD = 200
"""The longest source or session name, in characters."""
KEYWORD = "capture"
"""The Denote keyword (and tag) of every capture note."""
OVERLAP = 0.8
"""An entry is already known when this share of its keywords is in one section..."""
MIN_KEYWORDS = 3
"""...and it has at least this many; one with fewer is known only when a section's
keywords are exactly its own (the same short entry remembered before)."""

_TAG = re.compile(r"\w*[^\W\d_]\w*")
"""A tag: one word of letters, digits and _, with a letter (as Markdown `#tags`, Org tags
and Denote keywords all read one)."""
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Control characters (category Cc: C0, DEL, C1 with NEL) but tab and line feed, the
Unicode line and paragraph separators (Zl, Zp): each a line break to some reader; and the
Unicode's Bidi_Control characters: the embeddings, overrides and isolates (U+202A-U+202E,
U+2066-U+2069) and the marks (U+200E, U+200F, U+061C), which make a line read otherwise
than it is stored."""
_NAME = re.compile(r"[\w .@/:-]+")
"""A source or session: a plain name (letters, digits, space and - _ . @ / :), so that it
is inert text in the entry's last line or drawer (no #tag, no [[link]], no line break)."""
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_NEGATION = re.compile(r"\b(?:not|no|never|nor|none|nothing|nobody|nowhere|neither|cannot|without)\b|n't\b|n’t\b"
                       r"|(?<!\w)(?:안|못)(?!\w)|않|없", re.IGNORECASE)
"""Words that turn a statement around (English, and Korean 안/못 before a verb, 않-, 없-)."""
_ORG_HEADING = re.compile(r"^\*+[ \t]")
_ORG_KEYWORD = re.compile(r"^[ \t]*#\+\w*:")
_ORG_BLOCK = re.compile(r"^[ \t]*#\+begin_(\S+)", re.IGNORECASE)
_ORG_ESCAPE = re.compile(r"^([ \t]*)(,*(?:\*|#\+))")
_SETEXT = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*$")


class BadEntry(ValueError):
    """An entry that cannot be remembered as given, and why (nothing was written)."""


def check(text: str, tags: list[str], source: str | None, session: str | None) -> tuple[str, list[str]]:
    """The entry's text (line ends made LF, blank lines around it dropped) and its tags
    (each once); BadEntry saying what is wrong."""
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as e:
        raise BadEntry(f"text is not valid Unicode: it holds a lone surrogate (U+{ord(text[e.start]):04X}) at "
                       f"character {e.start}") from None
    if size > MAX_BYTES:
        raise BadEntry(f"text is {size} bytes; remember takes at most {MAX_BYTES} (64 KB): remember the gist, or "
                       "write it as a note of its own")
    text = text.replace("\r\n", "\n")
    if m := _CONTROL.search(text):
        raise BadEntry(f"text holds a control character (U+{ord(m.group()):04X}) at character {m.start()}")
    text = "\n".join(line.rstrip() for line in text.strip("\n").split("\n")).strip("\n")
    if not text.strip():
        raise BadEntry("text is empty: nothing to remember")
    for name, val in (("source", source), ("session", session)):
        if val is not None and (not val.strip() or len(val) > MAX_FIELD or not _NAME.fullmatch(val)):
            raise BadEntry(f"{name} {val[:40]!r}: expected a plain name of 1 to {MAX_FIELD} characters: letters, "
                           "digits, spaces and - _ . @ / : (no #, [, ] or line breaks)")
        if val is not None:
            try:
                val.encode("utf-8")
            except UnicodeEncodeError:
                raise BadEntry(f"{name} is not valid Unicode (a lone surrogate)") from None
    if len(tags) > MAX_TAGS:
        raise BadEntry(f"{len(tags)} tags; at most {MAX_TAGS}")
    for t in tags:
        if not _TAG.fullmatch(t) or len(t) > 64:
            raise BadEntry(f"tag {t[:70]!r}: a tag is one word of letters, digits and _ with a letter, at most 64 "
                           "characters (no spaces, no #, no :)")
    once: dict[str, str] = {}
    for t in tags:  # each once, whatever its case (the first spelling)
        once.setdefault(t.casefold(), t)
    return text, list(once.values())


# -- keywords and the dedup rule ---------------------------------------------------------


def keywords(text: str) -> set[str]:
    """The content words of `text` as the index stems them, and its CJK bigrams (see the
    module's doc)."""
    stems, cjk = split(text)
    words = {s for s in stems if s not in STOP and len(s) > 1}
    return words | {g for run in cjk for g in bigrams(run)}


def differs(entry: str, section: str) -> bool:
    """Whether the entry says something the section does not, whatever their keywords:
    it holds a number the section lacks ("every 90 days" after "every 30 days"), or one of
    the two is negated and the other not ("likes tea" after "does not like tea")."""
    if set(_NUMBER.findall(entry)) - set(_NUMBER.findall(section)):
        return True
    return bool(_NEGATION.search(entry)) != bool(_NEGATION.search(section))


def overlap(entry: set[str], section: set[str]) -> float:
    """The share of the entry's keywords the section holds (0 for an entry with none)."""
    return len(entry & section) / len(entry) if entry else 0.0


def known(entry: set[str], section: set[str]) -> bool:
    """Whether a section already says what the entry says (see OVERLAP, MIN_KEYWORDS)."""
    if len(entry) >= MIN_KEYWORDS:
        return overlap(entry, section) >= OVERLAP
    return bool(entry) and entry == section


def query(text: str, most: int = 32) -> str:
    """A search for the entry's content words (as typed: the search stems them), and its
    CJK runs: plain words only, so nothing in it reads as an operator."""
    seen: dict[str, None] = {}
    for w in re.findall(r"\w+", text):
        if len(w) > 1 and not (w.isascii() and keywords(w) == set()):
            seen.setdefault(w.lower(), None)
    return " ".join(list(seen)[:most])


# -- a value changed: the supersede rule -------------------------------------------------

_DAYS = {d for w in ("monday tuesday wednesday thursday friday saturday sunday january february march april may "
                     "june july august september october november december").split() for d in (w, w[:3])} - {"may"}
_DAY_KO = re.compile(r"[월화수목금토일]요일")
_LATIN_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_HANGUL_WORD = re.compile(r"[\uac00-\ud7a3]+")
_SENTENCE_END = re.compile(r"(?:^|[.!?;:\n])[\s\"'“‘(*>-]*$")
MAX_SLOT = 2
"""The most value tokens an entry may change at once and still restate what it supersedes."""


def values(text: str) -> dict[str, dict[str, str]]:
    """The value tokens of `text`, by kind, each as compared (case-folded; a day by its
    first three letters) and as written: `number` (digits: counts, dates, times,
    versions), `day` (English weekday and month names and their abbreviations, Korean
    weekdays: 화요일), `name` (an English word with a capital letter that does not open its
    sentence: Vim, Emacs, PostgreSQL; a Hangul word that does not open its sentence: the
    words a Korean statement varies)."""
    out: dict[str, dict[str, str]] = {"number": {n: n for n in _NUMBER.findall(text)},
                                      "day": {d: d for d in _DAY_KO.findall(text)}, "name": {}}
    for m in _LATIN_WORD.finditer(text):
        w = m.group()
        low = w.casefold()
        if low in _DAYS and (w[0].isupper() or len(w) > 3):
            out["day"][low[:3]] = w
        elif len(w) > 1 and any(c.isupper() for c in w) and not _SENTENCE_END.search(text, 0, m.start()):
            out["name"][low] = w
    for m in _HANGUL_WORD.finditer(text):
        if not _SENTENCE_END.search(text, 0, m.start()) and not _DAY_KO.search(m.group()):
            out["name"][m.group()] = m.group()
    return out


def negated(text: str) -> bool:
    return bool(_NEGATION.search(text))


def _lacks(tokens: dict[str, str], theirs: dict[str, str], their_keywords: set[str]) -> list[str]:
    """The tokens (as written) the other text lacks: not among its values, and (a Hangul
    word) with less than half its bigrams among `their_keywords` (a particle changed is the
    same word; names are compared so, days and numbers whole)."""
    out = []
    for key, word in tokens.items():
        if key in theirs:
            continue
        if _HANGUL_WORD.fullmatch(key):
            grams = set(bigrams(key))
            if 2 * len(grams & their_keywords) >= len(grams):
                continue
        out.append(word)
    return out


def changes(new: str, old: str) -> str | None:
    """What value `new` changes of `old`, or None: "negation" (one says not, the other
    does not), or the kind of value (see `values`) whose token it replaces (a number for
    another, a weekday for another, a name for another). Only when the two say the same of
    the same subject otherwise: with at most MAX_SLOT tokens of its own, the rest of the
    entry's keywords (at least 2 of them, and at least half of all) are OVERLAP in `old`."""
    kn, ko = keywords(new), keywords(old)
    vn, vo = values(new), values(old)
    mine = {k: _lacks(vn[k], vo[k], ko if k == "name" else set()) for k in vn}  # the entry's values `old` lacks
    theirs = {k: _lacks(vo[k], vn[k], kn if k == "name" else set()) for k in vo}
    slot = [w for k in mine for w in mine[k]]
    if len(slot) > MAX_SLOT:
        return None
    # the subject: the entry's keywords less its changed values and its negation words
    subject = kn - keywords(" ".join(slot + _NEGATION.findall(new) + _NEGATION.findall(old)))
    held = subject & ko
    if len(held) < 2 or len(held) < OVERLAP * len(subject) or 2 * len(subject) < len(kn):
        return None
    if negated(new) != negated(old):
        return "negation"
    return next((k for k in ("number", "day", "name") if mine[k] and theirs[k]), None)


# -- an entry as it stands in a note, and its marks ---------------------------------------

REMEMBERED = "Remembered by "
SUPERSEDES = "Supersedes "
SUPERSEDED_BY = "Superseded by "
SEEN = "Seen "

_HEAD = re.compile(r"\d\d:\d\d:\d\d(?:-\d+)?")
_MD_HEAD = re.compile(r"(#{1,6})[ \t]+(.*?)[ \t]*")
_ORG_HEAD = re.compile(r"(\*+)[ \t]+(.*?)(?:[ \t]+:([\w@#%:]+):)?[ \t]*")
_TAG_LINE = re.compile(r"#\w*[^\W\d_]\w*(?:[ \t]+#\w*[^\W\d_]\w*)*[ \t]*")
_META = (REMEMBERED, SUPERSEDES, SUPERSEDED_BY, SEEN)
_SEEN_COUNT = re.compile(r"Seen (\d+) times")


@dataclass
class Remembered:
    """An entry remembered, as it stands in a note: its section's lines (heading first),
    what it says and its marks."""

    fmt: str
    lines: list[str]
    level: int
    head: str
    tags: list[str]
    text: str
    seen: int
    superseded: bool


def read(fmt: str, lines: list[str]) -> Remembered | None:
    """The entry a section holds (its lines, heading first), or None when the section is
    not one remember wrote: a heading that is a time, and (Markdown) a "Remembered by" line
    or (Org) a property drawer with its CREATED."""
    if not lines:
        return None
    if fmt == "org":
        m = _ORG_HEAD.fullmatch(lines[0])
        if not m or not _HEAD.fullmatch(m.group(2)) or len(lines) < 2 or lines[1].strip() != ":PROPERTIES:":
            return None
        end = next((i for i, x in enumerate(lines) if x.strip() == ":END:"), None)
        props = dict(_prop(x) for x in lines[2:end or 0])
        if end is None or "CREATED" not in props:
            return None
        tags = [t for t in (m.group(3) or "").split(":") if t]
        return Remembered(fmt, lines, len(m.group(1)), m.group(2), tags, "\n".join(lines[end + 1 :]).strip("\n"),
                          int(props.get("SEEN", "1")) if props.get("SEEN", "1").isdigit() else 1,
                          SUPERSEDED in (t.lower() for t in tags) or "SUPERSEDED_BY" in props)
    m = _MD_HEAD.fullmatch(lines[0])
    by = next((i for i in range(len(lines) - 1, 0, -1) if lines[i].startswith(REMEMBERED)), None)
    if not m or not _HEAD.fullmatch(m.group(2)) or by is None:
        return None
    tagged = len(lines) > 1 and bool(_TAG_LINE.fullmatch(lines[1]))
    tags = lines[1].replace("#", " ").split() if tagged else []
    meta = lines[by : _meta_end(lines, by)]
    seen = next((int(c.group(1)) for x in meta if (c := _SEEN_COUNT.match(x))), 1)
    return Remembered(fmt, lines, len(m.group(1)), m.group(2), tags, "\n".join(lines[1 + tagged : by]).strip("\n"),
                      seen, SUPERSEDED in (t.lower() for t in tags) or any(x.startswith(SUPERSEDED_BY) for x in meta))


def _prop(line: str) -> tuple[str, str]:
    key, _, val = line.strip().partition(": ")
    return key.strip(":").upper(), val.strip()


def _meta_end(lines: list[str], by: int) -> int:
    """The index after the Markdown entry's last line of who remembered it and its marks."""
    i = by + 1
    while i < len(lines) and lines[i].startswith(_META):
        i += 1
    return i


def mark_superseded(e: Remembered, by: tuple[str, str], now: dt.datetime) -> list[str]:
    """The entry's lines marked superseded: the `superseded` tag (Org: on its heading;
    Markdown: on its tag line, made when it has none) and the entry that supersedes it
    (`by`: path:first-last, what it is), with when: Org a SUPERSEDED_BY property, Markdown
    a line after who remembered it."""
    lines = list(e.lines)
    when = now.isoformat(timespec="seconds")
    if e.fmt == "org":
        lines[0] = "*" * e.level + f" {e.head} :{':'.join([*e.tags, SUPERSEDED])}:"
        end = lines.index(next(x for x in lines if x.strip() == ":END:"))
        lines.insert(end, f":SUPERSEDED_BY: {by[0]} ({by[1]}), [{now:%Y-%m-%d %a %H:%M:%S}]")
        return lines
    if len(lines) > 1 and _TAG_LINE.fullmatch(lines[1]):
        lines[1] = lines[1].rstrip() + f" #{SUPERSEDED}"
    else:
        lines.insert(1, f"#{SUPERSEDED}")
    at = max(i for i, x in enumerate(lines) if x.startswith(REMEMBERED))
    lines.insert(_meta_end(lines, at), f"{SUPERSEDED_BY}`{by[0]}` ({by[1]}), {when}.")
    return lines


def mark_seen(e: Remembered, now: dt.datetime) -> list[str]:
    """The entry's lines remembered once more: how many times it was, and when last (Org:
    SEEN and LAST_SEEN properties; Markdown: a `Seen N times, last WHEN.` line)."""
    lines, n = list(e.lines), e.seen + 1
    if e.fmt == "org":
        end = lines.index(next(x for x in lines if x.strip() == ":END:"))
        lines = [x for x in lines[:end] if _prop(x)[0] not in ("SEEN", "LAST_SEEN")] + lines[end:]
        end = lines.index(next(x for x in lines if x.strip() == ":END:"))
        lines[end:end] = [f":SEEN:     {n}", f":LAST_SEEN: [{now:%Y-%m-%d %a %H:%M:%S}]"]
        return lines
    line = f"{SEEN}{n} times, last {now.isoformat(timespec='seconds')}."
    by = max(i for i, x in enumerate(lines) if x.startswith(REMEMBERED))
    end = _meta_end(lines, by)
    at = next((i for i in range(by, end) if lines[i].startswith(SEEN)), None)
    if at is None:
        lines.insert(end, line)
    else:
        lines[at] = line
    return lines


# -- the capture note ---------------------------------------------------------------------


def title(day: dt.date) -> str:
    return f"Capture {day.isoformat()}"


def file_name(ident: str, day: dt.date, fmt: str) -> str:
    """The day's capture note, named as Denote names a note titled `title(day)` made at `ident`."""
    return f"{ident}--capture-{day.isoformat()}__{KEYWORD}.{fmt}"


def name_pattern(day: dt.date, fmt: str) -> re.Pattern:
    """What the day's capture note is called, whenever it was made that day."""
    return re.compile(rf"\d{{8}}T\d{{6}}--capture-{day.isoformat()}__{KEYWORD}\.{fmt}")


def front_matter(fmt: str, ident: str, now: dt.datetime) -> str:
    """A new capture note's head, as Denote writes it."""
    if fmt == "org":
        return (f"#+title:      {title(now.date())}\n#+date:       [{now:%Y-%m-%d %a %H:%M}]\n"
                f"#+filetags:   :{KEYWORD}:\n#+identifier: {ident}\n")
    return (f'---\ntitle:      "{title(now.date())}"\ndate:       {now.isoformat(timespec="seconds")}\n'
            f'tags:       ["{KEYWORD}"]\nidentifier: "{ident}"\n---\n')


def heading(now: dt.datetime, taken: set[str]) -> str:
    """The entry's heading: the time it was remembered (`14:32:05`), with a counter when the
    note already has a heading of that time (`14:32:05-2`): each entry's heading, and so its
    anchor, is its own."""
    base = f"{now:%H:%M:%S}"
    n = 1
    while (head := base if n == 1 else f"{base}-{n}") in taken:
        n += 1
    return head


def entry(fmt: str, text: str, tags: list[str], source: str, session: str | None, now: dt.datetime,
          head: str | None = None, level: int = 1, supersedes: tuple[str, str] | None = None) -> str:
    """One entry as appended to a note (a blank line before it: see `append`): a heading of
    `level` (`head`, by default the time), its tags (Org: on the heading; Markdown: a line
    of #tags right under it, which tags that heading), its text, and who remembered it
    when (Org: the property drawer); `supersedes`: where the entry or section it changes a
    value of is (path:first-last) and what it is there ("entry 14:30:00")."""
    head = head or f"{now:%H:%M:%S}"
    when = now.isoformat(timespec="seconds")
    if fmt == "org":
        line = "*" * level + f" {head}" + (f" :{':'.join(tags)}:" if tags else "")
        props = [f":SOURCE:   {source}"] + ([f":SESSION:  {session}"] if session else []) + \
            [f":CREATED:  [{now:%Y-%m-%d %a %H:%M:%S}]"] + \
            ([f":SUPERSEDES: {supersedes[0]} ({supersedes[1]})"] if supersedes else [])
        return "\n".join([line, ":PROPERTIES:", *props, ":END:", _safe(fmt, text)]) + "\n"
    by = f"{REMEMBERED}{source}" + (f", session {session}" if session else "") + f", {when}."
    tag_line = [" ".join(f"#{t}" for t in tags)] if tags else []
    meta = [f"{SUPERSEDES}`{supersedes[0]}` ({supersedes[1]})."] if supersedes else []
    return "\n".join(["#" * level + f" {head}", *tag_line, "", _safe(fmt, text), "", by, *meta]) + "\n"


def append(before: bytes, new: str) -> bytes:
    """`before` with the entry `new` after it: a line end where it had none, then a blank line."""
    if not before:
        return new.encode()
    sep = b"" if before.endswith(b"\n\n") else b"\n" if before.endswith(b"\n") else b"\n\n"
    return before + sep + new.encode()


def _safe(fmt: str, text: str) -> str:
    """The entry's lines as they must stand in the note to stay one section of it, and
    inert there (see _org_safe for Org). Markdown: outside code fences, a line that would
    read as a heading (ATX `# x`, or a setext underline `===`/`---` under a line of text)
    gets a backslash; a code fence, an HTML comment `<!--` or an Obsidian comment `%%` the
    text leaves open is closed after it, or it would hold every entry after it."""
    if fmt == "org":
        return "\n".join(_org_safe(text.split("\n")))
    out: list[str] = []
    fence, comment = None, None  # the open fence; the open comment's end ("-->", "%%")
    for ln in text.split("\n"):
        if comment is None and ("```" in ln or "~~~" in ln or fence is not None):
            is_fence, fence = fence_step(ln, fence)
            if is_fence or fence is not None:
                out.append(ln)
                continue
        prev = out[-1] if out else ""
        if m := ATX.match(ln):
            ln = ln[: m.start(1)] + "\\" + ln[m.start(1):]
        elif _SETEXT.match(ln) and prev.strip():
            at = len(ln) - len(ln.lstrip())
            ln = ln[:at] + "\\" + ln[at:]
        comment = _comment_after(ln, comment)
        out.append(ln)
    if fence is not None:
        out.append("> " * fence[2] + " " * fence[1] + fence[0])  # in its block quote, when it is in one
    if comment is not None:
        out.append(comment)
    return "\n".join(out)


_COMMENT = re.compile(r"<!--|-->|%%")


def _comment_after(line: str, open_: str | None) -> str | None:
    """The comment open after `line` (its end: "-->" or "%%"), given the one open before it."""
    for m in _COMMENT.finditer(line):
        t = m.group()
        if open_ is None and t != "-->":
            open_ = "-->" if t == "<!--" else "%%"
        elif open_ == t:
            open_ = None
    return open_


def _org_safe(lines: list[str]) -> list[str]:
    """Org: inside a block (`#+begin_X` .. `#+end_X`) the lines Org itself escapes (`*`,
    `#+`, after any commas) get Org's comma, which Org takes off again (the block's content
    is as given); elsewhere a line that would read as a heading gets a leading space, and a
    keyword line (`#+filetags:`, `#+title:`, which Org applies wherever they are) a comma."""
    out, i = [], 0
    while i < len(lines):
        ln = lines[i]
        if m := _ORG_BLOCK.match(ln):
            end = re.compile(rf"^[ \t]*#\+end_{re.escape(m.group(1))}[ \t]*$", re.IGNORECASE)
            j = next((k for k in range(i + 1, len(lines)) if end.match(lines[k])), None)
            if j is not None:
                out += [ln, *(_ORG_ESCAPE.sub(r"\1,\2", x) for x in lines[i + 1 : j]), lines[j]]
                i = j + 1
                continue
        out.append(" " + ln if _ORG_HEADING.match(ln) else "," + ln if _ORG_KEYWORD.match(ln) else ln)
        i += 1
    return out
