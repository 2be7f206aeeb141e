"""The faces' client kit (issue 40 item 5): one table of error codes and their words
(errors.CODES), one session with the daemon (client.Session: the face's envelope, paging, the
first index's state: see test_mcp's first index held still) and the daemon found afresh for
each session (client.Daemon), against a real daemon."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from vaultd import errors
from vaultd.client import Daemon, RequestFailed, Session
from vaultd.errors import DaemonUnavailable

PACKAGE = Path(__file__).resolve().parent.parent / "vaultd"


def codes_the_daemon_answers() -> set[str]:
    """Every error code written in vaultd/: an error class's `code = "..."`, a
    `BadRequest("code", ...)`, and a `protocol.error(id, "code", ...)`."""
    out = set()
    for f in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["code"] \
                    and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                out.add(node.value.value)
            elif isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                at = {"BadRequest": 0, "error": 1}.get(name)
                if at is not None and len(node.args) > at and isinstance(node.args[at], ast.Constant):
                    out.add(node.args[at].value)
    return out


def test_every_error_code_the_daemon_answers_has_its_words():
    found = codes_the_daemon_answers()
    assert {"bad_request", "not_found", "busy", "indexing", "too_deep", "internal"} <= found, found
    missing = found - set(errors.CODES)
    assert not missing, f"error codes errors.CODES does not name: {missing}"
    assert all(c.means for c in errors.CODES.values())


@pytest.mark.parametrize("code, message, shown, exit", [
    ("not_found", "no note matches 'x'", "no note matches 'x'", errors.EXIT_NONE),
    ("ambiguous", "'x' is ambiguous", "'x' is ambiguous", errors.EXIT_USAGE),
    ("indexing", "still building", "still building", errors.EXIT_INDEXING),
    ("vault_missing", "vault 'w' is not there", "vault 'w' is not there", errors.EXIT_UNAVAILABLE),
    ("busy", "64 clients", "vaultd is busy: 64 clients", errors.EXIT_UNAVAILABLE),
    ("bad_request", "limit: expected `int` >= 1", "bad_request: limit: expected `int` >= 1", errors.EXIT_USAGE),
    ("bad_request", "unknown field `x`", "bad_request: unknown field `x` (is the running vaultd older than this "
                                         "vaultq? restart it)", errors.EXIT_USAGE),
    ("from_the_future", "what", "from_the_future: what", errors.EXIT_USAGE),
])
def test_an_error_is_said_and_exits_as_its_code_says(code, message, shown, exit):
    e = RequestFailed(code, message)
    assert (e.said(), e.exit) == (shown, exit)


def test_a_session_carries_its_envelope_and_reads_every_page(daemon):
    sock = str(daemon.socket)
    with Session(sock, paths="absolute", agent=True) as s:
        hit = s.request("search", q="boredom")["hits"][0]
        assert hit["path"] == f"{daemon.vault}/notes/Deep work.md"
        assert s.request("search", q="boredom", paths="vault")["hits"][0]["path"] == "notes/Deep work.md"
        assert s.indexing is None, "a built index: no answer said otherwise (test_mcp holds a first index still)"
    with Session(sock) as s:
        assert s.request("search", q="boredom")["hits"][0]["path"] == "notes/Deep work.md"
        whole = s.every("backlinks", "backlinks", note="Deep work")
        assert len(whole["backlinks"]) == whole["total"] == 4 and not whole["more"]
        with pytest.raises(RequestFailed) as e:
            s.request("backlinks", note="no such note")
        assert e.value.code == "not_found" and e.value.exit == errors.EXIT_NONE


def test_a_daemon_is_found_afresh_for_each_session(daemon, tmp_path):
    asked: list = []

    def find(folder):
        asked.append(folder)
        return str(daemon.socket)

    d = Daemon(find, timeout=10.0, paths="absolute", vault=str(daemon.vault))
    note = daemon.vault / "notes" / "Deep work.md"
    assert d.ask("read", near=str(note), note=str(note), lines=[7, 7])["text"] == "# Deep work"
    with d.session(near=str(daemon.vault), vault=None) as s:
        assert "vault" not in s.envelope and s.envelope["paths"] == "absolute"
        assert s.request("ping")["vault"] == str(daemon.vault)
    d.ask("ping")
    assert asked == [str(note.parent), str(daemon.vault), None]
    daemon.stop()
    with pytest.raises(DaemonUnavailable):
        d.ask("ping")
    daemon.start()
    assert d.ask("ping")["vault"] == str(daemon.vault), "the daemon restarted answers the next session"
