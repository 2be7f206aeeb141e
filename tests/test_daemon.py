"""The real daemon, end to end: watch -> index -> answer over the socket."""

from __future__ import annotations

import os
import random
import select
import signal
import socket
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import DEADLINE, children, proc_stat, wait_for



def test_serves_the_vault(daemon):
    st = daemon.status()
    assert st["notes"] == 4 and st["pending"] == 0 and st["generation"] >= 1
    assert st["vault"] == str(daemon.vault)
    assert "notes/Deep work.md" in daemon.search_paths("boredom")


def test_search_without_snippets_gives_the_same_hits(daemon):
    # once the link graph is ready: until then the daemon answers without its anchor signal
    wait_for(lambda: daemon.request("status")["graph"] == "ready")
    full = daemon.request("search", q="deep work boredom")
    bare = daemon.request("search", q="deep work boredom", snippets=False)
    assert full["hits"] and any(h["snippets"] for h in full["hits"])
    assert all(h["snippets"] is None for h in bare["hits"])
    assert [{**h, "snippets": None} for h in full["hits"]] == bare["hits"] and full["total"] == bare["total"]


def test_socket_is_private(daemon):
    assert oct(os.stat(daemon.socket).st_mode & 0o777) == "0o600"


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_new_file_edit_rename_delete_each_visible_within_a_second(daemon):
    v = daemon.vault
    g = daemon.status()["generation"]

    _write(v / "notes" / "new.md", "# New\n\nquokka sightings on the island\n")
    g = daemon.wait_generation(g)["generation"]
    assert daemon.search_paths("quokka") == ["notes/new.md"]

    _write(v / "notes" / "new.md", "# New\n\nplatypus instead\n")
    g = daemon.wait_generation(g)["generation"]
    assert daemon.search_paths("quokka") == []
    assert daemon.search_paths("platypus") == ["notes/new.md"]

    os.rename(v / "notes" / "new.md", v / "journal" / "moved.md")
    g = daemon.wait_generation(g)["generation"]
    assert daemon.search_paths("platypus") == ["journal/moved.md"]

    os.unlink(v / "journal" / "moved.md")
    daemon.wait_generation(g)
    assert daemon.search_paths("platypus") == []
    assert daemon.status()["notes"] == 4


def test_editor_saves_are_indexed_and_their_temp_files_ignored(daemon):
    v = daemon.vault
    target = v / "notes" / "Deep work.md"
    # vim: write the probe `4913`, move the note to `note~`, write the new note, drop the backup
    (v / "notes" / "4913").write_text("")
    os.unlink(v / "notes" / "4913")
    os.rename(target, v / "notes" / "Deep work.md~")
    (v / "notes" / ".Deep work.md.swp").write_bytes(b"\0swap")
    target.write_text("# Deep work\n\nwombat focus\n")
    os.unlink(v / "notes" / "Deep work.md~")
    # Emacs: a lock symlink; sed -i / atomic writers: a temp file renamed over the note
    os.symlink("root@host.1:1", v / "notes" / ".#Deep work.md")
    tmp = v / "notes" / "sedX1y2z3"
    tmp.write_text("# 가치관\n\n가치관은 numbat 기준이다.\n")
    os.replace(tmp, v / "notes" / "20251101T120000--가치관__철학.md")
    # both edits seen (under load they may be two commits: one generation is not enough)
    wait_for(lambda: daemon.search_paths("wombat") and daemon.search_paths("numbat") and not daemon.status()["pending"])
    st = daemon.status()
    assert st["notes"] == 4, "swap, backup, lock and temp files must not become notes"
    assert daemon.search_paths("wombat") == ["notes/Deep work.md"]
    assert daemon.search_paths("numbat") == ["notes/20251101T120000--가치관__철학.md"]


def test_folder_moves_and_deletes(daemon, tmp_path):
    v = daemon.vault
    g = daemon.status()["generation"]
    os.rename(v / "journal", v / "diary")
    g = daemon.wait_generation(g)["generation"]
    assert daemon.search_paths("meeting") == ["diary/2025-11-20.md"]
    # moved out of the vault: watchdog reports only the folder (LIBRARY-NOTES 4)
    os.rename(v / "diary", tmp_path / "outside")
    g = daemon.wait_generation(g)["generation"]
    assert daemon.search_paths("meeting") == []
    # moved back in: created events for its contents
    os.rename(tmp_path / "outside", v / "back")
    daemon.wait_generation(g)
    assert daemon.search_paths("meeting") == ["back/2025-11-20.md"]


def test_ignored_folders(daemon):
    v = daemon.vault
    g = daemon.status()["generation"]
    _write(v / ".git" / "notes.md", "zebrafish in git\n")
    _write(v / ".obsidian" / "x.md", "zebrafish in obsidian\n")
    _write(v / "notes" / "real.md", "zebrafish for real\n")
    daemon.wait_generation(g)
    assert daemon.search_paths("zebrafish") == ["notes/real.md"]


def test_restart_picks_up_changes_made_while_down_and_parses_only_those(make_daemon):
    d = make_daemon()
    v = d.vault
    assert d.status()["parsed"] == 4
    assert d.stop() == 0
    (v / "journal" / "2025-11-20.md").write_text("# changed\n\naxolotl\n")  # another size: no clock tick needed
    (v / "notes" / "added.md").write_text("# added\n\naxolotl too\n")
    os.unlink(v / "notes" / "Deep work.md")
    d2 = make_daemon()
    st = d2.status()
    assert st["parsed"] == 2, "only the edited and the new file are re-parsed"
    assert st["notes"] == 4
    assert sorted(d2.search_paths("axolotl")) == ["journal/2025-11-20.md", "notes/added.md"]
    assert d2.search_paths("boredom") == []


def test_malformed_requests_get_errors_and_the_connection_stays_usable(daemon):
    cases = [
        (b"not json\n", "bad_json"),
        (b"[1,2]\n", "bad_json"),
        (b'{"op": "explode", "id": 9}\n', "unknown_op"),
        (b'{"id": 3}\n', "bad_request"),
        (b'{"op": "search", "q": 42}\n', "bad_request"),
        (b'{"op": "search", "q": "x", "limit": 0}\n', "bad_request"),
        (b'{"op": "search", "q": "x", "limit": "ten"}\n', "bad_request"),
        (b'{"op": "grep", "q": "x", "limit": 1000000}\n', "bad_request"),  # a reply of tens of MB: refused
        (b'{"op": "search", "q": "x", "snippets": "no"}\n', "bad_request"),
        (b'{"op": "status", "v": 99}\n', "bad_version"),
        (b'{"op": "status", "surprise": true}\n', "bad_request"),
        (b"\xff\xfe\x00garbage\n", "bad_json"),
    ]
    for raw, code in cases:
        msg = daemon.send_raw(raw)
        assert msg["ok"] is False and msg["error"]["code"] == code, (raw, msg)
        assert msg["error"]["message"]
    assert daemon.send_raw(b'{"op": "explode", "id": 9}\n')["id"] == 9
    assert daemon.request("ping")["pong"] is True


def test_oversized_request_is_refused_and_daemon_keeps_serving(daemon):
    with daemon.connect() as s, s.makefile("rb") as replies:
        s.sendall(b'{"op":"search","q":"' + b"a" * (2 << 20) + b'"}\n')
        assert b'"too_large"' in replies.readline()
        s.sendall(b'{"op":"ping"}\n')
        assert b'"pong":true' in replies.readline(), "the connection stays usable"


def test_many_clients_at_once(daemon):
    conns = [daemon.connect() for _ in range(20)]
    for c in conns:
        c.sendall(b'{"op":"search","q":"boredom","id":1}\n')
    for c in conns:
        with c, c.makefile("rb") as f:
            assert b'"ok":true' in f.readline()


def test_clients_past_the_limit_hang_up_the_longest_idle_else_are_told_busy(daemon):
    """64 places: a new client past them takes the place of the connection idle longest (a
    client that left it open: 64 such used to lock every client out for good); when every
    place is answering a request, it is told busy, and served again once one is free."""
    from vaultd.server import MAX_CLIENTS

    daemon._close()  # the fixture's own connection holds no place in this
    wait_for(lambda: _pings(daemon))
    idle = []
    for _ in range(MAX_CLIENTS):
        c = daemon.connect()
        c.sendall(b'{"op":"ping"}\n')
        assert b'"pong":true' in c.recv(4096)
        idle.append(c)
    for c in idle[1:]:  # asked again: the first is the longest idle by a margin, whenever its thread
        c.sendall(b'{"op":"ping"}\n')  # began to wait (on a busy machine, possibly after the next few's)
        assert b'"pong":true' in c.recv(4096)
    # served in the place of the longest idle (told busy, and served at a retry, when the
    # hung-up client's thread is slow to give its place back: the daemon waits 2 s for it)
    assert wait_for(lambda: _pings(daemon))
    idle[0].settimeout(DEADLINE)
    assert idle[0].recv(100) == b"", "the longest idle is hung up"
    idle[-1].sendall(b'{"op":"ping"}\n')
    assert b'"pong":true' in idle[-1].recv(4096), "the others are still served"
    for c in idle:
        c.close()
    assert wait_for(lambda: _pings(daemon))
    busy: list = []
    assert wait_for(lambda: _told_busy(daemon, busy)), "every place answering: a new client is told busy"
    for c in busy:
        c.close()
    assert wait_for(lambda: _pings(daemon)), "a freed place is served again"


def _told_busy(daemon, busy: list) -> bool:
    """Whether a new client is told busy once `busy` holds MAX_CLIENTS connections, each
    waiting for an answer (up to 10 s, for a generation never reached). One that is not yet
    answering when the new client comes is hung up for it, and one whose wait ran out is
    idle again: those are replaced before the next try."""
    from vaultd.server import MAX_CLIENTS

    for c in [c for c in busy if not _still_waiting(c)]:
        c.close()
        busy.remove(c)
    while len(busy) < MAX_CLIENTS:
        c = daemon.connect()
        c.sendall(b'{"op":"search","q":"boredom","after_generation":999999}\n')
        busy.append(c)
    with daemon.connect() as c, c.makefile("rb") as f:
        c.sendall(b'{"op":"ping"}\n')
        return b'"busy"' in f.readline()


def _still_waiting(conn) -> bool:
    """Nothing to read yet: neither an answer nor the end of a hang-up."""
    return not select.select([conn], [], [], 0)[0]


def _pings(daemon) -> bool:
    try:
        with daemon.connect() as s, s.makefile("rb") as f:
            s.sendall(b'{"op":"ping"}\n')
            return b'"pong":true' in f.readline()
    except OSError:  # still busy: answered and closed before the ping went out
        return False


def test_client_that_hangs_up_mid_request_does_not_hurt(daemon):
    for _ in range(5):
        s = daemon.connect()
        s.sendall(b'{"op":"search","q":"deep')
        s.close()
    with daemon.connect() as s, s.makefile("rb") as f:
        s.sendall(b'{"op":"search","q":"boredom"}\n')
        s.shutdown(socket.SHUT_WR)
        assert b'"ok":true' in f.readline()
    assert daemon.request("ping")["pong"]


def test_second_daemon_on_the_same_socket_exits_3(daemon, tmp_path):
    second = subprocess.run(
        [sys.executable, "-m", "vaultd", "run", "--vault", str(daemon.vault), "--state-dir", str(tmp_path / "s2"),
         "--socket", str(daemon.socket)],
        capture_output=True, text=True, timeout=30,
    )
    assert second.returncode == 3
    assert f"vaultd process {daemon.proc.pid}" in second.stderr
    assert daemon.request("ping")["pong"], "the first daemon still serves"


def test_second_daemon_on_the_same_index_exits_3(daemon, short_dir):
    second = subprocess.run(
        [sys.executable, "-m", "vaultd", "run", "--vault", str(daemon.vault), "--state-dir", str(daemon.state),
         "--socket", str(short_dir / "other.sock")],
        capture_output=True, text=True, timeout=30,
    )
    assert second.returncode == 3
    assert "in use by another process" in second.stderr


def test_sigterm_exits_0_and_removes_the_socket(daemon):
    assert daemon.socket.exists()
    assert daemon.stop(signal.SIGTERM) == 0
    assert not daemon.socket.exists()


def test_sigint_exits_0(daemon):
    assert daemon.stop(signal.SIGINT) == 0
    assert not daemon.socket.exists()


def test_stale_socket_from_a_killed_daemon_is_replaced(make_daemon):
    d = make_daemon()
    d.stop(signal.SIGKILL)
    assert d.socket.exists(), "a killed daemon leaves its socket behind"
    d2 = make_daemon()
    assert d2.request("ping")["pong"]


def test_bad_files_are_indexed_as_far_as_they_go(daemon):
    v = daemon.vault
    _write(v / "bad-yaml.md", "---\ntitle: [unclosed\ntags: : :\n---\n\nkingfisher body survives\n")
    (v / "latin1.md").write_bytes("# caf\xe9\n\nheron in latin-1 caf\xe9\n".encode("latin-1"))
    (v / "empty.md").write_bytes(b"")
    (v / "nul.org").write_bytes(b"* head\x00ing\nbittern\x00\n")
    blob = bytearray(random.Random(3).randbytes(50_000))  # an image named .md: its bytes no words, no tags
    blob[1000:1030] = b"\n#zzblobtag zzblobword\n".ljust(30)
    (v / "blob.md").write_bytes(bytes(blob))
    big = ("lorem ipsum dolor sit amet " * 3 + "\n") * 65_000 + "pelican at the very end\n"
    _write(v / "big.md", big)
    assert len(big.encode()) > 5_000_000
    st = wait_for(lambda: (st := daemon.status())["notes"] == 10 and st["pending"] == 0 and st)  # one commit or more
    assert st["problems"] >= 3
    assert daemon.search_paths("zzblobword") == [] and daemon.request("grep", q="zzblobword")["matches"] == []
    assert "zzblobtag" not in {t["tag"] for t in daemon.request("tags")["tags"]}
    assert daemon.search_paths("blob") == ["blob.md"]  # by its name
    listed = {n["path"]: n["problems"] for n in daemon.request("problems")["problems"]}
    assert len(listed) == st["problems"] and {"blob.md", "latin1.md", "nul.org"} <= listed.keys()
    assert "binary" in listed["blob.md"][0] and "not valid UTF-8" in listed["latin1.md"][0]
    r = subprocess.run([sys.executable, "-m", "vaultd.vaultq", "--socket", str(daemon.socket), "problems"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and f"blob.md  blob\n    {listed['blob.md'][0]}\n" in r.stdout
    assert daemon.search_paths("kingfisher") == ["bad-yaml.md"]
    assert daemon.search_paths("heron") == ["latin1.md"]
    assert daemon.search_paths("bittern") == ["nul.org"]
    hit = daemon.request("search", q="pelican")["hits"][0]
    assert hit["path"] == "big.md" and hit["snippets"][0]["line"] == 65_001
    assert daemon.request("ping")["pong"]


def test_paths_outside_the_vault_and_symlinks_are_not_notes(daemon, tmp_path):
    outside = tmp_path / "secret.md"
    outside.write_text("# secret\n\ncassowary\n")
    v = daemon.vault
    g = daemon.status()["generation"]
    os.symlink(outside, v / "notes" / "link.md")
    _write(v / "notes" / "plain.md", "trigger a batch\n")
    daemon.wait_generation(g)
    assert daemon.search_paths("cassowary") == []


def test_sd_notify_ready_and_stopping(vault, tmp_path, short_dir):
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    addr = str(short_dir / "notify")
    notify.bind(addr)
    notify.settimeout(DEADLINE)
    env = {**os.environ, "NOTIFY_SOCKET": addr}
    proc = subprocess.Popen(
        [sys.executable, "-m", "vaultd", "run", "--vault", str(vault), "--state-dir", str(tmp_path / "st"),
         "--socket", str(short_dir / "n.sock")],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        while not (said := notify.recv(1024)).startswith(b"READY=1"):  # after STATUS= (see test_systemd.py)
            assert said.startswith((b"STATUS=", b"EXTEND_TIMEOUT_USEC=")), said
        assert (short_dir / "n.sock").exists()
        proc.send_signal(signal.SIGTERM)
        while (said := notify.recv(1024)) != b"STOPPING=1":
            assert said.startswith(b"STATUS="), said
        assert proc.wait(timeout=DEADLINE) == 0
    finally:
        proc.kill()
        notify.close()


# -- the link graph through the daemon -------------------------------------------------


def _backlink_sources(daemon, note):
    return sorted({b["path"] for b in daemon.request("backlinks", note=note)["backlinks"]})


def test_graph_ops(daemon):
    res = daemon.request("backlinks", note="Deep work")
    assert res["note"] == "notes/Deep work.md"
    assert [(b["path"], b["line"]) for b in res["backlinks"]] == [
        ("journal/2025-11-20.md", 5), ("journal/2025-11-20.md", 5),
        ("notes/20251016T080208--memory-tiers__agents_memory.org", 17),
        ("notes/20251101T120000--가치관__철학.md", 9)]
    j = [b for b in res["backlinks"] if b["path"] == "journal/2025-11-20.md"]
    assert [(b["raw"], b["col"], b["resolved_line"]) for b in j] == [
        ("[[Deep work#Rules]]", 9, 11), ("[the note](../notes/Deep%20work.md)", 33, None)]
    assert j[0]["text"] == "Back to [[Deep work#Rules]] and [the note](../notes/Deep%20work.md)."

    links = daemon.request("links", note="notes/Deep work.md")["links"]
    assert [(l["kind"], l["resolved"], l["broken"]) for l in links] == [
        ("denote", "notes/20251016T080208--memory-tiers__agents_memory.org", None), ("wiki", None, "no such note")]
    assert daemon.request("broken")["total"] == 1
    g = daemon.request("graph", note="20251016T080208", depth=1)
    assert [n["path"] for n in g["nodes"]] == ["notes/20251016T080208--memory-tiers__agents_memory.org", "notes/Deep work.md"]
    tags = {t["tag"]: t for t in daemon.request("tags")["tags"]}
    assert tags["agents"]["count"] == 1 and tags["agents"]["related"] == [["memory", 1]]
    assert daemon.send_raw(b'{"op":"backlinks","note":"nope"}\n')["error"]["code"] == "not_found"
    assert daemon.send_raw(b'{"op":"graph","note":"x","depth":9}\n')["error"]["code"] == "bad_request"


def test_backlinks_follow_a_note_renamed_with_mv(daemon):
    v = daemon.vault
    (v / "archive").mkdir()
    g = daemon.status()["generation"]
    g = daemon.wait_generation(g - 1)["generation"]  # settle
    # Denote rename: new slug and folder, same identifier: `denote:` links follow it
    new = v / "archive" / "20251016T080208--memory-tiers-renamed__agents.org"
    os.rename(v / "notes" / "20251016T080208--memory-tiers__agents_memory.org", new)
    daemon.wait_generation(g)
    assert _backlink_sources(daemon, "20251016T080208") == ["notes/Deep work.md"]
    assert daemon.request("backlinks", note="20251016T080208")["note"] == "archive/" + new.name
    # A move to another folder: wikilinks by name follow; relative Markdown and Org links break, and say so
    g = daemon.status()["generation"]
    (v / "deep").mkdir()
    os.rename(v / "notes" / "Deep work.md", v / "deep" / "Deep work.md")
    daemon.wait_generation(g)
    assert _backlink_sources(daemon, "Deep work") == ["journal/2025-11-20.md", "notes/20251101T120000--가치관__철학.md"]
    broken = {(b["path"], b["raw"], b["broken"]) for b in daemon.request("broken")["broken"]}
    assert ("journal/2025-11-20.md", "[the note](../notes/Deep%20work.md)", "no such note") in broken
    assert ("archive/" + new.name, "[[file:Deep work.md::Rules][deep]]", "no such note") in broken


def test_odd_file_names(daemon):
    v = daemon.vault
    names = {
        "19691231T235959--before-the-epoch__old.org": "* pre-epoch ocelot\n",
        "20250101T000000--émoji-🙂-name__x.md": "ocelot with emoji\n",
        "with space and 'quote'.md": "ocelot spaced\n",
        "new\nline.md": "ocelot newline\n",
        ("x" * 252) + ".md": "ocelot long name\n",
    }
    for name, text in names.items():
        (v / name).write_text(text)
    assert len(os.fsencode(("x" * 252) + ".md")) == 255
    wait_for(lambda: len(daemon.search_paths("ocelot")) == len(names))  # one commit or several
    assert sorted(daemon.search_paths("ocelot")) == sorted(names)
    res = daemon.request("backlinks", note="19691231T235959")
    assert res["note"] == "19691231T235959--before-the-epoch__old.org"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(q=st.text(max_size=300) | st.text(alphabet='ab "-+:tag()title', max_size=50) | st.just("가치관이 " * 5000))
def test_no_query_string_gets_an_error_from_the_daemon(daemon, q):
    res = daemon.request("search", q=q, limit=3)
    assert isinstance(res["hits"], list)


def test_vaultd_check(daemon, tmp_path):
    args = [sys.executable, "-m", "vaultd", "check", "--vault", str(daemon.vault), "--state-dir", str(daemon.state)]
    r = subprocess.run(args + ["--socket", str(daemon.socket)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "vault:" in r.stdout and "(4 notes)" in r.stdout and "index:" in r.stdout and ": ok" in r.stdout
    assert f"daemon:    running, pid {daemon.proc.pid}" in r.stdout and "with problems" not in r.stdout
    g = daemon.status()["generation"]
    (daemon.vault / "bad.md").write_text("---\ntitle: [unclosed\n---\nbody\n")  # front matter it cannot read
    daemon.wait_generation(g)
    r = subprocess.run(args + ["--socket", str(daemon.socket)], capture_output=True, text=True, timeout=30)
    assert "1 note with problems (`vaultq problems` lists them and why)" in r.stdout, r.stdout
    (daemon.vault / "bad.md").unlink()
    r = subprocess.run(args + ["--socket", str(tmp_path / "none.sock")], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and "not running" in r.stdout
    r = subprocess.run(args + ["--socket", str(daemon.socket), "--split", "off"], capture_output=True, text=True,
                       timeout=30)
    assert "split:     off" in r.stdout and "it runs with split mode auto" in r.stdout, r.stdout
    other = tmp_path / "other"
    other.mkdir()
    r = subprocess.run([*args[:5], str(other), *args[6:], "--socket", str(daemon.socket)], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 1 and f"it serves {daemon.vault}, not {other}" in r.stdout, r.stdout


def test_the_state_folder_is_its_owners_alone_whatever_the_umask(vault, tmp_path, make_daemon):
    import stat as st_

    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    (state / "state.json").write_text("{}")  # left readable to all by an older vaultd
    os.chmod(state / "state.json", 0o644)
    d = make_daemon()
    d.request("search", q="memory")
    d.stop()
    for p in (state, *state.rglob("*")):
        mode = st_.S_IMODE(p.lstat().st_mode)
        assert not mode & 0o077, f"{p} is {oct(mode)}: the index and journal hold the notes' text"


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_parse_workers_die_with_a_killed_indexer(tmp_path):
    vault = tmp_path / "big"
    for i in range(3000):  # enough for the worker pool, and for it to be busy a while
        (vault / f"d{i % 30}").mkdir(parents=True, exist_ok=True)
        (vault / f"d{i % 30}" / f"n{i}.md").write_text(f"# Note {i}\n\n" + "some words of text here\n" * 200)
    proc = subprocess.Popen([sys.executable, "-m", "vaultd", "index", "--vault", str(vault), "--state-dir",
                             str(tmp_path / "st")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        workers = wait_for(lambda: len(kids := children(proc.pid)) >= 2 and kids, interval=0.02)
    finally:
        proc.kill()
        proc.wait()
    assert wait_for(lambda: not [p for p in workers if proc_stat(p)[:1] not in ([], ["Z"])], interval=0.05)


def test_the_daemon_indexes_an_edit_that_keeps_size_and_mtime(daemon, vault):
    p = vault / "notes" / "Deep work.md"
    st = p.stat()
    text = p.read_bytes()
    p.write_bytes(text[: -len(b"zanzibar\n")] + b"zanzibar\n")
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))  # as a coarse clock or two saves in one tick leave it
    assert wait_for(lambda: daemon.search_paths("zanzibar") == ["notes/Deep work.md"], interval=0.05)


def test_an_edit_made_while_stopped_that_keeps_size_and_mtime_is_found_at_start(daemon, vault):
    daemon.stop()
    p = vault / "notes" / "Deep work.md"
    st = p.stat()
    text = p.read_bytes()
    p.write_bytes(text[: -len(b"zanzibar\n")] + b"zanzibar\n")
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))  # size and mtime as indexed: only the ctime says
    daemon.start()
    assert daemon.search_paths("zanzibar") == ["notes/Deep work.md"]
    assert daemon.status()["parsed"] == 1, "only that file is read again"


def _immutable(path, on: bool) -> bool:
    return subprocess.run(["chattr", "+i" if on else "-i", str(path)], capture_output=True).returncode == 0


def test_a_batch_that_fails_is_kept_and_retried_until_it_goes_through(daemon, tmp_path, vault):
    index = tmp_path / "state" / "index"
    if not _immutable(index, True):  # even root cannot write there now
        pytest.skip("chattr +i is not permitted here")
    try:
        for i in range(5):
            (vault / "notes" / f"Retry {i}.md").write_text(f"# Retry {i}\n\nquokkaword {i}\n")
        assert wait_for(lambda: (st := daemon.status())["last_error"] and st["pending"] >= 5, interval=0.05), \
            "the failure is shown, and the edits are still pending"
        assert daemon.search_paths("quokkaword") == []
        r = subprocess.run([sys.executable, "-m", "vaultd", "check", "--vault", str(vault), "--state-dir",
                            str(tmp_path / "state"), "--socket", str(daemon.socket)], capture_output=True, text=True,
                           timeout=30)
        assert r.returncode == 1 and "indexing:  failed (" in r.stdout, r.stdout  # never `ok` while it fails
    finally:
        _immutable(index, False)
    # the commit is searchable a moment before its batch stops counting as pending: both waited for
    assert wait_for(lambda: len(daemon.search_paths("quokkaword")) == 5 and daemon.status()["pending"] == 0,
                    interval=0.1), "once the index can be written again, every edit is indexed"
