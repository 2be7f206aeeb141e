"""`vaultd mcp` driven by the MCP SDK's own stdio client, against the real daemon."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import subprocess
import sys
import threading

import msgspec
import pytest

from vaultd import api, protocol
from vaultd.mcp import TOOLS, input_schema, structured
from vaultd.render import cost

from conftest import DEADLINE, first_index_held, wait_for
from mcp import Client
from mcp.client.stdio import StdioServerParameters

VOLATILE = ("took_ms", "uptime_s")
"""Keys whose values differ between two asks of the same thing."""


def session(sock: str, steps, cwd: str = "/"):
    """Run `steps(client)` (a coroutine function) against `vaultd mcp --socket SOCK`."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "vaultd", "mcp", "--socket", sock], cwd=cwd,
                                   env={"PYTHONPATH": os.pathsep.join(sys.path)})

    async def main():
        async with Client(params, read_timeout_seconds=60) as client:
            return await steps(client)

    return asyncio.run(main())


def _same(a: dict, b: dict) -> dict:
    return {k: v for k, v in a.items() if k not in VOLATILE} == {k: v for k, v in b.items() if k not in VOLATILE}


CALLS = [  # every tool, with arguments an agent would give
    ("search", {"query": "boredom"}),
    ("search", {"query": "deep", "tag": ["productivity"], "limit": 3}),
    ("search", {"query": "", "path": ["journal"]}),
    ("context", {"query": "가치관이 뭐야", "budget": 300}),
    ("read", {"note": "Deep work", "heading": "Rules"}),
    ("read", {"note": "20251016T080208", "lines": [1, 3]}),
    ("backlinks", {"note": "Deep work"}),
    ("links", {"note": "Deep work"}),
    ("resolve", {"link": "[[Deep work#Rules]]", "from": "journal/2025-11-20.md"}),
    ("hot", {}),
    ("recent", {"days": 30}),
    ("changes", {"since": 0}),
    ("status", {}),
]


def test_tools_schemas_and_every_answer_equal_to_the_socket_operations(daemon):
    v = daemon.vault

    async def steps(c):
        listed = (await c.list_tools()).tools
        answers = [await c.call_tool(name, args) for name, args in CALLS]
        pin = await c.call_tool("pin", {"note": "Deep work"})
        unpin = await c.call_tool("unpin", {"note": "Deep work"})
        return listed, answers, pin, unpin

    listed, answers, pin, unpin = session(str(daemon.socket), steps)
    # a fixed list (listChanged false): remember too, with capture off here (it answers so: see below)
    assert [t.name for t in listed] == list(TOOLS)
    types = {r.__struct_config__.tag: r for r in api.REQUESTS}
    for t in listed:  # derived from the request types: what they take, less what the face sets
        assert t.input_schema == input_schema(t.name)
        own = set(types[t.name].__struct_encode_fields__) - set(protocol.ENVELOPE)
        assert set(t.input_schema["properties"]) == {"query" if f == "q" else f for f in own}, t.name
        assert t.description and t.annotations.read_only_hint == (t.name not in ("pin", "unpin", "remember", "rename"))
    search = input_schema("search")
    assert search["required"] == ["query"] and {"query", "limit", "tag", "path", "after", "before", "scope"} <= \
        set(search["properties"]) and search["properties"]["limit"]["minimum"] == 1
    assert input_schema("context")["properties"]["unit"]["enum"] == ["bytes", "tokens"]
    for (name, args), got in zip(CALLS, answers):
        assert not got.is_error, (name, got.content[0].text)
        wire = {("q" if k == "query" else k): val for k, val in args.items()}
        want = daemon.request(name, **wire, paths="absolute", agent=True)
        # the structured content is the answer less the note text the text content gives whole
        assert _same(got.structured_content, structured(want)), name
        text = got.content[0].text
        if name == "search" and want["hits"]:  # path:line provenance for every line shown
            for hit in want["hits"]:
                for s in hit["snippets"]:
                    assert f"{hit['path']}:{s['line']}: {s['text']}" in text
        if name == "context":
            assert all(f"## {it['path']}:{it['first']}-{it['last']} " in text for it in want["items"])
            assert cost("".join(text.rpartition("(")[0]), "tokens") <= 300
        if name == "read":
            assert text.startswith(f"## {want['path']}:{want['first']}-{want['last']} ")
    for res in [a.structured_content for a in answers]:  # absolute paths throughout, of files that exist
        for p in _paths(res):
            assert os.path.isabs(p) and os.path.isfile(p), p
    assert pin.structured_content == {"path": f"{v}/notes/Deep work.md", "pinned": True, "changed": True}
    assert unpin.content[0].text == f"unpinned {v}/notes/Deep work.md"
    # an agent's reads (context, read through MCP) are counted apart: they make no note HOT
    hot = {h["path"]: h["why"] for h in daemon.request("hot")["hot"]}
    assert not any("read" in w for why in hot.values() for w in why), hot
    daemon.request("read", note="Deep work")  # a person's read does count
    assert "read 1 time" in {h["path"]: h["why"] for h in daemon.request("hot")["hot"]}["notes/Deep work.md"]


def _paths(obj, key=None):
    if isinstance(obj, dict):
        for k, val in obj.items():
            yield from _paths(val, k)
    elif isinstance(obj, list):
        for val in obj:
            yield from _paths(val, key)
    elif isinstance(obj, str) and key in ("path", "note", "resolved"):
        yield obj


def test_bad_arguments_unknown_notes_and_resources(daemon):
    v = daemon.vault

    async def steps(c):
        out = {}
        for label, name, args in (("limit", "search", {"query": "x", "limit": 0}),
                                  ("missing", "search", {"limit": 2}),
                                  ("wire name", "search", {"q": "x"}),
                                  ("envelope", "read", {"note": "Deep work", "paths": "vault"}),
                                  ("type", "context", {"query": "x", "budget": "lots"}),
                                  ("date", "search", {"query": "x", "after": "yesterday"}),
                                  ("one tag", "search", {"query": "boredom", "tag": "nope"}),
                                  ("a number as text", "search", {"query": "boredom", "limit": "1"}),
                                  ("a range as text", "read", {"note": "Deep work", "lines": "7:8"}),
                                  ("a line as text", "read", {"note": "Deep work", "lines": "7"}),
                                  ("no note", "backlinks", {"note": "no such thing"}),
                                  ("no tool", "split", {"note": "Deep work"})):
            r = await c.call_tool(name, args)
            out[label] = (r.is_error, r.content[0].text)
        res = await c.list_resources()
        note = next(r for r in res.resources if r.title == "Deep work")
        out["resource"] = (note.uri, (await c.read_resource(note.uri)).contents[0].text)
        templates = (await c.list_resource_templates()).resource_templates
        out["template"] = templates[0].uri_template
        try:
            await c.read_resource(f"file://{v.parent}/elsewhere.md")
        except Exception as e:  # noqa: BLE001  (the SDK's MCPError)
            out["outside"] = str(e)
        return out

    out = session(str(daemon.socket), steps)
    assert out["limit"] == (True, "bad arguments for search: limit: expected int >= 1")
    assert out["missing"] == (True, "bad arguments for search: Object missing required field query")
    assert out["wire name"] == (True, "bad arguments for search: unknown argument 'q'")
    assert out["envelope"] == (True, "bad arguments for read: unknown argument 'paths'")
    assert out["type"][0] and "budget: expected int" in out["type"][1]
    assert out["date"][0] and "after" in out["date"][1]
    assert not out["one tag"][0], out["one tag"]  # one value for a list: taken as a list of one
    assert not out["a number as text"][0] and "Deep work" in out["a number as text"][1], out["a number as text"]
    deep = (v / "notes" / "Deep work.md").read_text().split("\n")
    assert out["a range as text"] == (False, out["a range as text"][1]) and deep[6] in out["a range as text"][1] \
        and deep[7] in out["a range as text"][1] and ":7" in out["a range as text"][1], out["a range as text"]
    assert not out["a line as text"][0] and ":8" not in out["a line as text"][1], out["a line as text"]
    assert out["no note"] == (True, "no note matches 'no such thing' (give a vault path, a Denote identifier, "
                                    "an Org ID or a note name)")
    assert out["no tool"][0] and "unknown tool 'split'" in out["no tool"][1]
    assert "status, rename, remember" in out["no tool"][1]
    assert out["resource"][0] == (v / "notes" / "Deep work.md").as_uri()
    assert out["resource"][1] == (v / "notes" / "Deep work.md").read_text(), "the note as its file holds it"
    assert out["template"] == "file://{+path}"
    assert "outside" in out


def test_a_daemon_that_is_down_is_a_tool_error_that_says_how_to_start_it(short_dir):
    async def steps(c):
        return [await c.call_tool(name, args) for name, args in (("search", {"query": "x"}), ("status", {}))]

    for r in session(str(short_dir / "none.sock"), steps):
        assert r.is_error and "vaultd is not running on" in r.content[0].text
        assert "Start it with `vaultd run --vault PATH`" in r.content[0].text


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_before_the_first_index_completes_every_answer_says_so(make_daemon, tmp_path):
    """The first index held still (its parse workers stopped, SIGSTOP): the socket, vaultq,
    a hook and the MCP tools each say the index is still being built; vaultq exits 4."""
    with first_index_held(make_daemon, tmp_path) as d:
        st = wait_for(lambda: _status(d), interval=0.05)
        assert st["indexing"] is True and st["reconciled"] is False
        assert st["progress"]["total"] == 400 and st["progress"]["done"] < 400
        res = d.request("search", q="quokka")
        assert res["indexing"] is True and res["progress"] == st["progress"]
        sock = str(d.socket)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        r = subprocess.run([sys.executable, "-m", "vaultd.vaultq", "--socket", sock, "search", "quokka"],
                           capture_output=True, text=True, timeout=DEADLINE, env=env, cwd=tmp_path)
        assert r.returncode == 4 and "still building its first index" in r.stderr and "of 400 files read" in r.stderr
        r = subprocess.run([sys.executable, "-m", "vaultd.vaultq", "--socket", sock, "backlinks", "n3"],
                           capture_output=True, text=True, timeout=DEADLINE, env=env, cwd=tmp_path)
        assert r.returncode == 4 and "still building its first index" in r.stderr, r.stderr
        r = subprocess.run([sys.executable, "-m", "vaultd.vaultq", "--socket", sock, "hook", "prompt"],
                           input='{"session_id":"s","cwd":"/","hook_event_name":"UserPromptSubmit","prompt":"quokka"}',
                           capture_output=True, text=True, timeout=DEADLINE, env=env, cwd=tmp_path)
        assert r.returncode == 4 and "still building its first index" in r.stderr

        async def steps(c):
            return await c.call_tool("search", {"query": "quokka"}), await c.call_tool("backlinks", {"note": "n3"})

        search, backlinks = session(sock, steps)
        assert not search.is_error and search.structured_content["indexing"] is True
        assert search.content[0].text.startswith("Note: vaultd is still building its first index of this vault (")
        assert backlinks.is_error and "still building its first index" in backlinks.content[0].text
    st = wait_for(lambda: (s := _status(d)) and s["reconciled"] and s, interval=0.05)
    assert st["indexing"] is False and "progress" not in st and st["notes"] == 400
    assert "indexing" not in d.request("search", q="quokka")


def _status(d) -> dict | None:
    try:
        return d.request("status")
    except OSError:
        d._close()
        return None


def test_the_envelope_fields_are_the_requests_own():
    """`paths` and `agent` are in every request type, and nowhere in a tool's schema."""
    for r in api.REQUESTS:
        assert {"paths", "agent"} <= set(r.__struct_fields__)
    for name in TOOLS:
        assert not set(input_schema(name)["properties"]) & set(protocol.ENVELOPE)
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert({"q": "x", "paths": "relative"}, type=api.Search)


class _Stdio:
    """`vaultd mcp` as a process, spoken to line by line (a message the SDK's client could
    not even build, nested 200,000 deep, among them); its stdout read as it comes."""

    def __init__(self, sock: str):
        self.proc = subprocess.Popen([sys.executable, "-m", "vaultd", "mcp", "--socket", sock], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
        self.lines: queue.Queue = queue.Queue()
        self.reader = threading.Thread(target=lambda: [self.lines.put(ln) for ln in self.proc.stdout], daemon=True)
        self.reader.start()

    def send(self, line: bytes) -> None:
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()

    def answer(self, rid) -> dict:
        """The answer to request `rid` (DEADLINE at most: a bound on a failure)."""
        while True:
            msg = json.loads(self.lines.get(timeout=DEADLINE))
            if msg.get("id") == rid:
                return msg

    def close(self) -> None:
        self.proc.stdin.close()  # EOF: the server ends, and so does the reader
        self.proc.wait(timeout=DEADLINE)
        self.reader.join(timeout=DEADLINE)
        self.proc.stdout.close()


def test_a_message_nested_too_deep_is_answered_and_the_session_goes_on(daemon):
    """A tools/call whose arguments nest 200,000 levels (past what the SDK's JSON reader
    takes) gets an error with its id, as does a line that is not JSON (id null); the
    session answers the next call as before."""
    mcp = _Stdio(str(daemon.socket))
    try:
        mcp.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                        "clientInfo": {"name": "test", "version": "1"}}}).encode())
        assert "result" in mcp.answer(1)
        mcp.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        deep = b"[" * 200_000 + b"]" * 200_000
        mcp.send(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search","arguments":'
                 b'{"query":"boredom","tag":' + deep + b"}}}")
        err = mcp.answer(2)["error"]
        assert err["code"] == -32700 and "nest" in err["message"], err
        mcp.send(b"not json at all")
        assert mcp.answer(None)["error"]["code"] == -32700
        mcp.send(b'{"jsonrpc":"2.0","id":"four"}')  # JSON, not JSON-RPC
        assert mcp.answer("four")["error"]["code"] == -32600
        mcp.send(json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                             "params": {"name": "search", "arguments": {"query": "boredom"}}}).encode())
        res = mcp.answer(5)["result"]
        assert not res.get("isError") and res["structuredContent"]["hits"][0]["title"] == "Deep work", res
    finally:
        mcp.close()
