"""The Vault's rename job: a note or a heading renamed, every link to it rewritten, planned
and checked (plan.py), then written through the Vault's one writer (store/writer.py) and the
journal (store/journal.py, an entry of kind "rename"): undone by the journal's undo, byte for
byte, rolled back at start-up when a crash cut it short, never written over a file that
changed since it was read (store/checked.py). Standalone: handed the shared state, the link
queries (to find the note) and the writer."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..errors import QueryError
from ..paths import read_head
from ..split.splitter import diff, editor_busy, read_only
from ..store import journal
from ..store.state import changed_ns
from .plan import NOTHING, Plan, RenameError, plan_heading_rename, plan_rename

if TYPE_CHECKING:
    from ..query.links import LinkGraph
    from ..store.vault_state import VaultState
    from ..store.writer import Writer

logger = logging.getLogger("vaultd.rename")


class Renamer:
    """Renames notes and headings in one vault, through its writer."""

    def __init__(self, core: VaultState, links: LinkGraph, writer: Writer):
        self.core = core
        self.links = links
        self.writer = writer
        self.renamed: list[Callable[[str, str], None]] = []
        """Each called with (old path, new path) once a note is written at its new name: a
        job that keeps something of notes by path (splits) follows it."""

    def rename(self, name: str, title: str, dry_run: bool = False, check_editors: bool = True) -> dict:
        """Title the note `name` (a path, a name, an identifier: as `find_note` reads it)
        `title`: a Denote note keeps its identifier, signature and keywords and takes the
        title's slug in its file name and the title in its title keyword; another note is
        named `title` beside itself (and its title keyword, where it has one, says it).
        Every link to it is rewritten (labels kept; one that said the old title says the new
        one). With `dry_run`, the plan and its diff, nothing written. `check_editors`: refuse
        while an editor's lock or swap file says one holds a file the rename writes. Raises
        QueryError (NoteNotFound, AmbiguousNote) saying why; then nothing was changed."""
        path = self.links.find_note(name)
        try:
            plan = plan_rename(self.core.notes[path], self._read(path), title, self.core.ready_graph(), self._read)
        except (RenameError, OSError) as e:
            raise QueryError(str(e)) from None
        return self._done(plan, dry_run, check_editors)

    def rename_heading(self, name: str, line: int, text: str, dry_run: bool = False, check_editors: bool = True) -> dict:
        """Rename the heading on `line` (1-based) of the note `name` to `text`: every link
        into it by its text or slug (`[[Note#Heading]]`, `[x](note.md#heading)`,
        `[[file:x.org::*Heading]]`, `[[*Heading]]`) is rewritten; one by a CUSTOM_ID or an
        :ID: needs none. As `rename` otherwise."""
        path = self.links.find_note(name)
        try:
            plan = plan_heading_rename(self.core.notes[path], self._read(path), line, text, self.core.ready_graph(),
                                       self._read)
        except (RenameError, OSError) as e:
            raise QueryError(str(e)) from None
        return self._done(plan, dry_run, check_editors)

    def _read(self, rel: str) -> bytes:
        """A note's bytes, whole. RenameError for one over the size cap (vaultd reads only its
        first max_file_mb, and writing it from those would lose the rest) or changed since
        it was indexed."""
        cap = self.core.config.index.max_file_mb << 20
        data, size = read_head(self.core.root_str, rel, cap)
        if size > len(data):
            raise RenameError(f"{rel} is {size} bytes, over the size cap (index.max_file_mb = {cap >> 20}); {NOTHING}")
        note = self.core.notes.get(rel)
        if note is not None and note.size != len(data):
            raise RenameError(f"{rel} changed since it was indexed; try again in a moment ({NOTHING})")
        return data

    def _done(self, plan: Plan, dry_run: bool, check_editors: bool) -> dict:
        """The plan written (or only shown, with `dry_run`): what it did."""
        result = {"note": plan.note, "to": plan.to, "heading": plan.heading, "rewritten": plan.rewritten,
                  "relabeled": plan.relabeled, "files": [c.path for c in plan.changes]}
        if dry_run:
            return {**result, "dry_run": True, "diff": diff(plan)}
        try:
            self.writer.check()
            if plan.to != plan.note and (self.core.root / plan.to).exists():
                raise RenameError(f"{plan.to} exists: {plan.note} cannot take its name; {NOTHING}")
            for c in plan.changes:
                if why := read_only(self.core.root, c.path):
                    raise RenameError(f"{why}; {NOTHING}")
                if check_editors and (busy := editor_busy(self.core.root, c.path)):
                    raise RenameError(f"{c.path}: {busy}; {NOTHING}")
            entry = self._write(plan)
        except (journal.SplitError, OSError) as e:
            raise QueryError(str(e)) from None
        if plan.to != plan.note:
            for told in self.renamed:
                told(plan.note, plan.to)
        logger.info("rename %s: %s -> %s, %d links rewritten, %d labels followed (undo: vaultq undo %s)",
                    entry["op"], plan.note if plan.heading is None else f"{plan.note}:{plan.heading}",
                    plan.to, plan.rewritten, plan.relabeled, entry["op"])
        return {**result, "op": entry["op"], "dry_run": False}

    def _write(self, plan: Plan) -> dict:
        """Apply the plan through the journal (kind "rename"), note what vaultd wrote (each
        file keeps the time the user last changed it; the note at its new name, the note's)
        and index it. Returns the journal entry."""
        st = self.core.state.state
        user = {c.path: changed_ns(st, c.path, n.mtime_ns, n.size) for c in plan.changes
                if (n := self.core.notes.get(c.path)) is not None}
        user.setdefault(plan.to, user.get(plan.note, 0))
        with self.writer.lock:
            self.writer.check()
            entry = journal.apply(plan, self.core.root, self.writer.journal, journal.RENAME)
        self.writer.wrote([c.path for c in plan.changes], user)
        return entry
