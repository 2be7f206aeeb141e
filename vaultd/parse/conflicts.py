"""What is a sync tool's conflict copy of a note, and of which note: read from its file name
alone (pure; nothing is opened). The one home of these names: `problems` lists the copies,
search ranks or leaves them out ([search] conflict_copies), both through this module.

The names, as each tool writes them (NAME.EXT the note's):
  Syncthing          NAME.sync-conflict-YYYYMMDD-HHMMSS-DEVICE.EXT  (DEVICE: the short device
                     ID; absent from the oldest versions, and from Obsidian Sync's once)
  Dropbox            NAME (USER's conflicted copy YYYY-MM-DD).EXT, a second one that day
                     `... YYYY-MM-DD (1))`; in the app's other languages a word for conflict
                     and the date (German `in Konflikt stehende Kopie`)
  Maestral           NAME (conflicting copy).EXT
  Nextcloud/ownCloud NAME (conflicted copy [USER ]YYYY-MM-DD HHMMSS).EXT; older clients
                     NAME_conflict-YYYYMMDD-HHMMSS.EXT
  Obsidian Sync      NAME (Conflicted copy DEVICE YYYYMMDDHHMM).EXT
  git mergetool      NAME_LOCAL_PID.EXT (and _REMOTE_, _BASE_, _BACKUP_), left behind when it
                     is interrupted; NAME.EXT.orig, its backup (not a note by its extension)
A copy of a copy (`A.sync-conflict-X.sync-conflict-Y.md`) is a copy of the first note (A.md).
Names that say less (iCloud's `Note 2.md`, Google Drive's `Note (1).md`) are not taken for
copies: a person names notes that way too.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable

import msgspec


class ConflictCopy(msgspec.Struct, frozen=True):
    """A conflict copy (`path`) of the note `of`, both vault paths, as its name says."""

    path: str
    of: str
    tool: str
    """Which tool names copies so: Syncthing, Dropbox, Nextcloud, Obsidian Sync, git mergetool..."""
    when: str = ""
    """When the copy was made, as its name says it ("2025-01-02 10:11:12"); "" when it does not."""
    by: str = ""
    """The device, user or side (git's LOCAL) its name gives; "" when none."""

    def problem(self, present: bool) -> str:
        """The problem `problems` lists for this copy; `present`: whether its note is in the vault."""
        said = ", ".join(x for x in (self.tool, self.by and f"from {self.by}", self.when) if x)
        if present:
            return (f"a conflict copy of {self.of} ({said}): compare the two, keep what you want in {self.of}, "
                    "then delete this copy")
        return (f"a conflict copy of {self.of} ({said}), which is not in the vault (renamed or deleted since?): "
                "rename this copy back, or delete it")


_HINT = re.compile(r"\.sync-conflict-|_conflict-|\)(?:\.[^./]*)?$|_(?:LOCAL|REMOTE|BASE|BACKUP)_\d|\.orig$")
"""What every copy's name holds (see _read): names without it are none."""
_EXT = r"(?P<ext>\.[^./]+)?"
_SYNCTHING = re.compile(r"(?P<stem>.+)\.sync-conflict-(?P<d>\d{8})-(?P<t>\d{6})(?:-(?P<by>[^.]+))?" + _EXT)
_OWNCLOUD = re.compile(r"(?P<stem>.+)_conflict-(?P<d>\d{8})-(?P<t>\d{6})" + _EXT)
_MERGETOOL = re.compile(r"(?P<stem>.+)_(?P<by>LOCAL|REMOTE|BASE|BACKUP)_\d+" + _EXT)
_ORIG = re.compile(r"(?P<stem>.+\.[^./]+)\.orig")
_TAGGED = re.compile(r"(?P<stem>.+) \((?P<tag>(?:[^()]|\([^()]*\))+)\)" + _EXT)
"""A name ending in a parenthesised tag (with at most one pair of parentheses inside it)."""

_OBSIDIAN = re.compile(r"Conflicted copy (?P<by>.+) (?P<d>\d{8})(?P<t>\d{4})")
_NEXTCLOUD = re.compile(r"conflicted copy (?:(?P<by>.+) )?(?P<d>\d{4}-\d{2}-\d{2}) (?P<t>\d{6})", re.I)
_DROPBOX = re.compile(r"(?:(?P<by>.+?)['’]s )?conflicted copy(?: (?P<d>\d{4}-\d{2}-\d{2}))?(?: \(\d+\))?", re.I)
_MAESTRAL = re.compile(r"conflicting copy(?: \d+)?", re.I)
_ANY_ENGLISH = re.compile(r"\bconflict(?:ed|ing) copy\b", re.I)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATED = re.compile(r".* (?P<d>\d{4}-\d{2}-\d{2})(?: \(\d+\))?")
CONFLICT_WORDS = ("conflict", "konflikt", "conflit", "conflito", "çakış", "конфликт", "競合", "衝突", "冲突", "충돌")
COPY_WORDS = ("copy", "kopie", "copie", "copia", "cópia", "kopia", "kopi", "kopya", "копия", "コピー", "사본", "副本")
"""Words for conflict and for copy in Dropbox's languages (stems: `conflict` holds `conflicto`):
a tag that holds one of each and ends in a date is its copy, whatever the language."""


def conflict_copy(path: str) -> ConflictCopy | None:
    """The conflict copy `path` (a vault path) is, or None when its name is no copy's."""
    folder, name = posixpath.split(path)
    found = _read(name)
    if found is None:
        return None
    of, tool, when, by = found
    for _ in range(8):  # a copy of a copy: of the note the first was a copy of
        deeper = _read(of)
        if deeper is None:
            break
        of = deeper[0]
    return ConflictCopy(path, posixpath.join(folder, of), tool, when, by)


def copies(paths: Iterable[str]) -> dict[str, ConflictCopy]:
    """Every conflict copy among `paths`, by its path (a name that cannot be one is passed
    over by one search: 100,000 paths in tens of milliseconds)."""
    return {p: c for p in paths if _HINT.search(p) and (c := conflict_copy(p)) is not None}


def _read(name: str) -> tuple[str, str, str, str] | None:
    """(the note's file name, the tool, when, by) of a copy's file name, or None."""
    if ".sync-conflict-" in name and (m := _SYNCTHING.fullmatch(name)):
        return _named(m, "Syncthing" if m["by"] else "Syncthing or Obsidian Sync", _stamp(m["d"], m["t"]), m["by"])
    if "_conflict-" in name and (m := _OWNCLOUD.fullmatch(name)):
        return _named(m, "ownCloud/Nextcloud", _stamp(m["d"], m["t"]))
    if name.endswith(")", 0, len(name) - len(posixpath.splitext(name)[1])) and (m := _TAGGED.fullmatch(name)):
        return _tagged(m)
    if (m := _MERGETOOL.fullmatch(name)) is not None:
        return _named(m, "git mergetool", by=m["by"])
    if name.endswith(".orig") and (m := _ORIG.fullmatch(name)):
        return m["stem"], "git (a merge's backup)", "", ""
    return None


def _tagged(m: re.Match) -> tuple[str, str, str, str] | None:
    """A name with a parenthesised tag at its end: which tool's copy, if one's."""
    tag = m["tag"]
    if t := _OBSIDIAN.fullmatch(tag):
        d, hm = t["d"], t["t"]
        return _named(m, "Obsidian Sync", f"{d[:4]}-{d[4:6]}-{d[6:]} {hm[:2]}:{hm[2:]}", t["by"])
    if t := _NEXTCLOUD.fullmatch(tag):
        return _named(m, "Nextcloud", f"{t['d']} {t['t'][:2]}:{t['t'][2:4]}:{t['t'][4:]}", t["by"] or "")
    if t := _DROPBOX.fullmatch(tag):
        return _named(m, "Dropbox", t["d"] or "", t["by"] or "")
    if _MAESTRAL.fullmatch(tag):
        return _named(m, "Maestral (Dropbox)")
    if _ANY_ENGLISH.search(tag):
        return _named(m, "a sync tool", (d := _DATE.search(tag)) and d[0] or "")
    low = tag.casefold()
    if (t := _DATED.fullmatch(tag)) and any(w in low for w in CONFLICT_WORDS) and any(w in low for w in COPY_WORDS):
        return _named(m, "Dropbox", t["d"])
    return None


def _named(m: re.Match, tool: str, when: str = "", by: str | None = "") -> tuple[str, str, str, str]:
    return m["stem"] + (m["ext"] or ""), tool, when, by or ""


def _stamp(d: str, t: str) -> str:
    """YYYYMMDD and HHMMSS as `YYYY-MM-DD HH:MM:SS`."""
    return f"{d[:4]}-{d[4:6]}-{d[6:]} {t[:2]}:{t[2:4]}:{t[4:]}"
