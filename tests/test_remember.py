"""`remember` (issue 20 item 4): off unless `[capture] folder` is set; an entry appended to
the day's capture note, searchable at once; not written when one section of the vault
holds 80% of its keywords; journaled and undone as a split is; refused by a vaultd that
is not the vault's writer; bad input changes nothing. The real daemon on a real socket,
real vaultq, and the MCP SDK's own client."""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from vaultd import mcp
from vaultd.capture import entry
from vaultd.config import Config
from vaultd.errors import ConfigError
from vaultd.parse import parse_file

from conftest import Daemon
from test_mcp import session

NAME = re.compile(r"(\d{8}T\d{6})--capture-(\d{4}-\d{2}-\d{2})__capture\.(md|org)")


def tree(root: Path) -> dict[str, bytes]:
    """Every file under `root` and its bytes."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def notes(root: Path) -> dict[str, bytes]:
    """The vault's files less the journal."""
    return {p: b for p, b in tree(root).items() if not p.startswith(".vaultd/")}


def vaultq(d: Daemon, *args, stdin: bytes | None = None, env: dict | None = None):
    return subprocess.run([sys.executable, "-m", "vaultd.vaultq", "--socket", str(d.socket), *args],
                          capture_output=True, timeout=30, input=stdin, env={**os.environ, **(env or {})})


def error(d: Daemon, **req) -> dict:
    msg = d.send_raw(json.dumps({"v": 1, "id": 1, "op": "remember", **req}).encode() + b"\n")
    assert not msg["ok"], msg
    return msg["error"]


@pytest.fixture
def capture_config(tmp_path):
    def make(folder: str = "inbox", fmt: str = "md") -> list[str]:
        cfg = tmp_path / f"capture-{fmt}.toml"
        cfg.write_text(f'[capture]\nfolder = "{folder}"\nformat = "{fmt}"\n')
        return ["--config", str(cfg)]
    return make


@pytest.fixture
def capturing(make_daemon, capture_config) -> Daemon:
    return make_daemon(extra=capture_config())


def test_off_unless_configured_and_says_so_in_words(daemon):
    before = tree(daemon.vault)
    err = error(daemon, text="The build server is named kiln")
    assert err["code"] == "capture_off" and '[capture] folder = "inbox"' in err["message"] \
        and "nothing was written" in err["message"]
    r = vaultq(daemon, "remember", "The build server is named kiln")
    assert r.returncode == 2 and r.stderr.decode().startswith("vaultq: remember is off: ") and not r.stdout

    async def steps(c):
        return await c.call_tool("remember", {"text": "The build server is named kiln"})

    res = session(str(daemon.socket), steps)
    assert res.is_error and res.content[0].text.startswith("remember is off: vaultd writes an agent's entries into "
                                                           "the vault only when the user turns agent capture on")
    assert daemon.status()["capture"] is None
    assert tree(daemon.vault) == before, "nothing written, not even the journal's folder"


def test_an_entry_is_appended_to_the_day_s_capture_note_and_searchable_at_once(capturing):
    d, v = capturing, capturing.vault
    r = vaultq(d, "remember", "The build server is named kiln; it listens on port 8081.", "--tag", "infra",
               "--tag", "서버", "--session", "9f2c1d7e")
    assert r.returncode == 0, r.stderr
    [name] = os.listdir(v / "inbox")
    m = NAME.fullmatch(name)
    assert m and m.group(2) == dt.date.today().isoformat() and m.group(3) == "md"
    text = (v / "inbox" / name).read_text()
    assert text.startswith(f'---\ntitle:      "Capture {m.group(2)}"\n') and f'identifier: "{m.group(1)}"\n' in text
    assert re.search(r"\n\n# \d\d:\d\d:\d\d\n#infra #서버\n\nThe build server is named kiln; it listens on port 8081\.\n\n"
                     r"Remembered by vaultq, session 9f2c1d7e, \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d\.\n$", text)
    assert r.stdout.decode().startswith(f"remembered in {v}/inbox/{name}:8-13 (a new capture note) (undo: vaultq undo ")
    note = parse_file(f"inbox/{name}", text.encode())
    assert note.id == m.group(1) and note.title == f"Capture {m.group(2)}"
    assert set(note.tags) == {"capture", "infra", "서버"} and [(h.line, h.tags) for h in note.headings] == \
        [(8, ("infra", "서버"))], "the entry's tags tag its heading"

    # searchable when the answer comes: no wait
    res = d.request("remember", text="Deploys happen on Fridays, after the retro.", tags=[], source="claude-code")
    assert res["written"] and not res["created"] and res["path"] == f"inbox/{name}" and (res["first"], res["last"]) \
        == (15, 19) and res["op"]
    hits = d.request("search", q="retro fridays")["hits"]
    assert hits[0]["path"] == f"inbox/{name}" and hits[0]["snippets"][0]["line"] == 17
    assert d.request("search", q="kiln", tag=["infra"])["hits"][0]["path"] == f"inbox/{name}"
    lines = (v / "inbox" / name).read_text().split("\n")
    assert lines[14].startswith("# ") and lines[16] == "Deploys happen on Fridays, after the retro." and \
        lines[18].startswith("Remembered by claude-code, ")
    assert d.status()["capture"] == "inbox"

    async def steps(c):  # the MCP tool: its client's name is the source
        return await c.call_tool("remember", {"text": "The staging database is restored nightly at 03:00.",
                                              "tags": ["infra"], "session": "s-42"})

    got = session(str(d.socket), steps)
    assert not got.is_error and got.structured_content["written"], got.content[0].text
    assert got.structured_content["path"] == f"{v}/inbox/{name}"
    assert got.content[0].text.startswith(f"Remembered: {v}/inbox/{name}:21-26, entry ")
    assert "\nRemembered by mcp, session s-42, " in (v / "inbox" / name).read_text()
    assert d.request("search", q="staging restored nightly")["hits"][0]["path"] == f"inbox/{name}"


def test_an_entry_the_vault_already_holds_is_not_written_and_the_answer_names_the_section(capturing):
    d, v = capturing, capturing.vault
    before = tree(v)
    # the user's own note: "Long blocks of undistracted attention." under "# Deep work"
    res = d.request("remember", text="Deep work: long blocks of undistracted attention")
    assert res == {"written": False, "path": "notes/Deep work.md", "first": 7, "last": 9, "heading": "Deep work",
                   "overlap": 1.0, "op": None, "created": False, "seen": None, "supersedes": None,
                   "generation": res["generation"]}
    r = vaultq(d, "remember", "가치관은 선택의 기준이다")  # Korean: by bigrams, particles and all
    assert r.returncode == 0 and r.stdout.decode() == (
        f"not written: {v}/notes/20251101T120000--가치관__철학.md:5-9 “가치관이란” already holds 100% of its keywords "
        "(vaultq remember --force writes it anyway)\n")
    assert tree(v) == before

    first = d.request("remember", text="The user prefers tabs to spaces in Python code, four columns wide.")
    assert first["written"]
    again = d.request("remember", text="In Python code the user prefers tabs over spaces: four columns wide!")
    assert not again["written"] and (again["path"], again["first"], again["last"]) == \
        (first["path"], first["first"], first["last"] + 1) and again["heading"] == first["heading"] and \
        again["seen"] == 2 and again["op"], "an entry remembered before is counted: one line more"
    assert re.search(r"\nRemembered by unknown, [^\n]+\.\nSeen 2 times, last [^\n]+\.\n$",
                     (v / first["path"]).read_text())
    after_one = tree(v)
    other = d.request("remember", text="The user prefers dark themes in every editor.")  # some words shared only
    assert other["written"] and other["first"] > first["last"]
    assert len(tree(v)[first["path"]]) > len(after_one[first["path"]])

    async def steps(c):
        return await c.call_tool("remember", {"text": "Deep work: long blocks of undistracted attention."})

    got = session(str(d.socket), steps)
    assert not got.is_error and got.content[0].text == (
        f"Not written: the vault already holds this. {v}/notes/Deep work.md:7-9 (section “Deep work”) has 100% of "
        "its keywords; read it there, or remember only what is new (call remember again with force: true to write it "
        "anyway, e.g. a correction).")


def test_keywords_and_the_80_percent_rule():
    assert entry.keywords("The runner was running to the runs!") == {"runner", "run"}
    assert entry.keywords("가치관이") == {"가치", "치관", "관이"}
    assert entry.keywords("it is what it is") == set()
    five = {"a1", "b2", "c3", "d4", "e5"}
    assert entry.known(five, {"a1", "b2", "c3", "d4", "zz"}) and entry.overlap(five, {"a1", "b2", "c3", "d4"}) == 0.8
    assert not entry.known(five, {"a1", "b2", "c3", "zz"})
    # fewer than 3 keywords: only a section with exactly these
    assert entry.known({"milk", "buy"}, {"milk", "buy"}) and not entry.known({"milk", "buy"}, {"milk", "buy", "eggs"})
    assert not entry.known(set(), set())


def test_journal_and_undo_put_the_vault_back_byte_for_byte(capturing):
    d, v = capturing, capturing.vault
    start = notes(v)
    one = d.request("remember", text="The backup disk is labelled Orca and lives in the drawer.")
    assert one["created"]
    journal = json.loads((v / ".vaultd/split" / f"{one['op']}.json").read_text())
    data = (v / one["path"]).read_bytes()
    appended = journal["append"]
    assert journal["kind"] == "capture" and journal["status"] == "done" and journal["note"] == one["path"] and \
        journal["files"] == [] and appended["made"] == ["inbox"] and \
        base64.b64decode(appended["head"]) + base64.b64decode(appended["bytes"]) == data and \
        appended["offset"] == len(base64.b64decode(appended["head"])), "the entry's bytes, not the note's"
    middle = notes(v)
    two = d.request("remember", text="Printer toner is ordered from the shop on Elm Street.")
    assert two["written"] and not two["created"]
    history = vaultq(d, "split", "--history").stdout.decode()
    assert f"{two['op']}  done        {v}/{two['path']} -> entry {two['heading']} remembered: “Printer toner is ordered from the shop on …”" in history

    r = vaultq(d, "split", "--undo", two["op"])
    assert r.returncode == 0 and r.stdout.decode() == f"undid {two['op']}\nrestored 1 file\n", r.stderr
    assert notes(v) == middle, "the note is back byte for byte"
    assert d.request("search", q="toner Elm")["total"] == 0 and d.request("search", q="Orca drawer")["total"] == 1
    r = vaultq(d, "split", "--undo", one["op"])
    assert r.returncode == 0, r.stderr
    assert notes(v) == start and not (v / "inbox").exists(), "the note it created is gone, and the folder it made"
    assert d.request("search", q="Orca drawer")["total"] == 0
    again = vaultq(d, "split", "--undo", one["op"])
    assert again.returncode == 2 and "is undone, not done: nothing to undo" in again.stderr.decode()
    assert not (set(notes(v)) - set(start) - {"inbox"}), "no other file was touched"


def test_an_edited_entry_is_not_undone_over_the_edit_and_the_user_s_own_lines_stay(capturing):
    d, v = capturing, capturing.vault
    one = d.request("remember", text="The garden hose is in the shed behind the bikes.")
    p = v / one["path"]
    p.write_bytes(p.read_bytes() + b"\nMy own line.\n")
    r = vaultq(d, "split", "--undo", one["op"])
    assert r.returncode == 0, r.stderr
    assert p.read_bytes().endswith(b"---\n\n\nMy own line.\n") and b"garden hose" not in p.read_bytes(), \
        "the entry is out, the user's line stays (and so does the note)"
    two = d.request("remember", text="The ladder hangs on the north wall of the garage.")
    p.write_bytes(p.read_bytes().replace(b"north wall", b"south wall"))
    edited = p.read_bytes()
    for force in ((), ("--force",)):
        r = vaultq(d, "split", "--undo", two["op"], *force)
        assert r.returncode == 2 and r.stderr.decode() == (
            f"vaultq: bad_request: {one['path']}: the entry remembered by {two['op']} was edited or removed since: undo "
            "takes out only the entry as it was written (edit the note by hand; --force does not change that); nothing "
            "was undone\n"), r.stderr
        assert p.read_bytes() == edited


def test_a_vaultd_that_is_not_the_vault_s_writer_refuses(capturing, capture_config, tmp_path, short_dir):
    d, v = capturing, capturing.vault
    other = Daemon(v, tmp_path / "state2", short_dir / "e.sock", capture_config()).start()
    try:
        assert d.status()["writer"] and not other.status()["writer"]
        before = tree(v)
        err = error(other, text="The spare key hangs on the hook by the door.")
        assert err["code"] == "bad_request" and re.fullmatch(
            r"remember: another vaultd \(pid \d+\) writes into this vault: only it splits, undoes and remembers; "
            r"this one indexes and answers \(nothing was changed\)", err["message"]), err
        r = vaultq(other, "remember", "The spare key hangs on the hook by the door.")
        assert r.returncode == 2 and "another vaultd" in r.stderr.decode()
        assert tree(v) == before
        # what the vault holds already it can still say
        assert not other.request("remember", text="Deep work means long blocks of undistracted attention")["written"]
        assert d.request("remember", text="The spare key hangs on the hook by the door.")["written"]  # the writer does
    finally:
        other.stop()


BAD = [
    ({"text": ""}, "remember: text is empty: nothing to remember; nothing was written"),
    ({"text": " \n\t\n "}, "remember: text is empty: nothing to remember; nothing was written"),
    ({"text": "x" * (64 * 1024 + 1)}, "remember: text is 65537 bytes; remember takes at most 65536 (64 KB)"),
    ({"text": "가" * 21846}, "remember: text is 65538 bytes"),
    ({"text": "a\x00b"}, "remember: text holds a control character (U+0000) at character 1"),
    ({"text": "fine", "tags": ["two words"]}, "remember: tag 'two words': a tag is one word"),
    ({"text": "fine", "tags": ["#hash"]}, "remember: tag '#hash': a tag is one word"),
    ({"text": "fine", "tags": ["a:b"]}, "remember: tag 'a:b'"),
    ({"text": "fine", "tags": ["123"]}, "remember: tag '123'"),
    ({"text": "fine", "tags": [f"t{i}" for i in range(17)]}, "remember: 17 tags; at most 16"),
    ({"text": "fine", "source": "two\nlines"}, "remember: source 'two\\nlines': expected a plain name of 1 to 200"),
    ({"text": "fine", "source": "user (me, really) #urgent [[Deep work]]"},
     "remember: source 'user (me, really) #urgent [[Deep work]]': expected a plain name of 1 to 200 characters: "
     "letters, digits, spaces and - _ . @ / : (no #, [, ] or line breaks); nothing was written"),
    ({"text": "fine", "session": "s1 [[Deep work]]"}, "remember: session 's1 [[Deep work]]': expected a plain name"),
    ({"text": "one\x85two"}, "remember: text holds a control character (U+0085) at character 3"),
    ({"text": "one\u2028two"}, "remember: text holds a control character (U+2028) at character 3"),
    ({"text": "one\u2029two"}, "remember: text holds a control character (U+2029)"),
    ({"text": "one\x9btwo"}, "remember: text holds a control character (U+009B)"),
    ({"text": "fine", "session": "x" * 201}, "remember: session 'xxxx"),
    ({"text": 5}, "text: expected `str`, got `int`"),
    ({"tags": ["x"]}, "Object missing required field `text`"),
]


def test_bad_input_is_a_clear_error_and_changes_nothing(capturing):
    d, v = capturing, capturing.vault
    before = tree(v)
    for req, message in BAD:
        err = error(d, **req)
        assert err["code"] == "bad_request" and err["message"].startswith(message), (req, err)
    # a line that is not UTF-8, and a lone surrogate escaped in JSON: refused as they are read
    for raw, said in ((b'{"v":1,"op":"remember","text":"caf\xe9"}\n', "Invalid UTF-8"),
                      (b'{"v":1,"op":"remember","text":"a\\ud800"}\n', "")):
        msg = d.send_raw(raw)
        assert not msg["ok"] and msg["error"]["code"] in ("bad_request", "bad_json") and said in \
            msg["error"]["message"], msg
    # vaultq: argv bytes that are not UTF-8, standard input that is not
    r = subprocess.run([sys.executable, "-m", "vaultd.vaultq", "--socket", str(d.socket), "remember", b"caf\xe9"],
                       capture_output=True, timeout=30)
    assert r.returncode == 2 and r.stderr == b"vaultq: TEXT is not valid UTF-8; nothing was written\n"
    r = vaultq(d, "remember", "-", stdin=b"caf\xe9 au lait")
    assert r.returncode == 2 and r.stderr == b"vaultq: standard input is not UTF-8 (byte 3); nothing was written\n"
    r = vaultq(d, "remember", "ok", "--tag", "two words")
    assert r.returncode == 2 and r.stderr.decode().startswith("vaultq: bad_request: remember: tag 'two words'")

    async def steps(c):  # MCP: bad fields named
        return [await c.call_tool("remember", {"text": "ok", "tags": "infra"}),
                await c.call_tool("remember", {"text": ""})]

    tags, empty = session(str(d.socket), steps)
    # a lone surrogate (valid JSON, which the SDK's client cannot send): the SDK's server cannot
    # read the call, and vaultd mcp answers it with an error (the next call is answered); the tool
    # refuses it, never replaces it
    answers = raw_mcp_calls(str(d.socket), [("remember", '{"text": "caf\\ud800"}'), ("status", "{}")])
    assert sorted(answers) == [2, 3] and "error" in answers[2] and not answers[3]["isError"]
    with pytest.raises(mcp.BadArguments, match="a string holds a lone surrogate \\(not valid Unicode\\): nothing "
                                               "was written"):
        mcp.request_args("remember", {"text": "caf\ud800"})
    assert tags.is_error and tags.content[0].text.startswith("bad arguments for remember: tags: expected array")
    assert empty.is_error and "text is empty" in empty.content[0].text
    assert tree(v) == before, "no file written, no journal made"


def raw_mcp_calls(sock: str, calls: list[tuple[str, str]]) -> dict[int, dict]:
    """`tools/call`s (tool, arguments as JSON text) sent to `vaultd mcp` as JSON-RPC lines
    written by hand, ids 2, 3, ...: the results it answered by the last one, by id (an error
    answer as {"error": ...})."""
    import threading

    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "by-hand", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    data = "".join(json.dumps(x) + "\n" for x in lines) + "".join(
        '{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": {"name": "%s", "arguments": %s}}\n'
        % (i, tool, args) for i, (tool, args) in enumerate(calls, start=2))
    p = subprocess.Popen([sys.executable, "-m", "vaultd", "mcp", "--socket", sock], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    timer = threading.Timer(30, p.kill)  # no answer: the read below ends, and the test fails
    timer.start()
    got: dict[int, dict] = {}
    try:
        p.stdin.write(data.encode())
        p.stdin.flush()
        while len(calls) + 1 not in got:
            line = p.stdout.readline()
            assert line, f"vaultd mcp closed its output; answered {got}"
            msg = json.loads(line)
            if msg.get("id", 1) != 1:
                got[msg["id"]] = msg["result"] if "result" in msg else {"error": msg["error"]}
        return got
    finally:
        timer.cancel()
        p.stdin.close()
        p.wait(timeout=15)
        p.stdout.close()


def test_standard_input_and_markup_that_would_break_the_note(capturing):
    d, v = capturing, capturing.vault
    text = "# Not a heading of the note\n\n```python\nprint('a fence left open')\n"
    r = vaultq(d, "remember", "-", "--json", stdin=text.encode())
    res = json.loads(r.stdout)
    assert r.returncode == 0 and res["written"], r.stderr
    d.request("remember", text="A later entry stays a section of its own after the open fence.")
    data = (v / res["path"]).read_bytes()
    note = parse_file(res["path"], data)
    assert [h.text for h in note.headings] == [res["heading"], note.headings[1].text] and \
        re.fullmatch(r"\d\d:\d\d:\d\d(-\d+)?", note.headings[1].text)
    assert b"\n\\# Not a heading of the note\n" in data and b"print('a fence left open')\n```\n" in data
    assert d.request("search", q="later entry own section")["hits"][0]["path"] == res["path"]


def test_org_capture_notes(make_daemon, capture_config):
    d = make_daemon(extra=capture_config("capture/agents", "org"))
    v = d.vault
    res = d.request("remember", text="* looks like a heading\nThe NAS wakes at 07:00.", tags=["home", "nas"],
                    source="codex", session="s1")
    assert res["written"] and res["created"]
    [name] = os.listdir(v / "capture/agents")
    assert NAME.fullmatch(name).group(3) == "org"
    data = (v / res["path"]).read_text()
    ident = NAME.fullmatch(name).group(1)
    assert data.startswith(f"#+title:      Capture {dt.date.today().isoformat()}\n#+date:       [")
    assert f"#+filetags:   :capture:\n#+identifier: {ident}\n\n* " in data
    assert re.search(r"\n\* \d\d:\d\d:\d\d :home:nas:\n:PROPERTIES:\n:SOURCE:   codex\n:SESSION:  s1\n"
                     r":CREATED:  \[\d{4}-\d\d-\d\d \w+ \d\d:\d\d:\d\d\]\n:END:\n \* looks like a heading\n"
                     r"The NAS wakes at 07:00\.\n$", data), data
    note = parse_file(res["path"], data.encode())
    assert len(note.headings) == 1 and {"capture", "home", "nas"} <= set(note.tags)
    assert d.request("search", q="NAS wakes", tag=["nas"])["hits"][0]["path"] == res["path"]


@pytest.mark.parametrize("folder, why", [
    ("../out", "leads out of the vault"),
    ("/tmp/x", "is absolute"),
    (".vaultd", "is hidden"),
    (".vaultd/split", "is hidden"),
    ("notes/.hidden", "is hidden"),
    ("node_modules", "is in watch.ignore_dirs"),
    (".", "is the vault itself"),
    ("a//b", "has an empty part"),
])
def test_the_capture_folder_is_checked(vault, folder, why):
    cfg = msgspec.structs.replace(Config(vault=str(vault)), capture=msgspec.structs.replace(Config().capture,
                                                                                           folder=folder))
    with pytest.raises(ConfigError, match=re.escape(why)):
        cfg.load()
    ok = msgspec.structs.replace(cfg, capture=msgspec.structs.replace(cfg.capture, folder="inbox/agents/"))
    assert ok.load().capture.folder == "inbox/agents"
    bad = msgspec.structs.replace(cfg, capture=msgspec.structs.replace(cfg.capture, folder="inbox", format="txt"))
    with pytest.raises(ConfigError, match="capture.format: expected md or org"):
        bad.load()


def test_a_correction_supersedes_what_it_corrects_a_repeat_is_counted_and_force_writes_anyway(capturing):
    d, v = capturing, capturing.vault
    for old, new, changed in (("Alice does not like tea.", "Alice likes tea.", "negation"),
                              ("The password rotates every 30 days.", "The password rotates every 90 days.", "number"),
                              ("The cat is allowed in the bedroom.", "The cat is never allowed in the bedroom.",
                               "negation"),
                              ("민수는 커피를 마신다.", "민수는 커피를 안 마신다.", "negation")):
        was = d.request("remember", text=old)
        assert was["written"], old
        res = d.request("remember", text=new)
        assert res["written"] and res["supersedes"] == {"path": was["path"], "first": was["first"],
                                                        "last": was["last"] + 2, "heading": was["heading"],
                                                        "value": changed}, (new, res)
    same = d.request("remember", text="Alice likes tea!")  # the newest, said again: counted
    assert not same["written"] and same["overlap"] == 1.0 and same["seen"] == 2
    r = vaultq(d, "remember", "The password rotates every 90 days")
    assert r.returncode == 0 and re.fullmatch(r"already remembered: \S+:\d+-\d+ “[\d:-]+”, seen 2 times now \(undo: "
                                              r"vaultq undo \S+\)\n", r.stdout.decode()), r.stdout
    r = vaultq(d, "remember", "The password rotates every 90 days", "--force", "--json")
    res = json.loads(r.stdout)
    assert r.returncode == 0 and res["written"] and (v / res["path"]).read_text().count("every 90 days") == 2

    async def steps(c):
        return [await c.call_tool("remember", {"text": "Alice likes tea"}),
                await c.call_tool("remember", {"text": "Alice likes tea", "force": True})]

    held, forced = session(str(d.socket), steps)
    assert not held.structured_content["written"] and held.content[0].text.startswith("Already remembered: ") and \
        "seen 3 times now" in held.content[0].text
    assert forced.structured_content["written"], forced.content[0].text
    assert entry.differs("every 90 days", "every 30 days") and not entry.differs("every 30 days", "30 days, every")
    assert entry.differs("Alice likes tea", "Alice doesn't like tea") and \
        not entry.differs("Alice doesn't like tea", "Alice does not like tea")


def test_undo_takes_out_one_entry_and_leaves_the_later_ones(capturing):
    d, v = capturing, capturing.vault
    start = notes(v)
    ops = [d.request("remember", text=f"Fact {w}: the {w} key opens the {w} cupboard.", force=True)
           for w in ("amber", "birch", "cedar", "dune", "ember", "fjord", "gorse", "heath")]
    path = v / ops[0]["path"]
    r = vaultq(d, "split", "--undo", ops[1]["op"])
    assert r.returncode == 0 and r.stdout.decode() == f"undid {ops[1]['op']}\nrestored 1 file\n", r.stderr
    data = path.read_text()
    assert "birch" not in data and all(w in data for w in ("amber", "cedar", "dune", "heath"))
    assert d.request("search", q="+birch")["total"] == 0 and d.request("search", q="+heath")["total"] == 1
    history = {line.split()[0]: line.split()[1] for line in vaultq(d, "split", "--history").stdout.decode().split("\n")
               if line.strip()}
    assert history[ops[1]["op"]] == "undone" and all(history[o["op"]] == "done" for o in ops if o is not ops[1])
    # --undo --all undoes splits only: the entries stay
    r = vaultq(d, "split", "--undo", "--all")
    assert r.returncode == 1 and path.read_text() == data, r.stderr
    # undone one by one, in any order: each takes out its own bytes; the last one removes the note it made
    for o in (ops[5], ops[0], ops[7], ops[2], ops[3], ops[4], ops[6]):
        r = vaultq(d, "split", "--undo", o["op"])
        assert r.returncode == 0, r.stderr
    assert notes(v) == start and not (v / "inbox").exists()


def test_the_journal_grows_by_each_entry_not_by_the_note(capturing):
    import random
    import time

    d, v = capturing, capturing.vault
    rng = random.Random(7)
    total, took = 0, []
    for i in range(16):
        text = " ".join(f"w{rng.getrandbits(40):x}" for _ in range(3000))  # ~36 KB, nothing in common
        t = time.monotonic()
        res = d.request("remember", text=text)
        took.append(time.monotonic() - t)
        assert res["written"], i
        total += len(text)
    journal = sum(p.stat().st_size for p in (v / ".vaultd/split").glob("*.json"))
    note = (v / res["path"]).stat().st_size
    assert note > total and journal < 1.5 * note, (journal, note)  # base64 of each entry once
    assert took[-1] < 10 * max(took[0], 0.2), took


def test_a_symlinked_capture_folder_is_checked_as_the_real_folder(vault, tmp_path):
    (vault / ".vaultd").mkdir()
    (vault / ".git").mkdir()
    (vault / "jlink").symlink_to(".vaultd")
    (vault / "glink").symlink_to(".git")
    (vault / "out").symlink_to(tmp_path)
    (vault / "afile").write_text("not a folder")
    (vault / "notes" / "inbox").mkdir()
    (vault / "ok").symlink_to("notes/inbox")

    def load(folder: str) -> Config:
        return msgspec.structs.replace(Config(vault=str(vault)), capture=msgspec.structs.replace(
            Config().capture, folder=folder)).load()

    for folder, why in (("jlink", "capture.folder 'jlink' is '.vaultd' through a symlink, which is hidden"),
                        ("glink/sub", "capture.folder 'glink/sub' is '.git/sub' through a symlink, which is hidden"),
                        ("out", f"capture.folder 'out' leads out of the vault (through a symlink, to {tmp_path})"),
                        ("afile", "capture.folder 'afile' is a file, not a folder")):
        with pytest.raises(ConfigError, match=re.escape(why)):
            load(folder)
    assert load("ok").capture.folder == "notes/inbox"
    cfg = tmp_path / "c.toml"
    cfg.write_text('[capture]\nfolder = "jlink"\n')
    r = subprocess.run([sys.executable, "-m", "vaultd", "check", "--config", str(cfg), "--vault", str(vault)],
                       capture_output=True, timeout=30, text=True)
    assert r.returncode != 0 and "capture: " not in r.stdout and "is '.vaultd' through a symlink" in r.stderr, r


def test_a_capture_folder_made_a_symlink_after_start_is_refused(capturing):
    d, v = capturing, capturing.vault
    (v / ".git").mkdir()
    (v / "inbox").symlink_to(".git")
    before = tree(v)
    err = error(d, text="The router's admin page is at 192.168.1.1.")
    assert err["code"] == "bad_request" and err["message"] == (
        "remember: capture.folder 'inbox' is '.git' through a symlink, which is hidden (a name starting with \".\", "
        "like vaultd's journal .vaultd/): it would not be indexed; nothing was written"), err
    assert tree(v) == before and not any((v / ".git").iterdir())


def test_the_capture_folder_and_note_get_the_vault_s_modes(capturing):
    d, v = capturing, capturing.vault
    os.chmod(v, 0o755)
    res = d.request("remember", text="The recycling goes out on Tuesday evenings.")
    assert res["written"] and stat.S_IMODE(os.stat(v / "inbox").st_mode) == 0o755
    assert stat.S_IMODE(os.stat(v / res["path"]).st_mode) == 0o644


@pytest.mark.parametrize("what, said", [("symlink", "is a symlink"), ("folder", "is not a regular file")])
def test_today_s_capture_note_that_is_not_a_regular_file_is_refused(capturing, what, said):
    d, v = capturing, capturing.vault
    res = d.request("remember", text="The spare bulbs are in the hall cupboard.")
    p = v / res["path"]
    p.rename(v / "notes" / "moved.md")
    if what == "symlink":
        p.symlink_to(v / "notes" / "moved.md")
    else:
        p.mkdir()
    before = tree(v)
    err = error(d, text="The fuse box is behind the coats.")
    assert err["message"] == (f"remember: today's capture note {p} {said}: remember writes only regular files "
                              "(move it away); nothing was written"), err
    assert tree(v) == before


def test_agent_written_tags_and_names_never_make_a_capture_note_hot(capturing):
    d, v = capturing, capturing.vault
    res = d.request("remember", text="Renew the domain before March. #urgent", tags=["urgent", "Urgent", "active"],
                    source="claude code", session="s-1")
    data = (v / res["path"]).read_text()
    assert "Remembered by claude code, session s-1, " in data and re.search(r"\n# [\d:-]+\n#urgent #active\n", data)
    d.request("read", note=res["path"])  # a person reads it: HOT for that, not for the agent's tags
    [it] = [h for h in d.request("hot")["hot"] if h["path"] == res["path"]]
    assert not [w for w in it["why"] if w.startswith("tag:")], it
    r = vaultq(d, "status")
    assert r.returncode == 0 and "\ncapture:    on: `vaultq remember` appends to the day's capture note in inbox/\n" \
        in r.stdout.decode()


def test_the_mcp_tool_list_follows_capture(capturing):
    async def steps(c):
        return [t.name for t in (await c.list_tools()).tools]

    assert "remember" in session(str(capturing.socket), steps)


def test_markup_in_an_entry_stays_inert(capturing, make_daemon, capture_config):
    d, v = capturing, capturing.vault
    text = "A title\n===\n\nSome text\n---\n<!-- an open comment\n%% and an Obsidian one"
    res = d.request("remember", text=text)
    later = d.request("remember", text="This later entry is shown, not hidden in a comment.")
    data = (v / res["path"]).read_text()
    assert "\n\nA title\n\\===\n\nSome text\n\\---\n<!-- an open comment\n%% and an Obsidian one\n-->\n\n" \
        "Remembered by " in data, data
    assert data.index("This later entry") > data.index("-->\n")
    assert later["first"] > res["last"]


def test_org_keywords_in_an_entry_are_inert_and_blocks_kept(make_daemon, capture_config):
    d = make_daemon(extra=capture_config("inbox", "org"))
    text = ("#+filetags: :urgent:\n#+title: Not the title\n#+begin_src python\n* not a heading\n  x = 1\n"
            "#+end_src\n* a heading")
    res = d.request("remember", text=text)
    data = (d.vault / res["path"]).read_text()
    assert data.endswith(":END:\n,#+filetags: :urgent:\n,#+title: Not the title\n#+begin_src python\n"
                         ",* not a heading\n  x = 1\n#+end_src\n * a heading\n"), data
    note = parse_file(res["path"], data.encode())
    assert "urgent" not in note.tags and note.title.startswith("Capture ") and len(note.headings) == 1
