"""The systemd user units (units/vaultd.service, units/vaultd.socket; systemd/ links to
them) as `vaultd install-service` writes them for one vault: ExecStart this installation's
vaultd with the vault, ListenStream the socket vaultq looks for, ProtectSystem=strict
with the vault, state and socket folders writable. And what `vaultd check` asks systemd."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from .config import Config
from .paths import xdg_dir

UNITS = ("vaultd.service", "vaultd.socket")
UNIT_DIR = Path(__file__).with_name("units")


def unit_dir() -> Path:
    """Where a user's own units go: $XDG_CONFIG_HOME/systemd/user."""
    return xdg_dir("XDG_CONFIG_HOME", ".config") / "systemd" / "user"


def vaultd_command() -> list[str]:
    """This installation's vaultd, as an absolute path systemd can run: the `vaultd`
    script that runs now (pip install --user, uv tool, a venv), else the one beside this
    Python, else this Python with -m vaultd (each of them this very installation)."""
    me = Path(sys.argv[0])
    if me.name == "vaultd" and me.is_file() and os.access(me, os.X_OK):
        return [str(me.absolute())]
    beside = Path(sys.executable).with_name("vaultd")
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    return [sys.executable, "-P", "-m", "vaultd"]  # -P: this installation, not a vaultd/ in the folder it starts in


def quote(arg: str) -> str:
    """One word of a unit file's command line or path list: % and $ escaped (specifiers,
    variables), and in double quotes when it holds a space, quote or backslash."""
    arg = arg.replace("%", "%%").replace("$", "$$")
    if re.search(r'[\s"\'\\;]', arg) or not arg:
        arg = '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return arg


def _in_tmp(path: str) -> bool:
    return any(path == t or path.startswith(t + "/") for t in ("/tmp", "/var/tmp"))


def render(cfg: Config, command: list[str], flags: list[str], every: list[Config] | None = None) -> dict[str, str]:
    """The units for the loaded config `cfg`: ExecStart `command` run --vault VAULT + `flags`
    (the other options given to install-service, as given); for several vaults (`every`,
    config `vaults`), `command` run + `flags` (--config among them: the vaults are the
    config's), every vault and state folder writable."""
    every = every or [cfg]
    sock = Path(cfg.socket)
    runtime = os.environ.get("XDG_RUNTIME_DIR", "").rstrip("/")
    in_runtime = runtime and str(sock.parent) == runtime + "/vaultd"
    # ListenStream= takes the rest of its line as the path: specifiers escaped, never quoted
    listen = "%t/vaultd/" + sock.name.replace("%", "%%") if in_runtime else str(sock).replace("%", "%%")
    exec_start = " ".join(quote(a) for a in [*command, "run", *(["--vault", cfg.vault] if len(every) == 1 else []),
                                              *flags])
    paths = [p for c in every for p in (c.vault, c.state_dir)]
    writable = " ".join(quote("-" + p) for p in dict.fromkeys((*paths, str(sock.parent))))
    tmp = any(_in_tmp(p) for p in (*paths, str(sock)))
    head = (f"# Written by `vaultd install-service` for the vault{'s' if len(every) > 1 else ''} "
            f"{', '.join(c.vault for c in every)}; run it again after\n"
            "# changing the vault, its socket, or where vaultd is installed.\n")
    out = {}
    for name in UNITS:
        lines = []
        for line in (UNIT_DIR / name).read_text().splitlines():
            key = line.partition("=")[0]
            if key == "Environment" and line.startswith("Environment=PATH="):
                continue  # ExecStart is an absolute path
            if key == "ExecStart":
                line = f"ExecStart={exec_start}"
            elif key == "ListenStream":
                line = f"ListenStream={listen}"
            elif line == "ProtectSystem=full":
                line = f"ProtectSystem=strict\nReadWritePaths={writable}"
            elif key.startswith("RuntimeDirectory") and not in_runtime:
                line = f"# {line} left out: the socket is not in $XDG_RUNTIME_DIR/vaultd"
            elif line == "PrivateTmp=yes" and tmp:
                line = "# PrivateTmp= left out: the vault, state or socket is under /tmp"
            lines.append(line)
        out[name] = head + "\n".join(lines) + "\n"
    return out


def install(units: dict[str, str], where: Path) -> list[tuple[Path, str]]:
    """Write the units into `where`; each path with what happened (written, replaced,
    unchanged)."""
    where.mkdir(parents=True, exist_ok=True)
    done = []
    for name, text in units.items():
        p = where / name
        old = p.read_text() if p.is_file() else None
        if old != text:
            tmp = p.with_name(p.name + ".tmp")
            tmp.write_text(text)
            os.replace(tmp, p)
        done.append((p, "unchanged" if old == text else "written" if old is None else "replaced"))
    return done


def write_config(vault: str) -> Path:
    """A config file naming the vault, where vaultd looks for one ($XDG_CONFIG_HOME/vaultd/
    config.toml), for a user who has none: `vaultd check` and `vaultd mcp` then need no --vault."""
    import json

    path = xdg_dir("XDG_CONFIG_HOME", ".config") / "vaultd" / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# Written by `vaultd install-service`; every key: config.example.toml\nvault = {json.dumps(vault)}\n")
    return path


def systemctl(*args: str) -> str | None:
    """`systemctl --user ARGS`'s output, stripped; None where there is no systemctl or no
    user manager to ask (a container, a session without one)."""
    return _run("systemctl", "--user", *args)


def journal(unit: str, lines: int = 5) -> str | None:
    """The last lines vaultd logged to the journal; None where it cannot be read."""
    return _run("journalctl", "--user", "-u", unit, "-n", str(lines), "--no-pager", "-o", "short-iso")


def _run(*cmd: str) -> str | None:
    if shutil.which(cmd[0]) is None:
        return None
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if "Failed to connect to bus" in r.stderr or "No medium found" in r.stderr:
        return None
    return r.stdout.strip()


def units_state() -> dict | None:
    """What the user manager says of vaultd.service and vaultd.socket: for each, its unit
    file (None: not installed), whether it is enabled, its state and status text (the
    socket: where it listens); None where there is no user manager to ask. Where there is
    none, the unit files are looked for in the user's unit folder."""
    keys = "FragmentPath,UnitFileState,ActiveState,SubState,StatusText,Listen,ExecMainStatus,Result"
    out = {}
    for unit in UNITS:
        text = systemctl("show", unit, "-p", keys)
        if text is None:
            return None
        props = dict(line.partition("=")[::2] for line in text.splitlines())
        out[unit] = {
            "file": props.get("FragmentPath") or None,
            "enabled": props.get("UnitFileState") or "",
            "active": props.get("ActiveState") or "",
            "sub": props.get("SubState") or "",
            "status": props.get("StatusText") or "",
            "listen": props.get("Listen", "").partition(" ")[0],
            "result": props.get("Result") or "",
        }
    return out


def listen_path(unit_file: Path) -> str | None:
    """The path a socket unit file listens on (%t expanded as the user manager would)."""
    try:
        text = unit_file.read_text()
    except OSError:
        return None
    m = re.search(r"^ListenStream=(.+)$", text, re.M)
    if not m:
        return None
    runtime = os.environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}"
    return m.group(1).strip().strip('"').replace("%t", runtime).replace("%%", "%")
