"""`vaultq hook` fed the JSON Claude Code sends, and vaultq's paths outside the vault."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DEADLINE
from vaultd.render import cost

HEADER = re.compile(r"^## (.+?):(\d+)-(\d+) ", re.M)


def vaultq(*args, cwd, stdin=None, env=None):
    return subprocess.run([sys.executable, "-m", "vaultd.vaultq", *args], capture_output=True, text=True,
                          timeout=30, cwd=cwd, input=stdin, env={**os.environ, **(env or {})})


@pytest.fixture
def project(tmp_path):
    """Where the agent runs: a folder outside the vault."""
    p = tmp_path / "project"
    p.mkdir()
    return p


def hook_input(event: str, project, **extra) -> str:
    return json.dumps({"session_id": "4c1c7e5e-2f6b-4a4e-9d43-0b7c7b9b8a11", "cwd": str(project),
                       "transcript_path": str(project / "t.jsonl"), "permission_mode": "default",
                       "hook_event_name": event, **extra})


def _cited(out: str) -> list[tuple[str, int, int]]:
    """Every `## path:first-last` an output cites, each checked: absolute, a file, and the
    lines under the header are that file's lines first..last."""
    found = []
    chunks = HEADER.split(out)
    for path, first, last, text in zip(chunks[1::4], chunks[2::4], chunks[3::4], chunks[4::4]):
        first, last = int(first), int(last)
        assert os.path.isabs(path) and os.path.isfile(path), path
        body = text.split("\n", 1)[1]
        lines = Path(path).read_text(encoding="utf-8").split("\n")[first - 1 : last]
        assert body.startswith("\n".join(lines)), (path, first, last)
        found.append((path, first, last))
    return found


def test_prompt_hook_gives_context_within_budget_with_absolute_paths(daemon, project):
    sock = str(daemon.socket)
    r = vaultq("--socket", sock, "hook", "prompt", "--budget", "300", cwd=project,
               stdin=hook_input("UserPromptSubmit", project, prompt="What are my rules for deep work? boredom"))
    assert r.returncode == 0, r.stderr
    assert cost(r.stdout, "tokens") <= 300 and r.stderr == ""
    cited = _cited(r.stdout)
    assert (str(daemon.vault / "notes" / "Deep work.md"), 11, 15) in cited or \
        any(p.endswith("Deep work.md") for p, *_ in cited)
    r = vaultq("--socket", sock, "hook", "prompt", "--budget", "150", "--unit", "bytes", cwd=project,
               stdin=hook_input("UserPromptSubmit", project, prompt="boredom"))
    assert r.returncode == 0 and len(r.stdout.encode()) <= 150
    r = vaultq("--socket", sock, "hook", "prompt", cwd=project,
               stdin=hook_input("UserPromptSubmit", project, prompt="xylophonist zebu"))
    assert (r.returncode, r.stdout, r.stderr) == (0, "", ""), "nothing found is no failure"
    # the hook is an agent: its retrievals make no note HOT
    assert not any("read" in w for h in daemon.request("hot")["hot"] for w in h["why"])


def test_session_start_hook_gives_the_working_set_within_budget(daemon, project):
    sock = str(daemon.socket)
    g = daemon.status()["generation"]
    done = daemon.vault / "notes" / "Finished.md"  # changed lately, but `done`: not HOT
    done.write_text("---\ntags: [done]\n---\n# Finished\n\nAll of it.\n")
    daemon.wait_generation(g)
    for budget in ("1500", "200"):
        r = vaultq("--socket", sock, "hook", "session-start", "--budget", budget, cwd=project,
                   stdin=hook_input("SessionStart", project, source="startup"))
        assert r.returncode == 0, r.stderr
        assert cost(r.stdout, "tokens") <= int(budget)
        assert r.stdout.startswith(f"# vaultd: the working set of the notes vault {daemon.vault} ")
        cited = {p for p, *_ in _cited(r.stdout)}
        assert cited, "HOT notes' openings"
        if budget == "1500":  # room for every note changed lately: an opening, or a line of the list
            _, _, rest = r.stdout.partition("# Changed in the last 7 days:\n")
            listed = {line.split("  ")[0] for line in rest.splitlines()}
            assert all(os.path.isfile(p) for p in listed)
            recent = {it["path"] for it in daemon.request("recent", paths="absolute")["recent"]}
            assert recent and recent <= cited | listed and str(done) in listed


def test_hook_failures_go_to_stderr_with_a_nonzero_exit(daemon, project, short_dir):
    sock = str(daemon.socket)
    r = vaultq("--socket", str(short_dir / "none.sock"), "hook", "prompt", cwd=project,
               stdin=hook_input("UserPromptSubmit", project, prompt="deep work"))
    assert r.returncode == 3 and r.stdout == "" and "Start it with `vaultd run" in r.stderr
    for stdin, why in (("not json", "standard input is not JSON"),
                       ("[1, 2]", "expected a JSON object"),
                       (hook_input("SessionStart", project), "this is the input of a SessionStart hook"),
                       (hook_input("UserPromptSubmit", project), 'has no "prompt"')):
        r = vaultq("--socket", sock, "hook", "prompt", cwd=project, stdin=stdin)
        assert r.returncode == 1 and r.stdout == "" and why in r.stderr, (stdin, r.stderr)
    r = vaultq("--socket", sock, "hook", "session-start", "--budget", "10", cwd=project,
               stdin=hook_input("SessionStart", project))
    assert r.returncode == 1 and "--budget must be at least 100" in r.stderr, "never 2: that blocks a prompt"


def test_every_command_shows_absolute_paths_outside_the_vault(daemon, project):
    sock = str(daemon.socket)
    q = lambda *a: vaultq("--socket", sock, *a, cwd=project)  # noqa: E731
    assert q("pin", "Deep work").stdout == f"pinned {daemon.vault}/notes/Deep work.md\n"
    outs = {
        "hot paths": q("hot", "--format", "paths").stdout.splitlines(),
        "hot": [ln.split("  ")[0] for ln in q("hot").stdout.splitlines()],
        "recent": q("recent", "--format", "paths").stdout.splitlines(),
        "pins": q("pins", "--format", "paths").stdout.splitlines(),
        "search": q("search", "--format", "paths", "deep").stdout.splitlines(),
        "backlinks": q("backlinks", "--format", "paths", "Deep work").stdout.splitlines(),
        "links": q("links", "--format", "paths", "Deep work").stdout.splitlines(),
        "graph": q("graph", "--format", "paths", "Deep work").stdout.splitlines(),
        "changes": [ln[2:] for ln in q("changes", "--since", "0").stdout.splitlines() if not ln.startswith("#")],
        "context": [p for p, *_ in _cited(q("context", "deep work", "--budget", "400").stdout)],
    }
    for what, paths in outs.items():
        assert paths, what
        for p in paths:
            assert os.path.isabs(p) and os.path.isfile(p), (what, p)
    inside = vaultq("--socket", sock, "hot", "--format", "paths", cwd=daemon.vault / "journal").stdout.splitlines()
    assert "../notes/Deep work.md" in inside, "relative to where you are, inside the vault"
    # run by Claude Code (CLAUDECODE=1 in its shell), vaultq reads as an agent: not counted towards HOT
    assert vaultq("--socket", sock, "read", "Deep work", cwd=project,
                  env={"CLAUDECODE": "1"}).returncode == 0
    assert not any("read" in w for h in daemon.request("hot")["hot"] for w in h["why"])
    vaultq("--socket", sock, "read", "Deep work", cwd=project)  # a person's read counts
    assert "read 1 time" in {h["path"]: h["why"] for h in daemon.request("hot")["hot"]}["notes/Deep work.md"]


PLUGIN = Path(__file__).parent.parent / "integrations" / "claude-code"


def test_the_claude_code_plugin_runs_as_configured(daemon, project):
    """The plugin's hooks and MCP server, run as its config files say, with the daemon named
    by VAULTD_SOCKET and the venv's commands on PATH."""
    import asyncio

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    assert json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())["name"] == "vaultd"
    env = {"VAULTD_SOCKET": str(daemon.socket), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"]
    for event, extra in (("SessionStart", {"source": "startup"}), ("UserPromptSubmit", {"prompt": "boredom"})):
        (entry,) = hooks[event]
        for h in entry["hooks"]:
            assert h["timeout"] > 5, "above vaultq's own 5 s for a hook: it gives up first, and says so"
            r = subprocess.run(h["command"], shell=True, capture_output=True, text=True, timeout=DEADLINE,
                               cwd=project, input=hook_input(event, project, **extra), env={**os.environ, **env})
            assert r.returncode == 0 and r.stderr == "" and _cited(r.stdout), (event, r.stderr)
    (server,) = json.loads((PLUGIN / ".mcp.json").read_text())["mcpServers"].values()

    async def tools():
        params = StdioServerParameters(command=server["command"], args=server["args"], cwd=str(project),
                                       env={**env, "PYTHONPATH": os.pathsep.join(sys.path)})
        async with Client(params, read_timeout_seconds=60) as c:
            return [t.name for t in (await c.list_tools()).tools], await c.call_tool("search", {"query": "boredom"})

    names, hit = asyncio.run(tools())
    assert "search" in names and not hit.is_error
    assert hit.structured_content["hits"][0]["path"] == str(daemon.vault / "notes" / "Deep work.md")


def test_a_hook_never_hangs_on_a_stopped_daemon_and_survives_bad_characters(daemon, project):
    import signal

    sock = str(daemon.socket)
    bad = '{"hook_event_name": "UserPromptSubmit", "cwd": "%s", "prompt": "\\ud800 deep work"}' % project
    r = vaultq("--socket", sock, "hook", "prompt", cwd=project, stdin=bad)
    assert r.returncode == 0 and "Deep work" in r.stdout, r.stderr  # a lone surrogate is only a bad character
    os.kill(daemon.proc.pid, signal.SIGSTOP)  # hung: it accepts, and never answers
    try:  # the hook gives up by itself (how soon is vaultq's 5 s, within the agent's 10 s: not timed here)
        r = vaultq("--socket", sock, "hook", "prompt", cwd=project,
                   stdin=hook_input("UserPromptSubmit", project, prompt="deep work"))
        assert r.returncode == 3 and "timed out" in r.stderr, r.stderr
    finally:
        os.kill(daemon.proc.pid, signal.SIGCONT)
