"""Where things live: vault names, XDG folders, the default socket. Standard library only
(vaultq imports this, and must start fast)."""

from __future__ import annotations

import errno
import os
import stat
from functools import lru_cache
from pathlib import Path


def vault_name(vault: Path) -> str:
    """`<folder>-<hash>`: readable, and distinct for two vaults with the same folder name."""
    import hashlib  # here, not at the top: vaultq with --socket never needs it

    digest = hashlib.sha1(os.fsencode(vault)).hexdigest()[:8]
    return f"{vault.name or 'root'}-{digest}"


def xdg_dir(var: str, fallback: str) -> Path:
    val = os.environ.get(var)
    return Path(val) if val and os.path.isabs(val) else Path.home() / fallback


def runtime_dir() -> Path:
    """$XDG_RUNTIME_DIR/vaultd, else a private 0700 folder of the user's under the temp dir
    (where XDG_RUNTIME_DIR is unset, as under CI or cron)."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base and os.path.isabs(base):
        return Path(base) / "vaultd"
    return Path(os.environ.get("TMPDIR") or "/tmp") / f"vaultd-{os.getuid()}"


def default_socket(vault: Path) -> Path:
    return runtime_dir() / f"{vault_name(vault)}.sock"


def find_socket(cwd: Path) -> tuple[Path | None, list[Path]]:
    """The socket vaultq should use when none is given.

    The daemon of the vault holding `cwd` wins; else the only running one.
    Returns (socket or None, every socket seen) so the caller can explain.
    """
    rdir = runtime_dir()
    for d in (cwd, *cwd.parents):
        p = default_socket(d)
        if p.exists():
            return p, [p]
    try:
        seen = sorted(rdir.glob("*.sock"))
    except OSError:
        seen = []
    return (seen[0] if len(seen) == 1 else None), seen


@lru_cache(maxsize=8)
def _real(root: str) -> str:
    return os.path.join(os.path.realpath(root), "")


def open_note(root: str, rel: str) -> int:
    """A read-only descriptor for the regular file `rel` of the vault at `root`. OSError
    when it is gone, a symlink, not a regular file (opened without blocking: a FIFO put
    where a note was cannot hang the daemon), or outside the vault: a folder on its way
    swapped for a symlink after the vault was walked (the opened file's real path says)."""
    fd = os.open(os.path.join(root, rel), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        try:
            real = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # no /proc
            real = os.path.realpath(os.path.join(root, rel))
        if not real.startswith(_real(root)):
            raise OSError(errno.EXDEV, "a folder on its way is a symlink out of the vault")
        return fd
    except BaseException:
        os.close(fd)
        raise


def read_note(root: str, rel: str) -> bytes:
    """The bytes of the vault's file `rel`, opened as open_note opens it."""
    with open(open_note(root, rel), "rb") as f:
        return f.read()
