"""Where things live: vault names, XDG folders, the default socket. Standard library only
(vaultq imports this, and must start fast)."""

from __future__ import annotations

import errno
import os
import stat
from functools import lru_cache
from pathlib import Path

from . import host


def vault_name(vault: Path) -> str:
    """`<folder>-<hash>`: readable, and distinct for two vaults with the same folder name."""
    import hashlib  # here, not at the top: vaultq with --socket never needs it

    digest = hashlib.sha1(os.fsencode(vault)).hexdigest()[:8]
    return f"{vault.name or 'root'}-{digest}"


def vault_labels(vaults: list[str]) -> list[str]:
    """Each vault's name in requests and answers (`vaultq --vault NAME`, a hit's `vault`):
    its folder's name; for folders of the same name, `<folder>-<hash>` (vault_name)."""
    names = [Path(v).name or "root" for v in vaults]
    return [n if names.count(n) == 1 else vault_name(Path(v)) for n, v in zip(names, vaults)]


def xdg_dir(var: str, fallback: str) -> Path:
    val = os.environ.get(var)
    return Path(val) if val and os.path.isabs(val) else Path.home() / fallback


SESSION_RUNTIME = "/run/user/{uid}"
"""Where systemd-logind keeps the user's runtime folder, the XDG_RUNTIME_DIR of a login."""


def runtime_dir() -> Path:
    """$XDG_RUNTIME_DIR/vaultd; where that is unset, the user's login runtime folder when
    there is one (an MCP client starts `vaultd mcp` with a trimmed environment, while the
    systemd unit's daemon has the variable: both end up in the same folder), else a private
    0700 folder of the user's under the temp dir (CI, cron, no login session)."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base and os.path.isabs(base):
        return Path(base) / "vaultd"
    session = Path(SESSION_RUNTIME.format(uid=os.getuid()))
    if session.is_dir() and os.access(session, os.W_OK | os.X_OK):
        return session / "vaultd"
    return Path(os.environ.get("TMPDIR") or "/tmp") / f"vaultd-{os.getuid()}"


def default_socket(vault: Path) -> Path:
    return runtime_dir() / f"{vault_name(vault)}.sock"


def runtime_dirs() -> list[Path]:
    """Every folder a vaultd of this user may listen in, runtime_dir() first: the login's
    runtime folder (the systemd unit's) and the temp-dir one too, so that a client run with
    another XDG_RUNTIME_DIR (an agent's sandbox, cron) finds a daemon that runs. Only
    folders that are this user's and that no one else can write into."""
    uid = os.getuid()
    dirs = dict.fromkeys((runtime_dir(), Path(SESSION_RUNTIME.format(uid=uid)) / "vaultd",
                          Path(os.environ.get("TMPDIR") or "/tmp") / f"vaultd-{uid}", Path("/tmp") / f"vaultd-{uid}"))
    mine = []
    for d in dirs:
        try:
            st = d.stat()
        except OSError:
            continue
        if st.st_uid == uid and not st.st_mode & 0o022:
            mine.append(d)
    return mine


def find_socket(cwd: Path) -> tuple[Path | None, list[Path]]:
    """The socket of the daemon of the vault holding `cwd`, looked for in every runtime
    folder (see runtime_dirs), or None; and every socket seen (for pick_socket)."""
    dirs = runtime_dirs()
    for d in (cwd, *cwd.parents):
        name = f"{vault_name(d)}.sock"
        for r in dirs:
            if (r / name).exists():
                return r / name, [r / name]
    return None, [s for r in dirs for s in _sockets(r)]


def vault_socket(vault: Path) -> Path:
    """Where the daemon of `vault` listens: its socket in the first runtime folder that has
    it, else where it would be (default_socket)."""
    name = f"{vault_name(vault)}.sock"
    return next((r / name for r in runtime_dirs() if (r / name).exists()), default_socket(vault))


def pick_socket(socket: str | None = None, vault: str | None = None, cwd: str | None = None) -> str:
    """The socket a client (vaultq, the MCP server, the LSP) should use: `socket`, then
    $VAULTD_SOCKET, then the daemon of the folder `vault`, then that of the vault around
    `cwd` (the current folder by default); else the running daemons are asked which vaults
    they serve (a daemon of several listens on the first one's socket): the one serving
    `vault` (a folder, or a name) or `cwd`; else the only one running, unless the folder
    asked about is a vault of its own (given as `vault`, or around `cwd` with vaultd's
    state or split journal): its daemon is down, and another vault's must not answer for
    it (writes included). Raises DaemonUnavailable, saying how to start or choose one."""
    from .errors import DaemonUnavailable

    if socket:
        return socket
    if os.environ.get("VAULTD_SOCKET"):
        return os.environ["VAULTD_SOCKET"]
    folder = Path(vault).expanduser().resolve() if vault and ("/" in vault or vault.startswith((".", "~"))
                                                           or Path(vault).is_dir()) else None
    if folder is not None and folder.is_dir():
        own = vault_socket(folder)
        if own.exists():
            return str(own)
    here = Path(cwd) if cwd else Path.cwd()
    if folder is None:
        found, seen = find_socket(here)
        if found:
            return str(found)
    else:
        seen = [s for r in runtime_dirs() for s in _sockets(r)]
    served = {s: r for s in seen if (r := _served(s)) is not None}
    want = folder or here.resolve()
    for s, roots in served.items():
        if any(want == Path(r) or Path(r) in want.parents for r in roots):
            return str(s)
    if vault and folder is None:  # a vault's name: the daemon that serves a vault of that name
        named = [s for s, roots in served.items() if any(Path(r).name == vault for r in roots)] or \
            (list(served) if len(served) == 1 else [])
        if len(named) == 1:
            return str(named[0])
    own_vault = folder or known_vault(here)
    running = "".join(f"\n  {s}" + (f" (serves {', '.join(r)})" if r else "") for s, r in served.items())
    if own_vault is not None:
        where = vault_socket(own_vault) if own_vault.is_dir() else default_socket(own_vault)
        raise DaemonUnavailable(str(where), "not running", (
            f"no vaultd serves {own_vault}" + ("" if own_vault.is_dir() else " (no such folder)")
            + (f"; start it: vaultd run --vault {own_vault} (or systemctl --user start vaultd)" if own_vault.is_dir()
               else "") + (f"\nvaultd runs for other vaults (--socket PATH asks one):{running}" if served else "")))
    if len(served) == 1:
        return str(next(iter(served)))
    if served:
        raise DaemonUnavailable("(several sockets)", "several", "no vaultd runs for this folder's vault, and "
                                f"{len(served)} others do; pick one with --vault DIR or --socket PATH:{running}")
    looked = ", ".join(map(str, runtime_dirs())) or "none of them exists"
    raise DaemonUnavailable(str(default_socket(here)), f"no vaultd is running; looked in {looked}")


def _sockets(folder: Path) -> list[Path]:
    try:
        return sorted(folder.glob("*.sock"))
    except OSError:
        return []


def _served(sock: Path) -> list[str] | None:
    """The vault folders the daemon on `sock` serves (its `ping`); [] when it does not say
    in time (a socket systemd holds while the daemon starts); None when nothing listens (a
    stale socket file)."""
    from .client import Client, RequestFailed
    from .errors import DaemonUnavailable

    try:
        c = Client(str(sock), timeout=3.0)
    except DaemonUnavailable:
        return None
    with c:
        try:
            res = c.request("ping")
            return [str(r) for r in res.get("vaults") or [res["vault"]]]
        except (DaemonUnavailable, RequestFailed, OSError, ValueError, KeyError, TypeError, AttributeError):
            return []


def known_vault(here: Path) -> Path | None:
    """The folder around `here` that vaultd knows as a vault: one with its split journal
    (`.vaultd/`), or an index in the default state folder; else None."""
    state = xdg_dir("XDG_STATE_HOME", ".local/state") / "vaultd"
    for d in (here, *here.parents):
        if (d / ".vaultd" / "split").is_dir() or (state / vault_name(d)).is_dir():
            return d
    return None


def shown(root: str, mode: str):
    """How a vault path is shown to an asker (see protocol.Request.paths): None for "vault"
    (as it is), else a function of the vault path: absolute, or relative to the asker's
    folder `mode` when that is inside the vault."""
    if mode == "vault":
        return None
    if mode != "absolute" and (mode == root or mode.startswith(root.rstrip("/") + "/")):
        return lambda rel: os.path.relpath(os.path.join(root, rel), mode)
    return lambda rel: os.path.join(root, rel)


PATH_KEYS = frozenset(("path", "note", "from", "resolved", "candidates", "added", "changed", "deleted", "moved", "parts",
                       "files", "restored", "edges", "to"))
"""Keys whose values are vault paths (a string, a list of them, or a list of pairs), in
every answer: each is shown as the asker wants (see `shown`); anything else under them
(`changed: true` of a pin) is left as it is."""


def show_paths(obj, show, key: str | None = None):
    """`obj` (an answer) with the vault path under every PATH_KEYS key given by `show`."""
    if isinstance(obj, dict):
        return {k: show_paths(v, show, k) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [show_paths(v, show, key) for v in obj]
    if isinstance(obj, str) and key in PATH_KEYS:
        return show(obj)
    return obj


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
        real = _opened(fd, root, rel)
        if not real.startswith(_real(root)):
            raise OSError(errno.EXDEV, "a folder on its way is a symlink out of the vault")
        return fd
    except BaseException:
        os.close(fd)
        raise


def _opened(fd: int, root: str, rel: str) -> str:
    """The real path of the file `fd` (opened at root/rel): what /proc/self/fd says where host
    has `proc_fd`, else (or when /proc cannot tell) the path's realpath."""
    if host.has("proc_fd"):
        try:
            return os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # no /proc after all
            pass
    return os.path.realpath(os.path.join(root, rel))


def cut(data: bytes, cap: int) -> bytes:
    """The head of a file longer than `cap` bytes, cut as parse_lines cuts it: after the
    last newline in its first `cap` bytes (whole lines only), else at `cap`."""
    return data[: data.rfind(b"\n", 0, cap) + 1 or cap]


def read_head(root: str, rel: str, cap: int) -> tuple[bytes, int]:
    """The vault's file `rel` (opened as open_note opens it) as far as the size cap, and its
    size. A file over `cap` bytes is cut (see `cut`), and then its size is more than the
    bytes returned: that is how a caller knows. Never more than cap + 1 bytes are read: a
    file bigger than memory (a sparse 64 GB file) read whole stopped the whole index."""
    with open(open_note(root, rel), "rb") as f:
        size = os.fstat(f.fileno()).st_size
        data = f.read(min(size, cap) + 1)  # read(n) takes n bytes first: the file's size, not the cap
        if size < len(data) <= cap:  # it grew since: on up to the cap
            data += f.read(cap + 1 - len(data))
    return (cut(data, cap), max(size, len(data))) if len(data) > cap else (data, len(data))


BLOCK = 1 << 16
"""Bytes read at a time when only a file's first lines are wanted."""

LINE = 1 << 12
"""Bytes read first for one line, from where it begins: most lines fit."""


def read_at(root: str, rel: str, starts: list[int], cap: int, size: int | None = None) -> dict[int, bytes] | None:
    """The lines of the vault's file `rel` that begin at the byte offsets `starts` (each
    without its LF; a line is cut at the size cap `cap`), read from there alone; None when
    the file is no longer `size` bytes long or one of them no longer begins a line (the
    file changed since the offsets were taken)."""
    out = {}
    with open(open_note(root, rel), "rb", buffering=0) as f:
        fd = f.fileno()
        if size is not None and os.fstat(fd).st_size != size:
            return None
        for at in starts:
            if at >= cap or (at and os.pread(fd, 1, at - 1) != b"\n"):
                return None
            blocks, got, want = [], 0, LINE
            while at + got < cap:
                block = os.pread(fd, min(want, cap - at - got), at + got)
                end = block.find(b"\n")
                if end >= 0 or not block:
                    blocks.append(block[:end] if end >= 0 else block)
                    break
                blocks.append(block)
                got, want = got + len(block), BLOCK
            out[at] = b"".join(blocks)
    return out


def read_lines(root: str, rel: str, cap: int, lines: int) -> bytes:
    """As read_head, but reading stops once the file's first `lines` lines are in (the bytes
    may end inside a later line): a line's text wanted from a big file reads only as far as
    that line. Line ends count as decode counts them: a lone CR ends a line too."""
    blocks, got, lf, cr = [], 0, 0, 0
    with open(open_note(root, rel), "rb") as f:
        while max(lf, cr) < lines and got <= cap:  # each line holds at most one LF and one CR of its end
            block = f.read(min(BLOCK, cap + 1 - got))
            if not block:
                break
            blocks.append(block)
            got, lf, cr = got + len(block), lf + block.count(b"\n"), cr + block.count(b"\r")
    data = b"".join(blocks)
    return cut(data, cap) if len(data) > cap else data
