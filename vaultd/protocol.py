"""The wire protocol: one JSON object per line each way, validated with msgspec.

    -> {"v":1, "id":7, "op":"search", "q":"memory tier", "limit":10}
    <- {"id":7, "ok":true, "result":{...}}
    <- {"id":7, "ok":false, "error":{"code":"bad_request", "message":"..."}}
"""

from __future__ import annotations

import builtins
from typing import Annotated, Literal, Union

import msgspec

from .errors import explain_validation

PROTOCOL_VERSION = 1
MAX_LINE = 1 << 20
"""Longest request line accepted, in bytes."""

Id = Union[int, str, None]


PathsMode = Annotated[str, msgspec.Meta(pattern="^(vault|absolute|/.*)$")]


class Request(msgspec.Struct, tag_field="op", forbid_unknown_fields=True, kw_only=True):
    """Fields every request may carry besides its operation's own (see ENVELOPE)."""

    v: int = PROTOCOL_VERSION
    id: Id = None
    paths: PathsMode = "vault"
    """How the answer gives note paths: "vault" (relative to the vault), "absolute", or an
    absolute folder, the asker's: relative to it when it is inside the vault, else absolute
    (vaultq sends its current folder, a hook the agent's)."""
    agent: bool = False
    """An agent asks (the MCP server, a hook): what it reads is counted apart from a person's
    reads and does not make notes HOT (see tiers.agent_access_weight)."""


ENVELOPE = ("op", "v", "id", "paths", "agent")
"""Not an operation's own arguments: the faces set them (an MCP tool's schema leaves them out)."""


class Ping(Request, tag="ping"):
    """Whether the daemon answers, its version and its vault."""


class Status(Request, tag="status"):
    """What the daemon is doing: notes, links, pending changes, generation, whether the first index is still being built, the watch, the last error."""


Scope = Literal["auto", "warm", "all"]
"""auto: WARM, widened to COLD when WARM finds too little; warm: never COLD; all: everything."""
AfterGeneration = Annotated[int, msgspec.Meta(ge=0)] | None


Date = Annotated[str, msgspec.Meta(pattern=r"^[0-9]{4}(-[0-9]{1,2}(-[0-9]{2})?)?$",
                                    description="YYYY, YYYY-MM or YYYY-MM-DD")]
Filter = Annotated[str, msgspec.Meta(min_length=1, pattern='^[^"]+$')]


def _described(t, text: str):
    return Annotated[t, msgspec.Meta(description=text)]


class Search(Request, tag="search"):
    """Notes ranked for a query (BM25 over titles, aliases, headings, tags, folder names and text, then recency), each with its best lines: path, line and text."""

    q: _described(str, 'Words to look for. Also: "a phrase", +must, -without, tag:X, title:X, path:folder, '
                       "after:YYYY-MM-DD, before:YYYY-MM; typos are tolerated, Korean matches with its particles")
    limit: _described(Annotated[int, msgspec.Meta(ge=1, le=1000)], "At most this many notes") = 10
    tag: _described(list[Filter], "Only notes with these tags (as tag:X in the query)") = []
    path: _described(list[Filter], "Only notes under these folders, relative to the vault (as path:X)") = []
    after: _described(Date | None, "Only notes dated on or after this day (the Denote identifier, "
                                   "a date field, else the file's mtime)") = None
    before: _described(Date | None, "Only notes dated before this day") = None
    scope: _described(Scope, "auto: the archive (COLD notes) only when too little else matches; "
                             "warm: never the archive; all: everything") = "auto"
    snippets: _described(bool, "False: hits without their lines (null), a cheaper list of notes") = True
    after_generation: _described(AfterGeneration, "First wait (up to 10 s) until the index has committed this "
                                                  "generation and nothing is pending") = None

    def query(self) -> str:
        """`q` with the filters given as fields written into it, as the query language has them."""
        parts = [self.q] if self.q else []
        for op, vals in (("tag", self.tag), ("path", self.path), ("after", [self.after] if self.after else []),
                         ("before", [self.before] if self.before else [])):
            parts += [f'{op}:"{v}"' if " " in v else f"{op}:{v}" for v in vals]
        return " ".join(parts)


class Context(Request, tag="context"):
    """What an agent should read about a query, within a budget: the HOT notes' opening lines (at most a quarter of it; all of it with no query), then the best section of each top hit, then runners-up. Whole lines only, each item with its path and line range."""

    q: _described(str, "What it is about: words, as for search (empty: the HOT notes' openings only)")
    budget: _described(Annotated[int, msgspec.Meta(ge=1, le=10_000_000)], "At most this much, in `unit`") = 2000
    unit: _described(Literal["tokens", "bytes"], "What the budget counts: tokens (estimated: ASCII 3.5 "
                                                 "characters a token, Hangul/Han/Kana 1.3 tokens a character) "
                                                 "or bytes") = "tokens"
    scope: _described(Scope, "warm: never the archive (COLD notes); all: the archive too") = "warm"
    hot: _described(bool, "Begin with the HOT notes' openings (false: only what answers the query, for an "
                          "agent that has them already)") = True
    after_generation: _described(AfterGeneration, "First wait (up to 10 s) until the index has committed this "
                                                  "generation") = None


class Changes(Request, tag="changes"):
    """Notes added, changed, deleted and moved since an index generation (every answer carries the generation it reflects)."""

    since: _described(Annotated[int, msgspec.Meta(ge=0)], "A generation an earlier answer carried")


NoteName = Annotated[str, msgspec.Meta(min_length=1, max_length=4096, description=(
    "A note: its path (relative to the vault, or absolute), Denote identifier, Org ID, a name as written in a "
    "wikilink, or its title"))]


class Backlinks(Request, tag="backlinks"):
    """Links into a note, each with the file, line and the text of the line it stands on."""

    note: NoteName


class Links(Request, tag="links"):
    """Links out of a note: where each leads (path and line), or why it is broken."""

    note: NoteName


class Graph(Request, tag="graph"):
    """The notes around a note, both directions, up to `depth` links away."""

    note: NoteName
    depth: Annotated[int, msgspec.Meta(ge=1, le=5)] = 1


class Broken(Request, tag="broken"):
    """Every broken link in the vault, with the reason."""


class Orphans(Request, tag="orphans"):
    """Notes nothing links to and that link nowhere."""


class Tags(Request, tag="tags"):
    """Every tag, its count and the tags most often beside it."""


class Read(Request, tag="read"):
    """A note's text, or the lines of one section or range of it, with the line numbers it spans."""

    note: NoteName
    lines: _described(Annotated[list[Annotated[int, msgspec.Meta(ge=1)]], msgspec.Meta(min_length=2, max_length=2)]
                      | None, "Only lines [A, B] (1-based, inclusive; of the section, with `heading`)") = None
    heading: _described(str | None, "Only the section under this heading (its text, anchor or custom id)") = None


class Pin(Request, tag="pin"):
    """Keep a note in the HOT working set until unpinned."""

    note: NoteName


class Unpin(Request, tag="unpin"):
    """Stop pinning a note."""

    note: NoteName


class Pins(Request, tag="pins"):
    """The pinned notes."""


class Hot(Request, tag="hot"):
    """The HOT working set, best first, and why each note is in it (pinned, a hot tag, changed lately, read often)."""


class Recent(Request, tag="recent"):
    """Notes changed in the last days, newest first."""

    days: _described(Annotated[float, msgspec.Meta(gt=0)], "How many days back") = 7.0


class Split(Request, tag="split"):
    """One of: `note` (with `dry_run`), `list`, `history`, `all` (apply every proposal), or
    `undo` (op ids, newest first, with `force`; with `all` instead: every done op)."""

    note: NoteName | None = None
    dry_run: bool = False
    list: bool = False
    history: bool = False
    all: bool = False
    undo: str | builtins.list[str] | None = None  # `list` is a field here
    force: bool = False


REQUESTS = (Split, Ping, Status, Search, Context, Changes, Backlinks, Links, Graph, Broken, Orphans, Tags, Read, Pin, Unpin, Pins, Hot, Recent)
OPS = tuple(r.__struct_config__.tag for r in REQUESTS)
_decoder = msgspec.json.Decoder(Union[REQUESTS])  # type: ignore[valid-type]
_encoder = msgspec.json.Encoder()


class _Envelope(msgspec.Struct):
    id: Id = None
    op: object = None
    v: object = None


class BadRequest(Exception):
    """A line that is not a valid request; carries the error code and the request id if any."""

    def __init__(self, code: str, message: str, id: Id = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.id = id


def decode_request(line: bytes) -> Request:
    """Decode one request line, or raise BadRequest with a message a person can act on."""
    try:
        req = _decoder.decode(line)
    except msgspec.DecodeError as e:
        env = _envelope(line)
        if env is None:
            raise BadRequest("bad_json", f"not a JSON object: {e}") from None
        if not isinstance(env.op, str):
            raise BadRequest("bad_request", "missing \"op\": expected one of " + ", ".join(OPS), _id(env)) from None
        if env.op not in OPS:
            raise BadRequest("unknown_op", f"unknown op {env.op!r}: expected one of {', '.join(OPS)}", _id(env)) from None
        raise BadRequest("bad_request", explain_validation(str(e)), _id(env)) from None
    if req.v != PROTOCOL_VERSION:
        raise BadRequest("bad_version", f"protocol version {req.v} is not supported (this daemon speaks {PROTOCOL_VERSION})", req.id)
    return req


def _envelope(line: bytes) -> _Envelope | None:
    try:
        return msgspec.json.decode(line, type=_Envelope)
    except msgspec.DecodeError:
        return None


def _id(env: _Envelope) -> Id:
    return env.id if isinstance(env.id, (int, str)) else None


def ok(id: Id, result) -> bytes:
    return _encoder.encode({"id": id, "ok": True, "result": result}) + b"\n"


def error(id: Id, code: str, message: str) -> bytes:
    return _encoder.encode({"id": id, "ok": False, "error": {"code": code, "message": message}}) + b"\n"
