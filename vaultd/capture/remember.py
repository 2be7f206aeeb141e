"""The Vault's `remember`: an agent's entry appended to the day's capture note, unless the
vault already holds it, through the split journal. Part of the Vault (see vault.py); what
an entry and a capture note look like, and the dedup rule, are entry.py's.

Off unless `[capture] folder` names a folder. Then, for each entry, in one go under the
vault's write lock:
  1. its keywords are searched for (every note, the archive too), and each section of the
     best notes (from a heading to the next, or the text before the first) is compared:
     one that holds 80% of them (entry.known) means the entry is not written, and the
     answer names that section (path, lines, heading);
  2. else the day's capture note (made when missing, with Denote's front matter) gets the
     entry at its end through split.apply: journaled (before and after) and fsynced before
     the file is written, the file re-checked, written atomically (a new one only created,
     never over a file someone put there), and indexed before the answer;
  3. `vaultq split --undo OP` puts the note back byte for byte (removes it, when this entry
     made it), as for a split.
Only the vaultd holding the writer lock writes; the others answer what is already known
and refuse the rest.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import posixpath
import stat

from ..errors import CaptureOff, QueryError, StillIndexing
from ..note import headings_of
from ..parse import parse_lines
from ..paths import read_head
from ..split import splitter as split
from . import entry as capture

logger = logging.getLogger("vaultd.capture")

CANDIDATES = 8
"""Notes of the search whose sections are compared with an entry."""

OFF = ("remember is off: vaultd writes an agent's entries into the vault only when the user turns agent capture on, "
       'with `[capture] folder = "inbox"` (a folder of the vault) in its config, and restarts it; nothing was written')


class Capture:
    """The Vault's `remember`."""

    def remember(self, text: str, tags: list[str], source: str | None = None, session: str | None = None) -> dict:
        """Append an entry to the day's capture note, or say which section already holds it.
        Raises QueryError (nothing written): capture off, a bad entry, not the writer."""
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
            words = capture.keywords(text)
            same = self._known(text, words)
            if same is not None:
                return {"written": False, **same, "op": None, "created": False, "generation": self.generation}
            now = dt.datetime.now().astimezone()
            try:
                self._writing()
                plan, mode, first = self._capture_plan(text, tags, source or "unknown", session, now)
                done = self._write(plan, split.CAPTURE, mode)
            except (split.SplitError, OSError) as e:
                raise QueryError(f"remember: {e}" + ("" if "nothing was" in str(e) else "; nothing was written")) \
                    from None
        change = plan.changes[0]
        last = change.after.count(b"\n")
        logger.info("remembered %d bytes from %s in %s:%d-%d (undo: vaultq split --undo %s)",
                    len(text.encode()), source or "unknown", plan.note, first, last, done["op"])
        return {"written": True, "path": plan.note, "first": first, "last": last,
                "heading": f"{now:%H:%M:%S}", "overlap": None, "op": done["op"], "created": change.before is None,
                "generation": self.generation}

    def _known(self, text: str, words: set[str]) -> dict | None:
        """The section of the vault that already holds the entry (path, first, last, heading,
        overlap), None when none does (see entry.known)."""
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
                theirs = capture.keywords("\n".join(lines[first - 1 : last]))
                if capture.known(words, theirs):
                    share = capture.overlap(words, theirs)
                    if best is None or share > best[0]:
                        best = (share, {"path": path, "first": first, "last": last, "heading": heading,
                                        "overlap": round(share, 3)})
        return best[1] if best else None

    def _capture_plan(self, text: str, tags: list[str], source: str, session: str | None,
                      now: dt.datetime) -> tuple[split.Plan, int, int]:
        """The change that appends the entry to the day's capture note (or makes the note),
        the mode a note made gets (as readable as the vault's folder is), and the entry's
        first line in it."""
        cfg = self.config.capture
        folder = self._capture_folder()
        day = now.date()
        pattern = capture.name_pattern(day, cfg.format)
        names = sorted(n for n in os.listdir(folder) if pattern.fullmatch(n))
        new = capture.entry(cfg.format, text, tags, source, session, now)
        mode = stat.S_IMODE(os.stat(self.root).st_mode) & 0o666 | 0o600
        if names:
            rel = posixpath.join(cfg.folder, names[0])
            cap = self.config.index.max_file_mb << 20
            before, size = read_head(self._root, rel, cap)  # a regular file of the vault, or OSError
            if size > len(before):
                raise split.SplitError(f"{rel} is over the size cap (index.max_file_mb): vaultd reads only its first "
                                       f"{cap >> 20} MB, and appending from those would lose the rest")
            after = capture.append(before, new)
        else:
            taken = {n.id for n in self.notes.values() if n.id}
            ident = split._fresh_ids(taken, 1)[0]
            rel = posixpath.join(cfg.folder, capture.file_name(ident, day, cfg.format))
            before, after = None, (capture.front_matter(cfg.format, ident, now) + "\n" + new).encode()
        plan = split.Plan(note=rel, changes=[split.FileChange(rel, before, after)])
        return plan, mode, after[: len(after) - len(new.encode())].count(b"\n") + 1

    def _capture_folder(self) -> str:
        """The capture folder, made when missing; SplitError when it is not a folder inside
        the vault (a symlink out of it, a file)."""
        root = os.path.realpath(self.root)
        folder = os.path.join(self._root, self.config.capture.folder)

        def inside() -> bool:
            real = os.path.realpath(folder)
            return real.startswith(root + os.sep)

        if not inside():
            raise split.SplitError(f"capture.folder {self.config.capture.folder} leads out of the vault (a symlink)")
        os.makedirs(folder, mode=stat.S_IMODE(os.stat(self.root).st_mode), exist_ok=True)  # as the vault's
        if not inside() or not os.path.isdir(folder):
            raise split.SplitError(f"capture.folder {self.config.capture.folder} is not a folder of the vault")
        return folder


def _sections(note, lines: list[str]) -> list[tuple[int, int, str | None]]:
    """The note's sections: (first line, last line, heading) from each heading to the line
    before the next (of any level), and the text before the first heading."""
    heads = sorted(headings_of(note), key=lambda h: h.line)
    starts = [(1, None)] + [(h.line, h.text) for h in heads]
    out = []
    for i, (first, heading) in enumerate(starts):
        last = starts[i + 1][0] - 1 if i + 1 < len(starts) else len(lines)
        while last > first and not lines[last - 1].strip():
            last -= 1
        if last >= first and any(x.strip() for x in lines[first - 1 : last]):
            out.append((first, last, heading))
    return out
