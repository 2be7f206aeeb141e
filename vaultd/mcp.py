"""`vaultd mcp`: an MCP server on stdin/stdout over the running daemon's operations, for agents.

A face like vaultq, built on the official MCP SDK's low-level server. Each tool is an
operation (the rows of ops.OPS marked `tool`): its description is its method's docstring
and its input schema its request type's (api.py; `msgspec.json.schema`, less the envelope
fields the face sets itself), its arguments are checked by decoding them into that type,
and its answer is the daemon's own, asked with `paths: "absolute"` and `agent: true`: the
same data as structured content (less the note text the text gives: see `structured`), and
as text that cites every line as `path:line` and says how to ask for the rest of a paged
answer. So an operation becomes a tool by `tool=True` in its row (a text form in TEXT reads
better than the JSON fallback).

The tool list is fixed (`listChanged` false): `remember` is listed whether or not the user
turned capture on, and answers "remember is off ..." (how to turn it on) while it is off. A
list that changed with the daemon's config would change under clients that read it once (most
do), and would change when the daemon is down or restarted with another config; a model that
sees the tool, with a description saying it is off unless the user turned it on, and an answer
that says so, can tell the user, where a tool that vanished says nothing.

The daemon is found as vaultq finds it (--socket, $VAULTD_SOCKET, --vault, the vault
around the current folder, the only one running), afresh at each call: when it is down a
tool answers an error that says how to start it, and works again once it runs. Notes are
resources too: `file://` URIs of their absolute paths (the HOT and recent notes listed,
any note read through the template).
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import re
import typing
from functools import cache
from types import UnionType
from urllib.parse import unquote, urlsplit

import anyio
import mcp_types as types
import msgspec
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from . import __version__, api, client, ops, protocol
from .client import RequestFailed
from .errors import DaemonUnavailable, explain_validation
from .paths import pick_socket
from .render import changes, context_item, still_indexing, where

logger = logging.getLogger("vaultd.mcp")

TOOLS = tuple(op.name for op in ops.OPS if op.tool)
"""The operations an agent gets as tools, by name (split is not one; rename, asked for by
name and undone by the user with `vaultq undo`, is)."""

WRITES = frozenset(op.name for op in ops.OPS if op.tool and op.writes)
"""Tools that change something: the state file's pins; remember, the capture note (and
only when the user turned capture on); rename, the note's name and the links to it."""

RENAMED = {"q": "query"}
"""Request fields whose name in a tool's arguments says more to a model."""

INSTRUCTIONS = """\
vaultd indexes the user's notes vault (Markdown, Org, Denote, Obsidian) and answers in milliseconds.
Use `context` to load what the notes say about a topic within a token budget, `search` to find notes
(ranked, with their best lines), `read` for a note's exact lines or one section, `backlinks`/`links`
to follow the link graph, `hot` and `recent` for what the user works on now, and `changes` to see
what changed since an earlier answer's generation. Every path is absolute and every cited line is
path:line, so you can open the file itself. Reading here never changes a note. Every answer is
bounded (read: a token budget, cut at a whole line; lists: a count): when there is more, it says
`more: true` and how to ask for the rest (read's `lines`, a list's `offset`). `remember` keeps a
short fact for later sessions (when the user turned capture on); it is not written when the notes
already hold it, and the answer says where. `rename` renames a note (or a heading) when the user asks,
and rewrites every link to it (the user undoes it with the `vaultq undo` the answer gives)."""

REQUEST_TYPES = {name: o.request for name, o in api.TABLE.items()}


class BadArguments(ValueError):
    """A tool's arguments that its request type does not accept."""


@cache
def input_schema(op: str) -> dict:
    """The JSON schema of `op`'s arguments: its request type's, less the envelope (the face
    sets `paths` and `agent`; `v`, `id` and `op` are the wire's), fields renamed as RENAMED."""
    rtype = REQUEST_TYPES[op]
    full = msgspec.json.schema(rtype)
    defs = dict(full.get("$defs", {}))
    own = defs.pop(rtype.__name__)
    props = {RENAMED.get(k, k): v for k, v in own["properties"].items() if k not in protocol.ENVELOPE}
    required = [RENAMED.get(k, k) for k in own.get("required", ()) if k not in protocol.ENVELOPE]
    schema: dict = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        schema["required"] = required
    if defs:
        schema["$defs"] = defs
    return schema


@cache
def description(op: str) -> str:
    """What the tool does: its method's docstring (api.py)."""
    return api.TABLE[op].doc


def tools() -> list[types.Tool]:
    """The tools: always the same (see the module's docstring: `remember` too, which answers
    that capture is off while it is)."""
    return [
        types.Tool(
            name=op,
            description=description(op),
            input_schema=input_schema(op),
            annotations=types.ToolAnnotations(read_only_hint=op not in WRITES, destructive_hint=False,
                                              idempotent_hint=True, open_world_hint=False),
        )
        for op in TOOLS
    ]


def _clean(v):
    """Strings as UTF-8 can carry them: a lone surrogate (valid JSON, `\ud800`) becomes
    U+FFFD (it could not be sent to the daemon, and the call was never answered)."""
    if isinstance(v, str):
        return v.encode("utf-8", "replace").decode("utf-8")
    if isinstance(v, list):
        return [_clean(x) for x in v]
    if isinstance(v, dict):
        return {_clean(k): _clean(x) for k, x in v.items()}
    return v


def _surrogate(v) -> bool:
    if isinstance(v, str):
        return any("\ud800" <= ch <= "\udfff" for ch in v)
    if isinstance(v, dict):
        return any(_surrogate(k) or _surrogate(x) for k, x in v.items())
    return isinstance(v, list) and any(map(_surrogate, v))


_RANGE = re.compile(r"\s*(\d+)\s*(?:[:-]\s*(\d+)\s*)?")
"""A line range given as one string: `2:5`, `2-5`, or `7` for one line."""


@cache
def _lists(op: str) -> frozenset[str]:
    """The fields of `op`'s request that take a list."""
    def bare(t):  # Annotated[X, ...] and X | None are X
        if typing.get_origin(t) in (typing.Annotated, typing.Union, UnionType):
            return bare(next(a for a in typing.get_args(t) if a is not type(None)))
        return t
    return frozenset(f.name for f in msgspec.structs.fields(REQUEST_TYPES[op]) if typing.get_origin(bare(f.type)) is list)


def request_args(op: str, arguments: dict | None) -> dict:
    """The daemon's arguments for tool `op` called with `arguments`, checked against the
    request type (BadArguments says what is wrong, in the tool's own names); the envelope
    (absolute paths, an agent's) is the Daemon's."""
    back = {v: k for k, v in RENAMED.items()}
    for k in arguments or ():
        if k in protocol.ENVELOPE or k in RENAMED:  # the face's to set, or known by its tool name only
            raise BadArguments(f"unknown argument {k!r}")
    if op in WRITES and _surrogate(arguments):  # a write is made of what was sent, or not at all
        raise BadArguments("a string holds a lone surrogate (not valid Unicode): nothing was written")
    args = {back.get(k, k): _clean(v) for k, v in (arguments or {}).items()}
    for k in _lists(op) & args.keys() if op not in WRITES else ():  # "tag": "x" for ["x"]: agents often send
        if isinstance(args[k], str):  # one filter so (a write takes only what it says it takes)
            args[k] = [args[k]]
    if isinstance(args.get("lines"), list) and len(args["lines"]) == 1 and isinstance(args["lines"][0], str):
        if not (m := _RANGE.fullmatch(args["lines"][0])):  # "2:5" (as vaultq's --lines), "2-5", "7" (one line)
            raise BadArguments(f'lines: expected [A, B], "A:B", "A-B" or "A", got {args["lines"][0]!r}')
        args["lines"] = [int(m[1]), int(m[2] or m[1])]
    try:
        # a read takes "3" for 3 and "true" for true, as agents often send them; a write only what it says
        req = msgspec.convert(args, type=REQUEST_TYPES[op], strict=op in WRITES)
    except msgspec.ValidationError as e:
        msg = explain_validation(str(e)).replace("`", "")
        for old, new in RENAMED.items():
            msg = msg.replace(f"field {old}", f"field {new}")
            if msg.startswith(f"{old}:"):
                msg = new + msg[len(old):]
        raise BadArguments(msg) from None
    given = {name: getattr(req, f) for f, name in zip(req.__struct_fields__, req.__struct_encode_fields__)
             if f not in protocol.ENVELOPE}  # as the wire names them (resolve's `from`)
    return msgspec.to_builtins(given)


ASKER = "MCP server"
"""How the daemon's errors name this face (errors.said)."""


class Daemon:
    """The running vaultd as the MCP server asks it (client.Daemon): found as vaultq finds it,
    afresh at each call (it may be restarted between calls), one request per connection, with
    absolute paths and as an agent, of the vault --vault names unless the agent asks every
    vault."""

    def __init__(self, socket: str | None = None, vault: str | None = None):
        self.vault = vault
        self.daemon = client.Daemon(lambda folder: pick_socket(socket, vault, folder), timeout=60.0,
                                    paths="absolute", agent=True)

    def ask(self, op: str, args: dict) -> dict:
        """The daemon's answer; DaemonUnavailable or RequestFailed."""
        vault = None
        if self.vault and not args.get("all_vaults"):
            vault = os.path.realpath(self.vault) if os.path.isdir(self.vault) else self.vault
        with self.daemon.session(vault=vault) as s:
            return s.request(op, **args)

    async def ask_async(self, op: str, args: dict | None = None) -> dict:
        return await anyio.to_thread.run_sync(self.ask, op, args or {})


# -- text forms: what a model reads; every line a note gives cites path:line ----------


def _search(res: dict) -> str:
    out = []
    for hit in res["hits"]:
        tags = f"  [{', '.join(hit['tags'])}]" if hit["tags"] else ""
        out.append(f"{hit['path']}  {hit['title']}{tags}")
        out += [f"{hit['path']}:{s['line']}: {s['text']}" for s in hit["snippets"] or ()]
        out.append("")
    if not res["hits"]:
        return f"No note matches {res['query']!r}."
    about = "about " if res.get("total_estimated") else ""
    out.append(f"{len(res['hits'])} of {about}{res['total']} notes (generation {res['generation']})")
    return "\n".join(out)


def _context(res: dict) -> str:
    if not res["items"]:
        return f"Nothing in the vault answers {res['query']!r} within {res['budget']} {res['unit']}."
    return "".join(context_item(it) for it in res["items"]) + \
        f"({res['used']} of {res['budget']} {res['unit']}; generation {res['generation']})"


def _read(res: dict) -> str:
    cut = (f"\n(the file is over the size cap: only its first {res['total_lines']} lines were read)"
           if res.get("truncated") else "")
    if res.get("line_cut"):
        cut += (f"\n(line {res['line_cut']} is longer alone than the budget: only its first part is shown; a bigger "
                "`budget` shows all of it)")
    if res.get("more"):
        a, b = res["next"]
        cut += (f"\n(cut after line {res['last']} of {res['total_lines']} to stay within the budget: call read with "
                f"lines [{a}, {b}] and the same note and heading for the rest, or a bigger `budget`)")
    return f"## {res['path']}:{res['first']}-{res['last']} {res['title']}\n{res['text']}{cut}"


def _more(res: dict, what: str) -> str:
    """The line that says which part of a paged answer this is, and how to ask for the rest."""
    if not res.get("more"):
        return ""
    return (f"\n({res['next'] - res['offset']} of {res['total']} {what} shown, from offset {res['offset']}: call "
            f"again with offset {res['next']} for the next ones)")


def _backlinks(res: dict) -> str:
    head = f"{res['total']} links into {res['note']} ({res['title']})"
    return "\n".join([head] + [f"{b['path']}:{b['line']}:{b['byte_col']}: {b.get('text', b['raw']).strip()}"
                               for b in res["backlinks"]]) + _more(res, "links")


def _links(res: dict) -> str:
    head = f"{res['total']} links out of {res['note']} ({res['title']})"
    return "\n".join([head] + [f"{res['note']}:{ln['line']}:{ln['byte_col']}: {ln['raw']} -> {where(ln)}"
                               for ln in res["links"]]) + _more(res, "links")


def _resolve(res: dict) -> str:
    if res["path"]:
        at = f":{res['line']}" if res["line"] else ""
        where = f"{res['title']} > {res['heading']}" if res["heading"] else res["title"]
        return f"{res['link']} -> {res['path']}{at} ({where})"
    if res["broken"]:
        also = "".join(f"\n  {c}" for c in res["candidates"])
        return f"{res['link']} -> BROKEN ({res['broken']}){also}"
    return f"{res['link']} -> {res['target']} (not a note)"


def _listing(key: str, empty: str):
    def text(res: dict) -> str:
        lines = []
        for it in res[key]:
            if "why" in it:
                extra = f"  ({', '.join(it['why'])})"
            elif "mtime" in it:
                extra = f"  (changed {datetime.datetime.fromtimestamp(it['mtime']):%Y-%m-%d %H:%M})"
            else:
                extra = ""
            lines.append(f"{it['path']}  {it['title']}{extra}")
        return ("\n".join(lines) or empty) + _more(res, "notes")
    return text


def _changes(res: dict) -> str:
    reset, rows, now = changes(res)
    return "\n".join(([reset] if reset else []) + rows + [now]) + _more(res, "paths") + (
        " (the same `since` for every page; then ask changes since this generation)" if res.get("more") else "")


def _pin(res: dict) -> str:
    done = "pinned" if res["pinned"] else "unpinned"
    return f"{done} {res['path']}" if res["changed"] else f"{res['path']} was already {done}"


def _remember(res: dict) -> str:
    where = f"{res['path']}:{res['first']}-{res['last']}"
    if res["written"]:
        made = " (a new capture note)" if res["created"] else ""
        sup = res.get("supersedes")
        was = f" It supersedes {sup['path']}:{sup['first']}-{sup['last']} (a {sup['value']} changed)." if sup else ""
        return (f"Remembered: {where}{made}, entry {res['heading']}; the user can undo it with "
                f"`vaultq undo {res['op']}` (generation {res['generation']}).{was}")
    if res.get("seen"):
        return (f"Already remembered: {where} (entry {res['heading']}); counted, seen {res['seen']} times now "
                f"(undo: `vaultq undo {res['op']}`).")
    section = f"section “{res['heading']}”" if res["heading"] else "its opening"
    return (f"Not written: the vault already holds this. {where} ({section}) has {res['overlap']:.0%} of its "
            "keywords; read it there, or remember only what is new (call remember again with force: true to "
            "write it anyway, e.g. a correction).")


def _rename(res: dict) -> str:
    if res["dry_run"]:
        return f"Nothing written (dry run). The rename would write {len(res['files'])} files:\n\n{res['diff']}"
    what = f"the heading on line {res['heading']} of {res['note']}" if res["heading"] is not None else \
        f"{res['note']} to {res['to']}"
    return (f"Renamed {what}: {res['rewritten']} links rewritten ({res['relabeled']} labels followed the title) in "
            f"{len(res['files'])} files: {', '.join(res['files'])}. The user can undo it with "
            f"`vaultq undo {res['op']}`.")


def _status(res: dict) -> str:
    keys = ("vault", "notes", "links", "broken", "pending", "generation", "indexing", "graph", "writer", "last_error",
            "version", "pid", "socket", "uptime_s")
    return "\n".join(f"{k}: {res[k]}" for k in keys if k in res)


TEXT = {"search": _search, "context": _context, "read": _read, "backlinks": _backlinks, "links": _links,
        "hot": _listing("hot", "Nothing is HOT."), "recent": _listing("recent", "No note changed in that time."),
        "changes": _changes, "pin": _pin, "unpin": _pin, "status": _status, "resolve": _resolve,
        "remember": _remember, "rename": _rename}
"""Each tool's answer as text; any other operation's reads as its JSON."""


def text_of(op: str, res: dict) -> str:
    form = TEXT.get(op)
    text = form(res) if form else json.dumps(res, ensure_ascii=False, indent=1)
    return f"Note: {still_indexing(res)}. Ask again in a moment.\n\n{text}" if res.get("indexing") else text


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


async def call(daemon: Daemon, op: str, arguments: dict | None, client: str | None = None) -> types.CallToolResult:
    """Tool `op` called: the daemon's answer as text and as structured content, or an error a
    model can act on (bad arguments, no such note, the daemon down and how to start it).
    `client`: the MCP client's name, the source of what it remembers unless it says one."""
    if op not in TOOLS:
        return _error(f"unknown tool {op!r}: the tools are {', '.join(TOOLS)}")
    try:
        args = request_args(op, arguments)
    except BadArguments as e:
        return _error(f"bad arguments for {op}: {e}")
    if op == "remember" and args.get("source") is None:
        plain = " ".join(re.sub(r"[^\w .@/:-]+", " ", client or "").split())[:200]  # a name, inert in the note
        args["source"] = plain or "an MCP client"
    try:
        res = await daemon.ask_async(op, args)
    except DaemonUnavailable as e:
        return _error(str(e))
    except RequestFailed as e:
        return _error(e.said(ASKER))
    except Exception as e:  # every call is answered: an exception here left the client waiting for good
        return _error(f"internal: {type(e).__name__}: {e}")
    return types.CallToolResult(content=[types.TextContent(text=text_of(op, res))], structured_content=structured(res))


def structured(res: dict) -> dict:
    """An answer as structured content: all of it but the note text the text content gives
    whole (read's `text`, each context item's), which would double the answer: its
    provenance (path, lines) and paging stay."""
    res = {k: v for k, v in res.items() if k != "text"}
    if isinstance(res.get("items"), list):
        res["items"] = [{k: v for k, v in it.items() if k != "text"} for it in res["items"]]
    return res


# -- resources: notes as file:// URIs ---------------------------------------------------

MIME = {".md": "text/markdown", ".org": "text/x-org"}


def _uri(path: str) -> str:
    from pathlib import PurePosixPath

    return PurePosixPath(path).as_uri()


def _mime(path: str) -> str:
    return MIME.get(os.path.splitext(path)[1], "text/plain")


async def list_resources(daemon: Daemon) -> types.ListResourcesResult:
    """The working set: the HOT notes and those changed in the last week."""
    try:
        hot = (await daemon.ask_async("hot"))["hot"]
        recent = (await daemon.ask_async("recent"))["recent"]
    except (DaemonUnavailable, RequestFailed) as e:
        raise MCPError(types.INTERNAL_ERROR, str(e)) from None
    seen: dict[str, types.Resource] = {}
    for it, why in [(h, "HOT: " + ", ".join(h["why"])) for h in hot] + [(r, "changed lately") for r in recent]:
        if it["path"] not in seen:
            seen[it["path"]] = types.Resource(uri=_uri(it["path"]), name=it["path"], title=it["title"],
                                              description=why, mime_type=_mime(it["path"]))
    return types.ListResourcesResult(resources=list(seen.values()))


TEMPLATE = types.ResourceTemplate(uri_template="file://{+path}", name="note",
                                  description="Any note of the vault, by its absolute path")


async def read_resource(daemon: Daemon, uri: str) -> types.ReadResourceResult:
    parts = urlsplit(uri)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
        raise MCPError(types.INVALID_PARAMS, f"unknown resource {uri!r}: notes are file:// URIs of absolute paths")
    try:
        res = await daemon.ask_async("read", {"note": unquote(parts.path)})
    except DaemonUnavailable as e:
        raise MCPError(types.INTERNAL_ERROR, str(e)) from None
    except RequestFailed as e:
        raise MCPError(types.INVALID_PARAMS, e.message, {"uri": uri}) from None
    text = res["text"]
    if res["more"]:  # bounded as the read tool is: said at its end
        a, b = res["next"]
        text += (f"\n\n(vaultd: cut after line {res['last']} of {res['total_lines']} to stay within "
                 f"{ops.READ_BUDGET} tokens; the read tool with lines [{a}, {b}] "
                 "gives the rest)")
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, text=text, mime_type=_mime(res["path"]))])


# -- lines the transport could not read ---------------------------------------------------


def unread_id(exc: Exception) -> types.RequestId | None:
    """The id of the line the stdio transport could not read, from its error (pydantic's,
    whose `input` is the line itself when it is not JSON it reads, too deep among them, or
    the decoded object when it is not a JSON-RPC message); None when it shows none."""
    errors = exc.errors() if callable(getattr(exc, "errors", None)) else ()
    for err in errors:
        given = err.get("input")
        if isinstance(given, str):
            found = protocol.shallow_id(given.encode("utf-8", "replace"))
        elif isinstance(given, dict) and err.get("type") == "missing":  # the message itself
            found = given.get("id")
        else:
            continue
        if isinstance(found, (int, str)) and not isinstance(found, bool):
            return found
    return None


def unread_error(exc: Exception) -> types.JSONRPCError:
    """The answer to a line the transport could not read (JSON-RPC: a parse error, or an
    invalid request), with the line's id when it shows (see unread_id), else null."""
    errors = exc.errors() if callable(getattr(exc, "errors", None)) else []
    first = errors[0] if errors else {}
    if first.get("type") == "json_invalid":
        why = (first.get("ctx") or {}).get("error", "")
        deep = " (arguments nest at most about 200 levels deep here)" if "recursion" in why else ""
        error = types.ErrorData(code=types.PARSE_ERROR,
                                message=f"the message is not JSON this server reads: {why}{deep}")
    else:
        error = types.ErrorData(code=types.INVALID_REQUEST, message="not a JSON-RPC request, notification or response")
    return types.JSONRPCError(jsonrpc="2.0", id=unread_id(exc), error=error)


class AnswerUnread:
    """The transport's read stream, less the lines it could not read: each is answered at
    once on `write` (see unread_error), where the SDK drops it (logged at debug) and its
    caller waited for good; the session goes on with the next line."""

    def __init__(self, read, write):
        self._read, self._write = read, write

    @property
    def last_context(self):
        """The sender's context of the message last received (the SDK reads it)."""
        return getattr(self._read, "last_context", None)

    async def receive(self):
        while True:
            item = await self._read.receive()
            if not isinstance(item, Exception):
                return item
            answer = unread_error(item)
            logger.warning("a line read was answered with an error: %s", answer.error.message)
            await self._write.send(SessionMessage(answer))

    def __aiter__(self):
        return self

    async def __anext__(self):
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._read.aclose()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()


# -- the server --------------------------------------------------------------------------


def build(socket: str | None = None, vault: str | None = None) -> Server:
    """The MCP server over the daemon found by `socket`/`vault` (see pick_socket)."""
    daemon = Daemon(socket, vault)

    async def on_list_tools(ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools())

    async def on_call_tool(ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        info = getattr(getattr(ctx.session, "client_params", None), "client_info", None)
        return await call(daemon, params.name, params.arguments, getattr(info, "name", None))

    async def on_list_resources(ctx, params) -> types.ListResourcesResult:
        return await list_resources(daemon)

    async def on_list_resource_templates(ctx, params) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[TEMPLATE])

    async def on_read_resource(ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        return await read_resource(daemon, params.uri)

    return Server("vaultd", version=__version__, instructions=INSTRUCTIONS,
                  get_tool_input_schema=lambda name: input_schema(name) if name in TOOLS else None,
                  on_list_tools=on_list_tools, on_call_tool=on_call_tool, on_list_resources=on_list_resources,
                  on_list_resource_templates=on_list_resource_templates, on_read_resource=on_read_resource)


def run(socket: str | None = None, vault: str | None = None) -> None:
    """Serve MCP on stdin/stdout until the client closes it."""
    server = build(socket, vault)

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(AnswerUnread(read, write), write, server.create_initialization_options())

    anyio.run(serve)
