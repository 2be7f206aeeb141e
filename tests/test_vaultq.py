"""`vaultq` as a user runs it: a real process against the real daemon."""

import json
import os
import resource
import subprocess
import sys
import time

import pytest

from conftest import wait_for
from vaultd.query.links import RELATED_OF


def vaultq(*args, cwd=None, env=None):
    return subprocess.run(
        [sys.executable, "-m", "vaultd.vaultq", *args], capture_output=True, text=True, timeout=30, cwd=cwd,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def sock(daemon):
    return str(daemon.socket)


def test_search_human(sock):
    r = vaultq("--socket", sock, "search", "boredom")
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert lines[0].endswith("notes/Deep work.md  Deep work  [productivity, habit]")
    assert lines[1] == "   13: Embrace boredom. #habit"
    assert "1 of 1 notes" in r.stderr


def test_search_json_shape(sock):
    r = vaultq("--socket", sock, "search", "--json", "가치관이")
    assert r.returncode == 0
    res = json.loads(r.stdout)
    assert {"query", "total", "took_ms", "hits"} <= res.keys()
    hit = res["hits"][0]
    assert {"path", "id", "title", "tags", "score", "snippets"} <= hit.keys()
    assert hit["path"] == "notes/20251101T120000--가치관__철학.md" and hit["id"] == "20251101T120000"
    s = hit["snippets"][0]
    assert {"line", "text", "highlights"} <= s.keys()
    for a, b in s["highlights"]:
        assert s["text"][a:b] in ("가치관", "가치관이")


def test_search_vimgrep_paths_relative_inside_the_vault(daemon, sock):
    r = vaultq("--socket", sock, "search", "--format", "vimgrep", "TODO: fix", cwd=daemon.vault / "journal")
    assert r.returncode == 0
    assert "2025-11-20.md:3:1:TODO: fix the watcher. Meeting at 12:30." in r.stdout.splitlines()
    r = vaultq("--socket", sock, "search", "--format", "paths", "boredom", cwd="/")
    assert r.stdout == f"{daemon.vault}/notes/Deep work.md\n"


def test_vimgrep_column_is_in_bytes(daemon, sock):
    r = vaultq("--socket", sock, "search", "--format", "vimgrep", "기준", cwd=daemon.vault)
    path, line, col, text = r.stdout.splitlines()[0].split(":", 3)
    raw = (daemon.vault / path).read_text().split("\n")[int(line) - 1]
    assert raw.encode()[int(col) - 1 :].decode().startswith("기준")


def test_no_result_exits_1(sock):
    r = vaultq("--socket", sock, "search", "xylophonist")
    assert r.returncode == 1 and r.stdout == ""


def test_bad_usage_exits_2(sock):
    assert vaultq("--socket", sock, "search").returncode == 2
    assert vaultq("--socket", sock, "frobnicate").returncode == 2
    r = vaultq("--socket", sock, "search", "--limit", "0", "x")
    assert r.returncode == 2 and "--limit" in r.stderr


def test_status(daemon, sock):
    r = vaultq("--socket", sock, "status", "--json")
    st = json.loads(r.stdout)
    assert r.returncode == 0 and st["notes"] == 4 and {"version", "vault", "pending", "generation"} <= st.keys()
    assert "notes:      4" in vaultq("--socket", sock, "status").stdout


def test_unreachable_daemon_exits_3_and_says_how_to_start_it(tmp_path):
    r = vaultq("--socket", str(tmp_path / "none.sock"), "status")
    assert r.returncode == 3
    assert "vaultd is not running" in r.stderr and "vaultd run" in r.stderr


def test_socket_found_from_env_and_from_the_vault_folder(daemon, sock, tmp_path):
    assert vaultq("search", "boredom", env={"VAULTD_SOCKET": sock}).returncode == 0
    # With no socket named, vaultq looks for the daemon of the vault around the current folder
    # in the default runtime folder; ours uses --socket, so none is found there.
    # (Daemons of the user's own, in /run/user/UID/vaultd or /tmp/vaultd-UID, are listed then.)
    r = vaultq("search", "boredom", cwd=daemon.vault, env={"XDG_RUNTIME_DIR": str(tmp_path / "run")})
    assert r.returncode == 3 and ("no vaultd is running" in r.stderr or "no vaultd runs for this folder" in r.stderr)


def test_vaultq_imports_no_heavy_modules():
    code = "import sys, vaultd.vaultq; print(' '.join(sorted(sys.modules)))"
    mods = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.split()
    for heavy in ("tantivy", "msgspec", "watchdog", "orgparse", "frontmatter", "click", "yaml"):
        assert heavy not in mods


def test_backlinks_human_vimgrep_and_paths(daemon, sock):
    r = vaultq("--socket", sock, "backlinks", "Deep work", cwd=daemon.vault)
    assert r.returncode == 0
    assert "journal/2025-11-20.md:5:9: Back to [[Deep work#Rules]] and [the note](../notes/Deep%20work.md)." in r.stdout
    r = vaultq("--socket", sock, "backlinks", "--format", "vimgrep", "Deep work", cwd=daemon.vault)
    assert "notes/20251101T120000--가치관__철학.md:9:1:[[Deep work|몰입]]을 참고." in r.stdout.splitlines()
    r = vaultq("--socket", sock, "backlinks", "--format", "paths", "Deep work", cwd=daemon.vault)
    assert r.stdout.splitlines() == ["journal/2025-11-20.md", "notes/20251016T080208--memory-tiers__agents_memory.org",
                                     "notes/20251101T120000--가치관__철학.md"]


def test_links_and_broken(daemon, sock):
    r = vaultq("--socket", sock, "links", str(daemon.vault / "notes" / "Deep work.md"))
    assert r.returncode == 0
    assert "[[Nowhere]]  -> BROKEN (no such note)" in r.stdout
    assert f"-> {daemon.vault}/notes/20251016T080208--memory-tiers__agents_memory.org" in r.stdout  # outside it
    r = vaultq("--socket", sock, "broken", cwd=daemon.vault)
    assert r.returncode == 0 and r.stdout.strip() == "notes/Deep work.md:15:50: [[Nowhere]]  -> BROKEN (no such note)"
    assert json.loads(vaultq("--socket", sock, "broken", "--json").stdout)["total"] == 1


def test_a_file_name_holding_a_line_break_never_splits_a_row(daemon, sock):
    """A row is one line, `path:line:col:text`. `rg --vimgrep` prints a file name holding a
    line break as it is, and the row comes apart in two (an editor's quickfix reads two broken
    rows): vaultq leaves that file's rows out of every row format, and says so on stderr, the
    name escaped; --json carries it whole (issue 42)."""
    g = daemon.status()["generation"]
    (daemon.vault / "notes" / "two\nlines.md").write_text("# Two lines\n\nokapi here\n")
    (daemon.vault / "notes" / "plain.md").write_text("# Plain\n\nokapi too\n")
    daemon.wait_generation(g)
    wait_for(lambda: len(daemon.request("grep", q="okapi")["matches"]) == 2 and not daemon.status()["pending"])
    said = 'vaultq: 1 row of "notes/two\\nlines.md" left out: its file name holds a line break'
    for fmt, row in (("vimgrep", "notes/plain.md:3:1:okapi too"), ("emacs", "notes/plain.md:3:1:okapi too"),
                     ("grep", "notes/plain.md:3:okapi too")):
        r = vaultq("--socket", sock, "grep", "okapi", "--format", fmt, cwd=daemon.vault)
        assert r.returncode == 0 and r.stdout.splitlines() == [row], (fmt, r.stdout)
        assert said in r.stderr and "--json gives it whole" in r.stderr, r.stderr
    r = vaultq("--socket", sock, "grep", "okapi", "--null", cwd=daemon.vault)
    assert r.stdout == "notes/plain.md\x003:1:okapi too\n" and said in r.stderr
    r = vaultq("--socket", sock, "search", "okapi", "--format", "vimgrep", cwd=daemon.vault)
    assert r.stdout.splitlines() == ["notes/plain.md:3:1:okapi too"] and said in r.stderr
    r = vaultq("--socket", sock, "grep", "okapi", "--json", cwd=daemon.vault)
    assert sorted(m["path"] for m in json.loads(r.stdout)["matches"]) == ["notes/plain.md", "notes/two\nlines.md"]
    assert r.stderr == ""


def test_graph_dot_and_depth(daemon, sock):
    r = vaultq("--socket", sock, "graph", "--format", "dot", "--depth", "2", "20251016T080208", cwd=daemon.vault)
    assert r.returncode == 0 and r.stdout.startswith("digraph vault {") and r.stdout.rstrip().endswith("}")
    assert '"notes/Deep work.md" -> "notes/20251016T080208--memory-tiers__agents_memory.org";' in r.stdout
    assert vaultq("--socket", sock, "graph", "--depth", "9", "x").returncode == 2
    r = vaultq("--socket", sock, "graph", "--format", "dot", "20251101T120000", cwd=daemon.vault)  # no \\u escapes
    assert '"notes/20251101T120000--가치관__철학.md" [label="가치관' in r.stdout and "\\u" not in r.stdout


def test_note_not_found_exits_1_and_ambiguous_exits_2(daemon, sock):
    r = vaultq("--socket", sock, "backlinks", "no such thing")
    assert r.returncode == 1 and "no note matches 'no such thing'" in r.stderr
    g = daemon.status()["generation"]
    (daemon.vault / "ideas").mkdir()
    (daemon.vault / "ideas" / "Deep work.md").write_text("another\n")  # as deep, and as long a path
    daemon.wait_generation(g)
    r = vaultq("--socket", sock, "links", "deep work")
    assert r.returncode == 2
    assert "'deep work' is ambiguous; it may be any of:\n  ideas/Deep work.md\n  notes/Deep work.md" in r.stderr
    assert vaultq("--socket", sock, "links", "notes/Deep work.md").returncode == 0


def test_tags_and_orphans(sock):
    r = vaultq("--socket", sock, "tags")
    assert r.returncode == 0 and "     1  agents   with memory (1)" in r.stdout.splitlines()
    r = vaultq("--socket", sock, "orphans", "--json")
    assert json.loads(r.stdout) == {"orphans": []}
    assert vaultq("--socket", sock, "orphans").returncode == 1


def test_search_filter_flags(daemon, sock):
    r = vaultq("--socket", sock, "search", "--format", "paths", "--tag", "productivity", "boredom", cwd=daemon.vault)
    assert r.stdout.splitlines() == ["notes/Deep work.md"]
    r = vaultq("--socket", sock, "search", "--format", "paths", "--path", "journal", "deep work", cwd=daemon.vault)
    assert r.stdout.splitlines() == ["journal/2025-11-20.md"]
    r = vaultq("--socket", sock, "search", "--format", "paths", "--after", "2025-11-01", "가치관", cwd=daemon.vault)
    assert r.stdout.splitlines() == ["notes/20251101T120000--가치관__철학.md"]
    r = vaultq("--socket", sock, "search", "--before", "2025-11-01", "가치관")
    assert r.returncode == 1


def test_minus_words_exclude_and_filters_need_no_words(daemon, sock):
    both = vaultq("--socket", sock, "search", "--format", "paths", "deep", cwd=daemon.vault).stdout.splitlines()
    assert "notes/Deep work.md" in both and len(both) > 1
    for argv in (["deep", "-boredom"], ["-boredom", "deep"], ["deep", "--format", "paths", "-boredom"]):
        r = vaultq("--socket", sock, "search", "--format", "paths", *argv, cwd=daemon.vault)
        assert r.returncode == 0 and r.stdout.splitlines() == [p for p in both if p != "notes/Deep work.md"], argv
    r = vaultq("--socket", sock, "search", "--format", "paths", "--tag", "productivity", cwd=daemon.vault)
    assert r.returncode == 0 and "notes/Deep work.md" in r.stdout.splitlines()
    for bad, why in ((["--after", "garbage", "deep"], "'garbage' is not a date"), (["--before", "2025-13", "x"], "not a date"),
                     (["--bogus", "x"], "unrecognized arguments: --bogus"), ([], "needs words or a filter")):
        r = vaultq("--socket", sock, "search", *bad)
        assert r.returncode == 2 and why in r.stderr, (bad, r.stderr)
    assert vaultq("--socket", sock, "status", "-x").returncode == 2
    for days in ("inf", "nan", "1e400", "0", "x"):
        r = vaultq("--socket", sock, "recent", "--days", days)
        assert r.returncode == 2 and "expected a number of days above 0" in r.stderr


def test_read_pin_hot_recent(daemon, sock):
    r = vaultq("--socket", sock, "read", "Deep work", "--heading", "Rules")
    assert r.returncode == 0 and r.stdout.startswith("## Rules\n\nEmbrace boredom. #habit")
    r = vaultq("--socket", sock, "read", "Deep work", "--lines", "7:7")
    assert r.stdout == "# Deep work\n"
    assert vaultq("--socket", sock, "read", "Deep work", "--lines", "x").returncode == 2
    v = daemon.vault
    assert vaultq("--socket", sock, "pin", "Deep work", cwd=v).stdout == "pinned notes/Deep work.md\n"
    r = vaultq("--socket", sock, "hot", cwd=v / "notes")
    assert r.returncode == 0 and "Deep work.md  Deep work  (pinned, changed 0 days ago, read 2 times)" in r.stdout
    assert "notes/Deep work.md" in vaultq("--socket", sock, "recent", "--format", "paths", cwd=v).stdout.splitlines()
    assert vaultq("--socket", sock, "unpin", "Deep work").stdout == f"unpinned {v}/notes/Deep work.md\n"
    assert vaultq("--socket", sock, "pins").returncode == 1


def test_a_whole_note_is_read_as_its_file_holds_it(daemon, sock):
    """CRLF line ends and a BOM are the file's: `read` of a whole note gave them folded, and an
    agent writing back what it read (or matching a piece of it for an edit) changed the file."""
    g = daemon.status()["generation"]
    raw = "\ufeff# Windows note\r\n\r\nline two\r\nline three\r\n"
    (daemon.vault / "notes" / "crlf.md").write_bytes(raw.encode())
    daemon.wait_generation(g)
    whole = json.loads(vaultq("--socket", sock, "read", "notes/crlf.md", "--json").stdout)
    assert whole["text"] == raw and whole["total_lines"] == 4
    part = json.loads(vaultq("--socket", sock, "read", "notes/crlf.md", "--lines", "3:4", "--json").stdout)
    assert part["text"] == "line two\nline three"  # lines, as search and grep number them


def children_cpu_seconds() -> float:
    """The CPU time of this process's children that have exited: a loaded machine makes a
    child take longer, but does not add to its CPU time."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def vaultq_cpu_seconds(*args) -> tuple[subprocess.CompletedProcess, float]:
    before = children_cpu_seconds()
    r = vaultq(*args)
    return r, children_cpu_seconds() - before


def test_a_big_reply_is_read_in_about_its_length(daemon, sock):
    # 19.5 MB of note (under the 20 MB cap): the old reader searched and copied its whole
    # buffer at every 64 KB received (8 s for 39 MB); read in place it costs about what a
    # vaultq that reads a one-line note costs, a few times over (its start-up is most of that)
    g = daemon.status()["generation"]
    (daemon.vault / "notes" / "huge.md").write_bytes(b"huge note line of forty bytes, or so..\n" * 500_000)
    daemon.wait_generation(g)
    whole = ("--budget", "10000000")  # read is bounded (8,000 tokens by default): all of it, asked for
    small, small_cpu = vaultq_cpu_seconds("--socket", sock, "read", "notes/Deep work.md", "--json", *whole)
    r, cpu = vaultq_cpu_seconds("--socket", sock, "read", "notes/huge.md", "--json", *whole)
    assert small.returncode == 0 and r.returncode == 0 and len(json.loads(r.stdout)["text"]) == 19_500_000
    print(f"CPU: {cpu:.3f} s against {small_cpu:.3f} s")
    assert cpu < 20 * small_cpu, (cpu, small_cpu)


def test_many_links_on_one_line_and_many_tags_in_one_note_stay_cheap(daemon, sock):
    # each link came with its own copy of the whole line (8,000 links on a 112 KB line:
    # 900 MB of answer), and a note's tags were paired as their square (4,000 tags: 13 s, 2.9 GB)
    g = daemon.status()["generation"]
    line = "x" * 3000 + "[[Deep work]] " * 4000
    (daemon.vault / "notes" / "many.md").write_text("# Many\n\n" + line + "\n")
    (daemon.vault / "notes" / "tagged.md").write_text("# Tagged\n\n" + " ".join(f"#t{i}" for i in range(4000)) + "\n")
    daemon.wait_generation(g)  # and the other note, if its commit came apart:
    wait_for(lambda: {"notes/many.md", "notes/tagged.md"} <= {n["path"] for n in daemon.request("list")["notes"]}
             and not daemon.status()["pending"])
    r = vaultq("--socket", sock, "backlinks", "--format", "vimgrep", "Deep work", "--limit", "100000",  # all
               cwd=daemon.vault)
    rows = [x for x in r.stdout.splitlines() if x.startswith("notes/many.md:")]
    assert len(rows) == 4000 and len(r.stdout) < 4000 * 1100
    for k in (0, 3999):  # the byte column is still exact
        col = int(rows[k].split(":")[2])
        assert line.encode()[col - 1 :].startswith(b"[[Deep work]]") and col == 3001 + 14 * k
    r = vaultq("--socket", sock, "tags", "--json", "--limit", "100000")  # all of them (500 by default)
    tags = {t["tag"]: t for t in json.loads(r.stdout)["tags"]}
    assert all(tags[f"t{i}"]["count"] == 1 for i in range(4000))
    assert sum(1 for i in range(4000) if tags[f"t{i}"]["related"]) == RELATED_OF, "only the first tags are paired"


def test_split_commands(make_daemon, tmp_path):
    cfg = tmp_path / "propose.toml"
    cfg.write_text("[split]\nmode = 'propose'\nquiet = 0.0\n")
    daemon = make_daemon(extra=["--config", str(cfg)])
    sock = str(daemon.socket)
    here = {"cwd": daemon.vault}  # paths relative to the vault
    big = daemon.vault / "notes" / "Big.md"
    g = daemon.status()["generation"]
    big.write_text("# Big\n\n" + "".join(f"## Part {i}\n\n" + "some words here\n" * 300 for i in range(4)))
    old = time.time() - 3600
    os.utime(big, (old, old))
    daemon.wait_generation(g)
    r = vaultq("--socket", sock, "split", "--list", **here)
    assert r.returncode == 0 and "split  notes/Big.md" in r.stdout
    r = vaultq("--socket", sock, "split", "--dry-run", "Big", **here)
    assert r.stdout.startswith("--- /dev/null") and "+++ b/notes/Big.md" in r.stdout
    r = vaultq("--socket", sock, "split", "Big", **here)
    assert r.returncode == 0 and "split notes/Big.md into" in r.stdout
    op = r.stdout.split("undo: vaultq undo ")[1].split(")")[0]
    assert op in vaultq("--socket", sock, "split", "--history", **here).stdout
    assert vaultq("--socket", sock, "split", "--undo", op, **here).stdout.startswith(f"undid {op}")
    assert vaultq("--socket", sock, "split", **here).returncode == 2


def test_only_the_asked_command_is_built_and_every_command_is_known():
    from vaultd.vaultq import COMMANDS, _command, _parser

    full = _parser()._subparsers._group_actions[0].choices
    assert sorted(full) == sorted(COMMANDS)
    assert list(_parser("read")._subparsers._group_actions[0].choices) == ["read"]
    assert _command(["--socket", "search", "read", "x"]) == "read"
    assert _command(["--help", "search"]) is None


@pytest.mark.parametrize("argv", [
    ["search", "deep", "work"], ["--socket", "/s", "search", "x"], ["--socket=/s", "search", "x", "y"],
    ["--vault", "v", "search", "x", "--json"], ["search", "x", "-n", "3", "--format", "vimgrep"],
    ["search", "x", "--limit", "7", "--format", "paths", "--json"], ["search", "가치관이"],
    ["search", "x", "--json", "y"], ["search", "-x"], ["search", "x", "--tag", "t"], ["search"], ["status"],
    ["search", "x", "-n", "-1"], ["search", "x", "--format", "bad"], ["--socket"], ["search", "x", "-h"],
    ["search", "x", "--", "-y"], ["search", "x", "--all"], ["--socket", "--vault", "search", "x"],
    ["search", "-x", "y"], ["search", "x", "-"], ["search", "x", "-h"], ["search", "foo", "-n5"],
    ["search", "foo", "-notes"], ["search", "foo", "--json", "-notes"], ["search", "--tag", "rust", "async", "rust"],
    ["search", "-hello", "x"], ["search", "x", "-n", "-1"],
])
def test_quick_search_reads_argv_as_argparse_does(argv):
    from vaultd.vaultq import _parse, _quick

    quick = _quick(argv)
    if quick is not None:
        assert quick == vars(_parse(argv))
    if argv == ["search", "foo", "-n5"]:
        assert quick is None and vars(_parse(argv))["limit"] == 5
    if argv == ["search", "foo", "--json", "-notes"]:
        assert vars(_parse(argv))["query"] == ["foo", "-notes"]
    if argv == ["search", "--tag", "rust", "async", "rust"]:
        assert vars(_parse(argv))["query"] == ["async", "rust"], "in the order typed: the last word is a prefix"
    assert _quick(["search", "deep", "work"]) is not None


def test_a_reader_that_leaves_early_is_no_error(sock):
    # `vaultq search x | head -1`: the pipe is closed before vaultq writes; its output
    # buffered, as it is for a user (not PYTHONUNBUFFERED), fails only when flushed at exit
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    p = subprocess.Popen([sys.executable, "-m", "vaultd.vaultq", "--socket", sock, "search", "boredom"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    p.stdout.close()
    with p.stderr:
        assert p.wait(timeout=30) == 0
        assert "Error" not in p.stderr.read().decode()


def test_a_notes_escape_sequences_reach_a_terminal_as_text(daemon, sock):
    """A note may hold terminal escapes (a clipping: OSC 52 sets the clipboard, others
    retitle or clear the terminal): on a terminal vaultq prints them as ^[...; a pipe and
    --json get the note's characters as they are."""
    from conftest import on_a_terminal

    g = daemon.status()["generation"]
    (daemon.vault / "notes" / "clip.md").write_text("# Clip\n\nokapi \x1b]52;c;cHduZWQ=\x07 and \x1b[2J\x9b31m\n")
    daemon.wait_generation(g)
    code, out = on_a_terminal([sys.executable, "-m", "vaultd.vaultq", "--socket", sock, "search", "okapi"])
    assert code == 0
    assert b" ^[]52;c;cHduZWQ=^G and ^[[2J\\x9b31m" in out and b"\x1b]" not in out and b"\x1b[2J" not in out
    assert b"\x1b[1;31mokapi\x1b[0m" in out  # vaultq's own colours (SGR) pass
    piped = vaultq("--socket", sock, "search", "okapi")
    assert "okapi \x1b]52;c;cHduZWQ=\x07 and \x1b[2J\x9b31m" in piped.stdout


def test_a_dry_run_of_anything_but_one_note_is_refused_and_writes_nothing(daemon, sock):
    """`--dry-run` previews one note's split. With `--all` or `--undo` it was ignored, and the
    preview split (or undid) for real: now refused, by vaultq and by the daemon alike."""
    g = daemon.status()["generation"]
    big = "# Big\n\n" + "".join(f"## Section {i}\n\n" + "words of the section, " * 60 + "\n\n" for i in range(20))
    (daemon.vault / "notes" / "Big.md").write_text(big)
    daemon.wait_generation(g)
    before = {p: p.read_bytes() for p in daemon.vault.rglob("*") if p.is_file()}
    for args in (["--all", "--dry-run"], ["--undo", "--all", "--dry-run"], ["--list", "--dry-run"]):
        r = vaultq("--socket", sock, "split", *args)
        assert r.returncode == 2 and "--dry-run previews the split of one NOTE" in r.stderr, (args, r.stderr)
    for args in ({"all": True}, {"all": True, "note": "Big"}, {"undo": [], "all": True}):
        reply = daemon.send_raw(json.dumps({"op": "split", "dry_run": True, **args}).encode() + b"\n")
        assert not reply["ok"] and "dry_run previews the split of one note" in reply["error"]["message"], reply
    assert {p: p.read_bytes() for p in daemon.vault.rglob("*") if p.is_file()} == before
    r = vaultq("--socket", sock, "split", "Big", "--dry-run")
    assert r.returncode == 0 and "+++ b/notes/Big.md" in r.stdout, "one note's preview still works"
    assert {p: p.read_bytes() for p in daemon.vault.rglob("*") if p.is_file()} == before
