"""Where things live: vault names, XDG folders, the default socket. Standard library only
(vaultq imports this, and must start fast)."""

from __future__ import annotations

import os
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
