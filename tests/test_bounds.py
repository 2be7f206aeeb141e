"""Bounded answers, on a vault of 5,000 notes and a 3,000-line note: every MCP tool's answer
(the official SDK's client, the real `vaultd mcp` process, the real daemon) is within its
cap, and paging (a list's `offset`, read's `lines`) gives every item exactly once; the
socket's other paged operations (list, grep, graph, tags) too, and vaultq's output says how
to get the rest."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import DEADLINE, Daemon, mem_tmp, wait_for
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from vaultd import ops
from vaultd.render import cost

NOTES = 5000
BIG_LINES = 3000
HUB_EVERY = 4
"""Every fourth small note links to the hub."""
LINK_EVERY = 5
"""Every fifth line of the big note links to a small note."""
TAGS = 700
ANSWER_BYTES = 100_000
"""No MCP answer (its text and its structured content together) is bigger than this."""


def _build(v: Path) -> dict:
    """The vault: NOTES small notes (n0000.md ...), a hub most link to, a BIG_LINES-line note
    with a link on every LINK_EVERY-th line, and a note with one line longer than any budget;
    the small notes' mtimes a minute and a half apart (none of them a bulk stamp: all recent)."""
    (v / "n").mkdir(parents=True)
    now = time.time()
    for i in range(NOTES):
        hub = " See [[hub]]." if i % HUB_EVERY == 0 else ""
        tags = "todo" if i < 150 else f"t{i % TAGS}"
        p = v / "n" / f"n{i:04d}.md"
        p.write_text(f"---\ntags: [{tags}, t{i % TAGS}]\n---\nnote {i} of many.{hub}\n")
        os.utime(p, (now - 90 * (i + 1), now - 90 * (i + 1)))
    (v / "hub.md").write_text("# Hub\n\nThe hub.\n")
    big = [f"line {k} of the big note" + (f" with [[n{k % NOTES:04d}]]" if k % LINK_EVERY == 0 else "")
           for k in range(1, BIG_LINES + 1)]
    (v / "big.md").write_text("\n".join(big) + "\n")
    (v / "long.md").write_text("# Long\n" + "x" * 100_000 + "\nthe end\n")
    return {"big": big, "hub_links": {f"n/n{i:04d}.md" for i in range(0, NOTES, HUB_EVERY)}}


@pytest.fixture(scope="module")
def big_vault():
    """The vault in memory, its daemon started once for the module (indexing 5,000 notes)."""
    with mem_tmp() as tmp, mem_tmp("vq") as sockdir:
        v = Path(tmp) / "vault"
        truth = _build(v)
        d = Daemon(v, Path(tmp) / "state", Path(sockdir) / "d.sock", ["--split", "off"]).start()
        try:
            wait_for(lambda: d.status()["graph"] == "ready", interval=0.05)
            yield d, truth
        finally:
            d.stop()


def mcp_session(sock: str, steps):
    params = StdioServerParameters(command=sys.executable, args=["-m", "vaultd", "mcp", "--socket", sock],
                                   env={"PYTHONPATH": os.pathsep.join(sys.path)})

    async def main():
        async with Client(params, read_timeout_seconds=DEADLINE) as client:
            return await steps(client)

    return asyncio.run(main())


def _size(answer) -> int:
    return len(answer.content[0].text.encode()) + len(json.dumps(answer.structured_content or {}).encode())


DEFAULT_CALLS = [  # every tool, with only the arguments it needs: its default caps
    ("search", {"query": "note"}),
    ("resolve", {"link": "[[hub]]"}),
    ("context", {"query": "big note line"}),
    ("read", {"note": "big.md"}),
    ("backlinks", {"note": "hub"}),
    ("links", {"note": "big.md"}),
    ("hot", {}),
    ("recent", {}),
    ("changes", {"since": 0}),
    ("pin", {"note": "hub"}),
    ("unpin", {"note": "hub"}),
    ("status", {}),
    ("remember", {"text": "a fact"}),
    ("rename", {"note": "hub", "title": "Hub renamed", "dry_run": True}),  # a preview: its diff capped too
]
LISTS = {"backlinks": "backlinks", "links": "links", "hot": "hot", "recent": "recent"}


def test_every_mcp_tool_s_answer_is_within_its_cap(big_vault):
    d, truth = big_vault

    async def steps(c):
        names = [t.name for t in (await c.list_tools()).tools]
        fixed = not c.server_capabilities.tools.list_changed
        return names, fixed, [(name, await c.call_tool(name, args)) for name, args in DEFAULT_CALLS]

    names, fixed, answers = mcp_session(str(d.socket), steps)
    assert sorted(names) == sorted(n for n, _ in DEFAULT_CALLS), "every tool is asked here"
    assert fixed, "one list of tools, remember in it with capture off: listChanged false"
    for name, got in answers:
        assert _size(got) <= ANSWER_BYTES, (name, _size(got))
        res, text = got.structured_content, got.content[0].text
        if name == "remember":  # capture is off: listed all the same, and it says so
            assert got.is_error and text.startswith("remember is off"), text
            continue
        assert not got.is_error, (name, text)
        if name in LISTS:
            assert len(res[LISTS[name]]) <= ops.LIMITS[name] and res["total"] > len(res[LISTS[name]]) \
                or name == "hot", (name, res["total"])
            if res["more"]:
                assert f"call again with offset {res['next']}" in text, text
        if name == "changes":
            assert sum(len(res[k]) for k in ("added", "changed", "deleted", "moved")) == ops.LIMITS["changes"]
            assert res["more"] and res["total"] >= NOTES and f"offset {res['next']}" in text
        if name == "search":
            assert len(res["hits"]) <= 10
        if name == "context":
            assert res["used"] <= res["budget"] == 2000 and all("text" not in it for it in res["items"])
        if name == "read":  # the note's text once, in the text content; cut at a whole line
            assert "text" not in res and res["more"] and res["first"] == 1
            body = text.split("\n", 1)[1].rsplit("\n(cut after line", 1)[0]
            assert cost(body, "tokens") <= ops.READ_BUDGET
            assert body.split("\n") == truth["big"][: res["last"]]
            a, b = res["next"]
            assert (a, b) == (res["last"] + 1, BIG_LINES) and f"lines [{a}, {b}]" in text


async def _pages(c, tool: str, key: str, args: dict, limit: int | None = None) -> list:
    """Every item of a paged tool's answer, page after page as its `next` says."""
    items, offset = [], 0
    while True:
        got = await c.call_tool(tool, {**args, "offset": offset, **({"limit": limit} if limit else {})})
        assert not got.is_error, got.content[0].text
        res = got.structured_content
        assert res["offset"] == offset and len(res[key]) <= (limit or ops.LIMITS[tool])
        assert limit or _size(got) <= ANSWER_BYTES  # (a limit asked for may make a bigger answer)
        items += res[key]
        if not res["more"]:
            assert res["next"] is None and len(items) == res["total"]
            return items
        assert res["next"] == offset + len(res[key]) and res[key]
        offset = res["next"]


def test_paging_every_mcp_list_gives_every_item_exactly_once(big_vault):
    d, truth = big_vault
    v = d.vault

    async def steps(c):
        back = await _pages(c, "backlinks", "backlinks", {"note": "hub"})
        links = await _pages(c, "links", "links", {"note": "big.md"})
        recent = await _pages(c, "recent", "recent", {"days": 30}, limit=1000)
        hot = await _pages(c, "hot", "hot", {}, limit=30)
        changes, offset = [], 0
        while offset is not None:
            res = (await c.call_tool("changes", {"since": 0, "offset": offset})).structured_content
            assert sum(len(res[k]) for k in ("added", "changed", "deleted", "moved")) <= ops.LIMITS["changes"]
            changes += res["added"] + res["changed"] + res["deleted"] + [tuple(m) for m in res["moved"]]
            offset = res["next"]
        return back, links, recent, hot, changes

    back, links, recent, hot, changes = mcp_session(str(d.socket), steps)
    rel = lambda p: os.path.relpath(p, v)  # noqa: E731  (MCP paths are absolute)
    assert sorted(rel(b["path"]) for b in back) == sorted(truth["hub_links"])
    assert [b["line"] for b in links] == list(range(LINK_EVERY, BIG_LINES + 1, LINK_EVERY))
    every = {f"n/n{i:04d}.md" for i in range(NOTES)} | {"hub.md", "big.md", "long.md"}
    for got in (recent, changes):
        paths = [rel(x["path"]) if isinstance(x, dict) else rel(x) for x in got]
        assert len(paths) == len(set(paths)) and set(paths) == every
    whole = d.request("hot", limit=ops.MOST)
    assert [rel(h["path"]) for h in hot] == [h["path"] for h in whole["hot"]] and len(hot) == whole["total"] > 30


def test_reading_page_after_page_gives_every_line_once(big_vault):
    d, truth = big_vault

    async def steps(c):
        pages, lines = [], None
        while True:
            got = await c.call_tool("read", {"note": "big.md", **({"lines": lines} if lines else {})})
            res = got.structured_content
            body = got.content[0].text.split("\n", 1)[1].rsplit("\n(cut after line", 1)[0]
            pages.append((res["first"], res["last"], body))
            if not res["more"]:
                return pages
            lines = res["next"]

    pages = mcp_session(str(d.socket), steps)
    assert len(pages) > 2 and pages[0][0] == 1 and pages[-1][1] == BIG_LINES
    for (_, last, _), (first, _, _) in zip(pages, pages[1:]):
        assert first == last + 1
    assert [line for _, _, body in pages for line in body.split("\n")] == truth["big"]


def test_a_section_s_rest_and_a_line_longer_than_the_budget(big_vault):
    d, truth = big_vault
    long = (d.vault / "long.md").read_text().split("\n")
    got = d.request("read", note="long.md", budget=1000)
    assert (got["first"], got["last"], got["text"], got["more"], got["next"], got["line_cut"]) == \
        (1, 1, "# Long", True, [2, 3], None)
    got = d.request("read", note="long.md", lines=got["next"], budget=1000)
    assert (got["first"], got["last"], got["more"], got["next"], got["line_cut"]) == (2, 2, True, [3, 3], 2)
    assert long[1].startswith(got["text"]) and 0 < cost(got["text"], "tokens") <= 1000
    got = d.request("read", note="long.md", lines=got["next"], budget=1000)
    assert (got["text"], got["more"], got["next"]) == ("the end", False, None)
    # lines of a range, in bytes: the rest named as the same request would ask it
    got = d.request("read", note="big.md", lines=[11, 20], budget=100, unit="bytes")
    assert len(got["text"].encode()) <= 100 and got["first"] == 11 and got["next"] == [got["last"] + 1, 20]
    assert got["text"].split("\n") == truth["big"][10 : got["last"]]


def test_the_socket_s_other_lists_page_every_item_once(big_vault):
    d, _ = big_vault

    def every(op: str, key: str, limit: int, **args) -> list:
        items, offset = [], 0
        while offset is not None:
            res = d.request(op, limit=limit, offset=offset, **args)
            assert len(res[key]) <= limit
            items += res[key]
            offset = res["next"]
        return items

    first = d.request("list")
    assert len(first["notes"]) == ops.LIMITS["list"] and first["more"] and first["total"] == NOTES + 3
    listed = [n["path"] for n in every("list", "notes", 700)]
    assert len(listed) == len(set(listed)) == NOTES + 3
    tags = d.request("tags")
    assert len(tags["tags"]) == ops.LIMITS["tags"] and tags["more"]
    assert sorted(t["tag"] for t in every("tags", "tags", 300)) == sorted(t["tag"] for t in d.request(
        "tags", limit=ops.MOST)["tags"])
    rows = [(m["path"], m["line"], m["col"]) for m in every("grep", "matches", 1500, q='"of many"')]
    assert len(rows) == len(set(rows)) == NOTES and d.request("grep", q='"of many"')["more"]
    graph = d.request("graph", note="hub", limit=ops.MOST)
    nodes, edges, offset = [], [], 0
    while offset is not None:
        res = d.request("graph", note="hub", limit=250, offset=offset)
        nodes += res["nodes"]
        edges += res["edges"]
        offset = res["next"]
    assert nodes == graph["nodes"] and sorted(edges) == sorted(graph["edges"]) and len(nodes) > 1000


def test_vaultq_says_how_to_get_the_rest(big_vault):
    d, truth = big_vault
    q = lambda *a: subprocess.run([sys.executable, "-m", "vaultd.vaultq", "--socket", str(d.socket), *a],  # noqa: E731
                                  capture_output=True, text=True, timeout=DEADLINE, cwd=d.vault)
    r = q("backlinks", "hub", "--format", "paths")
    assert r.returncode == 0 and len(r.stdout.splitlines()) == ops.LIMITS["backlinks"]
    assert r.stderr == f"vaultq: 100 of {len(truth['hub_links'])} links shown (from the 1st); the next: --offset " \
                       f"100 (or a bigger --limit, at most {ops.MOST})\n"
    r = q("backlinks", "hub", "--format", "paths", "--offset", "1200")
    assert r.returncode == 0 and len(r.stdout.splitlines()) == len(truth["hub_links"]) - 1200 and r.stderr == ""
    r = q("read", "big.md")
    last = len(r.stdout.splitlines())
    assert r.stdout.splitlines() == truth["big"][:last]
    assert r.stderr == f"vaultq: cut after line {last} to stay within --budget 8000 tokens; the rest: --lines " \
                       f"{last + 1}:{BIG_LINES} (or a bigger --budget)\n"
    r = q("read", "big.md", "--lines", f"{last + 1}:{BIG_LINES}", "--budget", "100000")
    assert r.stdout.splitlines() == truth["big"][last:] and r.stderr == ""
    r = q("grep", "of many", "-n", "10", "--offset", "20")
    assert r.returncode == 0 and len(r.stdout.splitlines()) == 10
    assert r.stderr == "vaultq: only 10, from the 21st, matches (--limit); the next: --offset 30\n"
    r = q("grep", "of many", "--format", "paths")  # as rg: every row (ops.GREP_ROWS), not a page of 1,000
    assert r.returncode == 0 and len(r.stdout.splitlines()) == NOTES and r.stderr == ""
    r = q("--vault", str(d.vault), "search", "hub", "--socket", str(d.socket))  # --socket after the command too
    assert r.returncode == 0 and "hub.md" in r.stdout, r.stderr


def test_an_offset_past_the_end_says_so(tmp_path, short_dir):
    """vaultq with --offset past the last item: exit 1 (nothing), and a line saying how many there are."""
    v = tmp_path / "v"
    v.mkdir()
    for i in range(3):
        (v / f"n{i}.md").write_text(f"# N{i}\n\nsome words\n")
    d = Daemon(v, tmp_path / "state", short_dir / "o.sock").start()
    try:
        base = [sys.executable, "-m", "vaultd.vaultq", "--socket", str(d.socket)]
        r = subprocess.run(base + ["list", "--offset", "7"], capture_output=True, text=True, timeout=60)
        assert (r.returncode, r.stdout, r.stderr) == (1, "", "vaultq: --offset 7 is past the end: there are 3 notes\n")
        r = subprocess.run(base + ["grep", "words", "--offset", "9"], capture_output=True, text=True, timeout=60)
        assert (r.returncode, r.stderr) == (1, "vaultq: --offset 9 is past the last match\n")
    finally:
        d.stop()


def test_a_rename_preview_s_diff_is_bounded_and_says_what_it_left_out(big_vault):
    d, truth = big_vault
    res = d.request("rename", note="hub", title="Hub renamed", dry_run=True, diff_max=4000)
    assert len(res["diff"]) <= 4000 and res["diff"].endswith("\n") and res["diff_cut"] > 0
    whole = d.request("rename", note="hub", title="Hub renamed", dry_run=True, diff_max=64 << 20)
    assert "diff_cut" not in whole and len(whole["diff"]) == len(res["diff"]) + res["diff_cut"]
    assert whole["diff"].startswith(res["diff"]) and whole["files"] == res["files"]
