"""`vaultd lsp` driven by pygls's own LanguageClient over stdio, against the real daemon on
tests/fixtures/editor_vault: every request as an editor sends it, positions in UTF-16."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from pathlib import Path

import pytest
from lsprotocol import types as t
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

EDITOR_VAULT = Path(__file__).parent / "fixtures" / "editor_vault"
KOREAN = "notes/20251101T120000--가치관__철학.md"
MEMORY = "notes/20251016T080208--memory-tiers__agents_memory.org"


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

    async def diagnosed(self, rel: str, version: int | None = None, timeout: float = 10) -> list[t.Diagnostic]:
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

    async def hover(self, rel: str, pos: t.Position):
        return await self.c.text_document_hover_async(t.HoverParams(text_document=self.doc(rel), position=pos))


def lsp(vault: Path, steps, socket: str | None = None, env: dict | None = None):
    """Run `steps(session)` against `vaultd lsp` started in the vault (as an editor starts it)."""

    async def main():
        client = LanguageClient("test", "1")
        s = Session(client, vault)
        s.versions = {}

        @client.feature(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def _diags(params: t.PublishDiagnosticsParams):
            s.diagnostics[params.uri] = list(params.diagnostics)
            s.versions[params.uri] = params.version
            s.got.set()

        @client.feature(t.WINDOW_SHOW_MESSAGE)
        def _msg(params: t.ShowMessageParams):
            s.messages.append(params)
            s.got.set()

        args = ["-m", "vaultd", "lsp"] + (["--socket", socket] if socket else [])
        await client.start_io(sys.executable, *args, cwd=str(vault),
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), **(env or {})})
        try:
            await client.initialize_async(t.InitializeParams(
                capabilities=t.ClientCapabilities(), root_uri=from_fs_path(str(vault)), process_id=os.getpid()))
            client.initialized(t.InitializedParams())
            return await asyncio.wait_for(steps(s), 60)
        finally:
            await client.shutdown_async(None)
            client.exit(None)
            await client.stop()

    return asyncio.run(main())


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
