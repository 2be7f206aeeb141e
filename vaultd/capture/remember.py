"""The Vault's `remember`: an agent's entry appended to the day's capture note (or, by a
`[[capture.route]]` rule, under a heading of a note of the user's), unless the vault already
holds it, through the split journal. The Vault's capture job (see vault.py); what an entry
and a capture note look like, and the rules that compare entries, are entry.py's.

Off unless `[capture] folder` names a folder. Then, for each entry, in one go under the
vault's write lock:
  1. its keywords are searched for (every note, the archive too), and each section of the
     best notes (from a heading to the next, or the text before the first) is compared (a
     remembered entry by its text, a section of a note by all of it):
     - one that holds 80% of them (entry.known), and no number or negation the entry does
       not share (entry.differs), already says it: when it is a remembered entry, it is
       counted (entry.mark_seen: "Seen 2 times, last ..."), else the entry is not written
       and the answer names that section (path, lines, heading) (`force`: written anyway);
     - else one that says the same of the same subject but with a value changed
       (entry.changes: a number, a day, a name, a negation) is superseded: the entry is
       written with a pointer to it, and when it is a remembered entry in a capture or
       routed note it is marked (entry.mark_superseded); superseded entries are history,
       compared with no more;
  2. the entry goes to the first `[[capture.route]]` rule's note that matches it (under
     the rule's heading), else to the day's capture note (made when missing, with Denote's
     front matter; a regular file), under a heading of its own; every file is written
     through journal.append or journal.edit: journaled and fsynced first, each file as it
     was read or not at all, indexed before the answer;
  3. `vaultq undo OP` takes out exactly that entry, and puts back what it marked
     or counted (journal.undo).
Only the vaultd holding the writer lock writes; the others answer what is already known
and refuse the rest.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import posixpath
import re
import stat
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..config import Route, real_capture_folder
from ..errors import CaptureOff, ConfigError, QueryError, StillIndexing
from ..note import headings_of
from ..parse import parse_lines
from ..query.context import section
from ..paths import read_head
from ..store.journal import Raced, SplitError
from ..store.state import changed_ns
from . import entry as capture
from . import journal

if TYPE_CHECKING:
    from ..query.search import Searcher
    from ..store.vault_state import VaultState
    from ..store.writer import Writer

logger = logging.getLogger("vaultd.capture")

CANDIDATES = 8
"""Notes of the search whose sections are compared with an entry."""

OFF = ("remember is off: vaultd writes an agent's entries into the vault only when the user turns agent capture on, "
       'with `[capture] folder = "inbox"` (a folder of the vault) in its config, and restarts it; nothing was written')


@dataclass
class Found:
    """A section of the vault an entry repeats or changes a value of."""

    path: str
    first: int
    last: int
    heading: str | None
    overlap: float
    data: bytes
    """Its note's bytes as read."""
    offset: int
    """Where the section's bytes start in them."""
    old: bytes
    """The section's bytes."""
    entry: capture.Remembered | None
    """The remembered entry it is, when this vaultd may mark it (in a capture or routed
    note); None for a section of the user's notes."""
    changed: str | None = None
    """What value the entry changes of it (entry.changes), None for a repeat."""

    def answer(self) -> dict:
        return {"path": self.path, "first": self.first, "last": self.last, "heading": self.heading,
                "overlap": round(self.overlap, 3)}


@dataclass
class Target:
    """Where an entry goes: a note (made when `head` is not None), its bytes as read, the
    byte offset the entry goes in at, what goes before the entry there, its heading level,
    the headings the note has (an entry's own is not one of them), and the note's format."""

    path: str
    before: bytes
    head: bytes | None
    at: int
    prefix: bytes
    level: int
    taken: set[str]
    fmt: str
    made: list[str]
    mode: int
    route: bool


class Capturer:
    """The Vault's `remember`: it finds what the vault holds by the search job, and writes
    through the Vault's one writer."""

    def __init__(self, core: VaultState, searcher: Searcher, writer: Writer):
        self.core = core
        self.searcher = searcher
        self.writer = writer

    def remember(self, text: str, tags: list[str], source: str | None = None, session: str | None = None,
                 force: bool = False) -> dict:
        """Append an entry to the day's capture note (or a routed note), count the entry it
        repeats, or say which section already holds it (with `force`, append it all the
        same); an entry that changes a value of one supersedes it. Raises QueryError
        (nothing written): capture off, a bad entry, a bad capture folder or note, not the
        writer."""
        core = self.core
        cfg = core.config.capture
        if not cfg.folder:
            raise CaptureOff(OFF)
        try:
            text, tags = capture.check(text, tags, source, session)
        except capture.BadEntry as e:
            raise QueryError(f"remember: {e}; nothing was written") from None
        if core.indexing:  # what the vault holds is not known yet
            raise StillIndexing(core.progress_words())
        source = source or "unknown"
        with self.writer.lock:
            repeat, change = self._compare(text, capture.keywords(text))
            if repeat is not None and not force:
                if repeat.entry is None or not self.writer.may_write():
                    return {"written": False, **repeat.answer(), "op": None, "created": False, "seen": None,
                            "supersedes": None, "generation": core.generation}
                return self._strengthen(repeat, source)
            now = dt.datetime.now().astimezone()
            try:
                self.writer.check()
                target = self._target(text, tags, now)
                res = self._put_entry(target, text, tags, source, session, now, change)
            except (SplitError, OSError) as e:
                raise QueryError(f"remember: {e}" + ("" if "nothing was" in str(e) else "; nothing was written")) \
                    from None
        logger.info("remembered %d bytes from %s in %s:%d-%d (undo: vaultq undo %s)",
                    len(text.encode()), source, res["path"], res["first"], res["last"], res["op"])
        return res

    # -- what the vault holds -------------------------------------------------------------

    def _compare(self, text: str, words: set[str]) -> tuple[Found | None, Found | None]:
        """The section that already holds the entry (entry.known, not entry.differs), and the
        one it changes a value of (entry.changes), each the best of its kind or None.
        Superseded entries are history: neither."""
        q = capture.query(text)
        if not words or not q:
            return None, None
        cap = self.core.config.index.max_file_mb << 20
        repeat: Found | None = None
        change: Found | None = None
        for hit in self.searcher.search(q, CANDIDATES, "all", False)["hits"]:
            path = hit["path"]
            try:
                data, _ = read_head(self.core.root_str, path, cap)
            except OSError:
                continue
            note, _ = parse_lines(path, data, max_bytes=cap)
            lines = data.decode("utf-8", "replace").split("\n")  # as written (the index's lines blank drawers)
            fmt = "org" if path.endswith(".org") else "md"
            raw = data.split(b"\n")
            starts = [0]
            for x in raw:
                starts.append(starts[-1] + len(x) + 1)
            ours = self._capture_owns(path)
            for first, last, heading in _sections(note, lines):
                block = lines[first - 1 : last]
                old = b"\n".join(raw[first - 1 : last])
                e = capture.read(fmt, block)
                if e is not None and e.superseded:
                    continue
                e = e if ours and e is not None and old.decode("utf-8", "replace") == "\n".join(block) else None
                said = e.text if e is not None else "\n".join(block)
                theirs = capture.keywords(said)
                share = capture.overlap(words, theirs)
                found = Found(path, first, last, heading, share, data, starts[first - 1], old, e)
                found.changed = next((k for passage in ([said] if e is not None else _paragraphs(block))
                                      if (k := capture.changes(text, passage))), None)
                if found.changed:  # a value changed: never the same fact, however many words it shares
                    if change is None or (e is not None, share) > (change.entry is not None, change.overlap):
                        change = found
                elif capture.known(words, theirs) and not capture.differs(text, said):
                    if repeat is None or (share, e is not None) > (repeat.overlap, repeat.entry is not None):
                        repeat = found
        return repeat, change

    def _capture_owns(self, path: str) -> bool:
        """Whether entries in `path` are this capture's to mark: a capture note, or a routed
        note."""
        folder = self.core.config.capture.folder
        return path.startswith(folder + "/") or any(r.note == path for r in self.core.config.capture.route)

    # -- writing --------------------------------------------------------------------------

    def _strengthen(self, found: Found, source: str) -> dict:
        """Count the entry `found` once more (entry.mark_seen), through the journal."""
        now = dt.datetime.now().astimezone()
        try:
            self.writer.check()
            marked = "\n".join(capture.mark_seen(found.entry, now)).encode()
            rw = journal.Rewrite(found.path, found.data, [(found.offset, found.old, marked)])
            user = self._user_changes([found.path])
            about = {"heading": found.heading, "words": _first_words(found.entry.text), "what": "strengthened",
                     "source": source}
            done = journal.edit(self.core.root, self.writer.journal, found.path, [rw], about)
        except (SplitError, OSError, ValueError) as e:
            raise QueryError(f"remember: {e}" + ("" if "nothing was" in str(e) else "; nothing was written")) from None
        self.writer.wrote([found.path], user)
        seen = found.entry.seen + 1
        logger.info("remembered again (%d times) %s:%d (undo: vaultq undo %s)", seen, found.path, found.first,
                    done["op"])
        return {"written": False, **found.answer(), "last": found.first + marked.count(b"\n"), "op": done["op"],
                "created": False, "seen": seen, "supersedes": None, "generation": self.core.generation}

    def _put_entry(self, t: Target, text: str, tags: list[str], source: str, session: str | None, now: dt.datetime,
               change: Found | None) -> dict:
        """Write the entry at `t`, and mark the entry it supersedes (`change`), through the
        journal; the answer."""
        head = capture.heading(now, t.taken)

        def body(pointer: tuple[str, str] | None) -> bytes:
            return t.prefix + capture.entry(t.fmt, text, tags, source, session, now, head, t.level, pointer).encode()

        pointer = None if change is None else ("", "")
        new = body(pointer)  # its lines (the pointer's text does not change them)
        mark = change is not None and change.entry is not None
        same = change is not None and change.path == t.path
        if same and change.data != t.before:
            raise Raced(f"{t.path} changed while remembering; nothing was written")
        provisional = "\n".join(capture.mark_superseded(change.entry, ("", ""), now)).encode() if mark else b""
        grow = provisional.count(b"\n") - change.old.count(b"\n") if mark else 0  # lines the mark adds
        lead = len(new) - len(new.lstrip(b"\n"))
        first = (t.head or b"").count(b"\n") + t.before[: t.at].count(b"\n") + new[:lead].count(b"\n") + 1
        first += grow if same and mark and change.offset < t.at else 0
        last = first + new[lead:].rstrip(b"\n").count(b"\n")
        rewrites: list[journal.Rewrite] = []
        if change is not None:
            cfirst = change.first + (new.count(b"\n") if same and change.offset >= t.at else 0)
            clast = cfirst + (provisional.count(b"\n") if mark else change.last - change.first)
            what = f"entry {change.heading}" if change.entry is not None else \
                (f"section “{change.heading}”" if change.heading else "opening")
            pointer = (f"{change.path}:{cfirst}-{clast}", what)
            new = body(pointer)
            if mark:
                marked = "\n".join(capture.mark_superseded(change.entry, (f"{t.path}:{first}-{last}", f"entry {head}"),
                                                             now)).encode()
                rewrites.append(journal.Rewrite(change.path, change.data, [(change.offset, change.old, marked)]))
        about = {"heading": head, "words": _first_words(text), "what": "remembered", "source": source,
                 **({"supersedes": pointer[0]} if pointer else {})}
        paths = list(dict.fromkeys([t.path] + [rw.path for rw in rewrites]))
        user = self._user_changes(paths)
        try:
            if t.route:
                here = next((rw for rw in rewrites if rw.path == t.path), None)
                if here is None:
                    rewrites.insert(0, here := journal.Rewrite(t.path, t.before))
                here.edits.append((t.at, b"", new))
                done = journal.edit(self.core.root, self.writer.journal, t.path, rewrites, about)
            else:
                done = journal.append(self.core.root, self.writer.journal, t.path, new,
                                      None if t.head else len(t.before), t.head, t.mode, t.made, rewrites, about)
        except ValueError as e:
            raise SplitError(str(e)) from None
        self.writer.wrote(paths, user)
        return {"written": True, "path": t.path, "first": first, "last": last, "heading": head, "overlap": None,
                "op": done["op"], "created": t.head is not None, "seen": None,
                "supersedes": None if change is None else {"path": change.path, "first": cfirst, "last": clast,
                                                           "heading": change.heading, "value": change.changed},
                "generation": self.core.generation}

    def _user_changes(self, paths: list[str]) -> dict[str, int]:
        """When the user last changed each of `paths` (so vaultd's writes are not taken for
        the user's)."""
        state, notes = self.core.state.state, self.core.notes
        return {p: changed_ns(state, p, n.mtime_ns, n.size) for p in paths if (n := notes.get(p))}

    def _target(self, text: str, tags: list[str], now: dt.datetime) -> Target:
        """Where the entry goes: the first route that matches it, else the day's capture note."""
        for r in self.core.config.capture.route:
            if _matches(r, text, tags):
                return self._route_target(r)
        return self._capture_plan(now)

    def _route_target(self, r: Route) -> Target:
        """The end of the section under `r.heading` in `r.note` (a level below it); the end of
        the note, after that heading made, when the note has none. SplitError when the note
        is missing or not a regular file, or too big to read whole."""
        rel = r.note
        try:
            st = os.lstat(self.core.root / rel)
        except FileNotFoundError:
            raise SplitError(f"capture.route: {rel} does not exist: create it (remember puts entries into a "
                             "note, never makes one elsewhere than the capture folder)") from None
        if not stat.S_ISREG(st.st_mode):
            raise SplitError(f"capture.route: {rel} is not a regular file")
        cap = self.core.config.index.max_file_mb << 20
        before, size = read_head(self.core.root_str, rel, cap)
        if size > len(before):
            raise SplitError(f"{rel} is over the size cap (index.max_file_mb): remember does not write into it")
        note, _ = parse_lines(rel, before, max_bytes=cap)
        lines = before.decode("utf-8", "replace").split("\n")  # as written (the index's lines blank drawers)
        fmt = "org" if rel.endswith(".org") else "md"
        heads = sorted(headings_of(note), key=lambda h: h.line)
        taken = {h.text for h in heads}
        want = r.heading.strip().casefold()
        i = next((i for i, h in enumerate(heads) if h.text.casefold() == want), None)
        mark = "*" if fmt == "org" else "#"
        if i is None:  # the heading, made at the end of the note
            sep = b"" if not before or before.endswith(b"\n\n") else b"\n" if before.endswith(b"\n") else b"\n\n"
            return Target(rel, before, None, len(before), sep + f"{mark} {r.heading.strip()}\n\n".encode(), 2,
                          taken, fmt, [], 0, True)
        h = heads[i]
        end = next((o.line - 1 for o in heads[i + 1 :] if o.level <= h.level), len(lines))
        while end > h.line and not lines[end - 1].strip():
            end -= 1
        raw = before.split(b"\n")
        at = sum(len(x) + 1 for x in raw[:end])
        prefix = b"\n"
        if at > len(before):  # the last line, with no line end
            at, prefix = len(before), b"\n\n"
        return Target(rel, before, None, at, prefix, min(h.level + 1, 6 if fmt == "md" else 99), taken, fmt, [], 0,
                      True)

    def _capture_plan(self, now: dt.datetime) -> Target:
        """The end of the day's capture note: its bytes now, its head when it is to be made
        (else None), the mode a note made gets (as readable as the vault's folder is), and
        the folders made for it. SplitError when today's note is not a regular file, or too
        big to read."""
        core = self.core
        cfg = core.config.capture
        folder, made = self._capture_folder()
        day = now.date()
        pattern = capture.name_pattern(day, cfg.format)
        names = sorted(n for n in os.listdir(core.root / folder) if pattern.fullmatch(n))
        mode = stat.S_IMODE(os.stat(core.root).st_mode) & 0o666 | 0o600
        if not names:
            taken = {n.id for n in core.notes.values() if n.id}
            ident = _fresh_ids(taken, 1)[0]
            rel = posixpath.join(folder, capture.file_name(ident, day, cfg.format))
            head = (capture.front_matter(cfg.format, ident, now) + "\n").encode()
            return Target(rel, b"", head, 0, b"", 1, set(), cfg.format, made, mode, False)
        rel = posixpath.join(folder, names[0])
        st = os.lstat(core.root / rel)
        if not stat.S_ISREG(st.st_mode):
            what = "a symlink" if stat.S_ISLNK(st.st_mode) else "not a regular file"
            raise SplitError(f"today's capture note {core.root / rel} is {what}: remember writes only regular "
                             "files (move it away); nothing was written")
        cap = core.config.index.max_file_mb << 20
        before, size = read_head(core.root_str, rel, cap)  # a regular file of the vault, or OSError
        if size > len(before):
            raise SplitError(f"{rel} is over the size cap (index.max_file_mb): vaultd reads only its first "
                             f"{cap >> 20} MB, and appending from those would lose the rest")
        note, _ = parse_lines(rel, before, max_bytes=cap)
        sep = capture.append(before, "x")[len(before):-1]
        return Target(rel, before, None, len(before), sep, 1, {h.text for h in headings_of(note)}, cfg.format, made,
                      mode, False)

    def _capture_folder(self) -> tuple[str, list[str]]:
        """The capture folder as the vault path it really is, checked anew (see
        config.real_capture_folder), made when missing with the vault folder's mode; and the
        folders made. SplitError when it is not a folder the capture may write in."""
        core = self.core
        cfg = core.config
        try:
            folder = real_capture_folder(core.root, cfg.capture.folder, cfg.watch.ignore_dirs)
        except ConfigError as e:
            raise SplitError(str(e)) from None
        mode = stat.S_IMODE(os.stat(core.root).st_mode)
        made, path = [], core.root
        for part in folder.split("/"):
            path = path / part
            if not os.path.lexists(path):
                os.mkdir(path, mode)
                os.chmod(path, mode)  # as the vault's folder, whatever the umask
                made.append(path.relative_to(core.root).as_posix())
        try:  # checked again once made: nothing may have swapped a part for a symlink meanwhile
            if real_capture_folder(core.root, folder, cfg.watch.ignore_dirs) != folder:
                raise ConfigError(f"capture.folder {cfg.capture.folder!r} changed while remembering")
        except ConfigError as e:
            raise SplitError(str(e)) from None
        return folder, made


def _fresh_ids(taken: set[str], n: int) -> list[str]:
    """n Denote identifiers as Denote gives a note created now (the time, a second later
    while one is taken), none already used in the vault."""
    t = int(time.time())
    out: list[str] = []
    while len(out) < n:
        ident = time.strftime("%Y%m%dT%H%M%S", time.localtime(t))
        if ident not in taken and ident not in out:  # `taken` is left as it is: callers share it
            out.append(ident)
        t += 1
    return out


def _matches(r: Route, text: str, tags: list[str]) -> bool:
    """Whether a `[[capture.route]]` rule takes the entry: its tag, or its pattern found in
    the text."""
    if r.match.startswith("tag:"):
        return r.match[4:].casefold() in (t.casefold() for t in tags)
    return re.search(r.match, text) is not None


def _first_words(text: str, most: int = 8) -> str:
    """The first words of an entry's text, for `split --history`."""
    words = text.split()
    return " ".join(words[:most]) + (" …" if len(words) > most else "")


def _paragraphs(lines: list[str]) -> list[str]:
    """A section's paragraphs (runs of lines between blank lines), and each list item's own
    line: the passages an entry's changed value is looked for in."""
    out, run = [], []
    for ln in lines + [""]:
        if not ln.strip():
            if run:
                out.append("\n".join(run))
            run = []
        elif re.match(r"\s*(?:[-*+]|\d+[.)])\s", ln):
            if run:
                out.append("\n".join(run))
            run = [ln]
        else:
            run.append(ln)
    return out


def _sections(note, lines: list[str]) -> list[tuple[int, int, str | None]]:
    """The note's sections: (first line, last line, heading) from each heading to the line
    before the next (of any level), and the text before the first heading."""
    heads = sorted(headings_of(note), key=lambda h: h.line)
    starts = [(h.line, h.text) for h in heads]
    if not heads or heads[0].line > 1:
        starts.insert(0, (1, None))
    out = []
    for start, heading in starts:
        first, last = section(lines, heads, start, 1)
        if any(x.strip() for x in lines[first - 1 : last]):
            out.append((first, last, heading))
    return out
