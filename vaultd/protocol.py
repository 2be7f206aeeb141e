"""The wire protocol: one JSON object per line each way, validated with msgspec. The
envelope every request carries is here; each operation's own request type is in api.py.

    -> {"v":1, "id":7, "op":"search", "q":"memory tier", "limit":10}
    <- {"id":7, "ok":true, "result":{...}}
    <- {"id":7, "ok":false, "error":{"code":"bad_request", "message":"..."}}
"""

from __future__ import annotations

import re
from typing import Annotated, Union

import msgspec

from .errors import VaultdError, explain_validation

PROTOCOL_VERSION = 1
MAX_LINE = 1 << 20
"""Longest request line accepted, in bytes."""

Id = Union[int, str, None]


PathsMode = Annotated[str, msgspec.Meta(pattern="^(vault|absolute|/.*)$")]
VaultName = Annotated[str, msgspec.Meta(min_length=1, max_length=4096)]


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
    vault: VaultName | None = None
    """Which of the daemon's vaults (config `vaults`) is asked: its name or its folder. None:
    a search asks every vault; any other operation the vault that holds the note it names
    by an absolute path, else the first (see api.Vaults)."""


ENVELOPE = ("op", "v", "id", "paths", "agent", "vault")
"""Not an operation's own arguments: the faces set them (an MCP tool's schema leaves them out)."""


_encoder = msgspec.json.Encoder()


class _Envelope(msgspec.Struct):
    id: Id = None
    op: object = None
    v: object = None


class BadRequest(VaultdError):
    """A line that is not a valid request; carries the error code and the request id if any."""

    def __init__(self, code: str, message: str, id: Id = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.id = id


class Decoder:
    """Request lines decoded into the operations' request types (api.REQUESTS)."""

    def __init__(self, requests: tuple[type[Request], ...]):
        self._decoder = msgspec.json.Decoder(Union[requests])  # type: ignore[valid-type]
        self.ops = tuple(r.__struct_config__.tag for r in requests)

    def decode(self, line: bytes) -> Request:
        """Decode one request line, or raise BadRequest with a message a person can act on
        (a line nested deeper than the decoder goes: "too_deep", with its id when it has one)."""
        OPS = self.ops
        try:
            req = self._decoder.decode(line)
        except RecursionError:
            raise too_deep(line) from None
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
    except RecursionError:  # a field nested too deep for the decoder, skipped or not
        raise too_deep(line) from None


def too_deep(line: bytes) -> BadRequest:
    """The error for a line nested deeper than msgspec decodes (about 1,000 levels: it raises
    RecursionError), with the line's id when its top level has one (see shallow_id)."""
    return BadRequest("too_deep", "the request nests arrays or objects too deeply to be read "
                      "(no request needs more than a few levels)", shallow_id(line))


_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*+"?|[\[{]+|[\]}]+|[:,]')
"""JSON's strings, runs of opening or closing brackets, colons and commas: what shallow_id
needs to walk a line's top level without decoding what is nested in it. A string left open
runs to the end of the line (one pass over any line, however many quotes it holds)."""


SHALLOW_TOKENS = 400_000
"""shallow_id gives up after this many tokens (0.2 s on a laptop's core): a line of a
megabyte of `[],` is answered soon, without its id."""


def shallow_id(line: bytes) -> Id:
    """The "id" member of the JSON object `line`, found by walking its top level only, so
    that a line too deep to decode can be answered with its id; None when there is none,
    the line is not an object, or the id stands past SHALLOW_TOKENS tokens."""
    depth, key, value_at = 0, None, None
    for m, _ in zip(_TOKEN.finditer(line), range(SHALLOW_TOKENS)):
        t = m.group()
        if value_at is not None:  # the first token after `"id":` ends a number, or is the string
            raw = t if t[:1] == b'"' and not line[value_at:m.start()].strip() else line[value_at:m.start()]
            try:
                v = msgspec.json.decode(raw)
            except msgspec.DecodeError:
                return None
            return v if isinstance(v, (int, str)) and not isinstance(v, bool) else None
        if depth == 0 and (t != b"{" or line[:m.start()].strip()):
            return None  # not an object
        if t[:1] in (b"{", b"["):
            depth += len(t)
        elif t[:1] in (b"]", b"}"):
            depth -= len(t)
            if depth <= 0:
                return None
        elif depth == 1 and t[:1] == b'"':
            key = t
        elif depth == 1 and t == b":" and key == b'"id"':
            value_at = m.end()
        elif depth == 1 and t == b",":
            key = None
    return None


def _id(env: _Envelope) -> Id:
    return env.id if isinstance(env.id, (int, str)) else None


def ok(id: Id, result) -> bytes:
    return _encoder.encode({"id": id, "ok": True, "result": result}) + b"\n"


def error(id: Id, code: str, message: str) -> bytes:
    return _encoder.encode({"id": id, "ok": False, "error": {"code": code, "message": message}}) + b"\n"
