"""The Vault's `remember`: an agent's entry appended to the day's capture note, unless the
vault already holds it, through the split journal. Part of the Vault (see vault.py); what
an entry and a capture note look like, and the dedup rule, are entry.py's.

Off unless `[capture] folder` names a folder. Then, for each entry, in one go under the
vault's write lock:
  1. its keywords are searched for (every note, the archive too), and each section of the
     best notes (from a heading to the next, or the text before the first) is compared:
     one that holds 80% of them (entry.known), and no number or negation the entry does
     not share (entry.differs), means the entry is not written (unless forced), and the
     answer names that section (path, lines, heading);
  2. else the capture folder is checked as the real path it is (symlinks resolved), and
     the day's capture note (made when missing, with Denote's front matter; a regular
     file) gets the entry at its end through journal.append: the appended bytes journaled
     and fsynced before the note is appended to in place, and indexed before the answer;
  3. `vaultq split --undo OP` takes out exactly that entry (journal.undo).
Only the vaultd holding the writer lock writes; the others answer what is already known
and refuse the rest.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import posixpath
import stat

from ..config import real_capture_folder
from ..errors import CaptureOff, ConfigError, QueryError, StillIndexing
from ..note import headings_of
from ..parse import parse_lines
from ..query.context import section
from ..paths import read_head
from ..split import splitter as split
from ..store.state import changed_ns
from . import entry as capture
from . import journal

logger = logging.getLogger("vaultd.capture")

CANDIDATES = 8
"""Notes of the search whose sections are compared with an entry."""

OFF = ("remember is off: vaultd writes an agent's entries into the vault only when the user turns agent capture on, "
       'with `[capture] folder = "inbox"` (a folder of the vault) in its config, and restarts it; nothing was written')


class Capture:
    """The Vault's `remember`."""

    def remember(self, text: str, tags: list[str], source: str | None = None, session: str | None = None,
                 force: bool = False) -> dict:
        """Append an entry to the day's capture note, or say which section already holds it
        (with `force`, append it all the same). Raises QueryError (nothing written): capture
        off, a bad entry, a bad capture folder or note, not the writer."""
        cfg = self.config.capture
        if not cfg.folder:
            raise CaptureOff(OFF)
        try:
            text, tags = capture.check(text, tags, source, session)
        except capture.BadEntry as e:
            raise QueryError(f"remember: {e}; nothing was written") from None
        if self.indexing:  # what the vault holds is not known yet
            raise StillIndexing(self._progress_words())
        with self._split_lock:
            same = None if force else self._known(text, capture.keywords(text))
            if same is not None:
                return {"written": False, **same, "op": None, "created": False, "generation": self.generation}
            now = dt.datetime.now().astimezone()
            try:
                self._writing()
                rel, before, head, new, mode, made = self._capture_plan(text, tags, source or "unknown", session, now)
                n = self.notes.get(rel)
                user = changed_ns(self.state.state, rel, n.mtime_ns, n.size) if n else 0
                done = journal.append(self.root, self.journal, rel, new, None if head else len(before), head, mode,
                                      made)
            except (split.SplitError, OSError) as e:
                raise QueryError(f"remember: {e}" + ("" if "nothing was" in str(e) else "; nothing was written")) \
                    from None
            self._wrote([rel], {rel: user})
        first = (head or before).count(b"\n") + len(new) - len(new.lstrip(b"\n")) + 1  # after the blank line
        last = (head or before).count(b"\n") + new.count(b"\n")
        logger.info("remembered %d bytes from %s in %s:%d-%d (undo: vaultq split --undo %s)",
                    len(text.encode()), source or "unknown", rel, first, last, done["op"])
        return {"written": True, "path": rel, "first": first, "last": last,
                "heading": f"{now:%H:%M:%S}", "overlap": None, "op": done["op"], "created": head is not None,
                "generation": self.generation}

    def _known(self, text: str, words: set[str]) -> dict | None:
        """The section of the vault that already holds the entry (path, first, last, heading,
        overlap), None when none does (see entry.known, entry.differs)."""
        q = capture.query(text)
        if not words or not q:
            return None
        cap = self.config.index.max_file_mb << 20
        best: tuple[float, dict] | None = None
        for hit in self.search(q, CANDIDATES, "all", False)["hits"]:
            path = hit["path"]
            try:
                data, _ = read_head(self._root, path, cap)
            except OSError:
                continue
            note, lines = parse_lines(path, data, max_bytes=cap)
            for first, last, heading in _sections(note, lines):
                section = "\n".join(lines[first - 1 : last])
                theirs = capture.keywords(section)
                if capture.known(words, theirs) and not capture.differs(text, section):
                    share = capture.overlap(words, theirs)
                    if best is None or share > best[0]:
                        best = (share, {"path": path, "first": first, "last": last, "heading": heading,
                                        "overlap": round(share, 3)})
        return best[1] if best else None

    def _capture_plan(self, text: str, tags: list[str], source: str, session: str | None,
                      now: dt.datetime) -> tuple[str, bytes, bytes | None, bytes, int, list[str]]:
        """What appending the entry to the day's capture note takes: the note (a vault path),
        its bytes now, its head when it is to be made (else None), the bytes appended, the
        mode a note made gets (as readable as the vault's folder is), and the folders made
        for it. SplitError when today's note is not a regular file, or too big to read."""
        cfg = self.config.capture
        folder, made = self._capture_folder()
        day = now.date()
        pattern = capture.name_pattern(day, cfg.format)
        names = sorted(n for n in os.listdir(self.root / folder) if pattern.fullmatch(n))
        new = capture.entry(cfg.format, text, tags, source, session, now).encode()
        mode = stat.S_IMODE(os.stat(self.root).st_mode) & 0o666 | 0o600
        if not names:
            taken = {n.id for n in self.notes.values() if n.id}
            ident = split._fresh_ids(taken, 1)[0]
            rel = posixpath.join(folder, capture.file_name(ident, day, cfg.format))
            return rel, b"", (capture.front_matter(cfg.format, ident, now) + "\n").encode(), new, mode, made
        rel = posixpath.join(folder, names[0])
        st = os.lstat(self.root / rel)
        if not stat.S_ISREG(st.st_mode):
            what = "a symlink" if stat.S_ISLNK(st.st_mode) else "not a regular file"
            raise split.SplitError(f"today's capture note {self.root / rel} is {what}: remember writes only regular "
                                   "files (move it away); nothing was written")
        cap = self.config.index.max_file_mb << 20
        before, size = read_head(self._root, rel, cap)  # a regular file of the vault, or OSError
        if size > len(before):
            raise split.SplitError(f"{rel} is over the size cap (index.max_file_mb): vaultd reads only its first "
                                   f"{cap >> 20} MB, and appending from those would lose the rest")
        return rel, before, None, capture.append(before, new.decode())[len(before):], mode, made

    def _capture_folder(self) -> tuple[str, list[str]]:
        """The capture folder as the vault path it really is, checked anew (see
        config.real_capture_folder), made when missing with the vault folder's mode; and the
        folders made. SplitError when it is not a folder the capture may write in."""
        cfg = self.config
        try:
            folder = real_capture_folder(self.root, cfg.capture.folder, cfg.watch.ignore_dirs)
        except ConfigError as e:
            raise split.SplitError(str(e)) from None
        mode = stat.S_IMODE(os.stat(self.root).st_mode)
        made, path = [], self.root
        for part in folder.split("/"):
            path = path / part
            if not os.path.lexists(path):
                os.mkdir(path, mode)
                os.chmod(path, mode)  # as the vault's folder, whatever the umask
                made.append(path.relative_to(self.root).as_posix())
        try:  # checked again once made: nothing may have swapped a part for a symlink meanwhile
            if real_capture_folder(self.root, folder, cfg.watch.ignore_dirs) != folder:
                raise ConfigError(f"capture.folder {cfg.capture.folder!r} changed while remembering")
        except ConfigError as e:
            raise split.SplitError(str(e)) from None
        return folder, made


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
