"""The splitter: no line lost, parts within the threshold, links rewritten, journal safety."""

import base64
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import mem_tmp, wait_for
from vaultd.config import Config
from vaultd.errors import QueryError
from vaultd.note import first_h1, headings_of
from vaultd.split.splitter import plain
from vaultd.vault import Vault

OLD = time.time() - 3600


def _age(root: Path):
    for p in root.rglob("*"):
        if p.is_file():
            os.utime(p, (OLD, OLD))


def _vault(tmp_path, files: dict[str, str], **split):
    v = tmp_path / "vault"
    for rel, text in files.items():
        (v / rel).parent.mkdir(parents=True, exist_ok=True)
        (v / rel).write_bytes(text.encode())
    _age(v)
    cfg = Config(vault=str(v), state_dir=str(tmp_path / "state"))
    cfg = msgspec.structs.replace(cfg, split=msgspec.structs.replace(cfg.split, **split)).load()
    vault = Vault(cfg)
    vault.reconcile()
    return vault


def _grown(v: Vault, rel: str, text: str) -> None:
    """`rel` grows to `text` while vaultd watches it (written, left quiet, indexed)."""
    (v.root / rel).write_bytes(text.encode())
    _age(v.root)
    v.apply([rel])


def _answers(sock: Path) -> bool:
    import socket

    with socket.socket(socket.AF_UNIX) as s:
        try:
            s.connect(str(sock))
            return True
        except OSError:
            return False


def _tree(root: Path) -> dict[str, bytes]:
    """The vault's files, but for vaultd's split journal (.vaultd/, see store/journal.py JOURNAL)."""
    return {rel: p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not (rel := p.relative_to(root).as_posix()).startswith(".vaultd/")}


def _lines(b: bytes) -> Counter:
    return Counter(x for x in b.decode().splitlines() if x.strip())


# -- generated notes ---------------------------------------------------------------------

WORDS = st.sampled_from(["alpha", "beta", "가치관", "gamma", "delta", "노트", "[[Other]]", "`code`", "epsilon"])


@st.composite
def notes(draw):
    org = draw(st.booleans())
    mark = "*" if org else "#"
    parts = ["#+title: Gen\n\nIntro text.\n\n" if org else "---\ntitle: Gen\n---\n\nIntro text.\n\n"]
    for i in range(draw(st.integers(2, 9))):
        level = 1 if i == 0 else draw(st.integers(1, 3))
        parts.append(f"{mark * level} Heading {i}\n\n")
        for j in range(draw(st.integers(1, 30))):
            parts.append(" ".join(draw(st.lists(WORDS, min_size=3, max_size=25))) + f" {i}.{j}\n")
        if draw(st.booleans()):
            parts.append("#+begin_src python\n* not a heading\n#+end_src\n" if org else "```\n# not a heading\n```\n")
        parts.append("\n")
    return ("gen.org" if org else "gen.md"), "".join(parts)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(note=notes(), threshold=st.sampled_from([1024, 2048, 4096]))
def test_split_keeps_every_line_and_undo_restores_every_byte(note, threshold):
    with mem_tmp(prefix="vgen") as tmp:  # in memory: each example's index and journal fsyncs cost more on a disk
        _split_keeps_every_line(Path(tmp), note, threshold)


def _split_keeps_every_line(tmp: Path, note, threshold):
    name, text = note
    v = _vault(tmp, {name: text, "Other.md": "other\n"}, threshold=threshold, quiet=0)
    try:
        before = _tree(v.root)
        if len(text.encode()) <= threshold:
            return
        try:
            res = v.split_note(name)
        except Exception as e:
            assert "cannot be cut smaller" in str(e) or "no headings" in str(e)
            assert _tree(v.root) == before
            return
        after = _tree(v.root)
        made = [p for p in after if p not in before]
        assert sorted(made) == sorted(p for p in res["parts"])
        got = _lines(after[name]) + sum((_lines(after[p]) for p in made), Counter())
        want = _lines(text.encode())
        missing = want - got
        assert not missing, f"lines lost: {list(missing)[:3]}"
        inserted = got - want  # only titles, tags, identifiers, back links and the parts list
        odd = [x for x in inserted if not (x.startswith(("#+", "---", "title:", "tags:", "identifier:", "Part of",
                                                          "Parts:", "* Parts")) or x[:1].isdigit()
                                    or x[:1] == " " and x.lstrip().startswith("- "))]  # "10. " indents 4
        assert not odd, odd[:5]
        oversized = set(res["oversized"])
        for p in made:
            body = after[p].split(b"\n\n", 2)[-1]  # without the inserted header
            heading = body.decode().splitlines()[0].lstrip("*# ")
            assert len(body) <= threshold or heading in oversized
        v.split_undo(res["op"])
        assert _tree(v.root) == before
    finally:
        v.close()


# -- rules ---------------------------------------------------------------------------------

def _big_md():
    sec = lambda i: f"## Section {i}\n\n" + "Lorem ipsum dolor sit amet, words words.\n" * 60 + (f"para ^blk{i}\n" if i == 3 else "")
    return "---\ntitle: Big\n---\n\nIntro. See [[#Section 6]].\n\n" + "".join(sec(i) for i in range(8))


def test_links_into_moved_sections_are_rewritten_and_nothing_breaks(tmp_path):
    v = _vault(tmp_path, {
        "notes/Big.md": _big_md(),
        "notes/Other.md": "[[Big#Section 5]] [[Big#^blk3]] [s](Big.md#section-6) [[Big]]\n",
        "sub/deep.md": "[x](../notes/Big.md#section-1)\n",
    }, quiet=0)
    try:
        assert v.broken()["total"] == 0
        res = v.split_note("Big")
        assert len(res["parts"]) >= 2 and res["rewritten"] == 5
        assert v.broken()["total"] == 0
        other = (v.root / "notes/Other.md").read_text()
        assert "[[Big]]" in other, "links to the whole note still point at the hub"
        for b in v.backlinks("notes/Big.md")["backlinks"]:
            assert b["raw"] in ("[[Big]]",) or b["path"].startswith("notes/Big - ")
    finally:
        v.close()


def test_a_markdown_link_within_the_note_stays_a_markdown_link(tmp_path):
    v = _vault(tmp_path, {"notes/Big.md": _big_md().replace("[[#Section 6]]", "[part six](#section-6)")}, quiet=0)
    try:
        res = v.split_note("Big")
        part = next(p for p in res["parts"] if "## Section 6" in (v.root / p).read_text())
        hub = (v.root / "notes/Big.md").read_text()
        assert f"Intro. See [part six]({part.split('/')[-1].replace(' ', '%20')}#section-6)." in hub
        assert "[[" not in hub, "its parts listed as Markdown links too"
        assert v.broken()["total"] == 0
    finally:
        v.close()


@pytest.mark.parametrize("intro", ["Wow![[#Section 6]]", "See ![[Other]] and ![[#Section 6]]"])
def test_embeds_count_as_wikilinks_for_the_style(tmp_path, intro):
    v = _vault(tmp_path, {"notes/Big.md": _big_md().replace("See [[#Section 6]].", intro), "notes/Other.md": "x\n"},
               quiet=0)
    try:
        v.split_note("Big")
        assert "[[Big - Section 0|Section 0]]" in (v.root / "notes/Big.md").read_text(), "an Obsidian note's hub"
        assert v.broken()["total"] == 0
    finally:
        v.close()


def test_only_a_done_or_undone_split_says_whether_a_note_is_kept_whole(tmp_path):
    from vaultd.split.splitter import kept_whole
    from vaultd.store.journal import Journal

    j = Journal(tmp_path)
    j.save({"op": "20260101T000000-aaaaaa", "note": "a.md", "status": "done"})
    j.save({"op": "20260101T000001-aaaaaa", "note": "a.md", "status": "undone"})
    j.save({"op": "20260101T000002-aaaaaa", "note": "a.md", "status": "aborted"})  # a later try that never happened
    j.save({"op": "20260101T000003-aaaaaa", "note": "a.md", "status": "rolled back"})
    j.save({"op": "20260101T000004-bbbbbb", "note": "b.md", "status": "undone"})
    j.save({"op": "20260101T000005-bbbbbb", "note": "b.md", "status": "done"})
    assert kept_whole(j) == {"a.md": "20260101T000001-aaaaaa"}


def test_rewritten_links_keep_their_alias_brackets_title_and_bang(tmp_path):
    v = _vault(tmp_path, {
        "notes/Big.md": _big_md().replace("See [[#Section 6]].", "See ![[#Section 6]]."),
        "notes/O.md": "[[Big#Section 5|v1.2]] [[Big#Section 4|C#]]\n",
        "sub/deep.md": '[y](<../notes/Big.md#section-6>) [z](../notes/Big.md#section-6 "a title") '
                       "![img](../notes/Big.md#section-5)\n",
    }, quiet=0)
    try:
        parts = v.split_note("Big")["parts"]
        six = next(p for p in parts if "# Section 6\n" in (v.root / p).read_text()).rsplit("/", 1)[1][:-3]
        o = (v.root / "notes/O.md").read_text()
        assert "|v1.2]]" in o and "|C#]]" in o and "[[Big - Section" in o and "#Section 5|" in o
        deep = (v.root / "sub/deep.md").read_text()
        assert f'[y](<../notes/{six}.md#section-6>)' in deep, deep
        assert f'[z](../notes/{six.replace(" ", "%20")}.md#section-6 "a title")' in deep
        assert deep.count("![img](") == 1
        assert f"Intro. See ![[{six}#Section 6]]." in (v.root / "notes/Big.md").read_text()
        assert v.broken()["total"] == 0
    finally:
        v.close()


def test_a_link_moved_into_a_part_to_a_heading_the_hub_keeps_names_the_hub(tmp_path):
    body = "".join(f"# Section {i}\n\nSee [[#Pre]] and [p](#pre).\n" + "Lorem ipsum dolor sit amet.\n" * 90 for i in range(8))
    v = _vault(tmp_path, {"notes/Big.md": "## Pre\n\nThe preamble.\n\n" + body}, quiet=0)
    try:
        res = v.split_note("Big")
        part = (v.root / res["parts"][0]).read_text()
        assert "See [[Big#Pre]] and [p](Big.md#pre)." in part
        assert v.broken()["total"] == 0
    finally:
        v.close()


def test_a_heading_numbered_anew_in_its_part_is_linked_by_its_new_anchor(tmp_path):
    body = "".join("# A\n\n" + "Lorem ipsum dolor sit amet.\n" * 200 for _ in range(4))  # anchors a, a-1, a-2, a-3
    v = _vault(tmp_path, {"notes/Big.md": body, "notes/O.md": "[x](Big.md#a-2) [y](Big.md#a)\n"}, quiet=0)
    try:
        res = v.split_note("Big")
        assert res["parts"] == ["notes/Big - A.md", "notes/Big - A 2.md"]  # two sections a part
        o = (v.root / "notes/O.md").read_text()  # the third A is the first of the second part
        assert o == "[x](Big%20-%20A%202.md#a) [y](Big%20-%20A.md#a)\n", o
        assert v.broken()["total"] == 0
    finally:
        v.close()


def test_awkward_notes_split_cleanly_or_are_refused_clearly(tmp_path):
    body = "".join(f"## Section {i}\n\n" + "Lorem ipsum dolor sit amet, words words.\n" * 60 for i in range(8))
    files = {
        "bom/Big.md": "\ufeff" + body,  # a heading on line 1, after the BOM
        "priv/Big.md": body,
        "hash/C# notes.md": body,
        "form/Big.org": body.replace("## ", "* ").replace("Section 1\n\n", "Section 1\n\n\x0c\n"),
        "form/link.org": "[[file:Big.org::*Section 6][six]]\n",
        "ko/Big.md": "".join(f"## {'가' * 90}{i}\n\n" + "가나다라 마바사.\n" * 250 for i in range(4)),
        "date/20241399T999999--big.md": body,
        "bad/Big.md": body,
        "bad/ref.md": "caf\udce9 [[Big#Section 6]]\n",
    }
    v = _vault(tmp_path, {k: t for k, t in files.items() if k != "bad/ref.md"}, quiet=0)
    (v.root / "bad/ref.md").write_bytes(b"caf\xe9 [[Big#Section 6]]\n")
    (v.root / "priv/Big.md").chmod(0o600)
    os.symlink("/nowhere", v.root / "priv" / "Big - Section 0.md")  # a dangling link where a part would go
    v.apply(["bad/ref.md"])
    try:
        before = _tree(v.root)
        v.split_note("bom/Big.md")
        assert (v.root / "bom/Big.md").read_bytes().startswith(b"\xef\xbb\xbf") and v.broken()["total"] == 0
        res = v.split_note("priv/Big.md")
        assert os.path.islink(v.root / "priv" / "Big - Section 0.md"), "taken: the part goes elsewhere"
        assert all((v.root / p).stat().st_mode & 0o777 == 0o600 for p in res["parts"] + ["priv/Big.md"])
        with pytest.raises(Exception, match="a wikilink to its parts cannot"):
            v.split_note("hash/C# notes.md")
        v.split_note("form/Big.org")
        assert v.broken()["total"] == 0, "a form feed does not move the later headings"
        res = v.split_note("ko/Big.md")
        assert all(len(p.rsplit("/", 1)[1].encode()) < 200 for p in res["parts"])
        v.split_note("date/20241399T999999--big.md")
        with pytest.raises(Exception, match="not UTF-8"):
            v.split_note("bad/Big.md")
        for e in reversed(v.split_history()["history"]):
            v.split_undo(e["op"])
        assert _tree(v.root) == before and (v.root / "priv/Big.md").stat().st_mode & 0o777 == 0o600
    finally:
        v.close()


def test_denote_parts_get_denote_names_and_links_follow(tmp_path):
    org = "#+title: Big org\n#+identifier: 20250101T000000\n#+filetags: :kw:\n\n" + "".join(
        f"* Head {i}\n:PROPERTIES:\n:CUSTOM_ID: h{i}\n:END:\n" + "text line here for the org note\n" * 120 for i in range(5))
    v = _vault(tmp_path, {"20250101T000000--big-org__kw.org": org,
                          # a note made a second after the big one: its identifier is skipped
                          "20250101T000001--neighbour.md": "# N\n",
                          "20250101T000003--photo.png": "not a note, named by Denote\n",
                          "ref.org": "[[file:20250101T000000--big-org__kw.org::*Head 3][x]] [[denote:20250101T000000::#h4][y]]\n"},
               quiet=0)
    try:
        res = v.split_note("20250101T000000")
        ids = [v.notes[p].id for p in res["parts"]]
        for p, ident in zip(res["parts"], ids):
            assert Path(p).name.startswith(ident + "--") and Path(p).name.endswith("__kw.org")
            assert v.notes[p].tags == ("kw",)  # the table holds tuples
        # the free seconds after the note's own identifier: dated as the text they hold, never
        # in the future, and the same on every machine that splits the same note
        assert ids == ["20250101T000002", *(f"20250101T00000{i}" for i in range(4, 3 + len(ids)))]
        assert v.broken()["total"] == 0
        assert "denote:20250101T000000" not in (v.root / "ref.org").read_text()
    finally:
        v.close()


def test_no_headings_or_one_huge_section_is_reported_and_left_alone(tmp_path):
    v = _vault(tmp_path, {"flat.md": "word " * 5000 + "\n", "one.md": "# Only\n\n" + "word " * 5000 + "\n"}, quiet=0)
    try:
        why = {c["path"]: c["why"] for c in v.split_candidates()["cannot"]}
        assert "no headings" in why["flat.md"] and "cannot be cut smaller" in why["one.md"]
        assert v.auto_split() == []
    finally:
        v.close()


def test_a_note_over_by_its_opening_is_cut_in_two_not_refused(tmp_path):
    """A note over the threshold by its front matter and opening, whose headed text fits in one
    part (obsidian-help's Filters.md: 6 sections, 15.7 KB) was refused as "one section that
    cannot be cut smaller"; it is cut in two, as evenly as its headings allow, nothing lost."""
    sections = "".join(f"## Part {i}\n\n" + f"part {i} says this at length, word after word.\n" * 77 for i in range(4))
    text = "---\ntags: [long]\n---\n" + "An opening that says a great deal before any heading.\n" * 30 + sections
    assert len(text.encode()) > 15360 > len(sections.encode())
    v = _vault(tmp_path, {"notes/Long.md": "# Long\n\nsmall\n"}, quiet=0)
    try:
        _grown(v, "notes/Long.md", text)
        assert not v.split_candidates()["cannot"]
        [plan] = v.auto_split()
        parts = [p for p in (v.root / "notes").iterdir() if p.name != "Long.md"]
        assert len(parts) == 2 and all(len(p.read_bytes()) < 15360 * 2 // 3 for p in parts)
        kept = (v.root / "notes" / "Long.md").read_text() + "".join(p.read_text() for p in parts)
        assert all(f"part {i} says this" in kept for i in range(4)) and kept.count("word after word") == 308
        # over the threshold by its opening alone: no split at its headings brings it under
        _grown(v, "notes/Preamble.md", "A preamble line, long enough to matter here.\n" * 400 + sections)
        why = {c["path"]: c["why"] for c in v.split_candidates()["cannot"]}
        assert "its opening (18000 bytes above its first heading) is over the threshold" in why["notes/Preamble.md"]
        assert v.auto_split() == []
    finally:
        v.close()


def test_a_note_being_edited_is_never_split(tmp_path):
    v = _vault(tmp_path, {"notes/Big.md": "# Big\n\nsmall\n"}, quiet=30)
    try:
        _grown(v, "notes/Big.md", _big_md())
        os.utime(v.root / "notes/Big.md")  # just changed
        assert v.auto_split() == []
        with pytest.raises(Exception, match="quiet"):
            v.split_note("Big")
        os.utime(v.root / "notes/Big.md", (OLD, OLD))
        os.symlink("user@host.1:1", v.root / "notes" / ".#Big.md")  # Emacs holds it
        assert v.auto_split() == []
        os.unlink(v.root / "notes" / ".#Big.md")
        (v.root / "notes" / ".Big.md.swp").write_bytes(b"vim")
        assert v.auto_split() == []
        os.unlink(v.root / "notes" / ".Big.md.swp")
        assert len(v.auto_split()) == 1
    finally:
        v.close()


def test_an_undone_split_stays_undone_until_split_by_hand(tmp_path):
    v = _vault(tmp_path, {"notes/Big.md": "# Big\n\nsmall\n"}, quiet=0)
    try:
        _grown(v, "notes/Big.md", _big_md())
        before = _tree(v.root)
        [op] = v.auto_split()
        v.split_undo(op)
        assert _tree(v.root) == before
        big = v.root / "notes/Big.md"
        big.write_bytes(big.read_bytes() + b"Still growing.\n")  # edited, and still over the threshold
        _age(v.root)
        v.apply(["notes/Big.md"])
        assert v.auto_split() == []
        why = {c["path"]: c["why"] for c in v.split_candidates()["cannot"]}
        assert op in why["notes/Big.md"] and "undone" in why["notes/Big.md"]
    finally:
        v.close()
    v = Vault(v.config)  # remembered from the journal across a restart
    try:
        v.reconcile()
        assert v.auto_split() == []
        assert v.split_note("Big")["parts"]  # by hand it still splits
        assert not any(c["path"] == "notes/Big.md" for c in v.split_candidates()["cannot"])
    finally:
        v.close()


def test_undo_refuses_when_a_file_changed_unless_forced(tmp_path):
    v = _vault(tmp_path, {"notes/Big.md": _big_md()}, quiet=0)
    try:
        before = _tree(v.root)
        res = v.split_note("Big")
        hub = v.root / "notes/Big.md"
        hub.write_text(hub.read_text() + "edited after\n")
        with pytest.raises(Exception, match="changed since"):
            v.split_undo(res["op"])
        part = v.root / res["parts"][0]
        part.write_text(part.read_text() + "a part edited after\n")
        edited = {p: (v.root / p).read_bytes() for p in ("notes/Big.md", res["parts"][0])}
        v.split_undo(res["op"], force=True)
        assert _tree(v.root) == before
        # what the forced undo wrote over or removed is kept in the journal: undo loses nothing either
        entry = json.loads((v.root / ".vaultd/split" / f"{res['op']}.json").read_bytes())
        assert {d["path"]: base64.b64decode(d["bytes"]) for d in entry["displaced"]} == edited
    finally:
        v.close()


def test_dry_run_shows_a_diff_and_writes_nothing(tmp_path):
    v = _vault(tmp_path, {"notes/Big.md": _big_md()}, quiet=0)
    try:
        before = _tree(v.root)
        res = v.split_note("Big", dry_run=True)
        assert res["diff"].startswith("--- /dev/null") and "+++ b/notes/Big.md" in res["diff"]
        assert _tree(v.root) == before
    finally:
        v.close()


# -- crash safety: SIGKILL after every step ------------------------------------------------


@pytest.mark.parametrize("step", [1, 2, 3, 4, 5, 6])
def test_sigkill_at_every_step_leaves_before_or_fully_split(tmp_path, short_dir, step):
    """Steps: 1 journal written, 2-5 each of the four files written (two parts, the linking
    note, the hub), 6 journal marked done. A restart must show the vault exactly as before
    (steps 1-5: rolled back) or fully split (6)."""
    vault = tmp_path / "vault"
    (vault / "notes").mkdir(parents=True)
    (vault / "notes/Big.md").write_text("# Big\n\nsmall\n")
    (vault / "notes/Other.md").write_text("[[Big#Section 5]]\n")
    where = ["--vault", str(vault), "--state-dir", str(tmp_path / "st")]
    subprocess.run([sys.executable, "-m", "vaultd", "index", *where], check=True, capture_output=True)
    (vault / "notes/Big.md").write_text(_big_md())  # it grew since vaultd last saw it: auto mode splits it
    _age(vault)
    before = _tree(vault)
    auto, propose = tmp_path / "auto.toml", tmp_path / "propose.toml"
    auto.write_text("[split]\nquiet = 0.0\n")
    propose.write_text("[split]\nmode = 'propose'\n")
    args = [sys.executable, "-m", "vaultd", "run", *where, "--socket", str(short_dir / "s.sock")]
    proc = subprocess.Popen(args + ["--config", str(auto)], env={**os.environ, "VAULTD_SPLIT_CRASH_AFTER": str(step)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert proc.wait(timeout=60) == -signal.SIGKILL, "auto mode splits at once; the crash point kills it"
    assert (_tree(vault) != before) == (step >= 2), "the crash came where asked"
    proc = subprocess.Popen(args + ["--config", str(propose)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: _answers(short_dir / "s.sock"), timeout=20, interval=0.05)  # a stale socket is left
        after = _tree(vault)
        if step < 6:
            assert after == before
        else:
            parts = [p for p in after if p.startswith("notes/Big - ")]
            assert len(parts) == 2 and b"Parts:" in after["notes/Big.md"]
            assert b"[[Big - " in after["notes/Other.md"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


def test_read_only_files_are_never_split(tmp_path):
    v = _vault(tmp_path, {"notes/Big.md": "# Big\n\nsmall\n", "notes/Other.md": "[[Big#Section 5]]\n"}, quiet=0)
    try:
        _grown(v, "notes/Big.md", _big_md())
        before = _tree(v.root)
        os.chmod(v.root / "notes/Other.md", 0o444)  # a note the split would rewrite
        assert v.auto_split() == []
        assert "read-only" in v.splits.skipped["notes/Big.md"][1]
        cands = v.split_candidates()
        assert not cands["over"] and "notes/Other.md is read-only" in cands["cannot"][0]["why"], "not offered"
        os.chmod(v.root / "notes/Other.md", 0o644)
        os.chmod(v.root / "notes", 0o555)  # no new parts can go here
        v.splits.skipped.clear()
        assert v.auto_split() == []
        os.chmod(v.root / "notes", 0o755)
        assert _tree(v.root) == before
    finally:
        os.chmod(v.root / "notes", 0o755)
        v.close()


def _org_big(head: str = "", n: int = 5, props=lambda i: f":PROPERTIES:\n:CUSTOM_ID: h{i}\n:END:\n") -> str:
    return head + "".join(f"* Head {i}\n{props(i)}" + "text line here for the org note\n" * 120 for i in range(n))


def _where(v: Vault, src: str) -> list[tuple[str | None, int | None, str | None]]:
    """Where each link of `src` leads: (note, heading text, broken)."""
    out = []
    for r in v.graph.links(src):
        head = next((h.text for h in headings_of(v.notes[r.target]) if h.line == r.line), None) if r.target else None
        out.append((r.target, head, r.broken))
    return out


def test_a_shared_denote_identifier_never_makes_the_parts_links_ambiguous(tmp_path):
    # an exported draft elsewhere carries the same identifier: `denote:ID` names two notes
    name = "20250101T000000--big__kw.org"
    v = _vault(tmp_path, {f"notes/{name}": _org_big("#+title: Big\n\n"), f"drafts/{name}": "#+title: Big draft\n",
                          "notes/ref.org": f"[[file:{name}::*Head 3][x]]\n"}, quiet=0)
    try:
        before = v.broken()["total"]
        res = v.split_note(f"notes/{name}")
        assert v.broken()["total"] == before
        for p in res["parts"]:
            back = [r for r in v.graph.links(p) if r.target == f"notes/{name}"]
            assert back and not any(r.broken for r in v.graph.links(p))
        assert not any(r.broken for r in v.graph.links(f"notes/{name}"))  # the hub's list
        assert _where(v, "notes/ref.org")[0][1] == "Head 3"
    finally:
        v.close()


def test_a_denote_link_to_a_note_known_by_its_identifier_keyword_follows_the_heading(tmp_path):
    v = _vault(tmp_path, {"big.org": _org_big("#+title: Big\n#+identifier: 20240101T101010\n\n"),
                          "ref.org": "[[denote:20240101T101010::#h3][three]] [[denote:20240101T101010][whole]]\n"},
               quiet=0)
    try:
        res = v.split_note("big.org")
        (part, head, broken), (whole, _, _) = _where(v, "ref.org")
        assert part in res["parts"] and head == "Head 3" and broken is None
        assert whole == "big.org"  # the whole note: the hub
        assert "20240101T101010::#h3" not in (v.root / "ref.org").read_text()
    finally:
        v.close()


def test_an_id_link_to_a_heading_of_an_org_roam_note_follows_the_heading(tmp_path):
    head = ":PROPERTIES:\n:ID:       5b9a-file\n:END:\n#+title: Roam\n\n"
    v = _vault(tmp_path, {"roam.org": _org_big(head, props=lambda i: ""),
                          "ref.org": "[[id:5b9a-file::*Head 3][three]] [[id:5b9a-file][whole]]\n"}, quiet=0)
    try:
        res = v.split_note("roam.org")
        (part, head3, broken), (whole, _, _) = _where(v, "ref.org")
        assert part in res["parts"] and head3 == "Head 3" and broken is None
        assert whole == "roam.org"
        # each part is an org-roam node of its own
        assert all(v.notes[p].uuids and "5b9a-file" not in v.notes[p].uuids for p in res["parts"])
    finally:
        v.close()


def test_a_split_that_would_retarget_a_link_is_refused_and_listed_with_why(tmp_path):
    # `[[big - Head 1]]` is broken today; the part `big - Head 1.md` would capture it
    big = "".join(f"# Head {i}\n\n" + "text line here for the markdown note\n" * 380 for i in range(4))
    v = _vault(tmp_path, {"big.md": big, "ref.md": "see [[big - Head 1]]\n"}, quiet=0)
    try:
        before = _tree(v.root)
        with pytest.raises(Exception, match="would change where links lead.*big - Head 1"):
            v.split_note("big.md")
        assert _tree(v.root) == before
        why = {c["path"]: c["why"] for c in v.split_candidates()["cannot"]}
        assert "would change where links lead" in why["big.md"]
    finally:
        v.close()


def test_part_names_are_plain_text_without_doubled_blanks_and_bounded(tmp_path):
    heads = ["*Bold* and =code= [[https://x.org][a link]]", "[[Other|labelled]]  two   blanks", "`tick` ~strike~ -- end -",
             "가" * 200]
    big = "".join(f"# {h}\n\n" + "text line here for the markdown note\n" * 380 for h in heads)
    v = _vault(tmp_path, {"big.md": big, "Other.md": "x\n"}, quiet=0)
    try:
        res = v.split_note("big.md")
        names = [Path(p).name for p in res["parts"]]
        assert names[0] == "big - Bold and code a link.md" and names[1] == "big - labelled two blanks.md"
        assert names[2] == "big - tick strike -- end.md"
        assert all("  " not in n and len(n.encode()) <= 200 for n in names)
    finally:
        v.close()


def test_first_start_writes_nothing_growth_splits_and_proposals_wait_for_the_user(tmp_path, make_daemon):
    v = tmp_path / "v"
    (v / "notes").mkdir(parents=True)
    (v / "notes/Old.md").write_text(_big_md())  # over the threshold before vaultd ever saw it
    (v / "notes/Grow.md").write_text("# Grow\n\nsmall\n")
    (v / "notes/Other.md").write_text("[[Old#Section 5]] [[Grow#Section 5]]\n")
    _age(v)
    before = _tree(v)
    cfg = tmp_path / "c.toml"
    cfg.write_text("[split]\nquiet = 0.0\n")
    d = make_daemon(v, extra=["--config", str(cfg)])
    g = d.status()["generation"]
    (v / "notes/Grow.md").write_text(_big_md())  # grows past the threshold while watched
    grown = _tree(v)
    wait_for(lambda: any(p.startswith("notes/Grow - ") for p in _tree(v)), timeout=30, interval=0.1)
    d.wait_generation(g, timeout=10)
    after = _tree(v)
    assert after["notes/Old.md"] == before["notes/Old.md"], "a note already over the threshold is only proposed"
    assert not any(p.startswith("notes/Old - ") for p in after)
    env = {**os.environ, "VAULTD_SOCKET": str(d.socket)}
    q = lambda *a: subprocess.run([sys.executable, "-m", "vaultd.vaultq", *a], capture_output=True, text=True,
                                  timeout=30, env=env, cwd=v)
    listed = q("split", "--list")
    assert listed.returncode == 0 and "notes/Old.md" in listed.stdout, listed
    applied = q("split", "--all")
    assert applied.returncode == 0 and "split notes/Old.md into" in applied.stdout, applied
    assert any(p.startswith("notes/Old - ") for p in _tree(v))
    assert "Old - " in (v / "notes/Other.md").read_text()
    history = q("split", "--history").stdout
    assert history.count(" done ") == 2
    undone = q("split", "--undo", "--all")
    assert undone.returncode == 0 and undone.stdout.count("undid ") == 2, undone
    assert _tree(v) == grown, "undo of all restores the tree byte for byte"
    assert q("split", "--undo").returncode == 2 and q("split", "--undo", "../../x").returncode != 0
    nothing = q("split", "--undo", "--all")
    assert nothing.returncode == 1 and "no split operation to undo" in nothing.stderr, "as grep: nothing, exit 1"


def test_a_stale_buffer_saved_over_the_hub_wins_and_is_not_split_again(tmp_path):
    v = _vault(tmp_path, {"notes/Big.md": "# Big\n\nsmall\n", "notes/Other.md": "[[Big#Section 5]]\n"}, quiet=0)
    try:
        _grown(v, "notes/Big.md", _big_md())
        buffer = _big_md()  # the editor's buffer, read before the split
        [op] = v.auto_split()
        assert b"Big - " in (v.root / "notes/Other.md").read_bytes()
        split_tree = _tree(v.root)
        saved = buffer + "An edit made after the split.\n"
        _grown(v, "notes/Big.md", saved)  # the user saves the stale buffer plus an edit
        [fix] = v.auto_split()
        assert _tree(v.root) == {"notes/Big.md": saved.encode(), "notes/Other.md": b"[[Big#Section 5]]\n"}, \
            "the vault is what the user saved: no duplicate, no link into a removed part"
        assert v.broken()["total"] == 0
        assert v.auto_split() == [], "not split again on its own"
        last = v.split_history()["history"][-1]
        assert last["op"] == fix and last["kind"] == "stale save" and last["note"] == "notes/Big.md"
        why = {c["path"]: c["why"] for c in v.split_candidates()["cannot"]}
        assert "saved whole" in why["notes/Big.md"]
        v.split_undo(fix)  # undoable: back to the duplicate the save made
        assert _tree(v.root) == {**split_tree, "notes/Big.md": saved.encode()}
    finally:
        v.close()


def test_a_stale_save_over_an_edited_part_changes_nothing(tmp_path):
    v = _vault(tmp_path, {"notes/Big.md": "# Big\n\nsmall\n"}, quiet=0)
    try:
        _grown(v, "notes/Big.md", _big_md())
        [op] = v.auto_split()
        part = next(p for p in _tree(v.root) if p.startswith("notes/Big - "))
        (v.root / part).write_text((v.root / part).read_text() + "Edited in the part.\n")
        _grown(v, "notes/Big.md", _big_md())
        v.apply([part])
        before = _tree(v.root)
        assert v.auto_split() == [] and _tree(v.root) == before, "nothing lost: left for the user to merge"
        assert v.auto_split() == [] and _tree(v.root) == before
    finally:
        v.close()


def test_vaultds_own_writes_are_not_activity_for_hot_or_recent(tmp_path):
    v = _vault(tmp_path, {"notes/Big.md": _big_md(), "notes/Other.md": "[[Big#Section 5]]\n"}, quiet=0)
    try:
        months = time.time() - 90 * 86400
        for p in (v.root / "notes").iterdir():
            os.utime(p, (months, months))
        v.apply(["notes/"])
        assert v.hot()["hot"] == [] and v.recent(7)["recent"] == []
        res = v.split_all()
        assert len(res["split"]) == 1
        assert v.hot()["hot"] == [], "hubs and parts are not 'changed 0 days ago'"
        assert v.recent(7)["recent"] == []
        v.split_undo(every=True)
        assert v.hot()["hot"] == [] and v.recent(7)["recent"] == []
        (v.root / "notes/Other.md").write_text("[[Big]] edited by the user\n")  # the user's own change counts
        v.apply(["notes/Other.md"])
        assert [h["path"] for h in v.hot()["hot"]] == ["notes/Other.md"]
    finally:
        v.close()


def test_no_part_is_over_the_threshold_so_none_is_split_again(tmp_path):
    tags = "".join(f":tag{i:03d}" for i in range(60)) + ":"  # a part header of about 700 bytes
    org = f"#+title: Tagged\n#+filetags: {tags}\n\n" + "".join(
        f"* Head {i}\n" + "".join(f"** Sub {i}.{j}\n" + "text line here for the org note\n" * 40 for j in range(4))
        for i in range(6))
    v = _vault(tmp_path, {"tagged.org": "#+title: Tagged\n"}, quiet=0)
    try:
        _grown(v, "tagged.org", org)
        [op] = v.auto_split()
        sizes = {p: (v.root / p).stat().st_size for p in v.split_history()["history"][0]["parts"]}
        assert all(s <= v.config.split.threshold for s in sizes.values()), sizes
        assert v.auto_split() == [] and v.split_candidates()["over"] == []
    finally:
        v.close()


@pytest.mark.parametrize("name,head", [("plans.org", "#+title: [2025] Plans | a *bold* one\n\n"),
                                       ("plans.md", "---\ntitle: \"[2025] Plans | a *bold* one\"\n---\n\n")])
def test_a_hub_title_with_brackets_still_gives_parts_a_back_link_line(tmp_path, name, head):
    from vaultd.parse import parse_file

    org = name.endswith(".org")
    big = head + "".join(("* " if org else "# ") + f"Head {i}\n" + "text line here for the note\n" * 380 for i in range(3))
    v = _vault(tmp_path, {name: big}, quiet=0)
    try:
        res = v.split_note(name)
        for p in res["parts"]:
            n = parse_file(p, (v.root / p).read_bytes())
            assert any(r.target == name and not r.broken for r in v.graph.links(p)), "the back link leads to the hub"
            assert n.title.startswith("2025 Plans a bold one - Head "), n.title  # its note's (plain), then its own
            assert n.body.count("Plans") <= 1, "the back-link line is not searchable text of the part (its title may be)"
    finally:
        v.close()


def test_links_made_longer_by_the_split_never_push_a_part_over_the_threshold(tmp_path):
    # each section links to the next by custom id: moved apart, `[[#h2][x]]` becomes a
    # `file:` link some 40 bytes longer, many times over
    org = "#+title: Linked\n\n" + "".join(
        f"* Head {i}\n:PROPERTIES:\n:CUSTOM_ID: h{i}\n:END:\n" + f"text [[#h{(i + 1) % 4}][next]] here\n" * 290
        for i in range(4))
    v = _vault(tmp_path, {"linked.org": org}, quiet=0)
    try:
        res = v.split_note("linked.org")
        sizes = {p: (v.root / p).stat().st_size for p in res["parts"]}
        assert all(s <= v.config.split.threshold for s in sizes.values()), sizes
        assert v.split_candidates()["over"] == [] and v.broken()["total"] == 0
    finally:
        v.close()


def test_a_heading_ending_in_an_escape_still_gets_listed_by_the_hub(tmp_path):
    # `\*` left a backslash at the end of the label: `[[big - x \|...\]]` read as no link at all
    heads = ["Press x to delete the character under the cursor. \\*", "Second", "Third"]
    big = "".join(f"## {h}\n\n" + "text line here for the markdown note\n" * 380 for h in heads)
    v = _vault(tmp_path, {"big.md": big}, quiet=0)
    try:
        res = v.split_note("big.md")
        listed = {r.target for r in v.graph.links("big.md") if not r.broken}
        assert listed == set(res["parts"]) and len(res["parts"]) == 3
        assert "big - Press x to delete the character under the cursor.md" in {Path(p).name for p in res["parts"]}
    finally:
        v.close()


def test_outside_auto_mode_a_stale_save_waits_for_split_all(tmp_path):
    v = _vault(tmp_path, {"notes/Big.md": _big_md(), "notes/Other.md": "[[Big#Section 5]]\n"}, quiet=0, mode="propose")
    try:
        v.split_note("Big")
        saved = _big_md() + "An edit made after the split.\n"
        _grown(v, "notes/Big.md", saved)
        before = _tree(v.root)
        assert v.auto_split() == [] and _tree(v.root) == before, "propose never writes on its own"
        cands = v.split_candidates()
        assert not cands["over"], "never offered for a split again"
        assert "saved with the text of its parts" in {c["path"]: c["why"] for c in cands["cannot"]}["notes/Big.md"]
        res = v.split_all()
        assert res["split"][0]["stale"] and _tree(v.root) == {"notes/Big.md": saved.encode(),
                                                              "notes/Other.md": b"[[Big#Section 5]]\n"}
    finally:
        v.close()


def test_a_title_heading_over_everything_stays_in_the_hub(tmp_path):
    big = "# Xylophone Narwhal\n\nWhat this is.\n\n" + "".join(
        f"## Topic {i}\n\n" + "text line here for the markdown note\n" * 120 for i in range(8))
    v = _vault(tmp_path, {"xn.md": big}, quiet=0)
    try:
        v.split_note("xn")
        hub = (v.root / "xn.md").read_text()
        assert hub.startswith("# Xylophone Narwhal\n\nWhat this is.\n") and "Parts:" in hub
        # the title is the file name (issue 19); the H1 the hub keeps is still searched as one
        assert v.notes["xn.md"].title == "xn" and first_h1(v.notes["xn.md"]) == "Xylophone Narwhal"
    finally:
        v.close()


def test_headings_starting_with_a_hash_and_dendron_names_split_cleanly(tmp_path):
    big = "".join(f"## {h}\n\n" + "text line here for the markdown note\n" * 380 for h in ("#hashtag heading", "Setup",
                                                                                          "Setup", "Faq"))
    v = _vault(tmp_path, {"h.md": big, "proj.tools.md": big, "proj.tools.faq.md": "x\n"}, quiet=0)
    try:
        assert v.split_note("h.md")["parts"]
        names = [Path(p).name for p in v.split_note("proj.tools.md")["parts"]]
        assert all(" " not in n for n in names), names  # Dendron names stay one word
        assert v.broken()["total"] == 0
    finally:
        v.close()


def test_split_all_splits_a_note_an_earlier_split_of_the_run_rewrote(tmp_path):
    v = _vault(tmp_path, {"notes/A.md": _big_md(), "notes/B.md": "[[A#Section 5]]\n\n" + _big_md()}, quiet=60)
    try:
        res = v.split_all()
        assert sorted(it["note"] for it in res["split"]) == ["notes/A.md", "notes/B.md"], res["skipped"]
        assert v.broken()["total"] == 0
    finally:
        v.close()


@pytest.mark.parametrize("org", [False, True])
def test_footnotes_reference_links_and_org_settings_reach_every_part_that_uses_them(tmp_path, org):
    h = "* " if org else "# "
    use = "[fn:1]" if org else "[^1] and [docs][d1]"
    defs = "[fn:1] The footnote, see [[Other]].\n" if org else "[^1]: The footnote.\n    Still it.\n[d1]: https://x.org/d\n"
    head = "#+title: Big\n#+TODO: TODO WAIT | DONE\n#+LINK: gh https://github.com/%s\n\n" if org else ""
    big = head + f"Intro uses {use}.\n\n" + "".join(
        f"{h}{'WAIT ' if org and i == 1 else ''}Head {i}\n\n" + ("[[gh:foo/bar]] " if org else "") +
        "text line here for the note\n" * 380 for i in range(3)) + defs
    name = "big.org" if org else "big.md"
    v = _vault(tmp_path, {name: big, "Other.md": "x\n"}, quiet=0)
    try:
        res = v.split_note(name)
        for p in [name, *res["parts"]]:
            text = (v.root / p).read_text()
            if ("[fn:1]" if org else "[^1]") in text:
                assert ("[fn:1] The footnote" if org else "[^1]: The footnote.\n    Still it.\n") in text, p
        if org:
            part = next(p for p in res["parts"] if "WAIT Head 1" in (v.root / p).read_text())
            assert "#+TODO: TODO WAIT | DONE" in (v.root / part).read_text()
            assert [h.text for h in headings_of(v.notes[part])] == ["Head 1"], "WAIT still a keyword there"
        else:
            assert "[d1]: https://x.org/d" in (v.root / name).read_text()
        assert v.broken()["total"] == 0
        v.split_undo(res["op"])
    finally:
        v.close()


def test_an_org_line_number_link_follows_its_line(tmp_path):
    org = "#+title: Big\n\n" + "".join(f"* Head {i}\n" + "".join(f"line {i}.{j}\n" for j in range(500)) for i in range(3))
    target = org.split("\n").index("line 2.7") + 1
    v = _vault(tmp_path, {"big.org": org, "ref.org": f"[[file:big.org::{target}][there]]\n"}, quiet=0)
    try:
        res = v.split_note("big.org")
        [r] = v.graph.links("ref.org")
        assert r.target in res["parts"]
        assert (v.root / r.target).read_text().split("\n")[r.line - 1] == "line 2.7"
    finally:
        v.close()


@pytest.mark.parametrize("link", ["[[see|Big#alpha-2]]", "[[denote:20240101T100000::#alpha-1]]"])
def test_numbered_anchors_are_renumbered_in_every_syntax(tmp_path, link):
    big = "---\nidentifier: \"20240101T100000\"\n---\n\n" + "".join(
        "# Alpha\n\n" + "text line here for the markdown note\n" * 380 for _ in range(5))
    v = _vault(tmp_path, {"notes/Big.md": big, "other/Other.md": f"L0 see {link} here.\n"}, quiet=0)
    try:
        [before] = v.graph.links("other/Other.md")
        v.split_note("notes/Big.md")  # refused before: the anchor was left numbered as in the whole note
        [after] = v.graph.links("other/Other.md")
        assert after.target != "notes/Big.md" and not after.broken
        heads = [h.text for h in headings_of(v.notes[after.target]) if h.line == after.line]
        assert heads == ["Alpha"]
    finally:
        v.close()


def test_undo_of_several_ops_is_all_or_nothing(tmp_path):
    v = _vault(tmp_path, {"notes/A.md": _big_md(), "notes/B.md": _big_md()}, quiet=0)
    try:
        ops = [it["op"] for it in v.split_all()["split"]]
        part = next(p for p in _tree(v.root) if p.startswith("notes/A - "))
        (v.root / part).write_text("edited\n")  # one op can no longer be undone
        before = _tree(v.root)
        with pytest.raises(QueryError, match="nothing was undone"):
            v.split_undo(ops)
        assert _tree(v.root) == before
        assert len(v.split_undo(ops, force=True)["undone"]) == 2
    finally:
        v.close()


@pytest.mark.parametrize("path", ["/etc/x", "../outside.md", "notes/../../outside.md", "link/out.md"])
def test_undo_never_writes_outside_the_vault_whatever_the_journal_says(tmp_path, path):
    import base64
    import json

    v = _vault(tmp_path, {"notes/A.md": "# A\n"}, quiet=0)
    try:
        os.symlink(tmp_path, v.root / "link")
        op = "20260101T000000-abcdef"
        entry = {"op": op, "time": 1.0, "note": "notes/A.md", "status": "done", "parts": [],
                 "files": [{"path": path, "before": base64.b64encode(b"owned\n").decode(), "after": None}]}
        v.journal.dir.mkdir(parents=True)
        (v.journal.dir / f"{op}.json").write_text(json.dumps(entry))
        with pytest.raises(QueryError, match="not a file inside the vault"):
            v.split_undo(op, force=True)
        assert not (tmp_path / "outside.md").exists() and not (tmp_path / "out.md").exists()
    finally:
        v.close()
    entry["status"] = "prepared"  # a start rolls it back: refused, and the start goes on
    (v.journal.dir / f"{op}.json").write_text(json.dumps(entry))
    Vault(v.config).close()
    assert not (tmp_path / "outside.md").exists() and not (tmp_path / "out.md").exists()


@pytest.mark.parametrize("text", ['[1, 2]', '{"op": "x"}', '{"op": "20260101T000000-abcdef", "note": 3}',
                                  '{"op": "20260101T000000-abcdef", "note": "a.md", "status": "prepared", "time": "x"}',
                                  "not json"])
def test_a_journal_entry_of_the_wrong_shape_never_stops_a_start(tmp_path, text):
    v = _vault(tmp_path, {"notes/A.md": "# A\n"}, quiet=0)
    v.close()
    v.journal.dir.mkdir(parents=True)
    (v.journal.dir / "20260101T000000-abcdef.json").write_text(text)
    v = Vault(v.config)  # starts, and the rest of the journal still counts
    try:
        v.reconcile()
        assert v.split_history()["history"] == [] and "notes/A.md" in v.notes
    finally:
        v.close()


# -- two machines, tags, line endings, the hub's list ----------------------------------------

def _sections(mark: str, n: int, lines: int = 40, tags: str = "") -> str:
    return "".join(f"{mark} Section {i}{tags}\n\n" + f"Text of section {i}, words words words.\n" * lines for i in range(n))


_SYNCED = {
    "20250102T000000--sync-note__test.md": "---\ntitle: Sync note\ntags: [ProjectX, MixedCase]\n"
                                           "identifier: \"20250102T000000\"\n---\n\nIntro.\n\n" + _sections("##", 8),
    "roam.org": ":PROPERTIES:\n:ID:       8e1f4a2c-0000-4000-8000-000000000001\n:END:\n#+title: Roam\n\n" + _sections("*", 6),
    "other.md": "[[20250102T000000--sync-note__test#Section 5]] [[20250102T000000--sync-note__test#Section 1]]\n",
    "other.org": "[[file:roam.org::*Section 4][four]] [[denote:20250102T000000][whole]]\n",
}


def test_two_synced_copies_split_a_note_into_the_same_files(tmp_path):
    """Two machines running auto mode on copies of one synced vault split the same note at
    different times: each writes the same hub, parts (names, identifiers, :ID:s) and
    rewrites, so the copies converge and no identifier is used twice."""
    trees = []
    for machine in ("a", "b"):
        v = _vault(tmp_path / machine, _SYNCED, quiet=0, threshold=4096)
        try:
            for name in ("20250102T000000--sync-note__test.md", "roam.org"):
                assert len(v.split_note(name)["parts"]) >= 2
            trees.append(_tree(v.root))
            ids = [n.id for n in v.notes.values() if n.id]
            uuids = [u for n in v.notes.values() for u in n.uuids]
            assert len(ids) == len(set(ids)) and len(uuids) == len(set(uuids)) > 2
            made = sorted(i for i in ids if i != "20250102T000000")
            assert made == [f"20250102T0000{k:02}" for k in range(1, len(made) + 1)], "the free seconds after the note's"
        finally:
            v.close()
        later = int(time.time()) + 1
        wait_for(lambda: time.time() >= later)  # the second machine splits in a later second
    assert trees[0] == trees[1]
    assert trees[0]["other.md"] != _SYNCED["other.md"].encode()


def test_parts_of_a_note_made_seconds_ago_are_never_dated_in_the_future(tmp_path):
    made = time.strftime("%Y%m%dT%H%M%S", time.localtime(time.time() - 2))
    v = _vault(tmp_path, {f"{made}--fresh.md": "# Fresh\n\n" + _sections("##", 8)}, quiet=0, threshold=2048)
    try:
        parts = v.split_note(made)["parts"]
        now = time.strftime("%Y%m%dT%H%M%S")
        ids = [v.notes[p].id for p in parts]
        assert len(ids) >= 4 and len(set(ids + [made])) == len(ids) + 1
        assert all(i <= now for i in ids), (ids, now)
        assert ids == sorted(ids)
    finally:
        v.close()


def test_parts_carry_the_notes_own_tags_as_written_and_heading_tags_stay_on_their_headings(tmp_path):
    org = "#+title: Org big\n#+filetags: :orgbig:\n\n" + _sections("*", 6, tags=" :tagA:tagB:")
    md = "---\ntitle: Md big\ntags: [ProjectX, MixedCase]\n---\n\n" + _sections("##", 6) + "#inline tag\n"
    v = _vault(tmp_path, {"20250103T000000--org-big__orgbig.org": org, "md big.md": md}, quiet=0, threshold=4096)
    try:
        for p in v.split_note("20250103T000000")["parts"]:
            text = (v.root / p).read_text()
            assert "#+filetags:   :orgbig:\n" in text, text[:300]
            assert text.count(":tagA:tagB:") == text.count("* Section")  # on the headings, case kept
        for p in v.split_note("md big")["parts"]:
            text = (v.root / p).read_text()
            assert 'tags: ["ProjectX", "MixedCase"]\n' in text, text[:300]
    finally:
        v.close()


@pytest.mark.parametrize("name,text", [
    ("crlf.md", "---\ntitle: Crlf\ntags: [a]\n---\n\nIntro [^1].\n\n" + _sections("##", 6) + "[^1]: a note\n"),
    ("20250104T000000--crlf__a.org", "#+title: Crlf\n#+filetags: :a:\n\n" + _sections("*", 6)),
])
def test_a_crlf_note_splits_into_crlf_files(tmp_path, name, text):
    data = text.replace("\n", "\r\n")
    v = _vault(tmp_path, {name: data, "other.md": "x\n"}, quiet=0, threshold=4096)
    try:
        before = _tree(v.root)
        res = v.split_note(name)
        for p in [name, *res["parts"]]:
            got = (v.root / p).read_bytes()
            assert b"\n" not in got.replace(b"\r\n", b""), (p, got[:200])
        v.split_undo(res["op"])
        assert _tree(v.root) == before
    finally:
        v.close()


def test_the_hubs_list_shows_the_headings_each_part_holds(tmp_path):
    text = "# Grow\n\nIntro.\n\n" + _sections("##", 12, lines=6) + "## See https://example.com/x\n\nlast\n"
    v = _vault(tmp_path, {"grow.md": text}, quiet=0, threshold=1024)
    try:
        parts = v.split_note("grow")["parts"]
        hub = (v.root / "grow.md").read_text().splitlines()
        for k, p in enumerate(parts, 1):
            at = next(i for i, x in enumerate(hub) if x.startswith(f"{k}. "))
            under = [x.removeprefix(" " * len(f"{k}. ") + "- ") for x in hub[at + 1:] if x.startswith("   ")]
            under = under[:len(list(itertools.takewhile(lambda x: x.startswith("   "), hub[at + 1:])))]
            held = [plain(h.text) for h in headings_of(v.notes[p])][1:]  # as text: no link, tag or block id
            assert under == held, (p, under, held)
        assert any(len(headings_of(v.notes[p])) > 1 for p in parts), "sections were packed together"
        assert v.broken()["total"] == 0
    finally:
        v.close()
