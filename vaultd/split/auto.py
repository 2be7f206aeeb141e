"""The Vault's split operations: proposals, a split by hand, every proposal, auto-split of
notes that grew, and the stale-save repair, written through the Vault's one writer
(store/writer.py); what the journal says of splits, kept as operations are undone (the
history job, history.py, tells `undone`) and notes renamed (`renamed`). The splitter
itself is splitter.py. The Vault's splits job (see vault.py)."""

from __future__ import annotations

import logging
import os

from typing import TYPE_CHECKING

from ..errors import QueryError
from ..note import Note
from ..paths import read_head
from ..store import journal
from ..store.state import as_written, changed_ns
from . import splitter as split

if TYPE_CHECKING:
    from ..query.links import LinkGraph
    from ..store.vault_state import VaultState
    from ..store.writer import Writer

logger = logging.getLogger("vaultd.vault")


class Splits:
    """The Vault's split operations, and what the journal says of splits: the notes split
    now (`done`), those the user wants whole (`kept_whole`), the hubs saved over since their
    split (`stale`) and the notes auto-split could not split (`skipped`)."""

    def __init__(self, core: VaultState, links: LinkGraph, writer: Writer):
        self.core = core
        self.links = links
        self.writer = writer
        self.kept_whole: dict[str, str] = {}
        """Notes the user wants whole (a split undone, a stale save), with the op: auto-split leaves them whole."""
        self.done: dict[str, str] = {}
        """Notes split now, with the op: their hubs are watched for a stale editor buffer saved over them."""
        self.stale: set[str] = set()
        """Hubs changed since their split: checked, once quiet, for the parts' text saved back."""
        self.skipped: dict[str, tuple[int, str]] = {}
        """Notes auto-split could not split, with the mtime it saw: not retried until they change."""
        self._announced = False
        writer.on_taken.append(self.read_journal)  # another vaultd may have split or undone meanwhile

    def read_journal(self) -> None:
        """The notes kept whole and the notes split now, as the journal says."""
        entries = self.writer.journal.all()
        self.kept_whole = followed(split.kept_whole(self.writer.journal), entries)
        self.done = followed(split.done_splits(self.writer.journal), entries)

    def committed(self, old: dict[str, Note], upserts: list[Note], gone: dict[str, Note]) -> None:
        """Told of each commit (ingest's watcher): note which notes grew past the split
        threshold (auto mode splits those), which hubs the user saved over, and which files
        are no longer as vaultd wrote them."""
        threshold = self.core.config.split.threshold
        st = self.core.state
        for n in upserts:
            p = n.path
            if as_written(st.state, p, n.mtime_ns, n.size):
                continue  # vaultd's own write
            if p in st.state.written:  # it was vaultd's; the user's since
                st.wrote(p, None)
            if p in self.done:
                self.stale.add(p)
            o = old.get(p)
            if n.size <= threshold:
                st.grew(p, None)
            elif o is not None and o.size <= threshold and p not in st.state.grown:
                st.grew(p, o.size)
        for p in gone:
            st.grew(p, None)
            st.wrote(p, None)

    # -- split ------------------------------------------------------------------

    def split_candidates(self) -> dict:
        """Notes over the threshold (splittable or not, and why), and notes over the warning
        size. `auto` on a note: auto mode splits it once quiet (it grew past the threshold
        while vaultd watched it); the others wait for `split --all` or `split NOTE`."""
        core = self.core
        cfg = core.config.split
        over, cannot, growing = [], [], []
        names_taken = split.taken(core.ready_graph())  # once, not per note: it reads every note
        grown = core.state.state.grown
        for path, n in sorted(core.notes.items()):
            if n.size <= cfg.warn:
                continue
            if n.size <= cfg.threshold:
                growing.append({"path": path, "size": n.size})
            elif split.excluded(path, cfg):
                cannot.append({"path": path, "size": n.size, "why": "excluded by split.exclude"})
            elif path in self.kept_whole:
                cannot.append({"path": path, "size": n.size, "why": self._kept_why(path)})
            elif path in self.stale and path in self.done:  # not resolved on their own outside auto mode
                cannot.append({"path": path, "size": n.size, "why": "its hub was saved with the text of its parts "
                               "(an editor's buffer from before the split?): `vaultq split --all` removes the "
                               "duplicate parts, so the vault is what was saved"})
            elif path in self.skipped and self.skipped[path][0] == n.mtime_ns:
                cannot.append({"path": path, "size": n.size, "why": self.skipped[path][1]})
            else:
                try:
                    plan = self.plan(path, names_taken)
                    why = next(filter(None, (split.read_only(core.root, c.path) for c in plan.changes)), None)
                    if why:  # the split would refuse it: not offered
                        raise split.SplitError(why)
                    over.append({"path": path, "size": n.size, "parts": len(plan.parts), "rewritten": plan.rewritten,
                                 "oversized": plan.oversized, "auto": cfg.mode == "auto" and path in grown})
                except (split.SplitError, OSError) as e:
                    cannot.append({"path": path, "size": n.size, "why": str(e)})
        return {"threshold": cfg.threshold, "warn": cfg.warn, "mode": cfg.mode, "over": over, "cannot": cannot,
                "growing": growing}

    def plan(self, path: str, names_taken: tuple[set[str], set[str]] | None = None) -> split.SplitPlan:
        """The checked plan to split `path` (see split.plan_split). A file over the size cap,
        the note or one whose links the split rewrites, is refused, and never read whole:
        vaultd reads only its first max_file_mb, and writing it from those would lose the rest."""
        core = self.core
        cap = core.config.index.max_file_mb << 20

        def refuse(rel: str, size: int) -> split.SplitError:
            return split.SplitError(f"{rel} is {size} bytes, over the size cap (index.max_file_mb = {cap >> 20}): "
                                    f"vaultd reads only its first {cap >> 20} MB, and writing it from those would "
                                    "lose the rest")

        def whole(rel: str) -> bytes:
            data, size = read_head(core.root_str, rel, cap)
            if size > len(data):
                raise refuse(rel, size)
            return data

        note = core.notes[path]
        if note.size > cap:
            raise refuse(path, note.size)
        data = whole(path)
        if len(data) != note.size:
            raise split.SplitError(f"{path} changed since it was indexed; try again in a moment")
        return split.plan_split(note, data, core.ready_graph(), core.root, core.config.split,
                                read=lambda p: whole(p.relative_to(core.root).as_posix()), names_taken=names_taken)

    def split_note(self, name: str, dry_run: bool = False, check_quiet: bool = True) -> dict:
        """Split one note (or show the plan and diff with `dry_run`). Raises QueryError."""
        core = self.core
        path = self.links.find_note(name)
        cfg = core.config.split
        try:
            if split.excluded(path, cfg):
                raise split.SplitError(f"{path} is excluded by split.exclude")
            plan = self.plan(path)
            result = {"note": path, "parts": plan.parts, "rewritten": plan.rewritten, "oversized": plan.oversized,
                      "files": [c.path for c in plan.changes]}
            if dry_run:
                return {**result, "dry_run": True, "diff": split.diff(plan)}
            self.writer.check()  # said first: on another host, no wait for quiet would help
            if check_quiet and not self._as_written(path):  # vaultd's own last write is no edit to wait out
                split.check_quiet(core.root, path, cfg.quiet)
            elif check_quiet and (busy := split.editor_busy(core.root, path)):
                raise split.SplitError(f"{path}: {busy}")
            for c in plan.changes:
                why = split.read_only(core.root, c.path) or split.editor_busy(core.root, c.path)
                if why:
                    raise split.SplitError(why if why.endswith("read-only") else f"{c.path}: {why}")
            entry = self._write(plan)
        except (split.SplitError, OSError) as e:
            raise QueryError(str(e)) from None
        self.kept_whole.pop(path, None)  # split by hand: the undo no longer speaks for it
        self.done[path] = entry["op"]
        core.state.grew(path, None)
        logger.info("split %s: %s into %d parts, %d links rewritten (undo: vaultq undo %s)",
                    entry["op"], path, len(plan.parts), plan.rewritten, entry["op"])
        return {**result, "op": entry["op"], "dry_run": False}

    def _as_written(self, path: str) -> bool:
        """Whether `path` is as vaultd itself last wrote it (a split, an undo)."""
        try:
            st = os.stat(self.core.root / path)
        except OSError:
            return False
        return as_written(self.core.state.state, path, st.st_mtime_ns, st.st_size)

    def _write(self, plan: split.SplitPlan, kind: str = journal.SPLIT, mode: int | None = None) -> dict:
        """Apply a plan through the journal, note what vaultd wrote (not the user's activity),
        and index it. Returns the journal entry. `mode`: of the files it makes (see journal.apply)."""
        user = {}  # each file's time of change as the user left it: parts take the note's
        for c in plan.changes:
            n = self.core.notes.get(c.path)
            user[c.path] = changed_ns(self.core.state.state, c.path, n.mtime_ns, n.size) if n else 0
        note_ns = user.get(plan.note, 0)
        with self.writer.lock:
            self.writer.check()
            entry = journal.apply(plan, self.core.root, self.writer.journal, kind, mode)
        self.writer.wrote([c.path for c in plan.changes], {p: ns or note_ns for p, ns in user.items()})
        return entry

    def split_all(self) -> dict:
        """Apply every proposal (`split_candidates()["over"]`), each through the journal.
        Notes an editor holds or that changed within `quiet` are skipped, with why."""
        core = self.core
        cfg = core.config.split
        if elsewhere := core.config.writes_elsewhere():  # the same for every note: said once
            raise QueryError(f"{elsewhere}: only that host splits; nothing was split")
        done, skipped = [], []
        for path in sorted(self.stale):  # hubs saved whole again: the user's save wins
            op = self.resolve_stale(path, check_quiet=False)
            if op is not False:
                self.stale.discard(path)
            if op:
                done.append({"note": path, "op": op, "parts": [], "rewritten": 0, "stale": True})
            elif op is False:
                skipped.append({"note": path, "why": "an editor holds it"})
        for path in sorted(p for p, n in core.notes.items() if n.size > cfg.threshold):
            if split.excluded(path, cfg) or path in self.kept_whole or path in self.stale or path not in core.notes:
                continue  # not proposals (see split_candidates)
            try:
                res = self.split_note(path)  # planned and checked once, here
                done.append({"note": path, "op": res["op"], "parts": res["parts"], "rewritten": res["rewritten"]})
            except QueryError as e:
                skipped.append({"note": path, "why": str(e)})
        return {"split": done, "skipped": skipped}

    def undone(self, entry: dict) -> None:
        """Told of each operation undone (the history's `on_undone`): a split undone leaves
        its note whole (auto-split no longer splits it); a stale save's repair undone stands
        the split again; a rename undone takes what is said of the note back to its old path."""
        note, kind, op = entry["note"], entry.get("kind", journal.SPLIT), entry["op"]
        if kind == journal.SPLIT:
            self.kept_whole[note] = op
            self.done.pop(note, None)
        elif kind == journal.STALE:  # a stale save's removal undone: the split stands again
            self.kept_whole.pop(note, None)
        elif kind == journal.RENAME and entry.get("to") and entry["to"] != note:
            self.renamed(entry["to"], note)
        if self.core.config.split.mode == "auto" and note in self.kept_whole and kind != journal.RENAME:
            logger.info("undid split %s: auto-split leaves %s whole from now on (`vaultq split` splits it by hand)",
                        op, note)

    def renamed(self, note: str, to: str) -> None:
        """The note at `note` is now at `to` (a rename, or its undo): a split hub stays a hub
        and a note kept whole stays whole under its new name (the journal's entries of it
        keep the old one: `read_journal` follows the renames done since)."""
        for marks in (self.kept_whole, self.done):
            if note in marks:
                marks[to] = marks.pop(note)
        if note in self.stale:
            self.stale.discard(note)
            self.stale.add(to)
        self.skipped.pop(note, None)

    def _kept_why(self, path: str) -> str:
        op = self.kept_whole[path]
        try:
            stale = self.writer.journal.load(op).get("kind") == journal.STALE
        except split.SplitError:
            stale = False
        why = f"it was saved whole over its hub ({op})" if stale else f"its split {op} was undone"
        return f"{why}: auto-split leaves it whole (`vaultq split` splits it by hand)"

    def _announce_split(self) -> None:
        core = self.core
        cfg = core.config.split
        if elsewhere := core.config.writes_elsewhere():
            logger.warning("%s: vaultd here writes nothing into the vault: no split (on its own or when asked), no "
                           "undo, no remember; it indexes and answers (`vaultq split --list` still proposes)", elsewhere)
            return
        if folder := core.config.capture.folder:
            logger.warning("agent capture is on: `remember` appends agents' entries to the day's capture note in %s/ "
                           "(each undoable: `vaultq undo OP`); unset [capture] folder to turn it off", folder)
        over = sum(1 for n in core.notes.values() if n.size > cfg.threshold)
        if cfg.mode == "off":
            logger.info("auto-split is off: vaultd writes nothing into the vault (%d notes over %d bytes; "
                        "`vaultq split NOTE` splits one by hand)", over, cfg.threshold)
        elif cfg.mode == "propose":
            logger.info("auto-split proposes only: vaultd writes nothing into the vault on its own; %d notes are over "
                        "%d bytes (`vaultq split --list` shows them, `vaultq split --all` applies them)",
                        over, cfg.threshold)
        else:
            grown = sum(1 for p in core.state.state.grown if (n := core.notes.get(p)) and n.size > cfg.threshold)
            logger.warning("auto-split is on: a note that grows past %d bytes is split into a hub and parts once quiet "
                           "for %.0f s, one that grew while vaultd was stopped too (%d now: `vaultq split --list` "
                           "marks them auto; undo: `vaultq undo OP`, or `vaultq undo --all`). Notes over it when "
                           "vaultd first saw them are left as they are: %d are proposed (`vaultq split --all` applies "
                           "them). `--split propose` or `off` turns this off",
                           cfg.threshold, cfg.quiet, grown, over - grown)

    def auto_split(self) -> list[str]:
        """Resolve stale saves over hubs, then, in `auto` mode, split every quiet, unlocked
        note that grew past the threshold while watched. Returns the ops."""
        core = self.core
        cfg = core.config.split
        if core.graph is None:
            return []
        if not self._announced:
            self._announced = True
            self._announce_split()
        ops = []
        if cfg.mode == "auto" and self.writer.may_write():  # propose and off never write on their own
            for path in list(self.stale):
                op = self.resolve_stale(path)
                if op is not False:
                    self.stale.discard(path)
                if op:
                    ops.append(op)
        if cfg.mode != "auto" or not self.writer.may_write():
            return ops
        grown = core.state.state.grown
        todo = [(p, n) for p in list(grown) if (n := core.notes.get(p)) is not None and n.size > cfg.threshold
                and not split.excluded(p, cfg) and p not in self.kept_whole
                and self.skipped.get(p, (None,))[0] != n.mtime_ns]
        for path, n in todo:
            try:
                split.check_quiet(core.root, path, cfg.quiet)
            except (split.SplitError, OSError):
                continue  # not yet: try again later
            try:
                ops.append(self.split_note(path)["op"])
            except QueryError as e:
                if isinstance(e.__context__, journal.Raced):  # a save landed while writing: tried again next pass
                    logger.info("split of %s waits: %s", path, e)
                    continue
                self.skipped[path] = (n.mtime_ns, str(e))
                logger.warning("not splitting %s, which grew past %d bytes: %s", path, cfg.threshold, e)
        return ops

    def resolve_stale(self, path: str, check_quiet: bool = True) -> str | None | bool:
        """The hub `path` changed: when it holds its parts' text again (an editor's stale
        buffer saved), remove the duplicate so the vault is what the user saved. Returns the
        op, None when there is nothing to resolve, False when not yet (not quiet)."""
        core = self.core
        op = self.done.get(path)
        if op is None:
            return None
        try:
            if check_quiet:
                split.check_quiet(core.root, path, core.config.split.quiet)
            elif busy := split.editor_busy(core.root, path):
                raise split.SplitError(busy)
        except (split.SplitError, OSError):
            return False
        try:
            plan = split.stale_plan(self.writer.journal.load(op), core.root)
            if plan is None:
                return None
            entry = self._write(plan, journal.STALE)
        except (split.SplitError, OSError) as e:  # left as it is; never split again on its own for it
            logger.warning("%s: %s", path, e)
            core.state.grew(path, None)
            if (n := core.notes.get(path)) is not None:
                self.skipped[path] = (n.mtime_ns, str(e))
            return None
        self.done.pop(path, None)
        self.kept_whole[path] = entry["op"]
        core.state.grew(path, None)
        logger.warning("%s was saved with the text of its parts (an editor's buffer from before split %s): the user's "
                       "save wins; removed the %d parts it duplicated and put back %d rewritten notes "
                       "(%s; undo: vaultq undo %s)", path, op, sum(c.after is None for c in plan.changes),
                       sum(c.after is not None for c in plan.changes), entry["op"], entry["op"])
        return entry["op"]


def followed(marks: dict[str, str], entries: list[dict]) -> dict[str, str]:
    """`marks` (a note's path -> the op that says something of it) with each note followed
    along the renames done after that op (`entries`: the journal's, oldest first): a hub
    renamed since its split is the same hub at its new path."""
    at = {e["op"]: (e.get("time", 0), e["op"]) for e in entries}
    out = dict(marks)
    for e in entries:
        if e.get("kind") == journal.RENAME and e.get("status") == "done" and e.get("to") and e["to"] != e["note"]:
            op = out.get(e["note"])
            if op is not None and at.get(op, (0, "")) < (e.get("time", 0), e["op"]):
                out[e["to"]] = out.pop(e["note"])
    return out
