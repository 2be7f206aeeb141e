"""`vaultd lsp`'s editing (issue 42): rename (a note from a link or its title, a heading),
the editor's own file renames (workspace/willRenameFiles), the code action that makes the
note a broken link names, completion inside a Markdown link's target, and the Denote
identity diagnostic. pygls's own LanguageClient and Neovim's built-in client, against the
real daemon; every write checked on disk and undone byte for byte."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DEADLINE, wait_for
from lsprotocol import types as t
from pygls.exceptions import JsonRpcException
from pygls.uris import from_fs_path, to_fs_path
from test_lsp import Session, neovim, u16
from test_lsp import lsp as run_lsp

TARGET = "20240101T100000--target-note__proj.md"
RENAMED = "20240101T100000--renamed-target__proj.md"
A_MD = ("# A\n\nMarkdown [my words](20240101T100000--target-note__proj.md), "
        "wiki [[20240101T100000--target-note__proj|alias]], denote [d](denote:20240101T100000).\n"
        "Plans: [p](20240101T100000--target-note__proj.md#plans).\n")
B_ORG = ("#+title: B\n\n* Links\n[[file:20240101T100000--target-note__proj.md][The target]] and "
         "[[denote:20240101T100000][Target Note]].\n")
FILES = {
    TARGET: "---\ntitle: Target Note\nidentifier: \"20240101T100000\"\n---\n\n## Plans\n\nText.\n",
    "a.md": A_MD,
    "b.org": B_ORG,
    "Plain Note.md": "# Plain Note\n\nSee [[b]].\n",
    "c.md": "Up [[Plain Note]] and [plain](Plain%20Note.md) and [[Plain Note|its label]]",  # no final newline
}


def write(vault: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault / rel).write_text(text)


def tree(root: Path) -> dict[str, bytes]:
    """The vault's files, but for vaultd's journal (.vaultd/)."""
    return {rel: p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not (rel := p.relative_to(root).as_posix()).startswith(".vaultd/")}


@pytest.fixture
def rv(tmp_path) -> Path:
    v = tmp_path / "rv"
    write(v, FILES)
    return v


CAPS = t.ClientCapabilities(
    workspace=t.WorkspaceClientCapabilities(workspace_edit=t.WorkspaceEditClientCapabilities(document_changes=True)),
    window=t.WindowClientCapabilities(show_document=t.ShowDocumentClientCapabilities(support=True)))


def lsp(vault: Path, steps, socket: str, caps: t.ClientCapabilities = CAPS):
    """Run `steps(session)` against `vaultd lsp` in the vault (test_lsp.lsp), the client
    offering `caps` (versioned document changes, showDocument)."""
    return run_lsp(vault, steps, socket, caps=caps)


def at(text: str, line: int, needle: str, after: int = 1) -> t.Position:
    """The position (0-based line, UTF-16 column) `after` characters into `needle` on 0-based `line`."""
    ln = text.split("\n")[line]
    return t.Position(line=line, character=u16(ln[: ln.index(needle) + after]))


def offset(text: str, pos: t.Position) -> int:
    """The index in `text` of an LSP position (UTF-16 column)."""
    lines = text.split("\n")
    start = sum(len(x) + 1 for x in lines[: pos.line])
    line, units, i = lines[pos.line] if pos.line < len(lines) else "", 0, 0
    while i < len(line) and units < pos.character:
        units += u16(line[i])
        i += 1
    return start + i


def applied(text: str, edits: list[t.TextEdit]) -> str:
    """`text` with LSP text edits applied, as an editor applies them (all against the text before)."""
    spans = sorted(((offset(text, e.range.start), offset(text, e.range.end), e.new_text) for e in edits), reverse=True)
    for a, b, new in spans:
        text = text[:a] + new + text[b:]
    return text


def edits_of(edit: t.WorkspaceEdit) -> dict[str, list[t.TextEdit]]:
    """The text edits of a workspace edit, by file path (document changes or changes)."""
    out: dict[str, list[t.TextEdit]] = {}
    for uri, edits in (edit.changes or {}).items():
        out.setdefault(to_fs_path(uri), []).extend(edits)
    for dc in edit.document_changes or ():
        if isinstance(dc, t.TextDocumentEdit):
            out.setdefault(to_fs_path(dc.text_document.uri), []).extend(dc.edits)
    return out


def undo_op(messages) -> str:
    said = [m.message for m in messages if "vaultq undo" in m.message]
    assert len(said) == 1, [m.message for m in messages]
    return re.search(r"vaultq undo (\S+)$", said[0])[1]


# -- rename --------------------------------------------------------------------------------


def test_rename_from_a_link_rewrites_every_syntax_brings_open_buffers_to_disk_and_undoes(make_daemon, rv):
    d = make_daemon(rv)
    before = tree(rv)
    (rv / ".a.md.swp").write_bytes(b"")  # Vim holds a.md: the LSP knows its buffer, and renames all the same
    before_swp = tree(rv)

    async def steps(s: Session):
        s.open("a.md")
        s.open(TARGET)
        pos = at(A_MD, 2, "my words")
        prep = await s.c.text_document_prepare_rename_async(t.PrepareRenameParams(text_document=s.doc("a.md"),
                                                                                  position=pos))
        edit = await s.c.text_document_rename_async(t.RenameParams(text_document=s.doc("a.md"), position=pos,
                                                                   new_name="Renamed Target"))
        await asyncio.wait_for(_until(s, lambda: s.shown and any("vaultq undo" in m.message for m in s.messages)),
                               DEADLINE)
        return prep, edit, list(s.messages), list(s.shown)

    prep, edit, messages, shown = lsp(rv, steps, str(d.socket))
    assert prep.placeholder == "Target Note"
    assert prep.range.start == at(A_MD, 2, "[my words]", 0)
    after = tree(rv)
    assert TARGET not in after and after[RENAMED].decode().startswith("---\ntitle: Renamed Target\n")
    assert after["a.md"].decode() == A_MD.replace("20240101T100000--target-note__proj", RENAMED[:-3])  # labels kept
    assert after["b.org"].decode() == B_ORG.replace("target-note", "renamed-target").replace(
        "[Target Note]]", "[Renamed Target]]")  # denote: by its identifier, as it was; its old-title label follows
    assert "denote [d](denote:20240101T100000)" in after["a.md"].decode()
    # the open buffer of a.md is brought to the file written; nothing else is edited (b.org is not open)
    got = edits_of(edit)
    assert list(got) == [str(rv / "a.md")]
    assert applied(A_MD, got[str(rv / "a.md")]) == after["a.md"].decode()
    assert all(isinstance(dc, t.TextDocumentEdit) and dc.text_document.version == 1 for dc in edit.document_changes)
    # the renamed note's buffer: shown at its new name, the user told to close the old
    assert shown == [from_fs_path(str(rv / RENAMED))]
    said = next(m.message for m in messages if "vaultq undo" in m.message)
    assert said.startswith(f"vaultd: renamed {TARGET} to {RENAMED}: 4 links rewritten in 2 other notes, 1 "
                           f"label following the new name; the buffer of {TARGET} is of a file no longer there"), said
    op = undo_op(messages)
    d.request("undo", ops=[op])
    assert tree(rv) == before_swp and {k: v for k, v in tree(rv).items() if k != ".a.md.swp"} == before


async def _until(s: Session, cond) -> None:
    while not cond():
        s.got.clear()
        await s.got.wait()


def test_rename_a_heading_and_a_note_by_its_title(make_daemon, rv):
    d = make_daemon(rv)
    before = tree(rv)
    text = FILES[TARGET]

    async def steps(s: Session):
        s.open(TARGET)
        heading = at(text, 5, "Plans")
        prep = await s.c.text_document_prepare_rename_async(t.PrepareRenameParams(text_document=s.doc(TARGET),
                                                                                  position=heading))
        edit = await s.c.text_document_rename_async(t.RenameParams(text_document=s.doc(TARGET), position=heading,
                                                                   new_name="Next steps"))
        await asyncio.wait_for(_until(s, lambda: any("vaultq undo" in m.message for m in s.messages)), DEADLINE)
        on_title = await s.c.text_document_prepare_rename_async(t.PrepareRenameParams(
            text_document=s.doc("Plain Note.md"), position=t.Position(line=0, character=4)))
        nothing = await s.c.text_document_prepare_rename_async(t.PrepareRenameParams(
            text_document=s.doc(TARGET), position=t.Position(line=7, character=1)))
        return prep, edit, on_title, nothing, list(s.messages)

    prep, edit, on_title, nothing, messages = lsp(rv, steps, str(d.socket))
    assert (prep.placeholder, prep.range.start.line, prep.range.start.character) == ("Plans", 5, 3)
    assert tree(rv)["a.md"].decode().endswith("Plans: [p](20240101T100000--target-note__proj.md#next-steps).\n")
    assert tree(rv)[TARGET].decode() == text.replace("## Plans", "## Next steps")
    assert applied(text, edits_of(edit)[str(rv / TARGET)]) == tree(rv)[TARGET].decode()
    assert on_title.placeholder == "Plain Note"  # a Markdown note's first H1, no title keyword: the note
    assert nothing is None
    d.request("undo", ops=[undo_op(messages)])
    assert tree(rv) == before


def test_rename_refused_while_a_buffer_it_writes_has_unsaved_changes(make_daemon, rv):
    d = make_daemon(rv)
    before = tree(rv)

    async def steps(s: Session):
        s.open("a.md", A_MD + "typed, not saved\n")
        s.open("b.org")
        pos = at(B_ORG, 3, "file:")
        try:
            await s.c.text_document_rename_async(t.RenameParams(text_document=s.doc("b.org"), position=pos,
                                                                new_name="Renamed Target"))
        except JsonRpcException as e:
            return str(e), list(s.messages)
        return None, list(s.messages)

    error, messages = lsp(rv, steps, str(d.socket))
    assert error and "save first: a.md has changes not saved" in error
    assert any(m.type == t.MessageType.Error and "save first: a.md" in m.message for m in messages)
    assert tree(rv) == before


# -- the editor's own file renames -------------------------------------------------------


def test_will_rename_files_rewrites_the_links_to_the_note(make_daemon, rv):
    d = make_daemon(rv)
    old, new = rv / "Plain Note.md", rv / "Better Name.md"
    denote_old, denote_new = rv / TARGET, rv / RENAMED

    async def steps(s: Session):
        s.open("c.md")
        plain = await s.c.workspace_will_rename_files_async(t.RenameFilesParams(
            files=[t.FileRename(old_uri=from_fs_path(str(old)), new_uri=from_fs_path(str(new)))]))
        denote = await s.c.workspace_will_rename_files_async(t.RenameFilesParams(
            files=[t.FileRename(old_uri=from_fs_path(str(denote_old)), new_uri=from_fs_path(str(denote_new)))]))
        elsewhere = await s.c.workspace_will_rename_files_async(t.RenameFilesParams(
            files=[t.FileRename(old_uri=from_fs_path(str(old)), new_uri=from_fs_path(str(rv / "sub" / "x.md")))]))
        return plain, denote, elsewhere, list(s.messages)

    plain, denote, elsewhere, messages = lsp(rv, steps, str(d.socket))
    assert elsewhere is None and any("links to Plain Note.md are not rewritten" in m.message for m in messages)
    got = edits_of(plain)
    assert set(got) == {str(rv / "c.md")}  # the note itself has no title keyword: nothing of it changes
    c = applied(FILES["c.md"], got[str(rv / "c.md")])
    assert c == "Up [[Better Name]] and [plain](Better%20Name.md) and [[Better Name|its label]]"  # no newline added
    got = edits_of(denote)
    assert set(got) == {str(rv / "a.md"), str(rv / "b.org"), str(denote_old)}  # the note's own title keyword too
    assert applied(FILES[TARGET], got[str(denote_old)]).startswith("---\ntitle: renamed target\n")
    # what the editor does then: apply the edits, save, rename the file; every link still leads there
    g = d.status()["generation"]
    for path, edits in {**edits_of(plain), **got}.items():
        Path(path).write_text(applied(Path(path).read_text(), edits))
    old.rename(new)
    denote_old.rename(denote_new)
    d.wait_generation(g)
    wait_for(lambda: d.request("broken")["broken"] == [] and
             d.request("resolve", link="[[Better Name]]", **{"from": "c.md"})["path"] == "Better Name.md")
    res = d.request("resolve", link="[x](20240101T100000--renamed-target__proj.md#plans)", **{"from": "a.md"})
    assert (res["path"], res["broken"]) == (RENAMED, None)


# -- code actions ------------------------------------------------------------------------


def test_create_note_from_a_broken_link_then_it_resolves(make_daemon, rv):
    write(rv, {"d.md": "# D\n\nSee [[Missing Idea]] and [x](sub/New%20Page.md).\n",
               "20240105T090000--denote-linker.org": "#+title: Denote linker\n\n"
                                                      "[[denote:20240301T120000][Fresh thoughts]]\n"})
    d = make_daemon(rv)

    async def steps(s: Session):
        s.open("d.md")
        s.open("20240105T090000--denote-linker.org")
        whole = t.Range(start=t.Position(line=0, character=0), end=t.Position(line=3, character=0))
        md = await s.c.text_document_code_action_async(t.CodeActionParams(
            text_document=s.doc("d.md"), range=whole, context=t.CodeActionContext(diagnostics=[])))
        org = await s.c.text_document_code_action_async(t.CodeActionParams(
            text_document=s.doc("20240105T090000--denote-linker.org"), range=whole,
            context=t.CodeActionContext(diagnostics=[])))
        return md, org

    md, org = lsp(rv, steps, str(d.socket))
    assert [a.title for a in md] == ["Create note Missing Idea.md", "Create note sub/New Page.md"]
    assert [a.title for a in org] == ["Create note 20240301T120000--fresh-thoughts.org"]
    g = d.status()["generation"]
    for action in md + org:  # as an editor applies them: the file made, its text written (and saved)
        create, text_edit = action.edit.document_changes
        assert isinstance(create, t.CreateFile) and create.uri == text_edit.text_document.uri
        path = Path(to_fs_path(create.uri))
        assert not path.exists()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(applied("", text_edit.edits))
    assert (rv / "Missing Idea.md").read_text() == "# Missing Idea\n\n"
    assert (rv / "20240301T120000--fresh-thoughts.org").read_text().startswith(
        "#+title:      Fresh thoughts\n#+date:       [2024-03-01 Fri 12:00]\n")
    d.wait_generation(g)
    wait_for(lambda: d.request("broken")["broken"] == [])
    assert d.request("resolve", link="[[denote:20240301T120000]]")["path"] == "20240301T120000--fresh-thoughts.org"
    assert d.request("resolve", link="[[Missing Idea]]", **{"from": "d.md"})["path"] == "Missing Idea.md"


def test_a_wikilink_in_a_denote_vault_makes_a_denote_note_it_then_leads_to(make_daemon, rv):
    write(rv, {"20240106T090000--md-linker.md": "---\ntitle: md linker\n---\n\nSee [[Some Idea]].\n"})
    d = make_daemon(rv)

    async def steps(s: Session):
        s.open("20240106T090000--md-linker.md")
        return await s.c.text_document_code_action_async(t.CodeActionParams(
            text_document=s.doc("20240106T090000--md-linker.md"),
            range=t.Range(start=t.Position(line=4, character=6), end=t.Position(line=4, character=6)),
            context=t.CodeActionContext(diagnostics=[])))

    (action,) = lsp(rv, steps, str(d.socket))
    create, text_edit = action.edit.document_changes
    path = Path(to_fs_path(create.uri))
    assert re.fullmatch(r"\d{8}T\d{6}--some-idea\.md", path.name), path.name
    g = d.status()["generation"]
    path.write_text(applied("", text_edit.edits))
    assert path.read_text().startswith('---\ntitle:      "Some Idea"\n')
    d.wait_generation(g)
    res = wait_for(lambda: (r := d.request("resolve", link="[[Some Idea]]"))["path"] and r)
    assert res["path"] == path.name and d.request("broken")["broken"] == []


# -- code actions: a plain mention of a note's title made a link -----------------------------

KO = "20251101T120000--가치관과-선택__철학.md"
M_MD = ("# M\n\nSee [[b]] first.\nReading deep work today with AI, and the deep work rules too.\n"
        "In code `deep work` and [[Deep work]] linked, [plain note](Plain%20Note.md) too.\n\n"
        "```\ndeep work\n```\n나는 가치관과 선택을 생각한다.\n")
MENTIONED = {"Deep work.md": "# Deep work\n\nDeep work is focus.\n", "Deep Work Rules.md": "# Deep Work Rules\n",
             KO: "---\ntitle: 가치관과 선택\n---\n\n본문.\n", "AI.md": "# AI\n", "m.md": M_MD}
NOTHING = t.CodeActionContext(diagnostics=[])


async def actions(s: Session, rel: str, start: t.Position, end: t.Position | None = None,
                  context: t.CodeActionContext = NOTHING) -> list[t.CodeAction]:
    got = await s.c.text_document_code_action_async(t.CodeActionParams(
        text_document=s.doc(rel), range=t.Range(start=start, end=end or start), context=context))
    return got or []


def linked(text: str, *picked: t.CodeAction) -> str:
    """`text` with the edits of these actions applied (each an edit of one buffer)."""
    return applied(text, [e for a in picked for es in edits_of(a.edit).values() for e in es])


def test_link_a_title_mentioned_in_markdown_then_it_is_a_link_to_the_note(make_daemon, rv):
    write(rv, MENTIONED)
    d = make_daemon(rv)

    async def steps(s: Session):
        s.open("m.md")
        s.open("Deep work.md")
        on = {
            "deep work": await actions(s, "m.md", at(M_MD, 3, "deep work")),
            "rules": await actions(s, "m.md", at(M_MD, 3, "rules")),
            "deep work rules": await actions(s, "m.md", at(M_MD, 3, "deep work rules")),
            "선택": await actions(s, "m.md", at(M_MD, 9, "선택")),
            "AI": await actions(s, "m.md", at(M_MD, 3, "AI")),
            "AI selected": await actions(s, "m.md", at(M_MD, 3, "AI", 0), at(M_MD, 3, "AI", 2)),
            "code span": await actions(s, "m.md", at(M_MD, 4, "deep work")),
            "link": await actions(s, "m.md", at(M_MD, 4, "Deep work]]")),
            "md link": await actions(s, "m.md", at(M_MD, 4, "plain note")),
            "fence": await actions(s, "m.md", at(M_MD, 7, "deep work")),
            "own title": await actions(s, "Deep work.md", t.Position(line=2, character=2)),
            "quick fixes only": await actions(s, "m.md", at(M_MD, 3, "deep work"), context=t.CodeActionContext(
                diagnostics=[], only=[t.CodeActionKind.QuickFix])),
        }
        return on

    on = lsp(rv, steps, str(d.socket))
    titles = {k: [a.title for a in v] for k, v in on.items()}
    assert titles["deep work"] == ['Link "Deep work"']
    assert titles["rules"] == ['Link "Deep Work Rules"']
    assert titles["deep work rules"] == ['Link "Deep Work Rules"', 'Link "Deep work"']  # longest first
    assert titles["선택"] == ['Link "가치관과 선택"']
    assert titles["AI"] == [] and titles["AI selected"] == ['Link "AI"']  # one short word: only selected
    for none in ("code span", "link", "md link", "fence", "own title", "quick fixes only"):
        assert titles[none] == [], (none, titles[none])
    assert all(a.kind == t.CodeActionKind.RefactorRewrite for v in on.values() for a in v)
    (deep,), (ko,) = on["deep work"], on["선택"]
    rules = on["deep work rules"][0]
    text = linked(M_MD, deep, ko)
    # this note writes [[wikilinks]]: the text as written is the label where it is not the name
    assert text.split("\n")[3] == "Reading [[Deep work|deep work]] today with AI, and the deep work rules too."
    assert text.split("\n")[9] == f"나는 [[{KO[:-3]}|가치관과 선택]]을 생각한다."  # the particle stays out
    assert linked(M_MD, rules).split("\n")[3].endswith("the [[Deep Work Rules|deep work rules]] too.")
    g = d.status()["generation"]
    (rv / "m.md").write_text(text)
    d.wait_generation(g)
    wait_for(lambda: not [x for x in d.request("broken")["broken"] if x["path"] == "m.md"])
    for target in ("Deep work.md", KO):
        assert "m.md" in {b["path"] for b in d.request("backlinks", note=target)["backlinks"]}, target


def test_link_a_title_mentioned_in_org_and_in_plain_markdown(make_daemon, rv):
    org_name = "20240105T090000--plain-note-ideas.org"
    org = "#+title:      Plain Note ideas\n\n* Notes\nAbout the target note and Plain Note.\n"
    fm = "---\ntitle: Plain Note again\n---\n\nSee plain note.\n"
    write(rv, {org_name: org, "fm.md": fm})
    d = make_daemon(rv)

    async def steps(s: Session):
        s.open(org_name)
        s.open("fm.md")
        on = {"denote": await actions(s, org_name, at(org, 3, "target")),
              "file": await actions(s, org_name, at(org, 3, "Plain Note")),
              "keyword": await actions(s, org_name, at(org, 0, "Plain Note")),
              "front matter": await actions(s, "fm.md", at(fm, 1, "Plain Note")),
              "plain": await actions(s, "fm.md", at(fm, 4, "plain note"))}
        (rv / ".obsidian").mkdir()  # an Obsidian vault: a note with no link of its own writes wikilinks
        on["obsidian"] = await actions(s, "fm.md", at(fm, 4, "plain note"))
        (rv / ".obsidian").rmdir()
        return on

    on = lsp(rv, steps, str(d.socket))
    assert [a.title for a in on["denote"]] == ['Link "Target Note"']
    assert [a.title for a in on["file"]] == ['Link "Plain Note"']
    assert on["keyword"] == [] and on["front matter"] == []
    org_text = linked(org, on["denote"][0], on["file"][0])
    assert org_text.split("\n")[3] == ("About the [[denote:20240101T100000][target note]] and "
                                       "[[file:Plain Note.md][Plain Note]].")
    # a Markdown note with no link of its own, in a vault with no .obsidian: a Markdown link, its text the label
    fm_text = linked(fm, *on["plain"])
    assert fm_text.split("\n")[4] == "See [plain note](Plain%20Note.md)."
    assert linked(fm, *on["obsidian"]).split("\n")[4] == "See [[Plain Note|plain note]]."
    g = d.status()["generation"]
    (rv / org_name).write_text(org_text)
    (rv / "fm.md").write_text(fm_text)
    d.wait_generation(g)
    wait_for(lambda: {b["path"] for b in d.request("backlinks", note="Plain Note.md")["backlinks"]} >= {org_name, "fm.md"})
    assert org_name in {b["path"] for b in d.request("backlinks", note=TARGET)["backlinks"]}
    assert not [x for x in d.request("broken")["broken"] if x["path"] in (org_name, "fm.md")]


def test_the_mentions_op_follows_the_notes_as_they_come_and_go(make_daemon, rv):
    d = make_daemon(rv)
    line = "a fresh idea and the target note"
    assert [m["path"] for m in d.request("mentions", text=line, col=4)["mentions"]] == []
    assert d.request("mentions", text=line, col=24)["mentions"] == [{
        "col": 22, "end_col": 33, "text": "target note", "path": TARGET, "title": "Target Note", "alias": None,
        "id": "20240101T100000"}]
    assert d.request("mentions", text=line, col=24, **{"from": TARGET})["mentions"] == []  # not its own
    g = d.status()["generation"]
    write(rv, {"Fresh Idea.md": "# Fresh Idea\n"})
    (rv / "Plain Note.md").unlink()
    d.wait_generation(g)
    assert [m["path"] for m in d.request("mentions", text=line, col=4)["mentions"]] == ["Fresh Idea.md"]
    assert d.request("mentions", text="the plain note", col=6)["mentions"] == []


# -- completion, identity ------------------------------------------------------------------


def test_completion_inside_a_markdown_link_target(make_daemon, rv):
    write(rv, {"sub/deep.md": "# Deep\n"})
    d = make_daemon(rv)
    text = "# E\n\n[see](Plain\n[plans](20240101T100000--target-note__proj.md#pl\n[any](\n"

    async def steps(s: Session):
        s.open("sub/e.md", text)
        paths = await s.completion("sub/e.md", t.Position(line=2, character=len("[see](Plain")))
        heads = await s.completion("sub/e.md", t.Position(line=3, character=len(text.split("\n")[3])))
        every = await s.completion("sub/e.md", t.Position(line=4, character=len("[any](")))
        return paths, heads, every

    write(rv, {"sub/e.md": text})
    paths, heads, every = lsp(rv, steps, str(d.socket))
    assert [i.label for i in paths.items] == ["../Plain Note.md"]  # what was typed: in its path or title
    plain = paths.items[0]
    assert plain.text_edit.new_text == "../Plain%20Note.md" and plain.text_edit.range.start.character == 6
    assert {i.label for i in every.items} == {"../Plain Note.md", "deep.md", "../a.md", "../b.org", "../c.md",
                                              f"../{TARGET}"}  # not itself
    assert [i.label for i in heads.items] == ["plans"]
    assert heads.items[0].text_edit.new_text == "plans"


def test_a_denote_keyword_that_disagrees_with_the_file_name_is_diagnosed_and_fixed(make_daemon, rv):
    name = "20240125T164237--mismatched__denote.org"
    text = "#+title:      Mismatched\n#+identifier: 20240125T164238\n\nBody.\n"
    write(rv, {name: text})
    d = make_daemon(rv)

    async def steps(s: Session):
        s.open(name)
        diags = await s.diagnosed(name)
        actions = await s.c.text_document_code_action_async(t.CodeActionParams(
            text_document=s.doc(name), range=diags[0].range, context=t.CodeActionContext(diagnostics=diags)))
        return diags, actions

    diags, actions = lsp(rv, steps, str(d.socket))
    (diag,) = diags
    assert diag.code == "denote-identity" and diag.range.start == t.Position(line=1, character=14)
    assert diag.range.end == t.Position(line=1, character=29)
    assert diag.message.startswith("this note is 20240125T164237, as its file name says: file name says "
                                   "20240125T164237, identifier keyword says 20240125T164238; Denote follows the "
                                   "file name (fix the keyword to 20240125T164237")
    (fix,) = actions
    assert applied(text, edits_of(fix.edit)[str(rv / name)]) == text.replace("164238", "164237")


# -- Neovim ------------------------------------------------------------------------------

NVIM_RENAME = r"""
  vim.lsp.buf.rename(os.getenv('VLSP_NEW'))
  out.done = vim.wait(wait, function()
    for _, m in ipairs(out.messages) do if m:find('vaultq undo') then return true end end
    return false
  end, 20)
  vim.wait(wait, function()
    return table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '\n') .. '\n' == os.getenv('VLSP_EXPECT')
  end, 20)
  out.buffers = {}
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) then
      out.buffers[vim.api.nvim_buf_get_name(b)] = table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\n')
    end
  end
"""


@pytest.mark.skipif(shutil.which("nvim") is None, reason="neovim is not installed (apt-get install neovim)")
def test_neovim_renames_a_note_from_a_link_and_vaultq_undo_restores_the_tree(make_daemon, rv, tmp_path):
    d = make_daemon(rv)
    before = tree(rv)
    line = B_ORG.split("\n")[3]
    col = len(line[: line.index("file:") + 2].encode())  # nvim's cursor column: bytes, 0-based
    expect = B_ORG.replace("target-note", "renamed-target").replace("[Target Note]]", "[Renamed Target]]")
    got = neovim(NVIM_RENAME, rv, d.socket, [rv / "a.md", rv / "b.org"], 4, col, tmp_path,
                 VLSP_NEW="Renamed Target", VLSP_EXPECT=expect)
    assert "error" not in got and got["ready"] and got["done"], got
    after = tree(rv)
    assert TARGET not in after and RENAMED in after
    # Markdown, wiki and Org file: links rewritten, labels kept; denote: links lead by the kept identifier
    assert after["a.md"].decode() == A_MD.replace("20240101T100000--target-note__proj", RENAMED[:-3])
    assert after["b.org"].decode() == expect
    # both open buffers hold what is on disk (Neovim's buffer text has no final newline)
    assert got["buffers"][str(rv / "b.org")] + "\n" == expect
    assert got["buffers"][str(rv / "a.md")] + "\n" == after["a.md"].decode()
    op = re.search(r"vaultq undo (\S+)$", next(m for m in got["messages"] if "vaultq undo" in m))[1]
    r = subprocess.run([sys.executable, "-m", "vaultd.vaultq", "undo", op], capture_output=True, timeout=60,
                       cwd=rv, env={**os.environ, "VAULTD_SOCKET": str(d.socket)})
    assert r.returncode == 0, r.stderr
    assert tree(rv) == before
