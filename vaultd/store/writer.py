"""The Vault's one writer: whether this vaultd may write into the vault (the host the config
names, the vault's writer lock), the journal it writes through, rolled back where a crash
left it half done each time the lock is taken, and what it wrote noted (the state file:
not the user's activity) and indexed. Splits, capture and rename write
through it; it knows no planning (store/journal.py writes the files)."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from .journal import Journal, SplitError, WriterLock
from .vault_state import VaultState

logger = logging.getLogger("vaultd.vault")

Recover = Callable[[Path, Journal], list[str]]
"""recover(vault, journal): what a crash left half done rolled back; the files restored."""


class Writer:
    """This vaultd's writes into the vault: at most one at a time (`lock`), only while it
    may write (`may_write`), each through `journal`, and each noted and indexed (`wrote`)."""

    def __init__(self, core: VaultState, index: Callable[[list[str]], object], recover: Iterable[Recover] = ()):
        self.core = core
        self.index = index
        """index(paths): the files written, read into the index (ingest's apply)."""
        self.recover = tuple(recover)
        """Each kind of entry's recovery (splits, remembered entries), run when the lock is taken."""
        self.journal = Journal(core.root, older=(core.state_dir / "split",))
        self.lock = threading.RLock()
        """One write into the vault at a time (a split, an undo, a remembered entry)."""
        self.vault_lock = WriterLock(core.root)
        """One vaultd of this machine writes into the vault."""
        self.on_taken: list[Callable[[], None]] = []
        """Called, under `lock`, each time the vault's lock is taken (after the recovery):
        what another vaultd wrote meanwhile is read anew (splits: the notes kept whole)."""
        self._taken = 0  # the vault lock's acquisitions seen (see may_write)

    @property
    def holds(self) -> bool:
        """Whether this vaultd holds the vault's writer lock now."""
        return self.vault_lock.fd is not None

    def may_write(self) -> bool:
        """Whether this vaultd may write into the vault (split, undo, remember): this is the
        host the config names (`[split] host`, if any: a vault synced between machines), and
        it holds the vault's writer lock (one vaultd of this machine at a time). Each time it
        takes the lock (at start, or when the vaultd that held it stopped), it first rolls
        back what a crash left half done and reads the journal anew (`on_taken`): the other
        one may have split or undone since. On another host it never takes the lock."""
        if self.core.config.writes_elsewhere():
            return False
        with self.lock:
            if not self.vault_lock.acquire():
                return False
            if self._taken != self.vault_lock.taken:
                self._taken = self.vault_lock.taken
                for rel in [rel for recover in self.recover for rel in recover(self.core.root, self.journal)]:
                    # a crash mid-split or mid-append: back to before
                    logger.warning("restored %s from the split journal", rel)
                for taken in self.on_taken:
                    taken()
            return True

    def check(self) -> None:
        """Raise SplitError unless this vaultd may write into the vault (see may_write)."""
        if not self.may_write():
            raise SplitError(f"{self.not_writing_why(pid=True)} (nothing was changed)")

    def not_writing_why(self, pid: bool = False) -> str:
        """Why this vaultd does not write into the vault, when may_write() says it does not:
        the config names another host, or another vaultd of this machine holds the lock (with
        `pid`: its pid, where /proc/locks tells)."""
        if elsewhere := self.core.config.writes_elsewhere():
            return f"{elsewhere}: only that host splits, undoes and remembers; this vaultd indexes and answers"
        holder = self.vault_lock.holder() if pid else None
        return (f"another vaultd{f' (pid {holder})' if holder else ''} writes into this vault: only it splits, "
                "undoes and remembers; this one indexes and answers")

    def wrote(self, paths: list[str], user: dict[str, int]) -> None:
        """Note that vaultd wrote `paths` (each as it is now, and when the user last changed
        it: `user`), then index them."""
        for p in paths:
            try:
                st = os.stat(self.core.root / p)
            except FileNotFoundError:
                st = None
            self.core.state.wrote(p, st, user.get(p, 0))
        self.index(paths)

    def release(self) -> None:
        """Let the vault's writer lock go (at close)."""
        self.vault_lock.release()
