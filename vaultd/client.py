"""A small blocking socket client. Standard library only: vaultq must start fast."""

from __future__ import annotations

import itertools
import json
import socket
import time

from .errors import DaemonUnavailable


class RequestFailed(Exception):
    """The daemon answered with an error object."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


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
