"""The operations are one table (vaultd/ops.py), and the README, the daemon, vaultq and the
MCP server all say the same of it: an operation added without its documentation (its
README line, its method's docstring) or without a method, request or reply fails here."""

import re
from pathlib import Path

import msgspec
import pytest

from vaultd import api, mcp, ops, protocol, vaultq

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_operations() -> list[tuple[str, list[str]]]:
    """The README's list of operations: (name, the fields it names), in its order."""
    text = README.read_text()
    block = re.search(r"<!-- operations[^\n]*-->\n(.*?)<!-- /operations -->", text, re.S)
    assert block, "the README has no list of operations (<!-- operations --> ... <!-- /operations -->)"
    items = re.split(r"^- ", block.group(1), flags=re.M)[1:]
    out = []
    for item in items:
        m = re.match(r"`(\w+)`( \((.*?)\))?:", " ".join(item.split()))
        assert m, f"a README operation line reads `name` (`field`, ...): what it does; not {item!r}"
        fields = re.findall(r"`(\w+)`", m.group(3) or "")
        out.append((m.group(1), fields))
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
                "grep": {"q": "x"}, "remember": {"text": "x"}}
    return required.get(op, {"note": "x"} if "note" in api.TABLE[op].request.__struct_fields__
                        and op != "split" else {})
