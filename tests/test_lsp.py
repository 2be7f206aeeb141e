"""`vaultd lsp` driven by pygls's own LanguageClient over stdio, against the real daemon on
tests/fixtures/editor_vault: every request as an editor sends it, positions in UTF-16."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from conftest import DEADLINE, first_index_held, wait_for
from lsprotocol import types as t
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

EDITOR_VAULT = Path(__file__).parent / "fixtures" / "editor_vault"
KOREAN = "notes/20251101T120000--가치관__철학.md"
MEMORY = "notes/20251016T080208--memory-tiers__agents_memory.org"
LSP_ARGS: list[str] = []


@pytest.fixture
def evault(tmp_path) -> Path:
    dest = tmp_path / "ev"
    shutil.copytree(EDITOR_VAULT, dest)
    return dest


@pytest.fixture
def edaemon(make_daemon, evault):
    return make_daemon(evault)


def u16(text: str) -> int:
    """A string's length in UTF-16 code units, as LSP counts columns."""
    return len(text.encode("utf-16-le")) // 2


def where(vault: Path, rel: str, line: int, needle: str, after: int = 0) -> t.Position:
    """The LSP position (0-based line, UTF-16 column) of `needle` on 1-based `line` of a file."""
    text = (vault / rel).read_text().split("\n")[line - 1]
    return t.Position(line=line - 1, character=u16(text[: text.index(needle) + after]))


class Session:
    """One `vaultd lsp` process and a pygls client talking to it."""

    def __init__(self, client: LanguageClient, vault: Path):
        self.c, self.vault = client, vault
        self.diagnostics: dict[str, list[t.Diagnostic]] = {}
        self.messages: list[t.ShowMessageParams] = []
        self.events: list[tuple] = []  # what the server sent, in order: ("diagnostics", uri, version), ...
        self.got = asyncio.Event()

    def uri(self, rel: str) -> str:
        return from_fs_path(str(self.vault / rel))

    def open(self, rel: str, text: str | None = None, version: int = 1) -> None:
        lang = "org" if rel.endswith(".org") else "markdown"
        self.c.text_document_did_open(t.DidOpenTextDocumentParams(text_document=t.TextDocumentItem(
            uri=self.uri(rel), language_id=lang, version=version,
            text=(self.vault / rel).read_text() if text is None else text)))

    def change(self, rel: str, text: str, version: int) -> None:
        self.c.text_document_did_change(t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=self.uri(rel), version=version),
            content_changes=[t.TextDocumentContentChangeWholeDocument(text=text)]))

    async def diagnosed(self, rel: str, version: int | None = None, timeout: float = DEADLINE) -> list[t.Diagnostic]:
        uri = self.uri(rel)

        async def wait():
            while uri not in self.diagnostics or version is not None and self.versions.get(uri) != version:
                self.got.clear()
                await self.got.wait()
            return self.diagnostics[uri]

        return await asyncio.wait_for(wait(), timeout)

    versions: dict[str, int | None] = {}

    def doc(self, rel: str) -> t.TextDocumentIdentifier:
        return t.TextDocumentIdentifier(uri=self.uri(rel))

    async def definition(self, rel: str, pos: t.Position):
        return await self.c.text_document_definition_async(t.DefinitionParams(text_document=self.doc(rel), position=pos))

    async def references(self, rel: str, pos: t.Position):
        return await self.c.text_document_references_async(t.ReferenceParams(
            text_document=self.doc(rel), position=pos, context=t.ReferenceContext(include_declaration=False)))

    async def completion(self, rel: str, pos: t.Position):
        return await self.c.text_document_completion_async(t.CompletionParams(text_document=self.doc(rel), position=pos))

    def replied(self, name: str, future):
        """Await a request sent with the client's future API, and note its reply in `events`
        as it comes in (in the order of the messages, before any later one is handled)."""
        future.add_done_callback(lambda _: self.events.append(("reply", name)))
        return asyncio.wrap_future(future)

    async def hover(self, rel: str, pos: t.Position):
        return await self.c.text_document_hover_async(t.HoverParams(text_document=self.doc(rel), position=pos))


def lsp(vault: Path, steps, socket: str | None = None, env: dict | None = None,
        caps: t.ClientCapabilities | None = None):
    """Run `steps(session)` against `vaultd lsp` started in the vault (as an editor starts it),
    the client offering `caps` (none by default). Its stderr is read all along (a full pipe
    would stop it); every wait has the deadline, and a server that does not answer its
    shutdown by then is killed. What the server asks the client to show is in `s.shown`."""

    async def main():
        client = LanguageClient("test", "1")
        s = Session(client, vault)
        s.versions, s.shown = {}, []

        @client.feature(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def _diags(params: t.PublishDiagnosticsParams):
            s.diagnostics[params.uri] = list(params.diagnostics)
            s.versions[params.uri] = params.version
            s.events.append(("diagnostics", params.uri, params.version))
            s.got.set()

        @client.feature(t.WINDOW_SHOW_MESSAGE)
        def _msg(params: t.ShowMessageParams):
            s.messages.append(params)
            s.got.set()

        @client.feature(t.WINDOW_SHOW_DOCUMENT)
        def _show(params: t.ShowDocumentParams):
            s.shown.append(params.uri)
            s.got.set()
            return t.ShowDocumentResult(success=True)

        args = ["-m", "vaultd", "lsp", *LSP_ARGS] + (["--socket", socket] if socket else [])
        await client.start_io(sys.executable, *args, cwd=str(vault),
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), **(env or {})})
        drain = asyncio.create_task(_drain(client._server.stderr))
        try:
            await asyncio.wait_for(client.initialize_async(t.InitializeParams(
                capabilities=caps or t.ClientCapabilities(), root_uri=from_fs_path(str(vault)),
                process_id=os.getpid())),
                DEADLINE)
            client.initialized(t.InitializedParams())
            return await asyncio.wait_for(steps(s), DEADLINE)
        finally:
            try:
                await asyncio.wait_for(client.shutdown_async(None), DEADLINE)
                client.exit(None)
            finally:
                if client._server.returncode is None:
                    try:
                        await asyncio.wait_for(client._server.wait(), DEADLINE)
                    except asyncio.TimeoutError:
                        client._server.kill()
                await client.stop()
                await drain

    return asyncio.run(main())


async def _drain(stream) -> None:
    """Read a child's stream to its end, so that it never waits on a full pipe."""
    while await stream.read(1 << 16):
        pass


def line_of(vault: Path, rel: str, text: str) -> int:
    """The 0-based line of `text` in a file."""
    return next(i for i, ln in enumerate((vault / rel).read_text().split("\n")) if ln.startswith(text))


def test_definition_on_every_link_syntax(edaemon, evault):
    deep = evault / "notes" / "Deep work.md"
    mem = evault / MEMORY
    rules, korean, block = (line_of(evault, "notes/Deep work.md", x) for x in ("## Rules", "## 규칙", "1. Work"))
    cold, hot = line_of(evault, MEMORY, "* COLD"), line_of(evault, MEMORY, "* HOT")
    cases = [  # (file, line, text to put the cursor in, expected file, expected 0-based line)
        (KOREAN, 7, "Deep work#Rules", deep, rules),  # [[Note#Heading|alias]] on a Korean line
        (KOREAN, 8, "규칙 정리]]", deep, korean),  # [[Note#한국어 heading]] after an emoji
        (KOREAN, 8, "^rule1]]", deep, block),  # [[Note#^block]] after an emoji and Hangul
        (KOREAN, 9, "![[", deep, block),  # ![[embed#^block]]
        (KOREAN, 10, "Deep%20work", deep, rules),  # [text](path%20encoded.md#slug)
        (KOREAN, 10, "denote:", mem, 0),  # [text](denote:ID)
        (KOREAN, 12, "#가치관이란", evault / KOREAN, 4),  # [[#heading]] in this same note
        (KOREAN, 12, "Deep work - Rules", evault / "notes" / "Deep work - Rules.md", 0),
        (MEMORY, 21, "file:Deep", deep, rules),  # [[file:x.md::search]]
        (MEMORY, 21, "id:4f1c", mem, hot),  # [[id:UUID]]: its heading
        (MEMORY, 22, "*COLD", mem, cold),  # [[*Heading]]
        (MEMORY, 22, "::#cold", mem, cold),  # [[file:x.org::#custom-id]]
        ("projects/vaultd.org", 5, "denote:2025", mem, 0),  # [[denote:ID][...]]
        ("projects/vaultd.org", 5, "::#cold", mem, cold),  # [[denote:ID::#custom-id][한국어]]
        ("projects/vaultd.org", 6, "*HOT", mem, hot),  # [[file:x.org::*Heading]]
        ("projects/vaultd.org", 9, "深い", deep, 0),  # on a Japanese line, on the description
    ]

    async def steps(s: Session):
        out = []
        for rel, line, needle, *_ in cases:
            s.open(rel)
            out.append(await s.definition(rel, where(evault, rel, line, needle, after=1)))
        return out

    got = lsp(evault, steps, str(edaemon.socket))
    for (rel, line, needle, path, want), loc in zip(cases, got):
        assert isinstance(loc, t.Location), (rel, line, needle, loc)
        assert (loc.uri, loc.range.start.line, loc.range.start.character) == (from_fs_path(str(path)), want, 0), \
            (rel, line, needle)


def test_references_are_backlinks_with_utf16_ranges(edaemon, evault):
    async def steps(s: Session):
        s.open("notes/Deep work.md")
        s.open(KOREAN)
        whole = await s.references("notes/Deep work.md", t.Position(line=0, character=0))
        rules = await s.references("notes/Deep work.md", t.Position(line=line_of(evault, "notes/Deep work.md",
                                                                                 "## Rules"), character=3))
        via_link = await s.references(KOREAN, where(evault, KOREAN, 8, "규칙 정리", after=1))
        return whole, rules, via_link

    whole, rules, via_link = lsp(evault, steps, str(edaemon.socket))
    want = []  # every link into Deep work, from the daemon, at its exact UTF-16 span
    for b in edaemon.request("backlinks", note="Deep work")["backlinks"]:
        text = (evault / b["path"]).read_text().split("\n")[b["line"] - 1]
        start = u16(text[: b["col"] - 1])
        want.append((from_fs_path(str(evault / b["path"])), b["line"] - 1, start, start + u16(b["raw"]),
                     b["resolved_line"]))
    got = [(r.uri, r.range.start.line, r.range.start.character, r.range.end.character) for r in whole]
    assert sorted(got) == sorted(w[:4] for w in want) and len(got) >= 10
    emoji = next(w for w in want if w[:2] == (from_fs_path(str(evault / KOREAN)), 7) and w[2] > 20)
    assert emoji[2] == u16("🎯 목표 😀: [[Deep work#규칙 정리]] 그리고 ")  # past two astral characters
    rules_line = line_of(evault, "notes/Deep work.md", "## Rules") + 1
    assert sorted((r.uri, r.range.start.line) for r in rules) == sorted((w[0], w[1]) for w in want
                                                                        if w[4] == rules_line)
    korean_line = line_of(evault, "notes/Deep work.md", "## 규칙") + 1
    assert [(r.uri, r.range.start.line) for r in via_link] == [(w[0], w[1]) for w in want if w[4] == korean_line]


def test_diagnostics_of_the_buffer_as_it_stands(edaemon, evault):
    text = (evault / KOREAN).read_text()
    edited = text + "😀 새 줄: [[Nowhere]] 와 [[Deep work#Rules]]\n"

    async def steps(s: Session):
        s.open(KOREAN)
        saved = await s.diagnosed(KOREAN, 1)
        s.change(KOREAN, edited, 2)
        unsaved = await s.diagnosed(KOREAN, 2)
        return saved, unsaved

    saved, unsaved = lsp(evault, steps, str(edaemon.socket))
    line11 = text.split("\n")[10]
    got = {(d.range.start.line, d.range.start.character, d.range.end.character, d.code): d for d in saved}
    nowhere = (10, 0, u16("[[없는 노트]]"), "broken")
    heading = (10, u16(line11[: line11.index("[[Deep")]), u16(line11[: line11.index(" 그리고")]), "broken")
    same = (10, u16(line11[: line11.index("[[Same")]), u16(line11), "ambiguous")
    assert set(got) == {nowhere, heading, same}
    assert got[nowhere].message == "broken link: [[없는 노트]]: no such note"
    assert got[heading].message == "broken link: [[Deep work#없는 제목]]: no such heading"
    assert got[same].message == "ambiguous link: [[Same]] may be any of notes/a/Same.md, notes/b/Same.md"
    assert [r.location.uri for r in got[same].related_information] == \
        [from_fs_path(str(evault / "notes/a/Same.md")), from_fs_path(str(evault / "notes/b/Same.md"))]
    # the unsaved line: its new broken link found, at its UTF-16 columns after an emoji
    new = [d for d in unsaved if d.range.start.line == 12]
    assert [(d.range.start.character, d.range.end.character, d.message) for d in new] == \
        [(u16("😀 새 줄: "), u16("😀 새 줄: [[Nowhere]]"), "broken link: [[Nowhere]]: no such note")]
    assert len(unsaved) == 4


def test_completion_of_targets_headings_and_tags(edaemon, evault):
    text = (evault / KOREAN).read_text()
    lines = text.split("\n")
    typed = ["😀 [[Dee", "😀 [[Deep work#", "😀 [[Deep work#^", "🎯 #jour", "[[Foc"]
    org = "projects/vaultd.org"
    otext = (evault / org).read_text()
    otyped = ["- [[denote:2025", "- [[file:../notes/20251016T080208--memory-tiers__agents_memory.org::*", "* Goals :ag"]

    async def steps(s: Session):
        s.open(KOREAN, "\n".join(lines + typed))
        s.open(org, otext + "\n".join(otyped))
        base, obase = len(lines), len(otext.split("\n")) - 1
        md = [await s.completion(KOREAN, t.Position(line=base + i, character=u16(x))) for i, x in enumerate(typed)]
        og = [await s.completion(org, t.Position(line=obase + i, character=u16(x))) for i, x in enumerate(otyped)]
        return md, og

    md, og = lsp(evault, steps, str(edaemon.socket))
    notes, heads, blocks, tags, alias = md
    deep = next(i for i in notes.items if i.label == "Deep work")
    assert deep.text_edit.new_text == "Deep work]]" and deep.detail == "notes/Deep work.md"
    assert (deep.text_edit.range.start.character, deep.text_edit.range.end.character) == (u16("😀 [["), u16(typed[0]))
    assert [i.label for i in heads.items] == ["Deep work", "Rules", "규칙 정리"]
    assert heads.items[2].text_edit.new_text == "규칙 정리]]"
    assert heads.items[2].text_edit.range.start.character == u16("😀 [[Deep work#")
    assert [i.label for i in blocks.items] == ["^rule1"]
    assert "journal" in [i.label for i in tags.items] and "productivity" in [i.label for i in tags.items]
    jour = next(i for i in tags.items if i.label == "journal")
    assert jour.text_edit.range.start.character == u16("🎯 #")
    focus = next(i for i in alias.items if i.label == "Focus")
    assert focus.text_edit.new_text == "Deep work|Focus]]"
    ids, oheads, otags = og
    mem = next(i for i in ids.items if i.label == "Memory tiers")
    assert mem.text_edit.new_text == "denote:20251016T080208][Memory tiers]]"
    assert [i.label for i in oheads.items] == ["*HOT set", "*日本語の見出し", "*COLD archive", "*Links"]
    assert "agents" in [i.label for i in otags.items]


def test_org_completion_inside_an_existing_close_keeps_the_description(edaemon, evault):
    """Completing inside a link whose `]]` is already written (an editor's electric pair):
    `[[Mem|]]` gets `denote:ID][Title` (it was `denote:ID` alone: the description lost), a
    description the user already wrote after the cursor (`[[Mem|][my words]]`) is kept,
    and each link so made leads where it says."""
    org = "projects/vaultd.org"
    base = (evault / org).read_text()
    typed = ["- [[Mem]]", "- [[Mem][my words]]", "- [[denote:2025]]", "- [[file:Dee]]", "- [[Mem"]
    cursor = ["- [[Mem", "- [[Mem", "- [[denote:2025", "- [[file:Dee", "- [[Mem"]
    first = len(base.split("\n")) - 1  # the typed lines follow the file's last newline
    mem, deep = evault / MEMORY, evault / "notes/Deep work.md"

    async def steps(s: Session):
        s.open(org, base + "\n".join(typed))
        got = [await s.completion(org, t.Position(line=first + i, character=len(c))) for i, c in enumerate(cursor)]
        picked = [next(i for i in g.items if i.label == want)
                  for g, want in zip(got, ["Memory tiers", "Memory tiers", "Memory tiers", "Deep work", "Memory tiers"])]
        lines = []
        for line, item in zip(typed, picked):
            r = item.text_edit.range
            lines.append(line[: r.start.character] + item.text_edit.new_text + line[r.end.character :])
        s.change(org, base + "\n".join(lines), 2)
        where_to = [await s.definition(org, t.Position(line=first + i, character=len("- [[d")))
                    for i in range(len(lines))]
        return picked, lines, where_to

    picked, lines, where_to = lsp(evault, steps, str(edaemon.socket))
    assert lines == ["- [[denote:20251016T080208][Memory tiers]]", "- [[denote:20251016T080208][my words]]",
                     "- [[denote:20251016T080208][Memory tiers]]", "- [[file:../notes/Deep work.md][Deep work]]",
                     "- [[denote:20251016T080208][Memory tiers]]"]
    assert picked[2].filter_text == "denote:20251016T080208 Memory tiers"  # what is typed filters, as before
    assert [(loc.uri, loc.range.start.line) for loc in where_to] == \
        [(from_fs_path(str(p)), 0) for p in (mem, mem, mem, deep, mem)]


def test_just_past_a_link_is_not_on_it(edaemon, evault):
    """The rule in every face (issue 42; the daemon's `links --col` too): definition, hover
    and references on a link's last `]` are the link's; on the character just past `]]`
    there is no link (it was taken as the link's in the LSP alone)."""
    rel, link = "past.md", "[[Deep work#Rules]]"
    last, past = t.Position(line=0, character=len(link) - 1), t.Position(line=0, character=len(link))

    async def steps(s: Session):
        s.open(rel, link + " and more\n")
        return [await s.definition(rel, last), await s.definition(rel, past), await s.hover(rel, last),
                await s.hover(rel, past), await s.references(rel, last), await s.references(rel, past)]

    on_def, past_def, on_hover, past_hover, on_refs, past_refs = lsp(evault, steps, str(edaemon.socket))
    deep = from_fs_path(str(evault / "notes/Deep work.md"))
    assert (on_def.uri, on_def.range.start.line) == (deep, line_of(evault, "notes/Deep work.md", "## Rules"))
    assert on_hover.range.end.character == len(link) and on_hover.contents.value.startswith("**Deep work**")
    assert len(on_refs) >= 2  # the links to Deep work's Rules
    assert past_def is None and past_hover is None
    assert past_refs is not None and list(past_refs) == []  # the buffer's own: none link to an unsaved file


def test_hover_and_symbols(edaemon, evault):
    async def steps(s: Session):
        s.open(KOREAN)
        h1 = await s.hover(KOREAN, where(evault, KOREAN, 8, "규칙 정리", after=1))
        h2 = await s.hover(KOREAN, where(evault, KOREAN, 11, "Same", after=1))
        s.open(MEMORY)
        syms = await s.c.text_document_document_symbol_async(t.DocumentSymbolParams(text_document=s.doc(MEMORY)))
        ws = await s.c.workspace_symbol_async(t.WorkspaceSymbolParams(query="vaultmark"))
        return h1, h2, syms, ws

    h1, h2, syms, ws = lsp(evault, steps, str(edaemon.socket))
    line8 = (evault / KOREAN).read_text().split("\n")[7]
    assert h1.range.start == t.Position(line=7, character=u16(line8[: line8.index("[[Deep work#규")]))
    assert h1.range.end.character == h1.range.start.character + u16("[[Deep work#규칙 정리]]")
    value = h1.contents.value
    assert value.startswith("**Deep work**  #reading #productivity\n\n`notes/Deep work.md:16`")
    assert "## 규칙 정리\n\n깊은 일을 위한 규칙을 정리한다. vaultmark" in value
    assert h2.contents.value == "**ambiguous**\n- `" + str(evault / "notes/a/Same.md") + "`\n- `" + \
        str(evault / "notes/b/Same.md") + "`"
    tree = [(s.name, s.range.start.line, s.range.end.line, [(c.name, c.range.start.line) for c in s.children])
            for s in syms]
    assert tree == [("HOT set", 7, 13, [("日本語の見出し", 12)]), ("COLD archive", 14, 18, []), ("Links", 19, 21, [])]
    jp = syms[0].children[0]
    assert jp.selection_range.end.character == u16("** 日本語の見出し")
    hits = {s.location.uri: s.name for s in ws}
    assert hits[from_fs_path(str(evault / "notes/Deep work - Rules.md"))] == "Deep work - Rules"
    assert hits[from_fs_path(str(evault / MEMORY))] == "Memory tiers"


def test_daemon_down_is_said_once_then_it_works_when_it_is_back(make_daemon, evault):
    d = make_daemon(evault, start=False)

    async def steps(s: Session):
        s.open(KOREAN)
        pos = where(evault, KOREAN, 7, "Deep work#Rules", after=1)
        first = await s.definition(KOREAN, pos)
        again = await s.definition(KOREAN, pos)
        await asyncio.get_running_loop().run_in_executor(None, d.start)
        back = await s.definition(KOREAN, pos)
        return first, again, back, list(s.messages)

    first, again, back, messages = lsp(evault, steps, str(d.socket))
    assert first is None and again is None
    assert messages[0].type == t.MessageType.Error
    assert messages[0].message.startswith(f"vaultd: vaultd is not running on {d.socket} (no such socket).\n"
                                          "Start it with `vaultd run --vault PATH`")
    assert sum(m.type == t.MessageType.Error for m in messages) == 1  # said once, not at every request
    assert back.uri == from_fs_path(str(evault / "notes/Deep work.md"))
    assert messages[-1].message == "vaultd: the daemon answers again"


def test_a_file_outside_every_vault_is_left_alone_silently(evault, tmp_path, short_dir):
    """Editors attach the server to every Markdown buffer: with two daemons running, a
    project's README outside both vaults raised an error at every switch of buffer ("no
    vaultd runs for this folder's vault, and 2 others do"). Now it gets no answer and no
    message, and the vault's notes what they always had."""
    from conftest import Daemon

    run = short_dir / "run"
    (run / "vaultd").mkdir(parents=True, mode=0o700)
    run.chmod(0o700)
    other = tmp_path / "other"
    shutil.copytree(evault, other)
    daemons = [Daemon(v, tmp_path / f"state-{i}", run / "vaultd" / f"{i}.sock").start()
               for i, v in enumerate((evault, other))]
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "README.md").write_text("# Project\n\nSee [[Nowhere]] and [[Deep work#Rules]].\n")
    readme = os.path.relpath(proj / "README.md", evault)

    async def steps(s: Session):
        s.open(readme)
        outside = await s.diagnosed(readme, 1)
        hover = await s.hover(readme, t.Position(line=2, character=8))
        s.open(KOREAN)
        inside = await s.diagnosed(KOREAN, 1)
        return outside, hover, inside, list(s.messages)

    try:
        outside, hover, inside, messages = lsp(evault, steps, env={"XDG_RUNTIME_DIR": str(run)})
    finally:
        for d in daemons:
            d.stop()
    assert outside == [] and hover is None and messages == []
    assert any(d.code == "broken" for d in inside)


def test_documents_never_opened_on_disk_or_not(edaemon, evault):
    """A request about a document the client never opened: read from disk when it is there,
    nothing (null, not an internal error) when it is not, for every feature. (A folder, or
    anything else that is not a note of the vault, gets an error reply: test_lsp_limits.py.)"""
    missing, deep = "never-opened.md", "notes/Deep work.md"
    pos = t.Position(line=0, character=3)

    async def steps(s: Session):
        out = {}
        for rel in (missing, "notes/missing/x.md"):  # not there; not there, nor its folder
            doc = s.doc(rel)
            out[rel] = [
                await s.definition(rel, pos), await s.hover(rel, pos), await s.references(rel, pos),
                await s.completion(rel, pos),
                await s.c.text_document_document_symbol_async(t.DocumentSymbolParams(text_document=doc))]
        # on disk, never opened: from the file, as when open
        out["disk"] = await s.definition(KOREAN, where(evault, KOREAN, 7, "Deep work#Rules", after=1))
        out["symbols"] = await s.c.text_document_document_symbol_async(
            t.DocumentSymbolParams(text_document=s.doc(deep)))
        return out

    got = lsp(evault, steps, str(edaemon.socket))
    assert got[missing] == [None] * 5 and got["notes/missing/x.md"] == [None] * 5
    rules = line_of(evault, deep, "## Rules")
    assert (got["disk"].uri, got["disk"].range.start.line) == (from_fs_path(str(evault / deep)), rules)
    assert [x.name for x in got["symbols"]] == ["Deep work"]


def test_a_link_at_the_end_of_a_5_mb_line_is_found(edaemon, evault):
    """Position conversion and the link under the cursor on a huge line: the link at the end
    of a 5 MB line is found, at its exact columns, and the server stays responsive. (How
    fast is bench/'s to say: it was 12 s, a character at a time over the whole line.)"""
    text = "x" * 5_000_000 + " [[Deep work]]"

    async def steps(s: Session):
        s.open("big.md", text)
        near = await s.hover("big.md", t.Position(line=0, character=3))  # the buffer read, once
        far, syms = await asyncio.gather(
            s.definition("big.md", t.Position(line=0, character=5_000_005)),
            s.c.text_document_document_symbol_async(t.DocumentSymbolParams(text_document=s.doc("big.md"))))
        hover = await s.hover("big.md", t.Position(line=0, character=len(text) - 1))  # its last `]`
        past = await s.hover("big.md", t.Position(line=0, character=len(text)))  # just past it: not on it
        return near, far, syms, hover, past

    near, far, syms, hover, past = lsp(evault, steps, str(edaemon.socket))
    assert near is None and syms == []
    assert far.uri == from_fs_path(str(evault / "notes/Deep work.md"))
    assert hover.range.start.character == 5_000_001 and hover.range.end.character == len(text)
    assert past is None


def test_diagnostics_cleared_when_the_daemon_stops(make_daemon, evault):
    """The daemon stops, the buffer changes: the diagnostics of the old text (lines that are
    no longer there) are not left standing; the user is told once that it is down."""
    d = make_daemon(evault)

    async def steps(s: Session):
        s.open(KOREAN)
        before = await s.diagnosed(KOREAN, 1)
        await asyncio.get_running_loop().run_in_executor(None, d.stop)
        s.change(KOREAN, "[[Deep work]]\n", 2)
        after = await s.diagnosed(KOREAN, 2)
        return before, after, list(s.messages)

    before, after, messages = lsp(evault, steps, str(d.socket))
    assert len(before) == 3 and after == []
    assert sum(m.type == t.MessageType.Error for m in messages) == 1
    assert "is not running" in messages[0].message


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_while_the_first_index_is_built_the_user_is_told(make_daemon, tmp_path):
    """The first index held still (its parse workers stopped, SIGSTOP), as in test_mcp: an
    answer of the notes read so far is said so once (render.still_indexing; not at every
    request), and a request that waits for every note says why (errors.CODES' words)."""
    async def steps(s: Session):
        ask = t.WorkspaceSymbolParams(query="quokka")
        found = [await s.c.workspace_symbol_async(ask), await s.c.workspace_symbol_async(ask)]
        link = await s.definition("d1/n1.md", t.Position(line=3, character=3))  # [[n2]]: resolve waits
        return found, link, list(s.messages)

    with first_index_held(make_daemon, tmp_path) as d:
        wait_for(lambda: (_status(d).get("progress") or {}).get("total") == 400, interval=0.05)
        found, link, messages = lsp(d.vault, steps, str(d.socket))
    assert all(x is not None for x in found) and link is None
    building = re.compile(r"vaultd: vaultd is still building its first index of this vault \(\d+ of 400 files read\)")
    partial = [m for m in messages if m.message.endswith(": this answer holds only the notes read so far")]
    assert len(partial) == 1 and building.match(partial[0].message) and partial[0].type == t.MessageType.Info
    waits = [m for m in messages if m.message.endswith("; try again in a moment")]
    assert waits and all(building.match(m.message) and m.type == t.MessageType.Info for m in waits)


def _status(d) -> dict:
    try:
        return d.request("status")
    except OSError:
        return {}


NVIM_HARNESS = r"""
local out = {messages = {}}
local function finish()
  local f = io.open(os.getenv('VLSP_OUT'), 'w')
  f:write(vim.fn.json_encode(out))
  f:close()
  vim.cmd('qa!')
end
local ok, err = pcall(function()
  vim.lsp.handlers['window/showMessage'] = function(_, result) table.insert(out.messages, result.message) end
  local id = vim.lsp.start_client({name = 'vaultd', cmd = vim.fn.json_decode(os.getenv('VLSP_CMD')),
                                   root_dir = os.getenv('VLSP_ROOT')})
  -- every note buffer entered is attached, as a user's autocommand does (README "Editors")
  vim.api.nvim_create_autocmd('BufEnter', {pattern = {'*.md', '*.org'},
                                           callback = function() vim.lsp.buf_attach_client(0, id) end})
  for _, file in ipairs(vim.fn.json_decode(os.getenv('VLSP_FILES'))) do
    vim.cmd('edit ' .. vim.fn.fnameescape(file))
  end
  local start = vim.api.nvim_buf_get_name(0)
  local wait = tonumber(os.getenv('VLSP_WAIT_MS'))
  out.ready = vim.wait(wait, function()
    local c = vim.lsp.get_client_by_id(id)
    return c ~= nil and c.initialized
  end, 20)
  vim.api.nvim_win_set_cursor(0, {tonumber(os.getenv('VLSP_LINE')), tonumber(os.getenv('VLSP_COL'))})
--STEPS--
end)
if not ok then out.error = tostring(err) end
finish()
"""


def neovim(steps: str, root: Path, socket, files: list[Path], line: int, col: int, tmp_path: Path,
           **env: str) -> dict:
    """Run `steps` (Lua) in headless Neovim with its own LSP client on `vaultd lsp` of the
    daemon at `socket`: `files` opened in turn (the last one current, `start` its name), the
    cursor at `line` (1-based) and byte column `col`; the steps may read `wait` (ms) and
    `os.getenv` of `env`'s VLSP_ keys, and fill `out`, returned (with `ready`, the
    `messages` shown, and `error` when a step raised)."""
    import json
    import subprocess

    script, out = tmp_path / "lsp.lua", tmp_path / "out.json"
    script.write_text(NVIM_HARNESS.replace("--STEPS--", steps))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "VLSP_OUT": str(out), "VLSP_ROOT": str(root),
           "VLSP_FILES": json.dumps([str(f) for f in files]), "VLSP_LINE": str(line), "VLSP_COL": str(col),
           "VLSP_WAIT_MS": str(int(DEADLINE * 1000)),
           "VLSP_CMD": json.dumps([sys.executable, "-m", "vaultd", "lsp", "--socket", str(socket)]), **env}
    subprocess.run(["nvim", "--headless", "-u", "NONE", "-i", "NONE", "-n", "-c", f"luafile {script}"], env=env,
                   cwd=root, timeout=4 * DEADLINE, check=True, capture_output=True)
    return json.loads(out.read_text())


NVIM_JUMP = r"""
  -- go to definition of [[Deep work#규칙 정리]], the cursor inside the heading's name
  vim.lsp.buf.definition()
  vim.wait(wait, function() return vim.api.nvim_buf_get_name(0) ~= start end, 20)
  out.file = vim.api.nvim_buf_get_name(0)
  out.cursor = vim.api.nvim_win_get_cursor(0)
  out.line = vim.api.nvim_get_current_line()
  -- references of the heading it landed on: the quickfix list
  vim.lsp.buf.references({includeDeclaration = false})
  vim.wait(wait, function() return #vim.fn.getqflist() > 0 end, 20)
  out.refs = {}
  for _, it in ipairs(vim.fn.getqflist()) do
    table.insert(out.refs, {vim.api.nvim_buf_get_name(it.bufnr), it.lnum, it.col})
  end
"""


@pytest.mark.skipif(shutil.which("nvim") is None, reason="neovim is not installed (apt-get install neovim)")
def test_neovim_jumps_to_a_heading_and_lists_its_references(edaemon, evault, tmp_path):
    line8 = (evault / KOREAN).read_text().split("\n")[7]
    col = len(line8[: line8.index("규칙 정리") + 1].encode())  # nvim's cursor column is in bytes, 0-based
    got = neovim(NVIM_JUMP, evault, edaemon.socket, [evault / KOREAN], 8, col, tmp_path)
    assert "error" not in got and got["ready"], got
    heading = line_of(evault, "notes/Deep work.md", "## 규칙 정리") + 1
    assert (got["file"], got["cursor"], got["line"]) == (str(evault / "notes/Deep work.md"), [heading, 0],
                                                         "## 규칙 정리")
    want = [[str(evault / b["path"]), b["line"], b["byte_col"]]
            for b in edaemon.request("backlinks", note="Deep work")["backlinks"] if b["resolved_line"] == heading]
    assert len(want) == 1 and sorted(got["refs"]) == sorted(want)  # the link on the emoji line, to the byte


def test_a_request_with_params_of_the_wrong_type_gets_an_error_reply(edaemon, evault):
    """A negative line or a string for a number: the request is answered with Invalid Params
    (-32602), and the server goes on answering. pygls alone only showed a message, and an
    editor waited for the reply forever. Raw JSON-RPC: a typed client cannot send these."""
    import json
    import subprocess

    p = subprocess.Popen([sys.executable, "-m", "vaultd", "lsp", "--socket", str(edaemon.socket), *LSP_ARGS],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def send(**msg) -> None:
        body = json.dumps({"jsonrpc": "2.0", **msg}).encode()
        p.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        p.stdin.flush()

    got = bytearray()

    def reply(want_id: int) -> dict:
        import select

        while True:  # past notifications (window/showMessage) to the reply
            while b"\r\n\r\n" not in got or len(got) < got.index(b"\r\n\r\n") + 4 + int(
                    got.split(b"\r\n", 1)[0].split(b":")[1]):
                assert select.select([p.stdout], [], [], DEADLINE)[0], f"no reply to {want_id}"
                got.extend(os.read(p.stdout.fileno(), 1 << 16))
            head = got.index(b"\r\n\r\n") + 4
            n = int(got.split(b"\r\n", 1)[0].split(b":")[1])
            msg = json.loads(got[head : head + n])
            del got[: head + n]
            if msg.get("id") == want_id:
                return msg

    try:
        send(id=1, method="initialize", params={"processId": None, "rootUri": from_fs_path(str(evault)),
                                                "capabilities": {}})
        assert "result" in reply(1)
        send(method="initialized", params={})
        uri = from_fs_path(str(evault / KOREAN))
        send(id=2, method="textDocument/definition", params={"textDocument": {"uri": uri},
                                                             "position": {"line": -1, "character": 0}})
        send(id=3, method="textDocument/hover", params={"textDocument": {"uri": uri},
                                                        "position": {"line": "x", "character": 0}})
        pos = where(evault, KOREAN, 7, "Deep work#Rules", after=1)
        send(id=4, method="textDocument/definition", params={"textDocument": {"uri": uri},
                                                             "position": {"line": pos.line, "character": pos.character}})
        assert reply(2)["error"]["code"] == -32602
        assert reply(3)["error"]["code"] == -32602
        assert reply(4)["result"]["uri"] == from_fs_path(str(evault / "notes/Deep work.md"))
    finally:
        p.kill()
        p.communicate()  # and its pipes closed
