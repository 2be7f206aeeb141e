"""`vaultd`: run the daemon, build the index once, show what a file parses to.

One error boundary (`main`): configuration errors exit 2, a daemon that cannot
start because another one holds the socket or index exits 3, other vaultd
errors exit 1. Tracebacks only at --log-level debug.
"""

from __future__ import annotations

import logging
import os
import stat
import sys
from pathlib import Path
from typing import NamedTuple

import click

from . import ops
from .config import SPLIT_MODES, Config, default_config_path
from .errors import ConfigError, IndexLocked, SocketInUse, VaultdError

EXIT_CONFIG = 2
EXIT_UNAVAILABLE = 3

_common = [
    click.option("--config", "config_path", type=click.Path(dir_okay=False), help="TOML config file [VAULTD_CONFIG]."),
    click.option("--vault", type=click.Path(file_okay=False), help="The vault folder [VAULTD_VAULT]."),
    click.option("--state-dir", type=click.Path(file_okay=False), help="Where the index lives [VAULTD_STATE_DIR]."),
    click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), help="Log verbosity."),
]


def common(f):
    for opt in reversed(_common):
        f = opt(f)
    return f


def load_configs(config_path, missing_ok: bool = False, **flags) -> list[Config]:
    """Each vault's loaded config (one, unless the config lists `vaults`; `missing_ok`: see
    Config.load_all)."""
    path = Path(config_path) if config_path else default_config_path()
    cfg = Config.from_file(path).with_overrides(**flags)
    try:
        return cfg.load_all(missing_ok)
    except ConfigError as e:
        e.path = e.path or (str(path) if path else None)
        raise


def setup_logging(level: str) -> None:
    logging.basicConfig(
        level=getattr(logging, level.upper()),
        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
        stream=sys.stderr,
    )


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="vaultd")
def cli():
    """vaultd keeps a live index of a Denote/Org/Markdown vault and answers `vaultq`."""


_split_option = click.option(
    "--split", type=click.Choice(SPLIT_MODES),
    help="Auto-split: auto splits notes that grow past the threshold while vaultd runs and only "
         "proposes those already over it; propose only proposes; off neither [VAULTD_SPLIT; config: split.mode].")


@cli.command()
@common
@click.option("--socket", help="Unix socket path [VAULTD_SOCKET].")
@_split_option
def run(config_path, vault, state_dir, log_level, socket, split):
    """Run the daemon in the foreground (systemd: Type=notify)."""
    every = load_configs(config_path, missing_ok=True, vault=vault, state_dir=state_dir, log_level=log_level,
                         socket=socket, split=split)  # of several vaults, one not there is served once it is
    cfg = every[0]
    setup_logging(cfg.log_level)
    import msgspec

    from .server import Server, listen_fds

    passed = listen_fds()
    if passed is not None:  # socket activation: serve where systemd listens, whatever the config says
        if passed.getsockname() != cfg.socket:
            logging.getLogger("vaultd").info("systemd passed the socket %s (the config's is %s): serving on it",
                                             passed.getsockname(), cfg.socket)
        every = [msgspec.structs.replace(c, socket=passed.getsockname()) for c in every]
        cfg = every[0]
    vaultq = Path(sys.executable).with_name("vaultq")
    logging.getLogger("vaultd").info(
        "starting on %s; once it serves, try: %s --socket %s search WORD",
        ", ".join(cfg.vaults), vaultq if vaultq.exists() else "vaultq", cfg.socket,
    )
    os.umask(0o077)  # the index, state and journal it makes are its owner's alone (parts: see store.journal.apply)
    try:
        Server(cfg, passed, every).run()
    except IndexLocked as e:  # another vaultd serves this vault: say where, when it listens elsewhere
        from .paths import vault_socket

        there = vault_socket(Path(cfg.vault))
        if there.exists() and str(there) != cfg.socket:
            raise IndexLocked(f"{e}: a vaultd serves this vault on {there} (another XDG_RUNTIME_DIR); "
                              "vaultq finds it there, no need to start another") from None
        raise


@cli.command()
@common
def index(config_path, vault, state_dir, log_level):
    """Build or update the index and the link graph once (of each vault, with `vaults`), with a progress bar,
    and exit."""
    every = load_configs(config_path, vault=vault, state_dir=state_dir, log_level=log_level)
    # Quieter than the daemon by default: the progress bar says what matters.
    setup_logging(log_level or ("warning" if every[0].log_level == "info" else every[0].log_level))
    os.umask(0o077)  # as `run`
    for cfg in every:
        _index(cfg)


def _index(cfg: Config) -> None:
    from .vault import Vault

    v = Vault(cfg)
    bar = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = click.progressbar(length=total, label="indexing", file=sys.stderr)
            bar.__enter__()
        bar.update(1)

    try:
        try:
            up, gone = v.reconcile(progress=progress, graph=False)
        finally:
            if bar is not None:
                bar.__exit__(None, None, None)
        v.build_graph()  # and saved: the first `vaultd run` loads it as a restart does
    finally:
        v.close()
    click.echo(f"{len(v.notes)} notes indexed ({up} parsed, {gone} removed) in {cfg.state_dir}")


@cli.command()
@common
@click.option("--socket", help="Unix socket path [VAULTD_SOCKET].")
@_split_option
def check(config_path, vault, state_dir, log_level, socket, split):
    """Check the config, the vault, the daemon and its systemd units; say the next command
    to run; exit 1 if something is wrong (the daemon down, edits it cannot index, a vault it
    cannot watch whole, a unit that failed)."""
    from .paths import known_vault

    if not vault and not os.environ.get("VAULTD_VAULT"):
        given = Config.from_file(Path(config_path) if config_path else default_config_path())
        if not (given.vault or given.vaults) and (around := known_vault(Path.cwd())) is not None:
            vault = str(around)  # asked from inside a vault vaultd knows, as vaultq finds it
    loaded = load_configs(config_path, missing_ok=True, vault=vault, state_dir=state_dir, log_level=log_level,
                          socket=socket, split=split)
    cfg = loaded[0]
    from .vault import check_semantic

    check_semantic(cfg)  # as `run` would refuse to start: a config error
    # what names this vault (these vaults) to the commands suggested: several are the config file's
    which = f" --vault {cfg.vault}" if len(loaded) == 1 else f" --config {config_path}" if config_path else ""
    ok = _check_setup(cfg, loaded, config_path)
    units = _check_units(cfg, which)
    ok, nxt = _check_daemon(cfg, loaded, which, units, ok)
    click.echo(f"next:      {nxt}")
    sys.exit(0 if ok else 1)


def _check_setup(cfg: Config, loaded: list[Config], config_path) -> bool:
    """`check`'s lines on the config, each vault and its index, split, capture and the writing
    host; False when a vault's folder is not there."""
    from .ingest.filters import NoteFilter
    from .paths import vault_labels
    from .store.index import SCHEMA_VERSION

    ok = True
    click.echo(f"config:    ok ({config_path or default_config_path() or 'defaults'})")
    for name, c in zip(vault_labels(cfg.vaults), loaded):  # config `vaults`: each one
        if not os.path.isdir(c.vault):
            click.echo(f"vault:     {c.vault} NOT THERE (--vault {name}): vaultd serves the others, and this one "
                       "once its folder appears")
            ok = False
            continue
        notes = sum(1 for _ in NoteFilter(c.watch.extensions, c.watch.ignore_dirs).walk(Path(c.vault)))
        click.echo(f"vault:     {c.vault} ({notes} notes" + (f"; --vault {name})" if len(loaded) > 1 else ")"))
        stamp = Path(c.state_dir) / "index" / "VERSION"
        version = stamp.read_text().strip() if stamp.exists() else None
        state = "none yet (built at first start)" if version is None else (
            "ok" if version == str(SCHEMA_VERSION) else f"schema {version}, will be rebuilt to {SCHEMA_VERSION}")
        click.echo(f"index:     {Path(c.state_dir) / 'index'}: {state}")
    click.echo(f"split:     {cfg.split.mode}: " + {
        "auto": f"notes that grow past {cfg.split.threshold} bytes while vaultd runs are split once quiet; "
                "notes already over it are only proposed (`vaultq split --list`)",
        "propose": "vaultd never writes into the vault on its own; `vaultq split --list` proposes",
        "off": "vaultd never writes into the vault on its own"}[cfg.split.mode])
    click.echo("capture:   " + (f"on: an agent's `remember` appends to the day's capture note in {cfg.capture.folder}/ "
                                "(undo: `vaultq undo OP`)" if cfg.capture.folder else
                                "off: `remember` is refused ([capture] folder turns it on)"))
    if want := cfg.split.host or cfg.capture.host:  # a synced vault: one machine writes
        elsewhere = cfg.writes_elsewhere()
        click.echo(f"host:      {elsewhere}: vaultd here writes nothing into the vault (no split, undo or "
                   "remember); it indexes and answers" if elsewhere else
                   f"host:      {want}, this machine, is the one that writes into this vault; vaultd elsewhere "
                   "indexes and answers")
    return ok


class _Units(NamedTuple):
    """What `check` learned of the systemd units: the command to run next (if one failed or
    listens elsewhere), that failure's command, whether a user manager answered, whether
    vaultd.service is installed."""

    nxt: str | None
    failed: str | None
    manager: bool
    installed: bool


def _check_units(cfg: Config, which: str) -> _Units:
    """`check`'s lines on the units: installed, enabled, running (from the user manager, else
    from the files), and the socket unit's listening path against this vault's."""
    from . import service

    nxt = failed = None
    units = service.units_state()
    files = {u: service.unit_dir() / u for u in service.UNITS}
    svc, sck = (units or {}).get("vaultd.service"), (units or {}).get("vaultd.socket")
    if units is None:
        found = [str(f) for f in files.values() if f.is_file()]
        click.echo("systemd:   no user manager to ask here (systemctl --user); unit files: "
                   + (", ".join(found) or f"none in {service.unit_dir()}"))
    else:
        for unit, st in units.items():
            if not st["file"]:
                click.echo(f"{unit + ':':<10} not installed")
                continue
            what = f"{st['enabled'] or '?'}, {st['active']} ({st['sub']})"
            extra = f", listening on {st['listen']}" if st["listen"] else f": {st['status']}" if st["status"] else ""
            click.echo(f"{unit + ':':<10} {what}{extra} [{st['file']}]")
        if svc["active"] == "failed" or svc["result"] not in ("", "success"):
            nxt = failed = "journalctl --user -u vaultd -e   # why it failed; then: systemctl --user restart vaultd"
        log = service.journal("vaultd.service")
        if log and svc["file"]:
            click.echo("log:       " + "\n           ".join(log.splitlines()[-5:]))
    listen = (sck or {}).get("listen") or service.listen_path(files["vaultd.socket"])
    if listen and listen != cfg.socket:
        click.echo(f"           vaultd.socket listens on {listen}, not on {cfg.socket} (this vault's): "
                   "vaultq --vault will not find it")
        nxt = nxt or f"vaultd install-service{which}   # units for this vault, then daemon-reload"
    installed = bool(svc and svc["file"]) or (units is None and files["vaultd.service"].is_file())
    return _Units(nxt, failed, units is not None, installed)


def _check_daemon(cfg: Config, loaded: list[Config], which: str, units: _Units, ok: bool) -> tuple[bool, str]:
    """`check`'s lines on the socket, as a client finds it and as the daemon says it is, and
    the command to run next; `ok` as it stands after them."""
    import json
    import socket as so

    from .paths import runtime_dirs, vault_socket

    nxt = units.nxt
    client = cfg.socket if Path(cfg.socket).exists() else str(vault_socket(Path(cfg.vault)))
    click.echo(f"socket:    {cfg.socket} (where `vaultd run` listens from here)")
    if client != cfg.socket:
        click.echo(f"           {client} (where vaultq finds this vault's daemon)")
    try:
        with so.socket(so.AF_UNIX) as s:
            s.settimeout(5)
            s.connect(client)
            s.sendall(b'{"op":"status"}\n')
            st = json.loads(s.makefile("rb").readline())["result"]
    except OSError as e:
        looked = ", ".join(map(str, runtime_dirs())) or "no runtime folder exists"
        click.echo(f"daemon:    not running on {client} ({e.strerror or e}); looked in {looked}")
        if nxt is None:
            if units.installed:
                nxt = "systemctl --user enable --now vaultd.socket vaultd.service"
            elif units.manager:
                nxt = (f"vaultd install-service{which} && systemctl --user daemon-reload && "
                       "systemctl --user enable --now vaultd.socket vaultd.service")
            else:
                nxt = f"vaultd run{which}"
        return False, nxt
    if units.failed and nxt == units.failed:  # it failed before, and runs now (started again by its socket or by hand)
        nxt = None
    ok = _echo_daemon(st, cfg, loaded, client, ok, again=nxt is None and units.failed is not None)
    nxt = nxt or ("vaultq status   # the first index is being built" if st.get("indexing") else
                  f"vaultq --vault {cfg.vault} search WORD" if len(loaded) == 1 else "vaultq search WORD")
    return ok, nxt


def _echo_daemon(st: dict, cfg: Config, loaded: list[Config], client: str, ok: bool, again: bool) -> bool:
    """`check`'s lines on the running daemon's status `st` (`again`: its unit shows an earlier
    failure); `ok` as it stands after them."""
    broken = "broken links not counted yet (the link graph is loading)" if st.get("broken") is None else \
        f"{st['broken']} broken links"
    click.echo(f"daemon:    running, pid {st['pid']}, {st['notes']} notes, {st['pending']} pending, {broken}"
               + (" (first index being built)" if st.get("indexing") else ""))
    if st.get("problems"):  # notes read in part or not at all: bad front matter, bytes, unreadable files
        n = st["problems"]
        click.echo(f"           {n} note{'s' if n != 1 else ''} with problems (`vaultq problems` lists them and why)")
    if again:
        click.echo("           running again after the failure the unit shows (its log says why)")
    if st.get("socket") and st["socket"] != client:
        click.echo(f"           it says its socket is {st['socket']}")
    if client != cfg.socket:
        click.echo(f"           not where `vaultd run` would listen from here (XDG_RUNTIME_DIR differs): "
                   "do not start another; vaultq finds this one")
    served = [v["vault"] for v in st.get("vaults", ())] or [st.get("vault")]
    if len(served) > 1:
        click.echo("           serving " + ", ".join(
            f"{v['name']} ({v['vault']}, " + ("not there: served once its folder appears)" if v.get("waiting") else
                                              f"{v['notes']} notes" + (", first index being built)" if v["indexing"]
                                                                       else ")"))
            for v in st["vaults"]))
    if st.get("vault") and sorted(map(os.path.realpath, served)) != sorted(map(os.path.realpath, cfg.vaults)):
        click.echo(f"           it serves {', '.join(served)}, not {', '.join(cfg.vaults)}"
                   + (" (restart it to serve the config's vaults)" if len(loaded) > 1 or len(served) > 1 else ""))
        ok = False
    if st.get("split_mode") and st["split_mode"] != cfg.split.mode:
        click.echo(f"           it runs with split mode {st['split_mode']} (the line above is this check's own)")
    if st.get("writer") is False:
        click.echo("           " + (st.get("writer_why") or "another vaultd writes into this vault (splits, undo); "
                                                               "this one indexes and answers"))
    if st.get("last_error"):
        click.echo(f"indexing:  failed ({st['last_error']}); {st['pending']} changed files kept and retried")
        ok = not st["pending"]
    w = st.get("watch")
    if w and not w["ok"]:
        click.echo(f"watch:     DEGRADED: {w['problem']}")
        ok = False
    elif w:
        counted = f"{w['watched']} of {w['folders']} folders watched" if w["watched"] is not None else \
            f"{w['folders']} folders (the watches cannot be counted without /proc)"
        every = f"; a full rescan every {w['rescan_every']:g} s" if w["rescan_every"] else ""
        click.echo(f"watch:     ok, {counted}{every}")
    return ok


@cli.command("install-service")
@common
@click.option("--socket", help="Unix socket path [VAULTD_SOCKET].")
@_split_option
@click.option("--dir", "unit_dir", type=click.Path(file_okay=False),
              help="Write the units here (default: ~/.config/systemd/user).")
@click.option("--dry-run", is_flag=True, help="Print the units; write nothing.")
def install_service(config_path, vault, state_dir, log_level, socket, split, unit_dir, dry_run):
    """Write the systemd user units vaultd.service and vaultd.socket for this vault and this
    installation of vaultd (ExecStart its absolute path; ListenStream the socket vaultq looks
    for), and print the systemctl commands that start them."""
    from . import service

    every = load_configs(config_path, vault=vault, state_dir=state_dir, log_level=log_level, socket=socket, split=split)
    cfg = every[0]
    if len(every) > 1:  # the vaults are the config file's: the unit names it, wherever it was found
        config_path = config_path or default_config_path()
    flags = [w for flag, val in (("--config", config_path and str(Path(config_path).absolute())),
                                 ("--state-dir", state_dir and (cfg.state_dir if len(every) == 1 else
                                                                str(Path(state_dir).expanduser().absolute()))),
                                 ("--socket", socket and cfg.socket),
                                 ("--split", split), ("--log-level", log_level)) if val for w in (flag, val)]
    units = service.render(cfg, service.vaultd_command(), flags, every)
    if dry_run:
        for name, text in units.items():
            click.echo(f"# ---- {name}\n{text}")
        return
    where = (Path(unit_dir).expanduser().absolute() if unit_dir else service.unit_dir())
    for c in every:  # the vault is the user's: no unit file goes into it
        if Path(c.vault) in (where.resolve(), *where.resolve().parents):
            raise click.UsageError(f"--dir {where} is inside the vault {c.vault}: vaultd writes nothing there")
    try:
        done = service.install(units, where)
    except OSError as e:
        raise click.UsageError(f"cannot write the units into {where}: {e.strerror or e}") from None
    for path, what in done:
        click.echo(f"{what}: {path}")
    from .store.state import make_private

    for c in every:  # ReadWritePaths= opens only what exists when the unit starts: a first start needs it
        make_private(Path(c.state_dir))
    Path(cfg.socket).parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    if not config_path and default_config_path() is None:  # so that vaultd check, mcp, index know the vault too
        conf = service.write_config(cfg.vault)
        click.echo(f"written: {conf} (vault = {cfg.vault!r})")
    click.echo(f"vault{'s' if len(every) > 1 else ''} {', '.join(cfg.vaults)}, socket {cfg.socket}. Now:\n"
               "  systemctl --user daemon-reload\n"
               + ("  systemctl --user enable vaultd.socket vaultd.service   # then, to run the new units:\n"
                  "  systemctl --user stop vaultd.service vaultd.socket && systemctl --user start vaultd.socket "
                  "vaultd.service\n"  # a socket does not restart while its service runs
                  if any(what == "replaced" for _, what in done) else
                  "  systemctl --user enable --now vaultd.socket vaultd.service\n") +
               "  vaultd check                           # is it up? what next?\n"
               "  journalctl --user -u vaultd -f         # its log\n"
               "To keep it running while you are logged out: loginctl enable-linger\n"
               "  (where polkit is not installed, as on a minimal Debian: sudo loginctl enable-linger $USER)")


MCP_HELP = (f"Serve the running daemon's operations to an agent: an MCP server on stdin/stdout (tools "
            f"{', '.join(op.name for op in ops.OPS if op.tool)}; notes as file:// resources). Start the daemon "
            f"itself with `vaultd run`.")
"""`vaultd mcp --help`'s text, its tools read from the table of operations (the rows with `tool`)."""


@cli.command("mcp", help=MCP_HELP)
@click.option("--socket", help="The daemon's socket (default: $VAULTD_SOCKET, else the daemon of --vault, of the "
                               "vault around the current folder, or the only one running).")
@click.option("--vault", help="Use the daemon of this vault (a folder, or its name in the daemon's `vaults`), and "
                              "ask of this vault.")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default="warning",
              help="Log verbosity (to stderr; stdout is the protocol).")
def mcp_server(socket, vault, log_level):
    """The MCP server over the running daemon (its help: MCP_HELP)."""
    setup_logging(log_level)
    from .mcp import run as serve

    serve(socket, vault)


@cli.command("lsp")
@click.option("--socket", help="The daemon's socket (default: $VAULTD_SOCKET, else the daemon of --vault, else that "
                               "of the vault around each file, or the only one running).")
@click.option("--vault", type=click.Path(file_okay=False), help="Use the daemon of this vault.")
@click.option("--stdio", is_flag=True, help="Talk on stdin/stdout (the only way; accepted as editors pass it).")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]), default="warning",
              help="Log verbosity (to stderr; stdout is the protocol).")
def lsp_server(socket, vault, stdio, log_level):
    """Serve the running daemon to an editor: a Language Server on stdin/stdout for Markdown
    and Org buffers (definition, references, completion, diagnostics, hover, symbols). Start
    the daemon itself with `vaultd run`."""
    setup_logging(log_level)
    from .lsp import run as serve

    serve(socket, vault)


@cli.command()
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the Note as JSON.")
@click.option("--body/--no-body", default=False, help="Include the searchable body.")
def parse(file, as_json, body):
    """Show the Note vaultd sees in one FILE (no daemon needed)."""
    import msgspec

    from .config import Index
    from .note import first_h1, heading_tags
    from .parse import parse_file
    from .paths import cut
    from .vaultq import inert

    p = Path(file)
    cap_mb = Index().max_file_mb
    cap = cap_mb << 20
    try:  # as the daemon reads a note: a regular file (a FIFO or a device is not one), to the size cap
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with open(fd, "rb") as f:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise click.ClickException(f"{file} is not a regular file: vaultd reads only files as notes")
            data = f.read(cap + 1)
    except OSError as e:
        raise click.ClickException(f"{file} cannot be read: {e.strerror or e}") from None
    note = parse_file(p.name, cut(data, cap) if len(data) > cap else data, mtime_ns=st.st_mtime_ns)
    if not body:
        note = msgspec.structs.replace(note, body="")
    if as_json:
        click.echo(msgspec.json.format(msgspec.json.encode(note)).decode())
        return
    # a note's escape sequences, on a terminal, printed as text (as vaultq prints them)
    show = (lambda text="": click.echo(inert(text))) if sys.stdout.isatty() else click.echo
    if len(data) > cap:
        show(f"note:     only its first {cap_mb} MB are read, as vaultd indexes it with the default "
             "size cap ([index] max_file_mb)")
    show(f"title:    {note.title} ({note.title_from})")
    if h1 := first_h1(note):
        show(f"          {h1} (first H1, searched as a title)")
    for key in ("id", "signature", "date"):
        if getattr(note, key):
            show(f"{key + ':':<9} {getattr(note, key)}")
    for key in ("tags", "aliases", "uuids"):
        if getattr(note, key):
            show(f"{key + ':':<9} {', '.join(getattr(note, key))}")
    for h, tags in zip(note.headings, heading_tags(note.headings)):
        extra = ""
        if h.tags:
            extra += "  :" + ":".join(h.tags) + ":"
        if inherited := sorted(tags - set(h.tags)):
            extra += f"  (inherits {', '.join(inherited)})"
        show(f"  {h.line:>5}  {'#' * h.level} {h.text}  (#{h.anchor}){extra}")
    for ln in note.links:
        where = ln.target + (f"::{ln.anchor}" if ln.anchor else "")
        show(f"  {ln.line:>5}:{ln.col:<4} {ln.kind:<8} {where}")
    for b in note.blocks:
        show(f"  {b.line:>5}  ^{b.id}")
    for pr in note.problems:
        show(f"problem:  {pr}")
    if body:
        show(note.body)


@cli.command("man")
def man_page():
    """Print vaultd's man page (vaultd man > vaultd.1; man -l vaultd.1); pip installs it."""
    from .vaultq_help import man_vaultd

    click.echo(man_vaultd(cli), nl=False)


def main(argv=None) -> None:
    try:
        cli.main(args=argv, prog_name="vaultd", standalone_mode=False)
    except click.exceptions.Abort:
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(EXIT_CONFIG if isinstance(e, click.UsageError) else 1)
    except ConfigError as e:
        click.echo(f"vaultd: configuration error: {e}", err=True)
        sys.exit(EXIT_CONFIG)
    except (SocketInUse, IndexLocked) as e:
        click.echo(f"vaultd: {e}", err=True)
        sys.exit(EXIT_UNAVAILABLE)
    except VaultdError as e:
        logging.getLogger("vaultd").debug("error", exc_info=True)
        click.echo(f"vaultd: {e}", err=True)
        sys.exit(1)
