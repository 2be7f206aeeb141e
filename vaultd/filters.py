"""What is a note, and what is ignored: editor backups, locks, swap and temp files,
hidden and tool folders."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path


class NoteFilter:
    """Callable on a vault-relative POSIX path: True for a note vaultd indexes."""

    ignore_dirs = (".git", ".obsidian", ".trash", ".stversions", "node_modules")
    # Emacs lock `.#x` and autosave `#x#`, vim `x~`/`.x.swp`/`4913`, sed/atomic writers' temps.
    ignore_prefixes = (".", "#")
    ignore_suffixes = ("~", ".swp", ".swx", ".swo", ".tmp", ".bak", "#")
    ignore_names = ("4913",)

    def __init__(self, extensions: Iterable[str] = (".md", ".org"), ignore_dirs: Iterable[str] | None = None):
        self.extensions = tuple(e.lower() for e in extensions)
        if ignore_dirs is not None:
            self.ignore_dirs = tuple(ignore_dirs)

    def dir_ok(self, name: str) -> bool:
        return not (name.startswith(".") or name in self.ignore_dirs)

    def __call__(self, rel: str) -> bool:
        parts = rel.split("/")
        return all(self.dir_ok(p) for p in parts[:-1]) and self.name_ok(parts[-1])

    def name_ok(self, name: str) -> bool:
        if name.startswith(self.ignore_prefixes) or name.endswith(self.ignore_suffixes) or name in self.ignore_names:
            return False
        return name.lower().endswith(self.extensions)

    def walk(self, root: Path, below: str = "") -> Iterator[tuple[str, os.stat_result]]:
        """Every note under `root/below`: (vault-relative path, lstat). Symlinks are not
        followed. Paths are built as strings on the way down (as pathlib objects, a
        10,000-note vault took 110 ms to walk)."""
        below = below.strip("/")
        if below and not all(self.dir_ok(p) for p in below.split("/")):
            return
        stack = [(os.path.join(root, below) if below else os.fspath(root), f"{below}/" if below else "")]
        while stack:
            d, prefix = stack.pop()
            try:
                entries = list(os.scandir(d))
            except OSError:
                continue
            for e in entries:
                try:
                    if e.is_dir(follow_symlinks=False):
                        if self.dir_ok(e.name):
                            stack.append((e.path, f"{prefix}{e.name}/"))
                    elif e.is_file(follow_symlinks=False) and self.name_ok(e.name):
                        yield prefix + e.name, e.stat(follow_symlinks=False)
                except OSError:
                    continue
