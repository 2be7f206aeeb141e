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


class Request(msgspec.Struct, tag_field="op", forbid_unknown_fields=True, kw_only=True):
    v: int = PROTOCOL_VERSION
    id: Id = None


class Ping(Request, tag="ping"):
    pass


class Status(Request, tag="status"):
    pass


Scope = Literal["auto", "warm", "all"]
"""auto: WARM, widened to COLD when WARM finds too little; warm: never COLD; all: everything."""
AfterGeneration = Annotated[int, msgspec.Meta(ge=0)] | None


class Search(Request, tag="search"):
    q: str
    limit: Annotated[int, msgspec.Meta(ge=1, le=1000)] = 10
    scope: Scope = "auto"
    snippets: bool = True
    """False: hits without snippets (null), for lists of paths; they cost most of a search."""
    after_generation: AfterGeneration = None
    """Wait (up to 10 s) until the index has committed this generation and nothing is pending."""


class Context(Request, tag="context"):
    q: str
    budget: Annotated[int, msgspec.Meta(ge=1, le=10_000_000)]
    unit: Literal["tokens", "bytes"] = "tokens"
    scope: Scope = "warm"
    after_generation: AfterGeneration = None


class Changes(Request, tag="changes"):
    since: Annotated[int, msgspec.Meta(ge=0)]


NoteName = Annotated[str, msgspec.Meta(min_length=1, max_length=4096)]


class Backlinks(Request, tag="backlinks"):
    note: NoteName


class Links(Request, tag="links"):
    note: NoteName


class Graph(Request, tag="graph"):
    note: NoteName
    depth: Annotated[int, msgspec.Meta(ge=1, le=5)] = 1


class Broken(Request, tag="broken"):
    pass


class Orphans(Request, tag="orphans"):
    pass


class Tags(Request, tag="tags"):
    pass


class Read(Request, tag="read"):
    note: NoteName
    lines: Annotated[list[Annotated[int, msgspec.Meta(ge=1)]], msgspec.Meta(min_length=2, max_length=2)] | None = None
    heading: str | None = None


class Pin(Request, tag="pin"):
    note: NoteName


class Unpin(Request, tag="unpin"):
    note: NoteName


class Pins(Request, tag="pins"):
    pass


class Hot(Request, tag="hot"):
    pass


class Recent(Request, tag="recent"):
    days: Annotated[float, msgspec.Meta(gt=0)] = 7.0


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
