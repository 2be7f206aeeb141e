"""The daemon: startup -> main loop -> shutdown.

Transport and lifecycle only. Threads: one accepts connections (one thread per client,
each request answered by the operations, api.py), the watchdog observer feeds the
debouncer, and one indexer thread applies batches (the only writer: ingest/indexer.py).
The main thread waits for SIGTERM/SIGINT and watches over the rest: the watcher is
tended (re-watched, restarted, its coverage counted, rescans asked for), and when
the accept or indexer thread fails, by any exception, native panics included, the
daemon stops and exits 1 so that systemd starts it afresh: never a live daemon with
a dead part.

systemd (see systemd/): the socket may be passed by systemd (socket activation, see
`listen_fds`): then it is served as it is, never unlinked nor bound again. systemd hears
STATUS= with the first index's progress (and EXTEND_TIMEOUT_USEC while it moves), READY=1
once the first reconcile is done (the index in line with the vault, the link graph built),
STATUS= when the watch degrades or recovers, WATCHDOG=1 from the main loop while the accept
and indexer threads live, and STOPPING=1 on the way out.
"""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import socket
import stat
import struct
import threading
import time
from contextlib import suppress
from pathlib import Path

from . import __version__, api, host, protocol
from .config import Config
from .errors import ConfigError, QueryError, SocketInUse, VaultError
from .store.index import IndexDamaged, damage, from_panic
from .ingest.indexer import Indexer
from .paths import vault_labels
from .vault import Vault

logger = logging.getLogger("vaultd.server")

MAX_CLIENTS = 64
"""Connections served at once (each holds a thread and up to a request line, 1 MiB, of
memory). One more takes the place of the connection idle longest, else waits for a place
(see Server._make_room), else is answered `busy` and closed."""

SEND_STALL_S = 10.0
"""How long a reply may wait on a client that does not read it (its socket's send buffer
full, not a byte taken) before that client is hung up and its place freed: places are
held by clients that read their answers, and a worker never blocks for good on one that
does not. A reply sent in several parts may wait this long at each of two. The
environment variable VAULTD_SEND_STALL_S sets it (seconds; tests lower it)."""

BUSY_WAIT_S = 2.0
"""How long a client past the places waits for one before it is told `busy`, when no
connection is idle or stuck on a reply (those free a place sooner or within the stall
bound: it waits for that)."""


def _default_send_stall() -> float:
    """SEND_STALL_S, or $VAULTD_SEND_STALL_S when it is a positive number of seconds."""
    try:
        given = float(os.environ.get("VAULTD_SEND_STALL_S", ""))
    except ValueError:
        return SEND_STALL_S
    return given if 0 < given < 1e6 else SEND_STALL_S


def sd_notify(message: str) -> None:
    """The few lines of systemd's notify protocol: one datagram to $NOTIFY_SOCKET."""
    addr = os.environ.get("NOTIFY_SOCKET")
    if not addr:
        return
    if addr.startswith("@"):
        addr = "\0" + addr[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | _cloexec()) as s:
            s.connect(addr)
            s.sendall(message.encode())
    except OSError as e:
        logger.warning("sd_notify(%s) failed: %s", message, e)


def _cloexec() -> int:
    """SOCK_CLOEXEC where host has it, else 0: Python makes every socket non-inheritable anyway."""
    return socket.SOCK_CLOEXEC if host.has("sock_cloexec") else 0


LISTEN_FDS_START = 3
"""The first descriptor systemd passes (sd_listen_fds(3))."""


def listen_fds() -> socket.socket | None:
    """The socket systemd passed to this process (socket activation, the sd_listen_fds(3)
    protocol): fd 3 when LISTEN_FDS is set and LISTEN_PID is this process; else None. The
    variables are cleared, as sd_listen_fds(1) does, so that no child takes them for its own.
    ConfigError when what was passed is not one listening Unix stream socket with a path
    (a socket unit that does not fit: exit 2, which the service does not restart on)."""
    n, pid = os.environ.pop("LISTEN_FDS", None), os.environ.pop("LISTEN_PID", None)
    os.environ.pop("LISTEN_FDNAMES", None)
    if n is None or pid != str(os.getpid()):
        return None
    if n != "1":
        raise ConfigError(f"systemd passed {n} descriptors (LISTEN_FDS={n}); vaultd listens on one socket: "
                          "give vaultd.socket one ListenStream= and nothing else")
    try:
        s = socket.socket(fileno=LISTEN_FDS_START)
    except OSError as e:
        raise ConfigError(f"fd {LISTEN_FDS_START}, passed by systemd (LISTEN_FDS=1), is not a socket: "
                          f"{e.strerror or e}") from None
    path = s.getsockname() if s.family == socket.AF_UNIX else None
    if not (s.type == socket.SOCK_STREAM and s.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
            and isinstance(path, str) and path.startswith("/")):
        kind = f"{s.family.name} {s.type.name}{'' if path is None else ' ' + repr(path)}"
        s.detach()  # not ours to close
        raise ConfigError(f"the socket systemd passed (fd {LISTEN_FDS_START}, {kind}) is not a listening Unix "
                          "stream socket with a path: vaultd.socket needs ListenStream=/path/to.sock")
    os.set_inheritable(s.fileno(), False)
    return s


def watchdog_interval() -> float | None:
    """Seconds between WATCHDOG=1 pings: half of WATCHDOG_USEC when systemd set it for this
    process (WatchdogSec= in the unit), else None."""
    usec, pid = os.environ.get("WATCHDOG_USEC", ""), os.environ.get("WATCHDOG_PID")
    if not usec.isdigit() or int(usec) == 0 or (pid and pid != str(os.getpid())):
        return None
    return int(usec) / 2e6


EXTEND_S = 30
"""While the first index moves, systemd's start timeout is pushed this far ahead
(EXTEND_TIMEOUT_USEC); once it has not moved for this long, no more: systemd's
TimeoutStartSec then ends a start that hangs."""
LOOK_S = 5
"""How often, in seconds, a vault not there at start is looked for (see Server.waiting)."""


class SocketLock:
    """An flock on `<socket>.lock`, held for the daemon's life: whoever holds it owns the
    socket path, so a socket file found without it is stale and may be replaced."""

    def __init__(self, sock: Path):
        self.path = sock.with_name(sock.name + ".lock")
        self.fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = os.read(fd, 32).decode(errors="replace").strip()
            os.close(fd)
            raise SocketInUse(str(self.path.with_suffix("")), int(pid) if pid.isdigit() else None) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            with suppress(OSError):
                os.unlink(self.path)
            os.close(self.fd)
            self.fd = None


def _prepare_dir(d: Path) -> None:
    """Create the socket's folder 0700; refuse one that other users could write into."""
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    st = d.stat()
    if st.st_uid != os.getuid():
        raise VaultError(f"socket folder {d} belongs to another user")
    if stat.S_IMODE(st.st_mode) & 0o022:
        raise VaultError(f"socket folder {d} is writable by others (mode {stat.S_IMODE(st.st_mode):o})")


class Server:
    def __init__(self, config: Config, listener: socket.socket | None = None, every: list[Config] | None = None):
        """`listener`: the socket systemd passed (see listen_fds), served as it is; its path
        is config.socket then (cli.run sets it so). `every`: each vault's loaded config
        (Config.load_all: config `vaults`), served on the one socket; default `config`'s vault."""
        self.config = config
        every = every or [config]
        labels = vault_labels([c.vault for c in every])
        self.configs = [c for c in every if os.path.isdir(c.vault)]
        """The vaults served from the start; the first is the default one."""
        self.waiting = {name: c for name, c in zip(labels, every) if c not in self.configs}
        """Vaults whose folder was not there at start (an unmounted disk), by name: each is
        served once its folder appears (see main_loop); a request for it meanwhile says so."""
        self.socket_path = Path(config.socket)
        self._passed = listener
        self.should_exit = threading.Event()
        self.vaults: list[Vault] = []
        self.vault: Vault | None = None
        """The first vault (the one of a single-vault config)."""
        self.api: api.Vaults | None = None
        """The operations each request is answered by (over each vault and its indexer)."""
        self.indexers = [Indexer(c.watch, self.should_exit, first_pass=self._ready) for c in self.configs]
        """One per vault: its watcher and its writer thread."""
        self.indexer = self.indexers[0]
        self.labels = [name for name, c in zip(labels, every) if c in self.configs]
        self._next_look = 0.0
        """When main_loop looks again for the waiting vaults' folders."""
        self._not_joined: dict[str, str] = {}
        """Why a waiting vault whose folder is there could not be opened (logged once)."""
        self.ready = False
        """READY=1 was sent: the first reconcile is done."""
        self._said: str | None = None
        """The STATUS= systemd heard last."""
        self.failure: str | None = None
        """Why the daemon stops on its own (a part of it failed): it then exits 1."""
        self._listener: socket.socket | None = None
        self._clients = threading.BoundedSemaphore(MAX_CLIENTS)
        self._waiting: dict[socket.socket, float] = {}
        """Connections waiting for their client's next line, since when (see _hang_up_oldest)."""
        self._sending: dict[socket.socket, float] = {}
        """Connections whose reply is being sent, since when (see _make_room)."""
        self._waiting_lock = threading.Lock()
        self.send_stall = _default_send_stall()
        """How long a reply waits on a client that does not read it (see SEND_STALL_S)."""
        self._lock = SocketLock(self.socket_path)
        self._threads: list[threading.Thread] = []
        self._ready_lock = threading.Lock()
        self._passed_first = 0
        """Indexers whose first reconcile is done: READY=1 once all are."""

    # -- lifecycle --------------------------------------------------------------

    def run(self) -> None:
        """Serve until SIGTERM/SIGINT. Raises VaultdError when it cannot start, or when a part
        of it failed (then the exit code is 1, and systemd's Restart=on-failure starts it anew)."""
        old = {s: signal.signal(s, self._handle_exit) for s in (signal.SIGTERM, signal.SIGINT)}
        old_hook, threading.excepthook = threading.excepthook, self._thread_died
        try:
            self.startup()
            try:
                self.main_loop()
            finally:
                self.shutdown()
        finally:
            for s, h in old.items():
                signal.signal(s, h)
            threading.excepthook = old_hook
        if self.failure:
            raise VaultError(f"{self.failure}; vaultd stopped so that it starts afresh")

    def main_loop(self) -> None:
        """Twice a second (four times until READY): a part that died stops the daemon, the
        watcher is tended, systemd hears the status and, while every part lives, the watchdog
        ping; until READY, how far the first index is, and more time while it moves."""
        ping_every, next_ping = watchdog_interval(), 0.0
        moved = (None, time.monotonic())  # (what systemd last heard of the first index, since when)
        next_extend = 0.0
        while True:
            now = time.monotonic()
            alive = True
            for t in self._threads:
                if not t.is_alive() and not self.should_exit.is_set():
                    self._fail(t.name, "the thread ended")
                    alive = False
            if ping_every and alive and now >= next_ping:
                sd_notify("WATCHDOG=1")
                next_ping = now + ping_every
            if self.waiting and now >= self._next_look:
                self._next_look = now + LOOK_S
                self._join_waiting()
            status = self._statuses([ix.tend() for ix in self.indexers])
            if not self.ready:
                if status != moved[0]:
                    moved = (status, now)
                if now - moved[1] < EXTEND_S and now >= next_extend:
                    sd_notify(f"EXTEND_TIMEOUT_USEC={EXTEND_S * 2 * 1_000_000}")
                    next_extend = now + EXTEND_S / 3
            if status != self._said:
                self._said = status
                sd_notify(f"STATUS={status}")
            if self.should_exit.wait(0.5 if self.ready else 0.25):
                return

    def _statuses(self, problems: list[str | None]) -> str:
        """What systemd shows after "Status:": of the one vault (see _status); of several,
        "serving" when all are, else each one that is not, by name."""
        said = [self._status(p, v, ix) for p, v, ix in zip(problems, self.vaults, self.indexers)]
        if len(said) == 1:
            return said[0]
        busy = [f"{name}: {what}" for name, what in zip(self.labels, said) if what != "serving"]
        busy += [f"{name}: waiting for its folder {c.vault}" for name, c in self.waiting.items()]
        return "; ".join(busy) or "serving"

    def _status(self, problem: str | None, v: Vault, indexer: Indexer) -> str:
        """What systemd hears of one vault: the watch's problem, else how far the first
        reconcile is ("indexing 120 of 3000 files"), else "serving"."""
        if problem:
            return "degraded: " + problem
        if self.ready:
            failed = v.indexing and indexer.last_error
            return f"serving; the first index failed and is retried: {failed}" if failed else "serving"
        if v.reconciled:
            return "building the link graph"
        done, total = v.progress
        if total is None:
            return ("indexing" if v.first_index else "checking for changes") + ": listing the vault's files"
        return f"indexing {done} of {total} files" if v.first_index else f"checking for changes: {done} of {total} files"

    def _ready(self) -> None:
        """An indexer's first reconcile is done (or failed: then it is retried, and status
        says why): once every vault's is, answers are of the whole vaults. Called from the
        indexer threads."""
        with self._ready_lock:
            self._passed_first += 1
            if self.ready or self._passed_first < len(self.indexers):
                return
            self.ready = True
        self._said = self._statuses([ix.watcher.problem for ix in self.indexers])
        sd_notify(f"READY=1\nSTATUS={self._said}")
        logger.info("ready: %s in the index", ", ".join(f"{len(v.notes)} notes" + (f" ({n})" if len(self.vaults) > 1
                                                                                   else "")
                                                       for n, v in zip(self.labels, self.vaults)))

    def _fail(self, part: str, why: str) -> None:
        """A part of the daemon failed for good: stop, and exit 1."""
        if self.failure is None:
            self.failure = f"the {part} failed ({why})"
            logger.critical("%s: stopping", self.failure)
        self.should_exit.set()

    def _thread_died(self, args: threading.ExceptHookArgs) -> None:
        """An exception that ended a thread (ours are wrapped; this catches watchdog's, whose
        death the watcher notices): logged here rather than printed to stderr."""
        if args.exc_type is not SystemExit:
            name = args.thread.name if args.thread else "a thread"
            logger.error("%s died", name, exc_info=(args.exc_type, args.exc_value, args.exc_traceback))

    def _handle_exit(self, signum, frame) -> None:
        if self.should_exit.is_set() and signum == signal.SIGINT:
            logger.warning("second interrupt: exiting now")
            os._exit(1)
        logger.info("received %s, shutting down", signal.Signals(signum).name)
        self.should_exit.set()

    def startup(self) -> None:
        _prepare_dir(self.socket_path.parent)
        self._lock.acquire()
        try:
            for c in self.configs:
                self.vaults.append(Vault(c))
            self.vault = self.vaults[0]
            listener = self._passed or self._bind()
            listener.settimeout(0.5)
            self._listener = listener
        except BaseException:
            for v in self.vaults:
                v.close()
            self._lock.release()
            raise
        self.api = api.Vaults([api.Operations(v, ix, str(self.socket_path), name)
                               for v, ix, name in zip(self.vaults, self.indexers, self.labels)], self.waiting)
        for v, ix in zip(self.vaults, self.indexers):
            ix.watch(v)
        self._spawn(self._part(self._accept_loop, "accept loop"), "accept")  # answering while the watch starts
        for ix in self.indexers:  # (a big vault's folders listed: 0.5 s at 100,000 notes)
            ix.tend()  # watching, before the first reconcile, so nothing slips between them
        for name, ix in zip(self.labels, self.indexers):
            self._spawn(self._part(ix.run, "indexer" if len(self.vaults) == 1 else f"indexer of {name}"), "indexer")
        for v in self.vaults:
            self._spawn(self._warm, "warm", v)
        for name, v, ix in zip(self.labels, self.vaults, self.indexers):
            logger.info(
                "vaultd %s serving %s%s on %s%s (pid %d, %d notes in the index, %s folders watched)",
                __version__, v.root, f" as {name!r}" if len(self.vaults) > 1 else "", self.socket_path,
                ", passed by systemd" if self._passed else "", os.getpid(), len(v.notes), ix.watcher.watched,
            )
        if lacking := host.lacking_line():
            logger.info("%s", lacking)
        for name, c in self.waiting.items():
            logger.warning("vault %s (%s) is not there: it is served once its folder appears", c.vault, name)
        self._said = self._statuses([ix.watcher.problem for ix in self.indexers])
        sd_notify(f"STATUS={self._said}")

    def _join_waiting(self) -> None:
        """Each waiting vault whose folder is there now: opened, watched, indexed and served
        like those served from the start (its first reconcile runs in its indexer thread). One
        that cannot be opened (its index locked by another vaultd...) waits on, said once."""
        for name, c in list(self.waiting.items()):
            if not os.path.isdir(c.vault):
                continue
            try:
                v = Vault(c)
            except Exception as e:  # noqa: BLE001 - whatever it is, the vaults served go on
                if self._not_joined.get(name) != str(e):
                    self._not_joined[name] = str(e)
                    logger.error("vault %s (%s) is there but cannot be served: %s", c.vault, name, e)
                continue
            ix = Indexer(c.watch, self.should_exit, first_pass=self._ready)
            ix.watch(v)
            ix.tend()  # watching, before its first reconcile
            self.vaults.append(v)
            self.indexers.append(ix)
            self.labels.append(name)
            self.api.join(api.Operations(v, ix, str(self.socket_path), name))
            del self.waiting[name]
            self._spawn(self._part(ix.run, f"indexer of {name}"), "indexer")
            logger.info("vault %s is there: serving it as %r (%d notes in the index)", c.vault, name, len(v.notes))

    def _bind(self) -> socket.socket:
        """A new listening socket at the socket path, 0600. A socket file there is stale (its
        owner no longer holds the lock) unless something accepts on it: systemd's
        vaultd.socket does, and it is left alone."""
        if self.socket_path.is_socket():
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                probe.settimeout(1.0)
                try:
                    probe.connect(str(self.socket_path))
                except OSError:
                    pass
                else:
                    raise SocketInUse(str(self.socket_path), None, "it is systemd's (vaultd.socket)? then "
                                      "`systemctl --user start vaultd`, or stop vaultd.socket first")
        with suppress(FileNotFoundError):
            os.unlink(self.socket_path)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | _cloexec())
        old_umask = os.umask(0o177)
        try:
            listener.bind(str(self.socket_path))
        finally:
            os.umask(old_umask)
        os.chmod(self.socket_path, 0o600)
        listener.listen(socket.SOMAXCONN)  # a burst of clients waits for accept, not refused
        return listener

    def shutdown(self) -> None:
        sd_notify("STOPPING=1")
        self.should_exit.set()
        for v in self.vaults:
            v.stopping.set()  # a first index of a big vault must not hold up a stop
        if self._listener is not None:
            if self._passed is None:  # on systemd's socket, shutdown() would stop it listening for good
                with suppress(OSError):
                    self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept loop now, not at its next timeout
            self._listener.close()  # a passed one: our copy; systemd keeps listening on its own
        if self._passed is None:
            with suppress(FileNotFoundError):
                os.unlink(self.socket_path)
        for ix in self.indexers:
            ix.stop()
        for t in self._threads:
            t.join(timeout=30)
        for v in self.vaults:
            v.close()
        self._lock.release()
        logger.info("stopped")

    def _part(self, loop, part: str):
        """`loop` as a thread's target that never ends quietly: an exception of any kind (a
        panic in Tantivy is pyo3's PanicException, a BaseException) is logged and stops the
        daemon, since it cannot go on without this part."""
        def run() -> None:
            try:
                loop()
            except BaseException as e:
                logger.critical("the %s failed", part, exc_info=True)
                self._fail(part, f"{type(e).__name__}: {e}")
        return run

    def _warm(self, v: Vault) -> None:
        """Load ahead what the first searches would each wait for (see Searcher.warm): a
        failure only leaves that to them."""
        try:
            v.warm()
        except Exception:
            if not self.should_exit.is_set():
                logger.warning("loading ahead what searches use failed: the first searches load it", exc_info=True)

    def _spawn(self, target, name: str, *args) -> threading.Thread:
        t = threading.Thread(target=target, args=args, name=name, daemon=True)
        t.start()
        if name in ("accept", "indexer"):
            self._threads.append(t)
        return t

    # -- serving ----------------------------------------------------------------

    def _accept_loop(self) -> None:
        while not self.should_exit.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                if self.should_exit.is_set():
                    return
                logger.exception("accept failed")
                continue
            if not self._clients.acquire(blocking=False) and not self._make_room():
                with conn:  # each client holds a thread and up to a request line of memory
                    conn.settimeout(1.0)
                    with suppress(OSError):
                        conn.sendall(protocol.error(None, "busy", f"{MAX_CLIENTS} clients are connected and "
                                                    "being answered; try again"))
                continue
            try:
                self._bound_sends(conn)
                self._spawn(self._serve_client, "client", conn)
            except Exception:  # no thread to be had: its place and the connection go back
                self._clients.release()
                conn.close()
                logger.exception("cannot serve a client")

    def _make_room(self) -> bool:
        """Every place is taken: a place for the client just accepted, True once it has one.
        The connection idle longest is hung up for it; else, while a reply is stuck on a
        client that does not read it (hung up within the stall bound), or for BUSY_WAIT_S,
        a place is waited for (a connection that falls idle meanwhile is hung up in turn).
        False: every place is answering a request (or the daemon stops)."""
        deadline = time.monotonic() + BUSY_WAIT_S
        while not self.should_exit.is_set():
            hung_up = self._hang_up_oldest()  # its thread ends and gives its place back
            if self._clients.acquire(timeout=BUSY_WAIT_S if hung_up else 0.1):
                return True
            with self._waiting_lock:
                stuck = min(self._sending.values(), default=None)
            if stuck is not None:  # two parts at most wait the stall bound each (see SEND_STALL_S)
                deadline = max(deadline, stuck + 2 * self.send_stall + 1.0)
            if time.monotonic() >= deadline:
                return False
        return False

    def _bound_sends(self, conn: socket.socket) -> None:
        """A send on `conn` waits at most the stall bound for its client to make room
        (SO_SNDTIMEO: a blocking send then fails with EAGAIN), so that no worker waits
        for good on a client that does not read."""
        sec = int(self.send_stall)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO,
                        struct.pack("ll", sec, int((self.send_stall - sec) * 1e6)))

    def _hang_up_oldest(self) -> bool:
        """Every client's place is taken: the connection that has waited longest for its
        client's next request (a client that left it open, or never finished its line) is
        closed, so that its place goes to the new one. False when every client is being
        answered."""
        with self._waiting_lock:
            if not self._waiting:
                return False
            conn = min(self._waiting, key=self._waiting.__getitem__)
            del self._waiting[conn]
        logger.warning("%d clients connected: the one idle longest is hung up for a new one", MAX_CLIENTS)
        with suppress(OSError):
            conn.shutdown(socket.SHUT_RDWR)  # its readline returns: its thread ends, and gives its place back
        return True

    def _serve_client(self, conn: socket.socket) -> None:
        try:
            self._serve(conn)
        except BaseException:  # one client's connection, never the daemon's
            logger.exception("serving a client failed")
        finally:
            self._clients.release()

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(None)
        with conn, conn.makefile("rb") as rfile:
            while not self.should_exit.is_set():
                with self._waiting_lock:
                    self._waiting[conn] = time.monotonic()
                try:
                    line = rfile.readline(protocol.MAX_LINE + 1)
                except OSError:
                    return
                finally:
                    with self._waiting_lock:
                        self._waiting.pop(conn, None)
                if not line:
                    return
                if len(line) > protocol.MAX_LINE and not line.endswith(b"\n"):
                    # Drop the rest of the line, answer, and go on reading the next one.
                    while line and not line.endswith(b"\n"):
                        try:
                            line = rfile.readline(1 << 16)
                        except OSError:
                            return
                    if not self._send(conn, protocol.error(None, "too_large",
                                                           f"request line over {protocol.MAX_LINE} bytes")):
                        return
                    continue
                if not line.strip():
                    continue
                if not self._send(conn, self.handle(line)):
                    return

    def _send(self, conn: socket.socket, data: bytes) -> bool:
        """`data` sent to the client; False when it cannot be: the client has gone, or has
        not read for the stall bound (see _bound_sends), and is to be hung up."""
        with self._waiting_lock:
            self._sending[conn] = time.monotonic()
        try:
            conn.sendall(data)
            return True
        except (BlockingIOError, TimeoutError):
            logger.warning("a client did not read its answer for %g s: hung up, its place freed", self.send_stall)
            return False
        except OSError:
            return False
        finally:
            with self._waiting_lock:
                self._sending.pop(conn, None)

    def handle(self, line: bytes) -> bytes:
        """One request line in, one response line out. Never raises."""
        try:
            req = api.decode_request(line)
        except protocol.BadRequest as e:
            return protocol.error(e.id, e.code, e.message)
        except Exception as e:  # a decoder failure not foreseen: still an answer, and the connection goes on
            logger.exception("decoding a request failed")
            return protocol.error(protocol.shallow_id(line), "bad_request", f"{type(e).__name__}: {e}")
        try:
            return protocol.ok(req.id, self.api.answer(req))
        except QueryError as e:
            return protocol.error(req.id, e.code, str(e))
        except BaseException as e:  # a panic in Tantivy (a damaged index file) too: requests only read
            logger.exception("request %r failed", req)
            if from_panic(e) or isinstance(e, IndexDamaged):
                self._check_damage()
            return protocol.error(req.id, "internal", f"{type(e).__name__}: {e}")

    def _check_damage(self) -> None:
        """A request failed in Tantivy: when the index's files say it is damaged (checksums,
        see index.damage), stop, so that the next start (systemd's restart) rebuilds it;
        a failure with the files intact (a bug, not damage) is only that request's error."""
        for v in self.vaults:
            why = damage(v.index.dir)
            if why:
                self._fail("index", f"it was damaged while serving: {why}")
