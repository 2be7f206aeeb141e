"""The Claude Code plugin's documented commands (integrations/claude-code/README.md), run as
written against two real daemons, each of its own vault on its own default socket: the
hooks with `--vault` after the subcommand (as the README has them) and before it, and with
wrong arguments (never exit 2, which blocks the prompt); the MCP server as `.mcp.json`
says; and a path a search of every vault gave, read through a `vaultd mcp` of one vault."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DEADLINE, Daemon, wait_for
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from vaultd.paths import vault_name

PLUGIN = Path(__file__).parent.parent / "integrations" / "claude-code"
HEADER = re.compile(r"^## (/[^\n]+?):(\d+)-(\d+) ", re.M)


def readme_blocks() -> tuple[dict, dict]:
    """The README's hooks config and .mcp.json, from its ```json blocks."""
    blocks = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", (PLUGIN / "README.md").read_text(), re.S)]
    hooks = next(b["hooks"] for b in blocks if "hooks" in b)
    servers = next(b["mcpServers"] for b in blocks if "mcpServers" in b)
    return hooks, servers


def commands(hooks: dict) -> dict[str, str]:
    """Each hook event's command, as the config has it."""
    out = {}
    for event, entries in hooks.items():
        (entry,) = entries
        (h,) = entry["hooks"]
        assert h["type"] == "command" and h["timeout"] > 5, h
        out[event] = h["command"]
    return out


def vault_first(command: str) -> str:
    """The command with its `--vault V` moved before the subcommand (`vaultq --vault V hook ...`)."""
    words = shlex.split(command, posix=False)
    i = words.index("--vault")
    vault = words[i : i + 2]
    del words[i : i + 2]
    return " ".join([words[0], *vault, *words[1:]])


def hook_input(event: str, cwd: Path, **extra) -> str:
    return json.dumps({"session_id": "s-1", "cwd": str(cwd), "transcript_path": str(cwd / "t.jsonl"),
                       "hook_event_name": event, **extra})


EXTRA = {"SessionStart": {"source": "startup"},
         "UserPromptSubmit": {"prompt": "what is my sourdough starter feeding schedule"}}


@pytest.fixture
def home(tmp_path, short_dir):
    """A HOME with two vaults, ~/notes and ~/work, each served by its own daemon on its
    default socket (in a short XDG_RUNTIME_DIR), and the environment a hook runs in there."""
    home = tmp_path / "home"
    notes, work = home / "notes", home / "work"
    for v, title, body in ((notes, "Sourdough starter feeding schedule",
                            "Feed the sourdough starter twice a day: the feeding schedule is 8am and 8pm."),
                           (work, "Deploy runbook", "Deploy with the runbook: drain, deploy, check.")):
        v.mkdir(parents=True)
        (v / f"{title}.md").write_text(f"---\ntags: [active]\n---\n# {title}\n\n{body}\n")
    runtime = short_dir / "vaultd"
    runtime.mkdir(mode=0o700)
    daemons = [Daemon(v, tmp_path / f"state-{v.name}", runtime / f"{vault_name(v)}.sock",
                      ["--split", "off"]).start() for v in (notes, work)]
    env = {**os.environ, "HOME": str(home), "XDG_RUNTIME_DIR": str(short_dir),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("VAULTD_SOCKET", None)
    project = tmp_path / "project"  # where the agent works: in neither vault
    project.mkdir()
    yield {"notes": notes, "work": work, "env": env, "project": project, "daemons": daemons}
    for d in daemons:
        d.stop()


def run(command: str, event: str, home: dict, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(command, shell=True, capture_output=True, text=True, timeout=DEADLINE, cwd=home["project"],
                          env=home["env"],
                          input=hook_input(event, home["project"], **EXTRA[event]) if stdin is None else stdin)


def test_the_readme_s_hook_commands_ask_the_vault_they_name_before_or_after_the_subcommand(home):
    hooks, _ = readme_blocks()
    cmds = commands(hooks)
    assert set(cmds) == {"SessionStart", "UserPromptSubmit"}
    shipped = commands(json.loads((PLUGIN / "hooks" / "hooks.json").read_text())["hooks"])
    for event, cmd in cmds.items():  # the README's are the shipped ones, with the vault named
        assert cmd.replace(" --vault ~/notes", "") == shipped[event], (cmd, shipped[event])
    for which in ("notes", "work"):
        for form in (lambda c: c, vault_first):
            for event, cmd in cmds.items():
                cmd = form(cmd.replace("~/notes", f"~/{which}"))
                r = run(cmd, event, home)
                assert r.returncode == 0 and r.stderr == "", (cmd, r.returncode, r.stderr)
                if event == "SessionStart":  # it names the vault it is of
                    assert r.stdout.startswith(f"# vaultd: the working set of the notes vault {home[which]} "), \
                        (cmd, r.stdout)
                cited = HEADER.findall(r.stdout)
                assert all(p.startswith(f"{home[which]}/") for p, *_ in cited), (cmd, r.stdout)
                if which == "notes":
                    assert cited, (cmd, r.stdout)  # the prompt is answered by a note of ~/notes
                elif event == "UserPromptSubmit":
                    assert r.stdout == "", "~/work holds nothing about sourdough: nothing is added"


def test_the_main_readme_s_hook_commands_with_a_vault_named(home):
    """The manual's hooks for ~/.claude/settings.json (docs/agents.md), with `--vault ~/notes`
    added as it says."""
    text = (Path(__file__).parent.parent / "docs" / "agents.md").read_text()
    block = next(json.loads(b) for b in re.findall(r"```json\n(.*?)```", text, re.S) if '"UserPromptSubmit"' in b)
    assert "add `--vault ~/notes` to each command, before or after the" in " ".join(text.split())
    for event, cmd in commands(block["hooks"]).items():
        for named in (f"{cmd} --vault ~/notes", vault_first(f"{cmd} --vault ~/notes")):
            r = run(named, event, home)
            assert r.returncode == 0 and r.stderr == "" and HEADER.findall(r.stdout), (named, r.stderr)


WRONG = [
    ("vaultq hook prompt --vault", "expected one argument"),
    ("vaultq hook prompt --vault ~/notes --budget", "expected one argument"),
    ("vaultq hook prompt --vault ~/notes --budget lots", "invalid int value"),
    ("vaultq hook prompt --vault ~/notes --budget 10", "--budget must be at least 100"),
    ("vaultq hook prompt --vault ~/notes --unit furlongs", "invalid choice"),
    ("vaultq hook prompt --vault ~/notes --bogus", "unrecognized arguments: --bogus"),
    ("vaultq hook promt --vault ~/notes", "invalid choice: 'promt'"),
    ("vaultq hook --vault ~/notes", "required: event"),
    ("vaultq hook", "required: event"),
    ("vaultq --bogus hook prompt", "unrecognized arguments: --bogus"),
    ("vaultq --vault= hook prompt", "--vault needs a vault's name or folder"),
    ("vaultq hook prompt --vault ~/notes extra words", "unrecognized arguments: extra words"),
]


@pytest.mark.parametrize("cmd, why", WRONG)
def test_a_hook_with_wrong_arguments_exits_1_never_2(home, cmd, why):
    r = run(cmd, "UserPromptSubmit", home)
    assert r.returncode == 1 and why in r.stderr and r.stdout == "", (cmd, r.returncode, r.stderr)


def test_a_hook_that_cannot_answer_never_exits_2(home):
    cmds = commands(readme_blocks()[0])
    prompt = cmds["UserPromptSubmit"]
    cases = [  # (command, stdin, the exit code, what stderr says)
        (prompt, "not json", 1, "standard input is not JSON"),
        (prompt, hook_input("SessionStart", home["project"]), 1, "this is the input of a SessionStart hook"),
        (prompt.replace("~/notes", "~/nowhere"), None, 3, "no vaultd serves"),
        (vault_first(prompt).replace("~/notes", "elsewhere"), None, 3, "pick one with --vault"),
    ]
    for cmd, stdin, code, why in cases:
        r = run(cmd, "UserPromptSubmit", home, stdin)
        assert r.returncode == code and why in r.stderr, (cmd, r.returncode, r.stderr)


def test_the_readme_s_mcp_server_asks_the_vault_it_names(home):
    _, servers = readme_blocks()
    (server,) = servers.values()
    assert server["args"][0] == "mcp" and "--vault" in server["args"]

    async def steps():
        params = StdioServerParameters(command=server["command"], args=server["args"], cwd=str(home["project"]),
                                       env={**home["env"], "PYTHONPATH": os.pathsep.join(sys.path)})
        async with Client(params, read_timeout_seconds=DEADLINE) as c:
            return await c.call_tool("search", {"query": "sourdough"}), await c.call_tool("search", {"query": "deploy"})

    sourdough, deploy = asyncio.run(steps())
    assert not sourdough.is_error and sourdough.structured_content["hits"][0]["path"] == \
        str(home["notes"] / "Sourdough starter feeding schedule.md")
    assert not deploy.is_error and deploy.structured_content["hits"] == [], "~/work's notes are not ~/notes'"


def test_a_path_a_search_of_every_vault_gave_is_read_through_the_mcp_server_of_one(tmp_path, short_dir):
    """One daemon serving two vaults; `vaultd mcp --vault A` searches every vault, and reads
    the hit of B by the absolute path the search gave (and pins it, in B)."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "apples.md").write_text("# Apples\n\nApples in autumn.\n")
    (b / "quinces.md").write_text("# Quinces\n\nQuince jelly takes hours.\n")
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'vaults = ["{a}", "{b}"]\n[split]\nmode = "off"\n')
    d = Daemon(a, tmp_path / "state", short_dir / "d.sock")
    d.args = [sys.executable, "-m", "vaultd", "run", "--config", str(cfg), "--state-dir", str(tmp_path / "state"),
              "--socket", str(d.socket)]
    d.start()
    try:
        wait_for(lambda: all(v["reconciled"] for v in d.status()["vaults"]), interval=0.05)

        async def steps():
            params = StdioServerParameters(command=sys.executable, args=["-m", "vaultd", "mcp", "--socket",
                                                                         str(d.socket), "--vault", str(a)],
                                           env={"PYTHONPATH": os.pathsep.join(sys.path)})
            async with Client(params, read_timeout_seconds=DEADLINE) as c:
                one = await c.call_tool("search", {"query": "quince"})
                every = await c.call_tool("search", {"query": "quince", "all_vaults": True})
                path = every.structured_content["hits"][0]["path"]
                return one, path, await c.call_tool("read", {"note": path}), \
                    await c.call_tool("backlinks", {"note": path}), await c.read_resource(Path(path).as_uri())

        one, path, read, back, resource = asyncio.run(steps())
    finally:
        d.stop()
    assert one.structured_content["hits"] == [], "--vault a: a search of a alone"
    assert path == str(b / "quinces.md")
    assert not read.is_error and read.structured_content["path"] == path, read.content[0].text
    assert "Quince jelly takes hours." in read.content[0].text
    assert not back.is_error and back.structured_content["note"] == path
    assert resource.contents[0].text == (b / "quinces.md").read_text()
