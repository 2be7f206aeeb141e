"""`vaultd lsp` reads only the notes of the vault it serves (within the daemon's size cap) and
the buffers the editor sends, and no one document holds up another: the real server process
driven by pygls's own LanguageClient, against the real daemon on tests/fixtures/editor_vault.
Every check is of what was answered and in which order, never of how long it took."""

from __future__ import annotations

import asyncio
import os
import signal

from lsprotocol import types as t
from pygls.exceptions import JsonRpcException
from pygls.uris import from_fs_path
from test_lsp import KOREAN, MEMORY, Session, edaemon, evault, lsp, where  # noqa: F401 (fixtures)

NOT_A_NOTE = t.LSPErrorCodes.RequestFailed  # -32803: the request was understood, and refused


async def refusal(s: Session, uri: str):
    """What each request about `uri` (never opened) gets: the error replies' (code, message),
    or what was answered."""
    doc = t.TextDocumentIdentifier(uri=uri)
    pos = t.Position(line=0, character=1)
    asks = [
        s.c.text_document_definition_async(t.DefinitionParams(text_document=doc, position=pos)),
        s.c.text_document_hover_async(t.HoverParams(text_document=doc, position=pos)),
        s.c.text_document_document_symbol_async(t.DocumentSymbolParams(text_document=doc)),
        s.c.text_document_completion_async(t.CompletionParams(text_document=doc, position=pos)),
        s.c.text_document_references_async(t.ReferenceParams(
            text_document=doc, position=pos, context=t.ReferenceContext(include_declaration=False))),
    ]
    out = []
    for ask in asks:
        try:
            out.append(("answer", await ask))
        except JsonRpcException as e:
            out.append((e.code, e.message))
    return out


def test_never_opened_documents_that_are_not_notes_of_the_vault_are_refused(edaemon, evault, tmp_path):
    """A FIFO in the vault hung the whole server for good (it was opened and read), /dev/zero
    was read until memory ran out, /etc/passwd was read. Each is refused with an error reply
    that says why, as is a symlink out of the vault, a folder that leads out of it and a note
    over the size cap; the FIFO is never opened for reading. The server answers after."""
    os.mkfifo(evault / "pipe.md")
    (evault / "passwd.md").symlink_to("/etc/passwd")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.md").write_text("# Outside\n\n[[Deep work]]\n")
    (evault / "away").symlink_to(outside)
    big = evault / "huge.md"
    with open(big, "wb") as f:
        f.truncate(21 << 20)  # over the default cap of 20 MB (sparse: nothing written)
    uris = {
        "fifo": from_fs_path(str(evault / "pipe.md")),
        "zero": "file:///dev/zero",
        "passwd": "file:///etc/passwd",
        "symlink": from_fs_path(str(evault / "passwd.md")),
        "via a folder": from_fs_path(str(evault / "away" / "x.md")),
        "outside": from_fs_path(str(outside / "x.md")),
        "folder": from_fs_path(str(evault / "notes")),
        "too big": from_fs_path(str(big)),
    }

    async def steps(s: Session):
        got = {name: await refusal(s, uri) for name, uri in uris.items()}
        got["after"] = await s.definition(KOREAN, where(evault, KOREAN, 7, "Deep work#Rules", after=1))
        return got

    got = lsp(evault, steps, str(edaemon.socket))
    reasons = {"fifo": "not a regular file", "zero": "outside the vault", "passwd": "outside the vault",
               "symlink": "a symlink", "via a folder": "outside the vault", "outside": "outside the vault",
               "folder": "not a regular file", "too big": "over the size cap (index.max_file_mb = 20)"}
    for name, replies in got.items():
        if name == "after":
            continue
        assert [code for code, _ in replies] == [NOT_A_NOTE] * 5, (name, replies)
        assert all(reasons[name] in msg for _, msg in replies), (name, replies)
    assert got["after"].uri == from_fs_path(str(evault / "notes/Deep work.md"))
    # the FIFO's read end was never left open (a writer opening it without blocking finds no reader)
    try:
        fd = os.open(evault / "pipe.md", os.O_WRONLY | os.O_NONBLOCK)
    except OSError as e:
        assert e.errno == 6  # ENXIO: no reader
    else:
        os.close(fd)
        raise AssertionError("the FIFO is open for reading")


def many_links(n: int) -> str:
    return "".join(f"- [[missing note {i}]]\n" for i in range(n))


def test_another_document_is_answered_while_a_20000_link_buffer_is_checked(edaemon, evault):
    """One buffer with 20,000 links held up every other document's requests for 12-14 s:
    its links were checked in the server's one thread. Now they are checked aside, and the
    requests about other documents sent after it are answered before its diagnostics."""

    async def steps(s: Session):
        s.open("big.md", many_links(20_000))
        s.open(KOREAN)
        defn = await s.replied("definition", s.c.text_document_definition(
            t.DefinitionParams(text_document=s.doc(KOREAN), position=where(evault, KOREAN, 7, "Deep work#Rules", 1))))
        syms = await s.replied("symbols", s.c.text_document_document_symbol(
            t.DocumentSymbolParams(text_document=s.doc(MEMORY))))
        diags = await s.diagnosed("big.md", 1)
        return defn, syms, diags, list(s.events)

    defn, syms, diags, events = lsp(evault, steps, str(edaemon.socket))
    big = from_fs_path(str(evault / "big.md"))
    assert defn.uri == from_fs_path(str(evault / "notes/Deep work.md")) and [x.name for x in syms][:1] == ["HOT set"]
    order = [e for e in events if e[0] == "reply" or e[1] == big]
    assert order[:2] == [("reply", "definition"), ("reply", "symbols")], order
    assert order[2] == ("diagnostics", big, 1)
    assert len(diags) == 20_000 and all(d.code == "broken" for d in diags)


def test_a_newer_version_drops_the_check_of_the_older(edaemon, evault):
    """The 20,000-link text is replaced before its check is done: the check of the old text
    is dropped, never published; the new text's diagnostics come first. The same 20,000
    links put back are checked anew, and theirs come next (the old check, had it gone on,
    would have been published before them: it started first, with the same work)."""
    links = many_links(20_000)

    async def steps(s: Session):
        s.open("big.md", links)
        s.change("big.md", "Only [[Nowhere]] here.\n", 2)
        small = await s.diagnosed("big.md", 2)
        s.change("big.md", links, 3)
        again = await s.diagnosed("big.md", 3)
        return small, again, list(s.events)

    small, again, events = lsp(evault, steps, str(edaemon.socket))
    big = from_fs_path(str(evault / "big.md"))
    assert [e for e in events if e[:2] == ("diagnostics", big)] == [("diagnostics", big, 2), ("diagnostics", big, 3)]
    assert [d.message for d in small] == ["broken link: [[Nowhere]]: no such note"]
    assert len(again) == 20_000


def test_a_buffer_over_the_size_cap_gets_a_diagnostic_saying_so(edaemon, evault):
    """A 49 MB buffer got no answer in 120 s. Past the daemon's size cap a buffer is not read
    for links: it gets one diagnostic that says it is too big and names the cap, its
    requests answer nothing, and other documents are answered as ever."""
    line = "A line of text with a [[link]] in it, over and over again, to make a big buffer.\n"
    text = line * (50_000_000 // len(line) + 1)

    async def steps(s: Session):
        s.open("huge.md", text)
        diags = await s.diagnosed("huge.md", 1)
        hover = await s.hover("huge.md", t.Position(line=3, character=24))
        after = await s.definition(KOREAN, where(evault, KOREAN, 7, "Deep work#Rules", after=1))
        return diags, hover, after

    diags, hover, after = lsp(evault, steps, str(edaemon.socket))
    assert [(d.code, d.range.start.line) for d in diags] == [("too-big", 0)]
    size = f"{len(text.encode()) / (1 << 20):.1f} MB"  # in the cap's unit (MiB)
    assert diags[0].message.startswith(f"this buffer is {size}, over the size cap (index.max_file_mb = 20)")
    assert hover is None
    assert after.uri == from_fs_path(str(evault / "notes/Deep work.md"))


def test_a_cancelled_request_is_answered_at_once_as_cancelled(edaemon, evault):
    """$/cancelRequest is honoured: a definition waiting on a daemon that does not answer
    (stopped) gets its Request Cancelled reply when the editor cancels it, not when the
    daemon's answer would have come; the server answers other requests meanwhile."""

    async def steps(s: Session):
        s.open(KOREAN)
        pos = where(evault, KOREAN, 7, "Deep work#Rules", after=1)
        await s.definition(KOREAN, pos)  # the daemon known, the buffer read
        os.kill(edaemon.proc.pid, signal.SIGSTOP)
        try:
            slow = s.c.protocol.send_request(t.TEXT_DOCUMENT_DEFINITION, t.DefinitionParams(
                text_document=s.doc(KOREAN), position=pos), msg_id="slow")
            syms = await s.c.text_document_document_symbol_async(t.DocumentSymbolParams(text_document=s.doc(KOREAN)))
            s.c.cancel_request(t.CancelParams(id="slow"))
            try:
                cancelled = await asyncio.wrap_future(slow)
            except JsonRpcException as e:
                cancelled = e.code
        finally:
            os.kill(edaemon.proc.pid, signal.SIGCONT)
        again = await s.definition(KOREAN, pos)
        return syms, cancelled, again

    syms, cancelled, again = lsp(evault, steps, str(edaemon.socket))
    assert syms and cancelled == t.LSPErrorCodes.RequestCancelled
    assert again.uri == from_fs_path(str(evault / "notes/Deep work.md"))
