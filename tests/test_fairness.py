"""Places are held by clients that read: 64 clients that never read their answers do not
stop a 65th; a daemon that is busy is never reported as not running; a request nested too
deep is answered, and its connection stays usable. The real daemon, real sockets."""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
from contextlib import suppress

import pytest

from hypothesis import given, settings
from hypothesis import strategies as st

from vaultd.client import Client, RequestFailed
from vaultd.errors import DaemonUnavailable
from vaultd.protocol import shallow_id
from vaultd.server import MAX_CLIENTS

from conftest import DEADLINE, wait_for


def _answered(sock: str) -> bool:
    """A ping over a new connection answered; False when told busy (not an error here)."""
    try:
        with Client(sock, timeout=DEADLINE) as c:
            return c.request("ping")["pong"] is True
    except RequestFailed as e:
        assert e.code == "busy", e
        return False


def _hung_up(s: socket.socket) -> bool:
    """The daemon has closed the connection (POLLHUP), told without reading from it: a
    read would make room for the rest of the answers, as a client that reads does."""
    p = select.poll()
    p.register(s, select.POLLHUP)
    return any(ev & select.POLLHUP for _, ev in p.poll(0))


def test_64_clients_that_never_read_their_answers_do_not_stop_a_65th(make_daemon, vault, monkeypatch):
    """Each of 64 clients asks for a big note ten times and never reads (a hung agent):
    each is hung up once its reply has waited on it past the stall bound (lowered here to
    1 s), so its place goes back, and the 65th is answered."""
    monkeypatch.setenv("VAULTD_SEND_STALL_S", "1")
    (vault / "notes" / "big.md").write_text("# Big\n\n" + "A line of the big note, to fill a reply.\n" * 8000)
    daemon = make_daemon(vault, ["--split", "off"])
    daemon._close()  # the fixture's own connection holds no place in this
    hung = []
    for _ in range(MAX_CLIENTS):
        s = daemon.connect()
        s.sendall(b'{"op":"read","note":"notes/big.md"}\n' * 10)  # 3 MB of answers asked, none read
        hung.append(s)
    try:
        assert wait_for(lambda: _answered(str(daemon.socket))), "a client that reads is answered"
        assert wait_for(lambda: all(map(_hung_up, hung))), "each that never read is hung up"
    finally:
        for s in hung:
            s.close()
    assert daemon.request("ping")["pong"]


def test_a_busy_daemon_is_reported_busy_never_not_running(daemon):
    """Every place answering a request: a new client is told busy, whether its request
    went out before the daemon answered and closed or not (a request sent after the close
    used to fail with EPIPE, reported as "vaultd is not running"); vaultq says busy, exit 3."""
    daemon._close()
    held = []
    for _ in range(MAX_CLIENTS):  # each request waits 10 s for a generation never reached: 60 s each
        s = daemon.connect()
        s.sendall(b'{"op":"search","q":"boredom","after_generation":999999}\n' * 6)
        held.append(s)
    sock = str(daemon.socket)
    try:
        with Client(sock, timeout=DEADLINE) as c:
            select.select([c], [], [], DEADLINE)  # told busy, and closed, before the request goes out
            try:
                c.request("ping")
                raise AssertionError("a place was free")
            except RequestFailed as e:
                assert e.code == "busy", e
        for args in (["status"], ["search", "boredom"]):
            r = subprocess.run([sys.executable, "-m", "vaultd.vaultq", "--socket", sock, *args],
                               capture_output=True, text=True, timeout=DEADLINE)
            assert r.returncode == 3 and r.stderr.startswith("vaultq: vaultd is busy: "), r.stderr
            assert "not running" not in r.stderr
    finally:
        for s in held:
            s.close()


def test_not_running_only_when_nothing_listens(short_dir):
    """No socket, or a socket nothing listens on: "not running". A listener whose queue of
    connections is full (it does not accept): busy. One that closes without a word: the
    connection was closed. Neither of these is "not running"."""
    path = str(short_dir / "d.sock")
    with pytest.raises(DaemonUnavailable, match="vaultd is not running on .*no such socket"):
        Client(path, timeout=DEADLINE)
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(path)
    stale.close()  # the file stays, nothing listens
    with pytest.raises(DaemonUnavailable, match="vaultd is not running on .*nothing listens there"):
        Client(path, timeout=DEADLINE)
    os.unlink(path)
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(path)
        listener.listen(1)
        queued = []
        while True:  # the queue filled: a Unix socket refuses one more at once (EAGAIN)
            s = socket.socket(socket.AF_UNIX)
            s.setblocking(False)
            try:
                s.connect(path)
            except BlockingIOError:
                s.close()
                break
            queued.append(s)
        with pytest.raises(DaemonUnavailable) as full:
            Client(path, timeout=0.5)  # how long it waits for room in the queue
        assert "is busy" in str(full.value) and "not running" not in str(full.value), full.value
        for s in queued:
            s.close()
        listener.setblocking(False)
        with suppress(BlockingIOError):  # their connections, gone, leave the queue as they are accepted
            while True:
                listener.accept()[0].close()
        listener.setblocking(True)
        with Client(path, timeout=DEADLINE) as c:
            conn, _ = listener.accept()
            conn.close()  # hung up without a word
            with pytest.raises(DaemonUnavailable) as lost:
                c.request("ping")
            assert "closed the connection before it answered" in str(lost.value), lost.value
            assert "not running" not in str(lost.value)


DEEP = [
    b'{"op":"search","id":5,"q":"x","tag":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
    b'{"id":6,"op":"search","q":"x","other":' + b"[" * 200_000 + b"]" * 200_000 + b"}\n",
    b'{"op":"read","note":' + b'{"a":' * 100_000 + b"1" + b"}" * 100_000 + b',"id":"seven"}\n',
    b'{"op":"ping","id":8,"x":' + b"[" * 300_000 + b"\n",  # nor ever closed
]


def test_a_request_nested_too_deep_is_answered_and_the_connection_goes_on(daemon):
    with daemon.connect() as s, s.makefile("rb") as replies:
        s.settimeout(DEADLINE)
        for line, rid in zip(DEEP, (5, 6, "seven", 8)):
            s.sendall(line)
            msg = json.loads(replies.readline())
            assert msg["ok"] is False and msg["id"] == rid, msg
            assert msg["error"]["code"] in ("too_deep", "bad_request", "bad_json") and msg["error"]["message"], msg
            s.sendall(b'{"op":"ping","id":9}\n')
            assert json.loads(replies.readline())["result"]["pong"] is True, "the connection stays usable"
    assert daemon.request("ping")["pong"]


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                     max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(rid=st.integers(-2**53, 2**53) | st.text(max_size=8), before=st.dictionaries(st.text(max_size=5), _json, max_size=3),
       after=st.dictionaries(st.text(max_size=5), _json, max_size=3), spaces=st.booleans())
def test_shallow_id_finds_the_top_level_id_of_any_object(rid, before, after, spaces):
    """shallow_id, which answers a line too deep to decode with its id, reads the id of the
    object itself, never one nested in it, wherever the member stands."""
    before.pop("id", None)
    after.pop("id", None)
    sep = (", ", ": ") if spaces else (",", ":")
    line = json.dumps({**before, "id": rid, **{"_" + k: v for k, v in after.items()}}, separators=sep).encode()
    assert shallow_id(line) == rid
    nested = json.dumps({**before, "in": {"id": rid}}, separators=sep).encode()
    assert shallow_id(nested) is None
