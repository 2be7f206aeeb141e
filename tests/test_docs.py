"""The operations are one table (vaultd/ops.py), and the manual, the daemon, vaultq, the
MCP server and the Claude Code plugin all say the same of it: an operation added without
its documentation (its line in docs/operations.md, its method's docstring) or without a
method, request or reply fails here; so does a tool the docs, `vaultd mcp --help` or
plugin.json leave out or name wrong."""

import json
import re
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from vaultd import api, cli, mcp, ops, protocol, vaultq

ROOT = Path(__file__).resolve().parents[1]
OPERATIONS = ROOT / "docs" / "operations.md"
"""The page whose `<!-- operations -->` list documents every operation, one line each."""
AGENTS = ROOT / "docs" / "agents.md"
"""The page whose `<!-- mcp-tools -->` list names every MCP tool and its arguments."""
PLUGIN = ROOT / "integrations" / "claude-code" / ".claude-plugin" / "plugin.json"


def marked_list(page: Path, mark: str) -> list[str]:
    """The items of a page's `<!-- mark ... -->` ... `<!-- /mark -->` list, each on one line."""
    block = re.search(rf"<!-- {mark}[^\n]*-->\n(.*?)<!-- /{mark} -->", page.read_text(), re.S)
    assert block, f"{page.name} has no <!-- {mark} --> ... <!-- /{mark} --> list"
    return [" ".join(item.split()) for item in re.split(r"^- ", block.group(1), flags=re.M)[1:]]


def readme_operations() -> list[tuple[str, list[str]]]:
    """docs/operations.md's list of operations: (name, the fields it names), in its order."""
    out = []
    for item in marked_list(OPERATIONS, "operations"):
        m = re.match(r"`(\w+)`( \((.*?)\))?:", item)
        assert m, f"an operation's line reads `name` (`field`, ...): what it does; not {item!r}"
        fields = re.findall(r"`(\w+)`", m.group(3) or "")
        out.append((m.group(1), fields))
    return out


def docs_tools() -> list[tuple[str, list[str]]]:
    """docs/agents.md's list of MCP tools: (name, the arguments it names), in its order."""
    out = []
    for item in marked_list(AGENTS, "mcp-tools"):
        m = re.fullmatch(r"`(\w+)`(?: \(([\w, ]*)\))?", item)
        assert m, f"a tool's line reads `name` (argument, ...); not {item!r}"
        out.append((m.group(1), [a.strip() for a in (m.group(2) or "").split(",") if a.strip()]))
    return out


def test_the_readme_lists_every_operation_in_the_table_s_order():
    assert [name for name, _ in readme_operations()] == [op.name for op in ops.OPS]


def test_the_readme_names_each_operation_s_fields_and_no_others():
    for name, said in readme_operations():
        own = [f for f in api.TABLE[name].request.__struct_encode_fields__ if f not in protocol.ENVELOPE]
        assert set(said) == set(own), f"README's line for {name!r}: names {said}, its request has {own}"


def test_every_operation_has_a_request_a_reply_and_a_documented_method():
    assert list(api.TABLE) == [op.name for op in ops.OPS]
    for name, o in api.TABLE.items():
        assert o.request.__struct_config__.tag == name
        assert issubclass(o.reply, api.Reply)
        assert o.method is getattr(api.Operations, name)
        assert o.doc and o.method.__doc__.strip(), f"Operations.{name} has no docstring"


def test_a_row_without_a_method_or_a_method_without_a_docstring_is_refused(monkeypatch):
    with pytest.raises(TypeError, match="has no method"):
        api._bind(ops.Op("forget"))

    class Undocumented(api.Operations):
        @api.replies(api.PingReply)
        def ping(self, req: api.Ping) -> dict:
            return {}

    monkeypatch.setattr(api, "Operations", Undocumented)
    with pytest.raises(TypeError, match="no docstring"):
        api._bind(ops.BY_NAME["ping"])


def test_the_faces_are_read_from_the_table():
    decodes = {type(api.decode_request(msgspec.json.encode({"op": op.name, **_minimal(op.name)}))) for op in ops.OPS}
    assert decodes == set(api.REQUESTS)
    assert vaultq.COMMANDS == tuple(op.name for op in ops.OPS if op.cli) + ("hook", "completion", "man")
    assert mcp.TOOLS == tuple(op.name for op in ops.OPS if op.tool)
    assert set(mcp.REQUEST_TYPES) == set(mcp.TOOLS) | {op.name for op in ops.OPS if not op.tool}
    for name in mcp.TOOLS:
        assert mcp.description(name) == api.TABLE[name].doc


def test_vaultq_s_arguments_name_request_fields():
    """Each command's arguments (ops.py) are its request's fields, but for the options of
    vaultq's own output and the few vaultq reads its own way (search's words are `q`)."""
    own_way = {"json", "format", "null", "query", "all"}
    for op in ops.OPS:
        if not op.cli:
            continue
        fields = set(api.TABLE[op.name].request.__struct_fields__)
        for flags, options in op.cli.args:
            dest = options.get("dest") or flags[-1].lstrip("-").replace("-", "_")
            assert dest in fields or dest in own_way, f"vaultq {op.name} {flags[-1]}: no field {dest!r}"


def _minimal(op: str) -> dict:
    """The least a request of `op` must carry."""
    required = {"search": {"q": "x"}, "context": {"q": "x"}, "changes": {"since": 0}, "resolve": {"link": "x"},
                "grep": {"q": "x"}, "remember": {"text": "x"}, "rename": {"note": "x", "title": "x"}}
    return required.get(op, {"note": "x"} if "note" in api.TABLE[op].request.__struct_fields__
                        and op != "split" else {})


TOOLS = [op.name for op in ops.OPS if op.tool]
"""The MCP tools: the rows of the table marked tool=True, in its order."""


def test_the_docs_list_every_mcp_tool_with_its_arguments():
    assert [name for name, _ in docs_tools()] == TOOLS == list(mcp.TOOLS)
    for name, args in docs_tools():
        assert args == list(mcp.input_schema(name)["properties"]), f"docs/agents.md's line for the tool {name!r}"


def test_vaultd_mcp_help_names_every_tool():
    out = subprocess.run([sys.executable, "-m", "vaultd", "mcp", "--help"], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    said = re.search(r"\(tools ([\w, ]+);", " ".join(out.split()))
    assert said, out
    assert said.group(1).split(", ") == TOOLS
    assert cli.MCP_HELP in " ".join(out.split())


def test_the_plugin_s_description_names_every_tool():
    description = json.loads(PLUGIN.read_text())["description"]
    said = re.search(r"MCP tools \(([\w, ]+)\)", description)
    assert said, description
    assert said.group(1).split(", ") == TOOLS, "integrations/claude-code/.claude-plugin/plugin.json"


def test_a_tool_left_out_of_a_list_is_seen(monkeypatch):
    """The checks above read the table: a new tool row makes each list short by one."""
    monkeypatch.setattr(ops, "OPS", (*ops.OPS, ops.Op("forget", tool=True)))
    assert [op.name for op in ops.OPS if op.tool] != [name for name, _ in docs_tools()]
