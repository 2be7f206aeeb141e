"""What is a note, and what is ignored: editor backups, locks, swap and temp files,
hidden and tool folders."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..parse.denote import is_text_note

logger = logging.getLogger("vaultd.filters")


class NoteFilter:
    """Callable on a vault-relative POSIX path: True for a note vaultd indexes: a file of one
    of the watched extensions, or a Denote plain-text note (`.txt` with a Denote name)."""

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
        return not (name.startswith(".") or name in self.ignore_dirs) and _utf8(name)

    def __call__(self, rel: str) -> bool:
        parts = rel.split("/")
        return all(self.dir_ok(p) for p in parts[:-1]) and self.name_ok(parts[-1])

    def name_ok(self, name: str) -> bool:
        if name.startswith(self.ignore_prefixes) or name.endswith(self.ignore_suffixes) or name in self.ignore_names:
            return False
        return (name.lower().endswith(self.extensions) or is_text_note(name)) and _utf8(name)

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
            except FileNotFoundError:  # gone since it was listed
                continue
            except OSError as e:  # unreadable (permissions): its notes are left out, and that is said
                if (d, e.errno) not in _warned:
                    _warned.add((d, e.errno))
                    logger.warning("folder %s cannot be read (%s): its notes are not indexed until it can be "
                                   "(the next full rescan, or a change in it, finds them)", d, e.strerror)
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


_warned: set = set()
"""What was said once: names that are not UTF-8, folders that cannot be read."""


def _utf8(name: str) -> bool:
    """Whether a file or folder name is valid UTF-8 (os gives the bytes of one that is not as
    surrogates). One that is not (a zip made on a CP949 or Latin-1 system) is left out, and
    said once: no link or query could name it, and it must not stop the rest."""
    if name.isascii():
        return True
    try:
        name.encode()
        return True
    except UnicodeEncodeError:
        if name not in _warned:
            _warned.add(name)
            logger.warning("%r: the name is not valid UTF-8; not indexed (rename it to index it)", name)
        return False
