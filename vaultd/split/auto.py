"""The Vault's split operations: proposals, a split by hand, every proposal, history and
undo, auto-split of notes that grew, and the stale-save repair; one vaultd writes (the
writer lock). The splitter itself is splitter.py. Part of the Vault (see vault.py)."""

from __future__ import annotations

import logging
import os

from ..errors import QueryError
from ..paths import read_head
from ..store.state import as_written, changed_ns
from ..capture import journal as capture_journal
from ..store import journal
from . import splitter as split

logger = logging.getLogger("vaultd.vault")


class Splits:
    """The Vault's split operations."""

    def _read_journal(self) -> None:
        self._kept_whole = split.kept_whole(self.journal)
        self._done = split.done_splits(self.journal)

    def _may_write(self) -> bool:
        """Whether this vaultd may write into the vault (split, undo, remember): this is the
        host the config names (`[split] host`, if any: a vault synced between machines), and
        it holds the vault's writer lock (one vaultd of this machine at a time). Each time it
        takes the lock (at start, or when the vaultd that held it stopped), it first rolls
        back what a crash left half done and reads the journal anew: the other one may have
        split or undone since. On another host it never takes the lock."""
        if self.config.writes_elsewhere():
            return False
        with self._split_lock:
            if not self._writer.acquire():
                return False
            if self._taken != self._writer.taken:
                self._taken = self._writer.taken
                for rel in journal.recover(self.root, self.journal) + capture_journal.recover(self.root, self.journal):
                    # a crash mid-split or mid-append: back to before
                    logger.warning("restored %s from the split journal", rel)
                self._read_journal()
            return True

    def _writing(self) -> None:
        """Raise SplitError unless this vaultd may write into the vault (see _may_write)."""
        if not self._may_write():
            raise split.SplitError(f"{self.not_writing_why(pid=True)} (nothing was changed)")

    def not_writing_why(self, pid: bool = False) -> str:
        """Why this vaultd does not write into the vault, when _may_write() says it does not:
        the config names another host, or another vaultd of this machine holds the lock (with
        `pid`: its pid, where /proc/locks tells)."""
        if elsewhere := self.config.writes_elsewhere():
            return f"{elsewhere}: only that host splits, undoes and remembers; this vaultd indexes and answers"
        holder = self._writer.holder() if pid else None
        return (f"another vaultd{f' (pid {holder})' if holder else ''} writes into this vault: only it splits, "
                "undoes and remembers; this one indexes and answers")

    # -- split ------------------------------------------------------------------

    def split_candidates(self) -> dict:
        """Notes over the threshold (splittable or not, and why), and notes over the warning
        size. `auto` on a note: auto mode splits it once quiet (it grew past the threshold
        while vaultd watched it); the others wait for `split --all` or `split NOTE`."""
        cfg = self.config.split
        over, cannot, growing = [], [], []
        names_taken = split.taken(self._ready_graph())  # once, not per note: it reads every note
        grown = self.state.state.grown
        for path, n in sorted(self.notes.items()):
            if n.size <= cfg.warn:
                continue
            if n.size <= cfg.threshold:
                growing.append({"path": path, "size": n.size})
            elif split.excluded(path, cfg):
                cannot.append({"path": path, "size": n.size, "why": "excluded by split.exclude"})
            elif path in self._kept_whole:
                cannot.append({"path": path, "size": n.size, "why": self._kept_why(path)})
            elif path in self._stale and path in self._done:  # not resolved on their own outside auto mode
                cannot.append({"path": path, "size": n.size, "why": "its hub was saved with the text of its parts "
                               "(an editor's buffer from before the split?): `vaultq split --all` removes the "
                               "duplicate parts, so the vault is what was saved"})
            elif path in self._split_skip and self._split_skip[path][0] == n.mtime_ns:
                cannot.append({"path": path, "size": n.size, "why": self._split_skip[path][1]})
            else:
                try:
                    plan = self._split_plan(path, names_taken)
                    why = next(filter(None, (split.read_only(self.root, c.path) for c in plan.changes)), None)
                    if why:  # the split would refuse it: not offered
                        raise split.SplitError(why)
                    over.append({"path": path, "size": n.size, "parts": len(plan.parts), "rewritten": plan.rewritten,
                                 "oversized": plan.oversized, "auto": cfg.mode == "auto" and path in grown})
                except (split.SplitError, OSError) as e:
                    cannot.append({"path": path, "size": n.size, "why": str(e)})
        return {"threshold": cfg.threshold, "warn": cfg.warn, "mode": cfg.mode, "over": over, "cannot": cannot,
                "growing": growing}

    def _split_plan(self, path: str, names_taken: tuple[set[str], set[str]] | None = None) -> split.Plan:
        """The checked plan to split `path` (see split.plan_split). A file over the size cap,
        the note or one whose links the split rewrites, is refused, and never read whole:
        vaultd reads only its first max_file_mb, and writing it from those would lose the rest."""
        cap = self.config.index.max_file_mb << 20

        def refuse(rel: str, size: int) -> split.SplitError:
            return split.SplitError(f"{rel} is {size} bytes, over the size cap (index.max_file_mb = {cap >> 20}): "
                                    f"vaultd reads only its first {cap >> 20} MB, and writing it from those would "
                                    "lose the rest")

        def whole(rel: str) -> bytes:
            data, size = read_head(self._root, rel, cap)
            if size > len(data):
                raise refuse(rel, size)
            return data

        note = self.notes[path]
        if note.size > cap:
            raise refuse(path, note.size)
        data = whole(path)
        if len(data) != note.size:
            raise split.SplitError(f"{path} changed since it was indexed; try again in a moment")
        return split.plan_split(note, data, self._ready_graph(), self.root, self.config.split,
                                read=lambda p: whole(p.relative_to(self.root).as_posix()), names_taken=names_taken)

    def split_note(self, name: str, dry_run: bool = False, check_quiet: bool = True) -> dict:
        """Split one note (or show the plan and diff with `dry_run`). Raises QueryError."""
        path = self.find_note(name)
        cfg = self.config.split
        try:
            if split.excluded(path, cfg):
                raise split.SplitError(f"{path} is excluded by split.exclude")
            plan = self._split_plan(path)
            result = {"note": path, "parts": plan.parts, "rewritten": plan.rewritten, "oversized": plan.oversized,
                      "files": [c.path for c in plan.changes]}
            if dry_run:
                return {**result, "dry_run": True, "diff": split.diff(plan)}
            self._writing()  # said first: on another host, no wait for quiet would help
            if check_quiet and not self._as_written(path):  # vaultd's own last write is no edit to wait out
                split.check_quiet(self.root, path, cfg.quiet)
            elif check_quiet and (busy := split.editor_busy(self.root, path)):
                raise split.SplitError(f"{path}: {busy}")
            for c in plan.changes:
                why = split.read_only(self.root, c.path) or split.editor_busy(self.root, c.path)
                if why:
                    raise split.SplitError(why if why.endswith("read-only") else f"{c.path}: {why}")
            entry = self._write(plan)
        except (split.SplitError, OSError) as e:
            raise QueryError(str(e)) from None
        self._kept_whole.pop(path, None)  # split by hand: the undo no longer speaks for it
        self._done[path] = entry["op"]
        self.state.grew(path, None)
        logger.info("split %s: %s into %d parts, %d links rewritten (undo: vaultq split --undo %s)",
                    entry["op"], path, len(plan.parts), plan.rewritten, entry["op"])
        return {**result, "op": entry["op"], "dry_run": False}

    def _as_written(self, path: str) -> bool:
        """Whether `path` is as vaultd itself last wrote it (a split, an undo)."""
        try:
            st = os.stat(self.root / path)
        except OSError:
            return False
        return as_written(self.state.state, path, st.st_mtime_ns, st.st_size)

    def _write(self, plan: split.Plan, kind: str = journal.SPLIT, mode: int | None = None) -> dict:
        """Apply a plan through the journal, note what vaultd wrote (not the user's activity),
        and index it. Returns the journal entry. `mode`: of the files it makes (see journal.apply)."""
        user = {}  # each file's time of change as the user left it: parts take the note's
        for c in plan.changes:
            n = self.notes.get(c.path)
            user[c.path] = changed_ns(self.state.state, c.path, n.mtime_ns, n.size) if n else 0
        note_ns = user.get(plan.note, 0)
        with self._split_lock:
            self._writing()
            entry = journal.apply(plan, self.root, self.journal, kind, mode)
        self._wrote([c.path for c in plan.changes], {p: ns or note_ns for p, ns in user.items()})
        return entry

    def _wrote(self, paths: list[str], user: dict[str, int]) -> None:
        for p in paths:
            try:
                st = os.stat(self.root / p)
            except FileNotFoundError:
                st = None
            self.state.wrote(p, st, user.get(p, 0))
        self.apply(paths)

    def split_all(self) -> dict:
        """Apply every proposal (`split_candidates()["over"]`), each through the journal.
        Notes an editor holds or that changed within `quiet` are skipped, with why."""
        cfg = self.config.split
        if elsewhere := self.config.writes_elsewhere():  # the same for every note: said once
            raise QueryError(f"{elsewhere}: only that host splits; nothing was split")
        done, skipped = [], []
        for path in sorted(self._stale):  # hubs saved whole again: the user's save wins
            op = self._resolve_stale(path, check_quiet=False)
            if op is not False:
                self._stale.discard(path)
            if op:
                done.append({"note": path, "op": op, "parts": [], "rewritten": 0, "stale": True})
            elif op is False:
                skipped.append({"note": path, "why": "an editor holds it"})
        for path in sorted(p for p, n in self.notes.items() if n.size > cfg.threshold):
            if split.excluded(path, cfg) or path in self._kept_whole or path in self._stale or path not in self.notes:
                continue  # not proposals (see split_candidates)
            try:
                res = self.split_note(path)  # planned and checked once, here
                done.append({"note": path, "op": res["op"], "parts": res["parts"], "rewritten": res["rewritten"]})
            except QueryError as e:
                skipped.append({"note": path, "why": str(e)})
        return {"split": done, "skipped": skipped}

    def split_history(self) -> dict:
        return {"history": [{"kind": e.get("kind", journal.SPLIT),
                             **{k: e.get(k) for k in ("op", "time", "note", "status", "parts", "rewritten", "oversized")},
                             **{k: e[k] for k in ("reason", "events", "entry") if e.get(k)}}
                            for e in self.journal.all()]}

    def split_undo(self, ops: list[str] | str | None = None, force: bool = False, every: bool = False) -> dict:
        """Undo operations, newest first: those named, or with `every` every done split
        (entries remembered are undone one by one, by their op)."""
        entries = self.journal.all()
        if every:
            ops = [e["op"] for e in entries if e.get("status") == "done" and e.get("kind") != journal.CAPTURE]
        ops = [ops] if isinstance(ops, str) else list(ops or [])
        if not ops:
            if every:
                return {"op": None, "undone": [], "restored": []}
            raise QueryError("split --undo: give an operation")
        undone, restored = [], []
        when = {e["op"]: e.get("time", 0) for e in entries}
        ops = sorted(dict.fromkeys(ops), key=lambda o: (when.get(o, 0), o), reverse=True)
        try:
            self._writing()
            appends = {op for op in ops if capture_journal.is_append(self.journal.load(op))}
            for op in appends:  # an entry's bytes unchanged in its note, or nothing is undone (--force or not)
                capture_journal.locate(self.root, self.journal.load(op))
            if not force:
                journal.undoable(self.root, self.journal, [op for op in ops if op not in appends])  # all or nothing
        except split.SplitError as e:
            raise QueryError(f"{e}; nothing was undone" if "nothing was changed" not in str(e) else str(e)) from None
        for op in ops:
            try:
                with self._split_lock:
                    entry = self.journal.load(op)
                    paths = [c["path"] for c in entry["files"]] or [entry["note"]]
                    user = {p: changed_ns(self.state.state, p, n.mtime_ns, n.size)
                            for p in paths if (n := self.notes.get(p))}
                    touched = capture_journal.undo(self.root, self.journal, entry) if op in appends else \
                        journal.undo(self.root, self.journal, op, force)
            except split.SplitError as e:
                if undone:
                    raise QueryError(f"{e} (undid {', '.join(undone)} before it)") from None
                raise QueryError(str(e)) from None
            note, kind = entry["note"], entry.get("kind", journal.SPLIT)
            if kind == journal.SPLIT:
                self._kept_whole[note] = op
                self._done.pop(note, None)
            elif kind == journal.STALE:  # a stale save's removal undone: the split stands again
                self._kept_whole.pop(note, None)
            if self.config.split.mode == "auto" and note in self._kept_whole:
                logger.info("undid split %s: auto-split leaves %s whole from now on (`vaultq split` splits it by hand)",
                            op, note)
            self._wrote(touched, user)
            undone.append(op)
            restored += touched
        return {"op": undone[0] if len(undone) == 1 else None, "undone": undone, "restored": restored}

    def _kept_why(self, path: str) -> str:
        op = self._kept_whole[path]
        try:
            stale = self.journal.load(op).get("kind") == journal.STALE
        except split.SplitError:
            stale = False
        why = f"it was saved whole over its hub ({op})" if stale else f"its split {op} was undone"
        return f"{why}: auto-split leaves it whole (`vaultq split` splits it by hand)"

    def _announce_split(self) -> None:
        cfg = self.config.split
        if elsewhere := self.config.writes_elsewhere():
            logger.warning("%s: vaultd here writes nothing into the vault: no split (on its own or when asked), no "
                           "undo, no remember; it indexes and answers (`vaultq split --list` still proposes)", elsewhere)
            return
        if folder := self.config.capture.folder:
            logger.warning("agent capture is on: `remember` appends agents' entries to the day's capture note in %s/ "
                           "(each undoable: `vaultq split --undo OP`); unset [capture] folder to turn it off", folder)
        over = sum(1 for n in self.notes.values() if n.size > cfg.threshold)
        if cfg.mode == "off":
            logger.info("auto-split is off: vaultd writes nothing into the vault (%d notes over %d bytes; "
                        "`vaultq split NOTE` splits one by hand)", over, cfg.threshold)
        elif cfg.mode == "propose":
            logger.info("auto-split proposes only: vaultd writes nothing into the vault on its own; %d notes are over "
                        "%d bytes (`vaultq split --list` shows them, `vaultq split --all` applies them)",
                        over, cfg.threshold)
        else:
            grown = sum(1 for p in self.state.state.grown if (n := self.notes.get(p)) and n.size > cfg.threshold)
            logger.warning("auto-split is on: a note that grows past %d bytes is split into a hub and parts once quiet "
                           "for %.0f s, one that grew while vaultd was stopped too (%d now: `vaultq split --list` "
                           "marks them auto; undo: `vaultq split --undo OP`, or `--undo --all`). Notes over it when "
                           "vaultd first saw them are left as they are: %d are proposed (`vaultq split --all` applies "
                           "them). `--split propose` or `off` turns this off",
                           cfg.threshold, cfg.quiet, grown, over - grown)

    def auto_split(self) -> list[str]:
        """Resolve stale saves over hubs, then, in `auto` mode, split every quiet, unlocked
        note that grew past the threshold while watched. Returns the ops."""
        cfg = self.config.split
        if self.graph is None:
            return []
        if not self._split_announced:
            self._split_announced = True
            self._announce_split()
        ops = []
        if cfg.mode == "auto" and self._may_write():  # propose and off never write on their own
            for path in list(self._stale):
                op = self._resolve_stale(path)
                if op is not False:
                    self._stale.discard(path)
                if op:
                    ops.append(op)
        if cfg.mode != "auto" or not self._may_write():
            return ops
        grown = self.state.state.grown
        todo = [(p, n) for p in list(grown) if (n := self.notes.get(p)) is not None and n.size > cfg.threshold
                and not split.excluded(p, cfg) and p not in self._kept_whole
                and self._split_skip.get(p, (None,))[0] != n.mtime_ns]
        for path, n in todo:
            try:
                split.check_quiet(self.root, path, cfg.quiet)
            except (split.SplitError, OSError):
                continue  # not yet: try again later
            try:
                ops.append(self.split_note(path)["op"])
            except QueryError as e:
                if isinstance(e.__context__, journal.Raced):  # a save landed while writing: tried again next pass
                    logger.info("split of %s waits: %s", path, e)
                    continue
                self._split_skip[path] = (n.mtime_ns, str(e))
                logger.warning("not splitting %s, which grew past %d bytes: %s", path, cfg.threshold, e)
        return ops

    def _resolve_stale(self, path: str, check_quiet: bool = True) -> str | None | bool:
        """The hub `path` changed: when it holds its parts' text again (an editor's stale
        buffer saved), remove the duplicate so the vault is what the user saved. Returns the
        op, None when there is nothing to resolve, False when not yet (not quiet)."""
        op = self._done.get(path)
        if op is None:
            return None
        try:
            if check_quiet:
                split.check_quiet(self.root, path, self.config.split.quiet)
            elif busy := split.editor_busy(self.root, path):
                raise split.SplitError(busy)
        except (split.SplitError, OSError):
            return False
        try:
            plan = split.stale_plan(self.journal.load(op), self.root)
            if plan is None:
                return None
            entry = self._write(plan, journal.STALE)
        except (split.SplitError, OSError) as e:  # left as it is; never split again on its own for it
            logger.warning("%s: %s", path, e)
            self.state.grew(path, None)
            if (n := self.notes.get(path)) is not None:
                self._split_skip[path] = (n.mtime_ns, str(e))
            return None
        self._done.pop(path, None)
        self._kept_whole[path] = entry["op"]
        self.state.grew(path, None)
        logger.warning("%s was saved with the text of its parts (an editor's buffer from before split %s): the user's "
                       "save wins; removed the %d parts it duplicated and put back %d rewritten notes "
                       "(%s; undo: vaultq split --undo %s)", path, op, sum(c.after is None for c in plan.changes),
                       sum(c.after is not None for c in plan.changes), entry["op"], entry["op"])
        return entry["op"]
