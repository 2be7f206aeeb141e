"""Several vaults served by one daemon (config `vaults`): two real vaults, one real
daemon on a real socket, asked by the real vaultq."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vaultd.config import Config
from vaultd.errors import ConfigError

from conftest import Daemon, wait_for


def vaultq(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "vaultd.vaultq", *args], capture_output=True, text=True,
                          timeout=30, cwd=cwd)


def write(p: Path, text: str) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


@pytest.fixture
def two(tmp_path, short_dir):
    """notes/ and work/, each with a note about compost (work's in its title: the better
    hit) and a link to a note of the same name, `plan`, in both."""
    notes, work = tmp_path / "notes", tmp_path / "work"
    write(notes / "garden.md", "# Garden\nSome compost in spring, see [[plan]].\n")
    write(notes / "plan.md", "# Plan\nThe notes plan.")
    write(work / "projects" / "beds.md", "# Compost budget\nCompost tools, soil.\nSee [[plan]].\n")
    write(work / "plan.md", "# Plan\nThe work plan.")
    cfg = write(tmp_path / "config.toml", f'vaults = ["{notes}", "{work}"]\n[split]\nmode = "off"\n')
    d = Daemon(notes, tmp_path / "state", short_dir / "d.sock")
    d.args = [sys.executable, "-m", "vaultd", "run", "--config", str(cfg), "--state-dir", str(tmp_path / "state"),
              "--socket", str(d.socket)]
    d.start()
    wait_for(lambda: all(v["reconciled"] for v in d.status()["vaults"]), interval=0.05)
    yield d, notes, work
    d.stop()


def test_both_vaults_indexed_each_in_its_own_state_folder(two, tmp_path):
    d, notes, work = two
    st = d.status()
    assert [(v["name"], v["vault"], v["notes"]) for v in st["vaults"]] == [("notes", str(notes), 2), ("work", str(work), 2)]
    assert st["name"] == "notes" and st["vault"] == str(notes)  # a request that names none: the first
    assert d.request("status", vault="work")["vault"] == str(work)
    dirs = sorted(p.name for p in (tmp_path / "state").iterdir())
    assert len(dirs) == 2 and dirs[0].startswith("notes-") and dirs[1].startswith("work-")


def test_search_merges_every_vault_and_labels_each_hit(two):
    d, notes, work = two
    res = d.request("search", q="compost")
    assert [(h["vault"], h["path"]) for h in res["hits"]] == [("work", "projects/beds.md"), ("notes", "garden.md")]
    assert res["total"] == 2 and [(v["name"], v["total"]) for v in res["vaults"]] == [("notes", 1), ("work", 1)]
    assert d.request("search", q="compost", all_vaults=True)["hits"] == res["hits"]
    one = d.request("search", q="compost", vault="notes")
    assert [h["path"] for h in one["hits"]] == ["garden.md"] and "vaults" not in one and "vault" not in one["hits"][0]
    assert d.request("search", q="compost", limit=1)["hits"][0]["path"] == "projects/beds.md"


def test_vaultq_vault_picks_one_by_name_or_folder(two):
    d, notes, work = two
    sock = str(d.socket)
    for which in ("work", str(work), str(work) + "/"):
        r = vaultq("--socket", sock, "--vault", which, "backlinks", "plan", "--format", "paths")
        assert r.returncode == 0, r.stderr
        assert r.stdout == f"{work}/projects/beds.md\n"
    r = vaultq("--socket", sock, "--vault", ".", "backlinks", "plan", "--format", "paths", cwd=notes)
    assert r.stdout == "garden.md\n"  # `.`: the folder vaultq runs in; paths relative to it
    r = vaultq("--socket", sock, "backlinks", "plan", "--format", "paths")  # the first vault's
    assert r.stdout == f"{notes}/garden.md\n"
    r = vaultq("--socket", sock, "backlinks", str(work / "plan.md"), "--format", "paths")  # the note's vault
    assert r.stdout == f"{work}/projects/beds.md\n"


def test_a_note_asked_from_inside_a_vault_is_that_vaults(two, tmp_path):
    """Not the first vault's note of the same name: `./plan.md` in work/ is work's plan."""
    d, notes, work = two
    sock = str(d.socket)
    r = vaultq("--socket", sock, "read", "./plan.md", cwd=work)
    assert r.returncode == 0 and "The work plan." in r.stdout, r.stdout + r.stderr
    r = vaultq("--socket", sock, "backlinks", "plan", "--format", "paths", cwd=work / "projects")  # the folder's vault
    assert r.returncode == 0 and r.stdout == "beds.md\n", r.stdout + r.stderr
    (tmp_path / "elsewhere" / "work").mkdir(parents=True)  # a folder here named as a vault: the name wins
    r = vaultq("--socket", sock, "--vault", "work", "backlinks", "plan", "--format", "paths", cwd=tmp_path / "elsewhere")
    assert r.returncode == 0 and r.stdout == f"{work}/projects/beds.md\n", r.stdout + r.stderr
    r = vaultq("--socket", sock, "--vault", "notes", "backlinks", "plan", "--format", "paths", cwd=tmp_path)
    assert r.stdout == f"{notes}/garden.md\n"


def test_vaultq_search_every_vault_paths_editors_can_open(two):
    d, notes, work = two
    sock = str(d.socket)
    r = vaultq("--socket", sock, "search", "--all-vaults", "compost", "--format", "vimgrep", cwd=work)
    assert r.returncode == 0, r.stderr
    # inside work/ its notes are relative (as with one vault), the other vault's absolute: both open as printed
    assert r.stdout.splitlines() == ["projects/beds.md:1:3:# Compost budget", "projects/beds.md:2:1:Compost tools, soil.",
                                     f"{notes}/garden.md:2:6:Some compost in spring, see [[plan]]."]
    plain = vaultq("--socket", sock, "search", "compost", "--format", "vimgrep", cwd=work)
    assert plain.stdout == r.stdout  # a search that names no vault searches every one
    hits = json.loads(vaultq("--socket", sock, "search", "compost", "--json").stdout)["hits"]
    assert [(h["vault"], h["path"]) for h in hits] == [("work", "projects/beds.md"), ("notes", "garden.md")]
    r = vaultq("--socket", sock, "--vault", "work", "search", "--all-vaults", "compost")
    assert r.returncode == 2 and "--all-vaults" in r.stderr


def test_an_unknown_vault_is_exit_2_naming_the_known_ones(two):
    d, notes, work = two
    r = vaultq("--socket", str(d.socket), "--vault", "nope", "search", "compost")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == f"vaultq: no vault 'nope' here; this vaultd serves: notes ({notes}), work ({work})"
    msg = d.send_raw(b'{"op":"read","note":"plan.md","vault":"/elsewhere"}\n')
    assert msg["error"]["code"] == "unknown_vault" and d.status()["vaults"]  # and it goes on serving
    r = vaultq("--socket", str(d.socket), "--vault", "", "search", "compost")  # not the first vault, silently
    assert r.returncode == 2 and r.stderr == "vaultq: --vault needs a vault's name or folder\n"


def test_an_edit_in_the_second_vault_is_seen(two):
    d, notes, work = two
    g = d.request("status", vault="work")["generation"]
    write(work / "new.md", "# New\nzucchini harvest\n")
    wait_for(lambda: d.request("status", vault="work")["generation"] > g, interval=0.05)
    assert [(h["vault"], h["path"]) for h in d.request("search", q="zucchini")["hits"]] == [("work", "new.md")]
    r = vaultq("--socket", str(d.socket), "status")
    assert r.returncode == 0 and "work  " + str(work) + "  3 notes" in r.stdout


def test_a_note_read_by_absolute_path_is_its_vaults(two):
    d, notes, work = two
    assert d.request("read", note=str(work / "plan.md"))["text"] == "# Plan\nThe work plan."
    assert d.request("read", note="plan.md")["text"] == "# Plan\nThe notes plan."


# -- the config ---------------------------------------------------------------------------


def test_vaults_config_loads_each_vault(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    every = Config(vaults=[str(a), str(b)]).load_all()
    assert [c.vault for c in every] == [str(a), str(b)] and {c.socket for c in every} == {every[0].socket}
    assert every[0].state_dir == str(Config(vault=str(a)).load().state_dir)  # a vault's index stays where it was
    assert all(c.vaults == [str(a), str(b)] for c in every)
    assert Config(vaults=[str(a), str(b)], vault=str(b)).load().vault == str(b)
    given = Config(vaults=[str(a), str(b)], state_dir=str(tmp_path / "st")).load_all()
    assert [Path(c.state_dir).parent for c in given] == [tmp_path / "st"] * 2
    assert Config(vaults=[str(a), str(b)]).with_overrides(vault=str(b)).load_all()[0].vaults == [str(b)]


@pytest.mark.parametrize("vaults, vault, message", [
    (["{a}", "{a}/"], "", "listed twice"),
    (["{a}", "{a}/sub"], "", "a vault inside another"),
    (["{a}", "{tmp}/none"], "", "is not a folder"),
    (["{a}"], "{tmp}", "`vault` and `vaults` are both set"),
])
def test_bad_vaults_are_config_errors(tmp_path, vaults, vault, message):
    (tmp_path / "a" / "sub").mkdir(parents=True)
    fill = {"a": tmp_path / "a", "tmp": tmp_path}
    with pytest.raises(ConfigError, match=message):
        Config(vaults=[v.format(**fill) for v in vaults], vault=vault.format(**fill)).load()


def test_each_vault_s_best_hit_is_among_the_first_three(two):
    """By score, the work vault's one weak hit would come fifth, under four of notes': each
    vault's best has a place in the first three (README "Several vaults": bench/vaults.py)."""
    d, notes, work = two
    for i in range(4):
        write(notes / f"mulch{i}.md", f"# Mulch {i}\nMulch, mulch and mulch.\n")
    write(work / "long.md", "# Soil\n" + "Words about the soil and other things. " * 40 + "\nmulch once.\n")
    wait_for(lambda: len(d.request("search", q="mulch", limit=10)["hits"]) == 5, interval=0.05)
    hits = d.request("search", q="mulch", limit=10)["hits"]
    scores = [h["score"] for h in hits]
    assert [h["vault"] for h in hits] == ["notes", "notes", "work", "notes", "notes"]
    assert scores[2] < scores[4]  # by score alone it would be last
    assert [h["vault"] for h in d.request("search", q="mulch", limit=2)["hits"]] == ["notes", "notes"]  # by score


# -- the MCP server and the LSP, on a daemon of two vaults ---------------------------------


def test_mcp_search_finds_in_every_vault_and_reads_a_note_of_the_second(two):
    from test_mcp import session

    d, notes, work = two

    async def steps(c):
        found = await c.call_tool("search", {"query": "compost"})
        text = (await c.read_resource((work / "plan.md").as_uri())).contents[0].text
        return found.structured_content, text

    found, text = session(str(d.socket), steps)
    assert [(h["vault"], h["path"]) for h in found["hits"]] == [("work", f"{work}/projects/beds.md"),
                                                               ("notes", f"{notes}/garden.md")]
    assert text == "# Plan\nThe work plan."


def test_lsp_in_the_second_vault_resolves_and_references_there(two):
    from lsprotocol import types as t
    from pygls.uris import from_fs_path
    from test_lsp import lsp

    d, notes, work = two
    beds = "projects/beds.md"

    async def steps(s):
        s.open(beds, (work / beds).read_text() + "[[")
        s.open("plan.md")
        there = await s.definition(beds, t.Position(line=2, character=7))  # on [[plan]]
        refs = await s.references("plan.md", t.Position(line=1, character=0))  # the note, not its heading
        offered = await s.completion(beds, t.Position(line=3, character=2))
        return there, refs, offered

    there, refs, offered = lsp(work, steps, str(d.socket))
    assert there.uri == from_fs_path(str(work / "plan.md"))  # not notes/plan.md, the first vault's
    assert [(r.uri, r.range.start.line) for r in refs] == [(from_fs_path(str(work / beds)), 2)]
    assert sorted(i.detail for i in offered.items) == ["plan.md", "projects/beds.md"]  # this vault's notes


def test_odd_vault_names_and_note_paths_are_clear_errors(two):
    d, notes, work = two
    for line in (b'{"op":"status","vault":"/a\\u0000b"}', b'{"op":"status","vault":""}', b'{"op":"status","vault":7}'):
        assert d.send_raw(line + b"\n")["error"]["code"] in ("unknown_vault", "bad_request"), line
    msg = d.send_raw(b'{"op":"read","note":"/x\\u0000y"}\n')
    assert msg["error"]["code"] != "internal", msg
    assert d.status()["vaults"]  # and it goes on serving


ARGS = {"search": {"q": "compost"}, "grep": {"q": "plan"}, "resolve": {"link": "[[plan]]"}, "context": {"q": "plan"},
        "read": {"note": "plan"}, "backlinks": {"note": "plan"}, "links": {"note": "plan"}, "graph": {"note": "plan"},
        "changes": {"since": 0}, "pin": {"note": "plan"}, "unpin": {"note": "plan"}, "split": {"list": True},
        "remember": {"text": "x"}, "rename": {"note": "plan", "title": "Plan B", "dry_run": True},
        "undo": {"all": True}}
"""Each operation's least arguments."""


def test_every_operation_takes_a_vault(two):
    from vaultd import ops

    d, notes, work = two
    for op in ops.OPS:
        for name, folder in (("notes", notes), ("work", work)):
            msg = d.send_raw(json.dumps({"op": op.name, "vault": name, "paths": "absolute", **ARGS.get(op.name, {})})
                             .encode() + b"\n")
            if op.name == "remember":  # capture is off in both
                assert msg["error"]["code"] == "capture_off"
                continue
            assert msg["ok"], (op.name, name, msg)
            shown = [p for p in _paths(msg["result"]) if p.startswith("/")]
            assert all(p.startswith(f"{folder}/") or p == str(folder) for p in shown), (op.name, name, shown)
    assert d.request("grep", q="plan", vault="work", paths="absolute")["matches"][0]["path"] == f"{work}/plan.md"
    assert d.request("list", vault="work")["total"] == 2


def _paths(obj, key=None):
    if isinstance(obj, dict):
        for k, val in obj.items():
            if k != "vaults":  # status: every vault
                yield from _paths(val, k)
    elif isinstance(obj, list):
        for val in obj:
            yield from _paths(val, key)
    elif isinstance(obj, str) and key in ("path", "note", "vault", "resolved", "from"):
        yield obj


def test_mcp_with_vault_asks_that_vault(two):
    import asyncio

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    d, notes, work = two
    params = StdioServerParameters(command=sys.executable, args=["-m", "vaultd", "mcp", "--socket", str(d.socket),
                                                                 "--vault", "work"],
                                   env={"PYTHONPATH": os.pathsep.join(sys.path)})

    async def main():
        async with Client(params, read_timeout_seconds=60) as c:
            read = await c.call_tool("read", {"note": "plan"})
            one = await c.call_tool("search", {"query": "compost"})
            every = await c.call_tool("search", {"query": "compost", "all_vaults": True})
            # the note's text is in the text content, not again in the structured content
            return {**read.structured_content, "text": read.content[0].text.split("\n", 1)[1]}, \
                one.structured_content, every.structured_content

    read, one, every = asyncio.run(main())
    assert read["text"] == "# Plan\nThe work plan."
    assert [h["path"] for h in one["hits"]] == [f"{work}/projects/beds.md"]
    assert [h["vault"] for h in every["hits"]] == ["work", "notes"]


def test_install_service_runs_the_config_s_vaults(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    cfg = write(tmp_path / "c.toml", f'vaults = ["{a}", "{b}"]\n')
    r = subprocess.run([sys.executable, "-m", "vaultd", "install-service", "--config", str(cfg), "--dry-run"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    unit = r.stdout.split("# ---- vaultd.socket")[0]
    start = next(ln for ln in unit.splitlines() if ln.startswith("ExecStart="))
    assert start.endswith(f" run --config {cfg}") and "--vault" not in start  # --vault would serve one alone
    writable = next(ln for ln in unit.splitlines() if ln.startswith("ReadWritePaths=")).split("=", 1)[1].split()
    every = Config(vaults=[str(a), str(b)]).load_all()
    assert [p for p in writable[:4]] == [f"-{p}" for c in every for p in (c.vault, c.state_dir)]


def test_relative_paths_in_a_config_file_are_relative_to_the_file(tmp_path):
    """Not to wherever vaultd runs (a systemd unit runs in $HOME)."""
    for name in ("notes", "work"):
        write(tmp_path / "cfgdir" / name / "a.md", "# A\n")
    cfg = write(tmp_path / "cfgdir" / "config.toml", 'vaults = ["notes", "work"]\nstate_dir = "st"\n')
    loaded = Config.from_file(cfg).load_all()
    assert [c.vault for c in loaded] == [str((tmp_path / "cfgdir" / n).resolve()) for n in ("notes", "work")]
    assert all(Path(c.state_dir).parent == (tmp_path / "cfgdir" / "st") for c in loaded)
    r = subprocess.run([sys.executable, "-m", "vaultd", "install-service", "--config", str(cfg), "--dry-run"],
                       capture_output=True, text=True, timeout=30, cwd="/")
    assert r.returncode == 0 and f'-{tmp_path / "cfgdir" / "st"}' in r.stdout, r.stderr


def test_a_vault_not_there_at_start_is_served_once_it_appears(tmp_path, short_dir):
    """An unmounted disk in `vaults`: the daemon serves the others (it used to stop, exit 2,
    leaving every vault unserved), says so in status, `vaultd check` and to a request that
    names it, and serves it once its folder appears."""
    notes, usb = tmp_path / "notes", tmp_path / "usb"
    write(notes / "garden.md", "# Garden\nSome compost in spring.\n")
    work = usb / "work"
    cfg = write(tmp_path / "config.toml", f'vaults = ["{notes}", "{work}"]\n[split]\nmode = "off"\n')
    with pytest.raises(ConfigError, match="is not a folder"):
        Config(vaults=[str(notes), str(work)]).load_all()  # `vaultd index` and the like still refuse it
    with pytest.raises(ConfigError, match="no vault is there"):
        Config(vaults=[str(tmp_path / "x"), str(work)]).load_all(missing_ok=True)
    d = Daemon(notes, tmp_path / "state", short_dir / "d.sock")
    d.args = [sys.executable, "-m", "vaultd", "run", "--config", str(cfg), "--state-dir", str(tmp_path / "state"),
              "--socket", str(d.socket)]
    d.start()
    try:
        wait_for(lambda: d.status()["vaults"][0]["reconciled"], interval=0.05)
        assert [(v["name"], v["waiting"]) for v in d.status()["vaults"]] == [("notes", False), ("work", True)]
        assert [h["path"] for h in d.request("search", q="compost")["hits"]] == ["garden.md"]
        r = vaultq("--socket", str(d.socket), "--vault", "work", "search", "compost")
        assert r.returncode == 3 and "is not there: vaultd serves it once its folder appears" in r.stderr
        r = vaultq("--socket", str(d.socket), "status")
        assert f"work  {work}  not there" in r.stdout
        r = subprocess.run([sys.executable, "-m", "vaultd", "check", "--config", str(cfg), "--state-dir",
                            str(tmp_path / "state"), "--socket", str(d.socket)], capture_output=True, text=True,
                           timeout=60)
        assert r.returncode == 1 and f"vault:     {work} NOT THERE (--vault work)" in r.stdout, r.stdout + r.stderr
        tmp = tmp_path / "mount"
        write(tmp / "work" / "beds.md", "# Compost budget\nCompost tools, soil.\n")
        tmp.rename(usb)  # the disk is mounted: the folder appears whole
        wait_for(lambda: all(v["reconciled"] for v in d.status()["vaults"]), interval=0.2)
        assert [(h["vault"], h["path"]) for h in d.request("search", q="compost")["hits"]] == \
            [("work", "beds.md"), ("notes", "garden.md")]
        assert [v["waiting"] for v in d.status()["vaults"]] == [False, False]
    finally:
        d.stop()


def test_grep_and_context_ask_every_vault(two):
    """As `search`: without `vault`, every vault answers; each row/item says its vault."""
    d, notes, work = two
    g = d.request("grep", q="compost")
    assert [(m["vault"], m["path"], m["line"]) for m in g["matches"]] == \
        [("notes", "garden.md", 2), ("work", "projects/beds.md", 1), ("work", "projects/beds.md", 2)]
    assert (g["total"], g["notes"], [v["name"] for v in g["vaults"]]) == (3, 2, ["notes", "work"])
    one = d.request("grep", q="compost", limit=1)
    assert len(one["matches"]) == 1 and one["truncated"]
    assert "vault" not in d.request("grep", q="compost", vault="notes")["matches"][0]
    r = vaultq("--socket", str(d.socket), "grep", "compost", cwd=work)
    assert r.stdout.splitlines() == [f"{notes}/garden.md:2:6:Some compost in spring, see [[plan]].",
                                     "projects/beds.md:1:3:# Compost budget", "projects/beds.md:2:1:Compost tools, soil."]

    c = d.request("context", q="compost", hot=False)
    hits = [(i["vault"], i["path"], i["why"].split(",")[0]) for i in c["items"]]
    assert hits == [("work", "projects/beds.md", "hit 1 for the query"), ("notes", "garden.md", "hit 2 for the query")]
    assert c["used"] == sum(i["cost"] for i in c["items"]) and [v["name"] for v in c["vaults"]] == ["notes", "work"]
    small = d.request("context", q="compost", hot=False, budget=c["items"][0]["cost"])
    assert [i["path"] for i in small["items"]] == ["projects/beds.md"] and small["used"] <= small["budget"]
    full = d.request("context", q="compost", budget=400, hot=True)  # the HOT openings too, never the same lines twice
    assert {i["vault"] for i in full["items"] if i["kind"] == "hot"} == {"notes", "work"}
    assert full["used"] <= 400
    spans = [(i["vault"], i["path"], line) for i in full["items"] for line in range(i["first"], i["last"] + 1)]
    assert len(spans) == len(set(spans))
    mine = d.request("context", q="compost", hot=False, vault="notes")
    assert [i["path"] for i in mine["items"]] == ["garden.md"] and "vaults" not in mine


def test_a_client_in_a_vault_whose_daemon_is_down_never_asks_another_vaults(tmp_path, short_dir):
    """vaultq (and vaultd mcp, the LSP) with no socket named: from a vault's folder, the
    daemon serving it, found by asking the running ones (a daemon of several listens on its
    first vault's socket); from a vault vaultd knows whose daemon is down, exit 3 naming it,
    never the only other daemon running (a `split --all` there split the other vault's
    notes); from a folder of no vault, the only daemon running, as before."""
    from vaultd.paths import vault_name

    first, second, down, elsewhere = (tmp_path / n for n in ("first", "second", "down", "elsewhere"))
    write(first / "a.md", "# A\nlorem first\n")
    write(second / "b.md", "# B\nlorem second\n")
    write(down / "c.md", "# C\nlorem down\n")
    elsewhere.mkdir()
    rt, state_home = short_dir / "rt", tmp_path / "xdg-state"
    (rt / "vaultd").mkdir(parents=True, mode=0o700)
    rt.chmod(0o700)
    (state_home / "vaultd" / vault_name(down)).mkdir(parents=True)  # indexed once: vaultd knows it
    cfg = write(tmp_path / "config.toml", f'vaults = ["{first}", "{second}"]\n[split]\nmode = "off"\n')
    d = Daemon(first, tmp_path / "state", rt / "vaultd" / f"{vault_name(first)}.sock")
    d.args = [sys.executable, "-m", "vaultd", "run", "--config", str(cfg), "--state-dir", str(tmp_path / "state"),
              "--socket", str(d.socket)]
    d.start()
    env = {**os.environ, "XDG_RUNTIME_DIR": str(rt), "XDG_STATE_HOME": str(state_home)}
    env.pop("VAULTD_SOCKET", None)

    def ask(*args, cwd):
        return subprocess.run([sys.executable, "-m", "vaultd.vaultq", *args], capture_output=True, text=True,
                              timeout=30, cwd=cwd, env=env)

    try:
        wait_for(lambda: all(v["reconciled"] for v in d.status()["vaults"]), interval=0.05)
        r = ask("read", "b.md", cwd=second)
        assert r.returncode == 0 and "lorem second" in r.stdout, r.stderr  # the daemon serving the second vault
        r = ask("search", "lorem", cwd=down)
        assert r.returncode == 3 and r.stdout == "", r.stdout
        assert f"no vaultd serves {down}; start it: vaultd run --vault {down}" in r.stderr
        assert f"(serves {first}, {second})" in r.stderr
        r = ask("--vault", str(down), "split", "--all", cwd=elsewhere)
        assert r.returncode == 3 and f"no vaultd serves {down}" in r.stderr
        r = ask("--vault", str(tmp_path / "none"), "status", cwd=elsewhere)
        assert r.returncode == 3 and "(no such folder)" in r.stderr
        others = [s for p in (Path(f"/run/user/{os.getuid()}/vaultd"), Path(f"/tmp/vaultd-{os.getuid()}"))
                  if p.is_dir() for s in p.glob("*.sock")]
        if not others:  # the user's own daemons, if any, make "the only one" ambiguous
            r = ask("search", "lorem", "--format", "paths", cwd=elsewhere)
            assert r.returncode == 0 and {Path(p).parent for p in r.stdout.split()} == {first, second}
    finally:
        d.stop()
