"""The memory loop (issue 39 item 5), through the real daemon, real vaultq and its hooks:
what an agent remembers is shown at the next session start; an entry that changes a value
of an earlier one supersedes it (both searchable, the newer first, the older marked); a
repeat is counted; undoing a superseding entry gives the older one back its standing;
`[[capture.route]]` rules put entries under a heading of the user's note; bidi controls
are refused."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import Daemon
from vaultd.capture import entry
from vaultd.render import cost

SESSION = "4c1c7e5e-2f6b-4a4e-9d43-0b7c7b9b8a11"
HEADER = re.compile(r"^## (.+?):(\d+)-(\d+) (.*)$", re.M)


def vaultq(d: Daemon, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "vaultd.vaultq", "--socket", str(d.socket), *args],
                          capture_output=True, text=True, timeout=60, input=stdin)


def session_start(d: Daemon, tmp_path: Path) -> str:
    """What the session-start hook injects, as Claude Code runs it."""
    r = vaultq(d, "hook", "session-start", stdin=json.dumps({
        "session_id": SESSION, "cwd": str(tmp_path), "hook_event_name": "SessionStart", "source": "startup"}))
    assert r.returncode == 0 and r.stderr == "", r.stderr
    return r.stdout


def cited(out: str) -> dict[str, tuple[str, int, int]]:
    """Each `## path:first-last title` of a hook's output, by the first line of its text;
    the text checked to be the file's lines first..last."""
    found = {}
    chunks = HEADER.split(out)
    for path, first, last, _title, text in zip(*(chunks[i::5] for i in range(1, 6))):
        first, last = int(first), int(last)
        body = text.split("\n", 1)[1]
        lines = Path(path).read_text(encoding="utf-8").split("\n")[first - 1 : last]
        assert body.startswith("\n".join(lines)), (path, first, last, body)
        found[lines[0]] = (path, first, last)
    return found


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".vaultd" not in p.parts}


def config(tmp_path: Path, routes: str = "", fmt: str = "md") -> list[str]:
    cfg = tmp_path / "capture.toml"
    cfg.write_text(f'[capture]\nfolder = "inbox"\nformat = "{fmt}"\n{routes}')
    return ["--config", str(cfg)]


@pytest.fixture
def capturing(make_daemon, tmp_path) -> Daemon:
    return make_daemon(extra=config(tmp_path))


def test_what_an_agent_remembers_the_next_session_start_shows(capturing, tmp_path):
    d = capturing
    r = vaultq(d, "remember", "The staging database is called Heron and lives on db3.", "--tag", "infra",
               "--session", SESSION)
    assert r.returncode == 0, r.stderr
    res = json.loads(vaultq(d, "remember", "Deploys happen on Fridays after the retro.", "--json").stdout)
    path = d.vault / res["path"]
    assert [it["path"] for it in d.request("recent")["recent"]][:1] == [res["path"]], "recent lists capture notes"
    d.stop()
    d.start()  # the next session: a new daemon, the same vault
    out = session_start(d, tmp_path)
    shown = cited(out)
    assert "# Remembered lately (newest first; superseded entries left out):\n" in out
    assert shown["Deploys happen on Fridays after the retro."] == (str(path), res["last"] - 2, res["last"] - 2)
    assert shown["The staging database is called Heron and lives on db3."][0] == str(path)
    assert out.index("Deploys happen") < out.index("Heron"), "newest first"
    assert re.search(r"^## \S+:\d+-\d+ remembered \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\S*$", out, re.M)
    # the budget holds: a small one still shows the newest entry
    r = vaultq(d, "hook", "session-start", "--budget", "200", stdin=json.dumps({"hook_event_name": "SessionStart"}))
    assert r.returncode == 0 and "Deploys happen on Fridays" in r.stdout and \
        cost(r.stdout, "tokens") <= 200, r.stdout


@pytest.mark.parametrize("old, new, changed, query", [
    ("The user's favourite editor is Emacs with evil-mode.", "The user's favourite editor is Vim with evil-mode.",
     "name", "favourite editor evil-mode"),
    ("The team standup is on Tuesday mornings.", "The team standup is on Thursday mornings.", "day", "team standup"),
    ("민수의 편집기는 이맥스다.", "민수의 편집기는 빔이다.", "name", "민수의 편집기는"),
])
def test_a_changed_value_supersedes_both_searchable_the_newer_first_the_older_marked(capturing, tmp_path, old, new,
                                                                                  changed, query):
    d = capturing
    first = d.request("remember", text=old)
    second = d.request("remember", text=new)
    assert second["written"] and second["supersedes"] == {
        "path": first["path"], "first": first["first"], "last": first["last"] + 2, "heading": first["heading"],
        "value": changed}
    lines = (d.vault / first["path"]).read_text().split("\n")
    older = lines[first["first"] - 1 : first["last"] + 2]
    assert older[:2] == [f"# {first['heading']}", "#superseded"] and older[-1].startswith(
        f"Superseded by `{second['path']}:{second['first']}-{second['last']}` (entry {second['heading']}), ")
    assert lines[second["last"] - 1] == \
        f"Supersedes `{first['path']}:{first['first']}-{first['last'] + 2}` (entry {first['heading']})."
    [hit] = d.request("search", q=query)["hits"]
    snips = [(s["line"], s["superseded"]) for s in hit["snippets"]]
    assert snips[0] == (second["first"] + 2, False) and (first["first"] + 3, True) in snips, snips
    assert d.request("search", q=old.split()[-1].strip("."))["total"] >= 1, "the older entry is still found"
    out = session_start(d, tmp_path)
    assert new in out and old not in out, "the session start leaves history out"


def test_supersede_across_a_route_and_the_newer_note_ranks_first(make_daemon, tmp_path):
    (tmp_path / "vault" / "notes" / "Tools.md").write_text("# Tools\n\nWhat I work with.\n\n## Remembered\n")
    d = make_daemon(extra=config(tmp_path, '[[capture.route]]\nmatch = "tag:tools"\nnote = "notes/Tools.md"\n'))
    first = d.request("remember", text="The build server is named Kiln.", tags=["tools"])
    assert first["path"] == "notes/Tools.md" and first["heading"] in (d.vault / "notes/Tools.md").read_text()
    second = d.request("remember", text="The build server is named Forge.")  # no tag: the capture note
    assert second["path"].startswith("inbox/") and second["supersedes"]["path"] == "notes/Tools.md"
    hits = d.request("search", q="build server named")["hits"]
    assert [h["path"] for h in hits[:2]] == [second["path"], "notes/Tools.md"], hits
    assert all(s["superseded"] for s in hits[1]["snippets"] if s["line"] > 5)
    tools = (d.vault / "notes/Tools.md").read_text()
    assert f"### {first['heading']}\n#tools #superseded\n\nThe build server is named Kiln.\n" in tools


def test_a_repeat_is_counted_not_refused_without_trace(capturing):
    d = capturing
    one = d.request("remember", text="The office wifi password is kept in the red notebook.")
    p = d.vault / one["path"]
    before = p.read_bytes()
    again = d.request("remember", text="The office wifi password is kept in the red notebook!")
    assert not again["written"] and again["seen"] == 2 and again["op"] and \
        (again["path"], again["first"], again["last"]) == (one["path"], one["first"], one["last"] + 1)
    assert re.search(r"\.\nSeen 2 times, last \d{4}-\d\d-\d\dT[\d:]+[+-][\d:]+\.\n$", p.read_text())
    third = vaultq(capturing, "remember", "office wifi password: kept in the red notebook")
    assert third.returncode == 0 and re.fullmatch(
        rf"already remembered: {re.escape(str(p))}:{one['first']}-{one['last'] + 1} “{one['heading']}”, seen 3 "
        r"times now \(undo: vaultq undo \S+\)\n", third.stdout), third.stdout
    assert p.read_text().count("Seen ") == 1 and "Seen 3 times" in p.read_text(), "the count is one line"
    history = vaultq(d, "split", "--history").stdout
    assert re.search(rf"{again['op']}  done +{re.escape(str(p))} -> entry {one['heading']} counted again: “The office "
                     r"wifi password is kept in the …”", history), history
    op = third.stdout.split()[-1].rstrip(")")
    assert vaultq(d, "split", "--undo", op).returncode == 0
    assert "Seen 2 times" in p.read_text() and "Seen 3" not in p.read_text()
    assert vaultq(d, "split", "--undo", again["op"]).returncode == 0
    assert p.read_bytes() == before
    assert d.request("search", q="wifi red notebook")["hits"][0]["path"] == one["path"]


def test_undo_of_a_superseding_entry_restores_the_older_one_s_standing(capturing, tmp_path):
    d = capturing
    old = d.request("remember", text="Our release branch is named Juniper.")
    p = d.vault / old["path"]
    alone = tree(d.vault)
    new = d.request("remember", text="Our release branch is named Sequoia.")
    assert new["supersedes"]["value"] == "name"
    history = vaultq(d, "split", "--history").stdout
    assert re.search(rf"{new['op']}  done +{re.escape(str(p))} -> entry {new['heading']} remembered: “Our release "
                     rf"branch is named Sequoia.”, supersedes {re.escape(old['path'])}:{old['first']}-{old['last'] + 2}",
                     history), history
    # counted since: the count is undone first, never left behind under another entry
    rep = d.request("remember", text="Our release branch is named Sequoia!")
    assert rep["seen"] == 2
    counted = p.read_bytes()
    r = vaultq(d, "split", "--undo", new["op"])
    assert r.returncode == 2 and f"remembered entry {rep['op']} changed what {new['op']} wrote since (counted or " \
        f"marked it): undo {rep['op']} first; nothing was undone" in r.stderr, r.stderr
    assert p.read_bytes() == counted
    assert vaultq(d, "split", "--undo", rep["op"]).returncode == 0
    # the older entry edited by hand since: undo would lose that, so nothing is undone
    marked = p.read_bytes()
    p.write_bytes(marked.replace(b"Juniper.", b"Juniper (since 2024)."))
    r = vaultq(d, "split", "--undo", new["op"])
    assert r.returncode == 2 and "was edited since" in r.stderr and "nothing was undone" in r.stderr, r.stderr
    assert p.read_bytes() == marked.replace(b"Juniper.", b"Juniper (since 2024).")
    p.write_bytes(marked)
    d.wait_generation(d.status()["generation"] - 1)  # poll: the hand edit back, indexed
    r = vaultq(d, "split", "--undo", new["op"])
    assert r.returncode == 0, r.stderr
    assert tree(d.vault) == alone, "the newer entry out, the older one's mark gone: byte for byte"
    [hit] = d.request("search", q="release branch named")["hits"]
    assert not any(s.get("superseded") for s in hit["snippets"]) and "Sequoia" not in p.read_text()
    assert "Our release branch is named Juniper." in session_start(d, tmp_path)
    again = d.request("remember", text="Our release branch is named Juniper.")
    assert again["seen"] == 2, "it stands again: a repeat counts it"


def test_a_route_puts_the_entry_under_its_heading_and_tags_find_entries(make_daemon, tmp_path):
    note = tmp_path / "vault" / "notes" / "Decisions.md"
    text = "# Decisions\n\nWhat we chose, and why.\n\n## Log\n\nAn old decision.\n\n## Later\n\nNot this one.\n"
    note.write_text(text)
    d = make_daemon(extra=config(tmp_path, '[[capture.route]]\nmatch = "tag:decision"\nnote = "notes/Decisions.md"\n'
                                           'heading = "Log"\n[[capture.route]]\nmatch = "(?i)\\\\bdeadline\\\\b"\n'
                                           'note = "notes/Decisions.md"\nheading = "Deadlines"\n'))
    res = d.request("remember", text="We chose SQLite over Postgres for the cache.", tags=["decision"])
    assert res["written"] and res["path"] == "notes/Decisions.md" and not res["created"]
    now = note.read_text()
    assert now.startswith("# Decisions\n\nWhat we chose, and why.\n\n## Log\n\nAn old decision.\n\n"
                          f"### {res['heading']}\n#decision\n\nWe chose SQLite over Postgres for the cache.\n\n"
                          "Remembered by unknown, ") and now.endswith(".\n\n## Later\n\nNot this one.\n"), now
    assert now.split("\n")[res["first"] - 1] == f"### {res['heading']}"
    dl = d.request("remember", text="The deadline for the audit is 2026-03-31.")
    assert dl["path"] == "notes/Decisions.md" and note.read_text().endswith(
        f"## Later\n\nNot this one.\n\n# Deadlines\n\n## {dl['heading']}\n\nThe deadline for the audit is 2026-03-31."
        f"\n\nRemembered by unknown, {note.read_text().split('Remembered by unknown, ')[-1]}")
    assert not os.path.exists(d.vault / "inbox") or not any((d.vault / "inbox").iterdir()), "no capture note"
    # tag: finds the entry, not the whole note
    d.request("remember", text="Lunch is at noon on Mondays.", tags=["food"])
    [hit] = d.request("search", q="tag:decision")["hits"]
    assert hit["path"] == "notes/Decisions.md" and hit["snippets"][0]["line"] == res["first"], hit
    cap = d.request("search", q="tag:food")["hits"][0]
    assert cap["path"].startswith("inbox/") and cap["snippets"][0]["text"].startswith("# ")
    # dedup across routes: the same decision, untagged, is counted where it is
    again = d.request("remember", text="We chose SQLite over Postgres for the cache!")
    assert again["path"] == "notes/Decisions.md" and again["seen"] == 2
    # each undone alone, the note back byte for byte
    for op in (again["op"], dl["op"], res["op"]):
        r = vaultq(d, "split", "--undo", op)
        assert r.returncode == 0, r.stderr
    assert note.read_text() == text


def test_a_route_to_a_missing_note_is_refused_and_bad_rules_are_config_errors(make_daemon, tmp_path):
    d = make_daemon(extra=config(tmp_path, '[[capture.route]]\nmatch = "tag:x"\nnote = "notes/Nope.md"\n'))
    before = tree(d.vault)
    msg = d.send_raw(json.dumps({"v": 1, "op": "remember", "text": "routed nowhere", "tags": ["x"]}).encode() + b"\n")
    assert not msg["ok"] and msg["error"]["message"].startswith("remember: capture.route: notes/Nope.md does not "
                                                                "exist: create it"), msg
    assert tree(d.vault) == before
    for rule, said in (('match = "tag:two words"\nnote = "a.md"', "a tag is one word"),
                       ('match = "(unclosed"\nnote = "a.md"', "is not a regular expression"),
                       ('match = "x"\nnote = "../out.md"', "leads out of the vault"),
                       ('match = "x"\nnote = "a.txt"', "is not a note vaultd indexes")):
        cfg = tmp_path / "bad.toml"
        cfg.write_text(f'[capture]\nfolder = "inbox"\n[[capture.route]]\n{rule}\n')
        r = subprocess.run([sys.executable, "-m", "vaultd", "check", "--config", str(cfg), "--vault", str(d.vault)],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode != 0 and "capture.route #1" in r.stderr and said in r.stderr, (rule, r.stderr)


@pytest.mark.parametrize("char", [chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)])
def test_bidi_controls_are_refused(capturing, char):
    d = capturing
    before = tree(d.vault)
    msg = d.send_raw(json.dumps({"v": 1, "op": "remember", "text": f"pay {char}01$ to Bob"}).encode() + b"\n")
    assert not msg["ok"] and msg["error"]["message"] == (
        f"remember: text holds a control character (U+{ord(char):04X}) at character 4; nothing was written")
    r = vaultq(d, "remember", f"pay {char}01$ to Bob")
    assert r.returncode == 2 and f"(U+{ord(char):04X})" in r.stderr
    assert tree(d.vault) == before


def test_the_rule_is_general_not_one_sentence():
    same = [("The NAS wakes at 07:00.", "The NAS wakes at 08:30.", "number"),
            ("Invoices are due on the 15th of March.", "Invoices are due on the 15th of April.", "day"),
            ("The cat is allowed in the bedroom.", "The cat is never allowed in the bedroom.", "negation"),
            ("팀 회의는 화요일에 한다.", "팀 회의는 목요일에 한다.", "day"),
            ("민수는 커피를 마신다.", "민수는 차를 마신다.", "name"),
            ("민수는 커피를 마신다.", "민수는 커피를 안 마신다.", "negation")]
    for old, new, kind in same:
        assert entry.changes(new, old) == kind, (old, new)
    other = [("Alice likes tea.", "Bob likes tea."),  # another subject: not a correction
             ("민수는 커피를 마신다.", "민수는 학교에 간다."),  # another statement about the same subject
             ("The user prefers tabs to spaces in Python.", "The user prefers dark themes in every editor."),
             ("Alice does not like tea.", "Alice does not like tea!"),  # the same: a repeat
             ("민수는 커피를 좋아한다.", "민수는 커피가 좋다.")]  # a particle and an ending: not a value
    for old, new in other:
        assert entry.changes(new, old) is None, (old, new)


def test_org_entries_are_superseded_counted_and_undone_alike(make_daemon, tmp_path):
    d = make_daemon(extra=config(tmp_path, fmt="org"))
    old = d.request("remember", text="The NAS wakes at 07:00 every day.", tags=["home"])
    p = d.vault / old["path"]
    alone = p.read_bytes()
    new = d.request("remember", text="The NAS wakes at 08:30 every day.")
    assert new["supersedes"]["value"] == "number" and new["heading"] != old["heading"]
    text = p.read_text()
    assert f"\n* {old['heading']} :home:superseded:\n:PROPERTIES:\n" in text and \
        f"\n:SUPERSEDED_BY: {old['path']}:{new['first']}-{new['last']} (entry {new['heading']}), [" in text and \
        f"\n:SUPERSEDES: {old['path']}:{old['first']}-{old['last'] + 1} (entry {old['heading']})\n" in text
    again = d.request("remember", text="The NAS wakes at 08:30 every day!")
    assert again["seen"] == 2 and ":SEEN:     2\n:LAST_SEEN: [" in p.read_text()
    [hit] = d.request("search", q="NAS wakes every day")["hits"]
    assert [s["superseded"] for s in hit["snippets"]][:1] == [False] and hit["snippets"][-1]["superseded"]
    for op in (again["op"], new["op"]):
        r = vaultq(d, "split", "--undo", op)
        assert r.returncode == 0, r.stderr
    assert p.read_bytes() == alone
