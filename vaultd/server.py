"""The daemon: startup -> main loop -> shutdown.

Transport and lifecycle only. Threads: one accepts connections (one thread per client,
each request answered by the operations, api.py), the watchdog observer feeds the
debouncer, and one indexer thread applies batches (the only writer: ingest/indexer.py).
The main thread waits for SIGTERM/SIGINT and watches over the rest: the watcher is
tended (re-watched, restarted, its coverage counted, rescans asked for), and when
the accept or indexer thread fails, by any exception, native panics included, the
daemon stops and exits 1 so that systemd starts it afresh: never a live daemon with
a dead part. systemd hears READY=1 once the index is open and the socket listens,
STATUS= when the watch degrades or recovers, STOPPING=1 on the way out.
"""

from __future__ import annotations

import fcntl
import logging
import os
import signal
import socket
import stat
import threading
from contextlib import suppress
from pathlib import Path

from . import __version__, api, protocol
from .config import Config
from .errors import QueryError, SocketInUse, VaultError
from .store.index import IndexDamaged, _damage
from .ingest.indexer import Indexer, _from_panic
from .vault import Vault

logger = logging.getLogger("vaultd.server")

MAX_CLIENTS = 64
"""Connections served at once; more are answered `busy` and closed (each holds a thread
and up to a request line, 1 MiB, of memory)."""


def sd_notify(message: str) -> None:
    """The few lines of systemd's notify protocol: one datagram to $NOTIFY_SOCKET."""
    addr = os.environ.get("NOTIFY_SOCKET")
    if not addr:
        return
    if addr.startswith("@"):
        addr = "\0" + addr[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as s:
            s.connect(addr)
            s.sendall(message.encode())
    except OSError as e:
        logger.warning("sd_notify(%s) failed: %s", message, e)


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
    def __init__(self, config: Config):
        self.config = config
        self.socket_path = Path(config.socket)
        self.should_exit = threading.Event()
        self.vault: Vault | None = None
        self.api: api.Operations | None = None
        """The operations each request is answered by (over the vault and the indexer)."""
        self.indexer = Indexer(config.watch, self.should_exit)
        self.failure: str | None = None
        """Why the daemon stops on its own (a part of it failed): it then exits 1."""
        self._listener: socket.socket | None = None
        self._clients = threading.BoundedSemaphore(MAX_CLIENTS)
        self._lock = SocketLock(self.socket_path)
        self._threads: list[threading.Thread] = []

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
        """Twice a second: a part that died stops the daemon, and the watcher is tended."""
        said = None
        while not self.should_exit.wait(0.5):
            for t in self._threads:
                if not t.is_alive() and not self.should_exit.is_set():
                    self._fail(t.name, "the thread ended")
            problem = self.indexer.tend()
            if problem != said:
                said = problem
                sd_notify(f"STATUS={'degraded: ' + said if said else 'serving'}")

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
            self.vault = Vault(self.config)
            with suppress(FileNotFoundError):
                os.unlink(self.socket_path)  # stale: its owner no longer holds the lock
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
            old_umask = os.umask(0o177)
            try:
                listener.bind(str(self.socket_path))
            finally:
                os.umask(old_umask)
            os.chmod(self.socket_path, 0o600)
            listener.listen(socket.SOMAXCONN)  # a burst of clients waits for accept, not refused
            listener.settimeout(0.5)
            self._listener = listener
        except BaseException:
            if self.vault is not None:
                self.vault.close()
            self._lock.release()
            raise
        self.api = api.Operations(self.vault, self.indexer, str(self.socket_path))
        self.indexer.watch(self.vault)  # before the first reconcile, so nothing slips between them
        watcher = self.indexer.watcher
        self._spawn(self._part(self._accept_loop, "accept loop"), "accept")
        self._spawn(self._part(self.indexer.run, "indexer"), "indexer")
        logger.info(
            "vaultd %s serving %s on %s (pid %d, %d notes in the index, %s folders watched)",
            __version__, self.vault.root, self.socket_path, os.getpid(), len(self.vault.notes), watcher.watched,
        )
        sd_notify("READY=1\nSTATUS=" + ("degraded: " + watcher.problem if watcher.problem else "serving"))

    def shutdown(self) -> None:
        sd_notify("STOPPING=1")
        self.should_exit.set()
        if self.vault is not None:
            self.vault.stopping.set()  # a first index of a big vault must not hold up a stop
        if self._listener is not None:
            with suppress(OSError):
                self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept loop now, not at its next timeout
            self._listener.close()
        with suppress(FileNotFoundError):
            os.unlink(self.socket_path)
        self.indexer.stop()
        for t in self._threads:
            t.join(timeout=30)
        if self.vault is not None:
            self.vault.close()
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
            if not self._clients.acquire(blocking=False):
                with conn:  # each client holds a thread and up to a request line of memory
                    conn.settimeout(1.0)
                    self._send(conn, protocol.error(None, "busy", f"{MAX_CLIENTS} clients are connected; try again"))
                continue
            try:
                self._spawn(self._serve_client, "client", conn)
            except Exception:  # no thread to be had: its place and the connection go back
                self._clients.release()
                conn.close()
                logger.exception("cannot serve a client")

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
                try:
                    line = rfile.readline(protocol.MAX_LINE + 1)
                except OSError:
                    return
                if not line:
                    return
                if len(line) > protocol.MAX_LINE and not line.endswith(b"\n"):
                    # Drop the rest of the line, answer, and go on reading the next one.
                    while line and not line.endswith(b"\n"):
                        try:
                            line = rfile.readline(1 << 16)
                        except OSError:
                            return
                    if not self._send(conn, protocol.error(None, "too_large", f"request line over {protocol.MAX_LINE} bytes")):
                        return
                    continue
                if not line.strip():
                    continue
                if not self._send(conn, self.handle(line)):
                    return

    @staticmethod
    def _send(conn: socket.socket, data: bytes) -> bool:
        try:
            conn.sendall(data)
            return True
        except OSError:
            return False

    def handle(self, line: bytes) -> bytes:
        """One request line in, one response line out. Never raises."""
        try:
            req = api.decode_request(line)
        except protocol.BadRequest as e:
            return protocol.error(e.id, e.code, e.message)
        try:
            return protocol.ok(req.id, self.api.answer(req))
        except QueryError as e:
            return protocol.error(req.id, e.code, str(e))
        except BaseException as e:  # a panic in Tantivy (a damaged index file) too: requests only read
            logger.exception("request %r failed", req)
            if _from_panic(e) or isinstance(e, IndexDamaged):
                self._check_damage()
            return protocol.error(req.id, "internal", f"{type(e).__name__}: {e}")

    def _check_damage(self) -> None:
        """A request failed in Tantivy: when the index's files say it is damaged (checksums,
        see index._damage), stop, so that the next start (systemd's restart) rebuilds it;
        a failure with the files intact (a bug, not damage) is only that request's error."""
        why = _damage(self.vault.index.dir)
        if why:
            self._fail("index", f"it was damaged while serving: {why}")
