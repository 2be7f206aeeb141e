"""The faces' client kit: a small blocking socket client (`Client`), one connection as a
face asks over it (`Session`: its envelope, paging, the first index's state), and the daemon
found afresh for each session (`Daemon`). Standard library only: vaultq must start fast.
The words of the daemon's errors are errors.CODES'; those of its answers, render's."""

from __future__ import annotations

import itertools
import json
import os
import socket
import time

from .errors import DaemonUnavailable, error_code, said
from .ops import MOST


class RequestFailed(Exception):
    """The daemon answered with an error object: its `code` (errors.CODES) and `message`."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message

    def said(self, asker: str = "vaultq") -> str:
        """The error as a face says it (errors.said)."""
        return said(self.code, self.message, asker)

    @property
    def exit(self) -> int:
        """The exit status it gives a command line (errors.CODES)."""
        return error_code(self.code).exit


class Client:
    """One connection to the daemon; connecting raises DaemonUnavailable, a request
    RequestFailed (the daemon's error, `busy` among them) or DaemonUnavailable. It says
    "not running" only when nothing listens on the socket (no socket file, or connection
    refused); a daemon that is there but busy, slow or gone mid-answer is named so."""

    def __init__(self, path: str, timeout: float | None = 30.0):
        self.path = path
        self.timeout = timeout
        self._ids = itertools.count(1)
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        try:
            self._connect()
        except FileNotFoundError:
            self._sock.close()
            raise DaemonUnavailable(path, "no such socket") from None
        except ConnectionRefusedError:
            self._sock.close()
            raise DaemonUnavailable(path, "nothing listens there") from None
        except BlockingIOError:
            self._sock.close()
            raise DaemonUnavailable(path, "busy", f"vaultd on {path} is busy: its queue of connections stayed "
                                    "full; try again") from None
        except OSError as e:
            self._sock.close()
            raise DaemonUnavailable(path, e.strerror or str(e), f"cannot connect to vaultd on {path}: "
                                    f"{e.strerror or e}") from None
        self._buf = bytearray()

    def _connect(self) -> None:
        """Connect, waiting (up to the timeout) while the daemon's queue of connections not
        yet accepted is full: a Unix socket then refuses at once with EAGAIN."""
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        while True:
            try:
                self._sock.connect(self.path)
                return
            except BlockingIOError:
                if deadline is not None and time.monotonic() >= deadline:
                    raise
                time.sleep(0.05)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._sock.close()

    def fileno(self) -> int:
        """The socket's descriptor: a Client can be waited on with select."""
        return self._sock.fileno()

    def request(self, op: str, **args):
        """Send one request and return its `result`, or raise RequestFailed (the daemon's
        error, "busy" among them) or DaemonUnavailable (no answer: what happened)."""
        rid = next(self._ids)
        line = json.dumps({"v": 1, "id": rid, "op": op, **args}, ensure_ascii=False).encode() + b"\n"
        try:
            self._sock.sendall(line)
        except OSError as e:  # the daemon may have answered already (busy) and closed
            reply = self._reply_left(e)
        else:
            reply = self._reply()
        msg = json.loads(reply)
        if not msg.get("ok"):
            err = msg.get("error") or {}
            raise RequestFailed(err.get("code", "error"), err.get("message", "request failed"))
        return msg["result"]

    def _reply(self) -> bytes:
        """The reply line to the request sent, or DaemonUnavailable saying why there is none."""
        try:
            return self._readline()
        except TimeoutError:
            raise DaemonUnavailable(self.path, "timed out", f"vaultd on {self.path} did not answer: timed out "
                                    f"after {self.timeout:g} s (overloaded, or hung); try again") from None
        except OSError as e:
            raise self._lost(e) from None

    def _reply_left(self, sent: OSError) -> bytes:
        """The request could not be sent (`sent`): the line the daemon sent before it closed
        (a `busy` answer is sent before the request is read), else DaemonUnavailable."""
        try:
            return self._readline()
        except OSError:
            raise self._lost(sent) from None

    def _lost(self, e: OSError) -> DaemonUnavailable:
        why = e.strerror or str(e)
        return DaemonUnavailable(self.path, f"connection lost: {why}", f"vaultd on {self.path} closed the "
                                 f"connection before it answered ({why}); try again")

    def _readline(self) -> bytes:
        """One reply line. Each chunk is searched once and appended in place: a 50 MB reply
        took 13 s when the whole buffer was searched and copied at every 64 KB."""
        end = self._buf.find(b"\n")
        while end < 0:
            chunk = self._sock.recv(1 << 20)
            if not chunk:
                raise ConnectionResetError("the daemon closed the connection")
            at = chunk.find(b"\n")
            if at >= 0:
                end = len(self._buf) + at
            self._buf += chunk
        line = bytes(self._buf[:end])
        del self._buf[: end + 1]
        return line


class Session:
    """One connection to the daemon as a face asks over it: every request carries the face's
    envelope (`paths`, `agent`, `vault`: see protocol.Request; a request's own value of one
    wins), and the session keeps the last answer that said the first index is still being
    built (`indexing`: its `progress` says how far; see render.still_indexing). With
    `files_here`, a note named by a file of the current folder (`./beds.md`, `notes/a.org`:
    not a title, nor a vault path) is sent as its absolute path, so that its own vault
    answers when the daemon serves several. Raises what Client raises."""

    def __init__(self, path: str, timeout: float | None = 30.0, *, paths: str | None = None, agent: bool = False,
                 vault: str | None = None, files_here: bool = False):
        self.client = Client(path, timeout)
        self.envelope: dict = {"paths": paths} if paths else {}
        if agent:
            self.envelope["agent"] = True
        if vault:
            self.envelope["vault"] = vault
        self.files_here = files_here
        self.indexing: dict | None = None

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.client.close()

    def request(self, op: str, **args):
        """`op`'s answer (RequestFailed: the daemon's error; DaemonUnavailable: no answer)."""
        if self.files_here:
            for key in ("note", "from"):
                if isinstance(val := args.get(key), str) and file_here(val):
                    args[key] = os.path.abspath(val)
        res = self.client.request(op, **{**self.envelope, **args})
        if isinstance(res, dict) and res.get("indexing"):
            self.indexing = res
        return res

    def every(self, op: str, key: str, **args) -> dict:
        """`op`'s answer with every item of its paged list `key` (ops.LIMITS), asked page after
        page, as many as a page may hold (ops.MOST)."""
        res = self.request(op, limit=MOST, **args)
        items = res[key]
        while res["more"]:
            res = self.request(op, limit=MOST, offset=res["next"], **args)
            items += res[key]
        return {**res, key: items}


def file_here(val: str) -> bool:
    """Whether a note argument names a file from the current folder (`./beds.md`,
    `notes/a.org`), not a title or a vault path."""
    return not os.path.isabs(val) and ("/" in val or os.path.splitext(val)[1] in (".md", ".org", ".txt", ".markdown")) \
        and os.path.isfile(val)


class Daemon:
    """The running vaultd as a face finds it: afresh for each session, since it may be
    restarted (or another may serve the folder) between them. `find(folder)` names the
    socket for a folder (None: the current one); the faces pass paths.pick_socket with their
    --socket and --vault (this module does not import paths, which asks sockets through it).
    `timeout` and the envelope fields (see Session) go to every session."""

    def __init__(self, find, timeout: float | None = 30.0, **envelope):
        self.find = find
        self.timeout = timeout
        self.envelope = envelope

    def session(self, near: str | None = None, **envelope) -> Session:
        """A session with the daemon for the file or folder `near` (its envelope's fields
        replaced by those given); DaemonUnavailable when none answers."""
        folder = near if near is None or os.path.isdir(near) else os.path.dirname(near)
        return Session(self.find(folder), self.timeout, **{**self.envelope, **envelope})

    def ask(self, op: str, near: str | None = None, **args):
        """One request, over a session of its own."""
        with self.session(near) as s:
            return s.request(op, **args)
