"""The Vault's history job: every write vaultd journaled into the vault (a split, a stale
save's repair, a remembered entry, a rename), as the journal holds it (store/journal.py),
and its undo, through the Vault's one writer (store/writer.py). One history for every
writer: `vaultq history` and `vaultq undo OP | --all` (`split --history` and `split --undo`
are its aliases). The jobs whose own state an undo changes are told (`on_undone`): splits
keep the notes the user wants whole, by path."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from .capture import journal as capture_journal
from .errors import QueryError
from .store import journal
from .store.state import changed_ns

if TYPE_CHECKING:
    from .store.vault_state import VaultState
    from .store.writer import Writer

logger = logging.getLogger("vaultd.vault")

SHOWN = ("op", "time", "note", "status", "parts", "rewritten", "oversized")
"""What each entry of the history says, always (null where an operation has none)."""
SHOWN_IF = ("to", "heading", "relabeled", "reason", "events", "entry")
"""What it says when the entry holds it: a rename's new path, its heading's line, the labels
that followed the title; why an operation was aborted, the steps refused or left; a
remembered entry's time and words."""


class History:
    """What vaultd wrote into one vault, and its undo."""

    def __init__(self, core: VaultState, writer: Writer):
        self.core = core
        self.writer = writer
        self.on_undone: list[Callable[[dict], None]] = []
        """Each called, in order, with the journal entry of each operation undone (its status
        then "undone"): a job whose state follows the journal's (splits) updates it."""

    def history(self) -> dict:
        """Every journaled write, newest first: its op, `kind` (split, stale save, capture,
        rename), time, note, status, what it made or rewrote, and (when it has them) a
        rename's `to`, `heading` and `relabeled`, why it was aborted, what was refused or left."""
        return {"history": [shown(e) for e in reversed(self.writer.journal.all())]}

    def split_history(self) -> dict:
        """The same entries, oldest first: as `split --history` has always listed them."""
        return {"history": [shown(e) for e in self.writer.journal.all()]}

    def undo(self, ops: list[str] | str | None = None, force: bool = False, every: bool = False) -> dict:
        """Undo operations, newest first, all or nothing: those named, or with `every` every
        done one but the entries `remember` wrote (those are undone one by one, by their op).
        With `force`, even over files changed since (what it replaces is kept in the entry).
        Raises QueryError saying why nothing (or what before it) was undone."""
        entries = self.writer.journal.all()
        if every:
            ops = [e["op"] for e in entries if e.get("status") == "done" and e.get("kind") != journal.CAPTURE]
        ops = [ops] if isinstance(ops, str) else list(ops or [])
        if not ops:
            if every:
                return {"op": None, "undone": [], "restored": []}
            raise QueryError("undo: give an operation (see `vaultq history`)")
        when = {e["op"]: e.get("time", 0) for e in entries}
        ops = sorted(dict.fromkeys(ops), key=lambda o: (when.get(o, 0), o), reverse=True)
        appends = self._undoable(ops, force)
        undone, restored = [], []
        for op in ops:
            entry, touched = self._undo_one(op, op in appends, force, undone)
            for told in self.on_undone:
                told(entry)
            undone.append(op)
            restored += touched
        return {"op": undone[0] if len(undone) == 1 else None, "undone": undone, "restored": restored}

    def _undoable(self, ops: list[str], force: bool) -> set[str]:
        """Raise QueryError unless every one of `ops` can be undone in that order (each
        remembered entry's bytes where it wrote them; every other file as its op left it,
        unless `force`). Returns the ops that are remembered entries."""
        root, jr = self.core.root, self.writer.journal
        try:
            self.writer.check()
            appends = {op for op in ops if capture_journal.is_append(jr.load(op))}
            for op in appends:  # an entry's bytes unchanged in its note, or nothing is undone (--force or not)
                capture_journal.locate(root, jr.load(op))
            if not force:
                journal.undoable(root, jr, [op for op in ops if op not in appends])  # all or nothing
        except journal.SplitError as e:
            raise QueryError(f"{e}; nothing was undone" if "nothing was changed" not in str(e) else str(e)) from None
        return appends

    def _undo_one(self, op: str, append: bool, force: bool, undone: list[str]) -> tuple[dict, list[str]]:
        """Undo `op` under the writer's lock, note what vaultd wrote and index it. Returns its
        entry (as undone) and the files it touched."""
        core, jr = self.core, self.writer.journal
        try:
            with self.writer.lock:
                entry = jr.load(op)
                paths = [c["path"] for c in entry["files"]] or [entry["note"]]
                user = {p: changed_ns(core.state.state, p, n.mtime_ns, n.size)
                        for p in paths if (n := core.notes.get(p))}
                touched = capture_journal.undo(core.root, jr, entry) if append else \
                    journal.undo(core.root, jr, op, force)
        except journal.SplitError as e:
            if undone:
                raise QueryError(f"{e} (undid {', '.join(undone)} before it)") from None
            raise QueryError(str(e)) from None
        if (to := entry.get("to")) and to in user:
            user.setdefault(entry["note"], user[to])  # a rename undone: the note keeps its own time
        self.writer.wrote(touched, user)
        return {**entry, "status": "undone"}, touched


def shown(entry: dict) -> dict:
    """A journal entry as the history shows it (SHOWN, and SHOWN_IF where it holds them)."""
    return {"kind": entry.get("kind", journal.SPLIT), **{k: entry.get(k) for k in SHOWN},
            **{k: entry[k] for k in SHOWN_IF if entry.get(k) not in (None, "", [], {})}}
