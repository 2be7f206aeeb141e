"""The operations: one typed request, one typed reply and one method each.

Like supervisor's rpcinterface: this is the one place an operation is defined, apart
from any transport. The table of operations is ops.OPS (plain data, which vaultq reads
too); here each row is bound to its method on Operations, whose `req` annotation is its
request type and whose @replies(...) its reply type. TABLE is that binding, checked at
import: a row without a method, request or reply, or a method without a docstring, stops
the daemon before it starts (and tests/test_docs.py says which). The faces are
translations of it: the socket (server.py: decode, `Operations.answer`, encode), vaultq
(its commands from ops.OPS), the MCP server (its tools' schemas from the request types,
their descriptions from the methods' docstrings).

Adding an operation: a row in ops.OPS, and here a request type tagged with its name, a
reply type, and a method named after it (plus its line in docs/operations.md, which the tests
ask for).
"""

from __future__ import annotations

import builtins
import inspect
import itertools
import os
import re
import typing
from typing import Annotated, Literal

import msgspec
from msgspec import UNSET, UnsetType

from . import __version__, ops
from .errors import QueryError, UnknownVault, VaultMissing
from .paths import show_paths, shown
from .render import context_item, cost
from .protocol import Decoder, Request

if typing.TYPE_CHECKING:
    from .ingest.indexer import Indexer
    from .vault import Vault


# -- requests: each operation's arguments (the envelope, v/id/paths/agent, is protocol.Request's)


class Ping(Request, tag="ping"):
    """No arguments."""


class Status(Request, tag="status"):
    """No arguments."""


Scope = Literal["auto", "warm", "all"]
"""auto: WARM, widened to COLD when WARM finds too little; warm: never COLD; all: everything."""
AfterGeneration = Annotated[int, msgspec.Meta(ge=0)] | None


Date = Annotated[str, msgspec.Meta(pattern=r"^[0-9]{4}(-[0-9]{1,2}(-[0-9]{2})?)?$",
                                    description="YYYY, YYYY-MM or YYYY-MM-DD")]
Filter = Annotated[str, msgspec.Meta(min_length=1, pattern='^[^"]+$')]


def _described(t, text: str):
    return Annotated[t, msgspec.Meta(description=text)]


def _limit(op: str, what: str):
    """A paged operation's `limit` (default ops.LIMITS[op], at most ops.MOST)."""
    return _described(Annotated[int, msgspec.Meta(ge=1, le=ops.MOST)],
                      f"At most this many {what} (default {ops.LIMITS[op]}); when there are more, the answer says "
                      "`more: true` and the `offset` to ask for them (`next`)")


Offset = _described(Annotated[int, msgspec.Meta(ge=0)], "Skip this many: the `next` of the answer before (0: from "
                                                       "the first)")


class Search(Request, tag="search"):
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
    explain: _described(bool, "True: each hit with the parts of its score (lexical, and `signals`: each "
                               "ranking signal's factor in it, by name; semantic, its best "
                               "section and the weight, with semantic recall on: null and 0 where "
                               "the query's words all match, which then rank alone)") = False
    after_generation: _described(AfterGeneration, "First wait (up to 10 s) until the index has committed this "
                                                  "generation and nothing is pending") = None
    all_vaults: _described(bool, "Search every vault the daemon serves (config `vaults`): one list, each hit "
                                 "with its `vault`. What a search that names no `vault` does anyway; given, "
                                 "a `vault` too is refused") = False

    def query(self) -> str:
        """`q` with the filters given as fields written into it, as the query language has them."""
        parts = [self.q] if self.q else []
        for op, vals in (("tag", self.tag), ("path", self.path), ("after", [self.after] if self.after else []),
                         ("before", [self.before] if self.before else [])):
            parts += [f'{op}:"{v}"' if " " in v else f"{op}:{v}" for v in vals]
        return " ".join(parts)


class Grep(Request, tag="grep"):
    q: _described(Annotated[str, msgspec.Meta(min_length=1)],
                  'Words, each literal text ("a phrase": one word); the lines that hold every one')
    tag: _described(list[Filter], "Only notes with these tags") = []
    path: _described(list[Filter], "Only notes under these folders, relative to the vault") = []
    after: _described(Date | None, "Only notes dated on or after this day") = None
    before: _described(Date | None, "Only notes dated before this day") = None
    case_sensitive: _described(bool, "Case matters (by default it is ignored, as rg -i)") = False
    word: _described(bool, "Whole words only (as rg -w): no word character either side") = False
    limit: _limit("grep", "rows") = ops.LIMITS["grep"]
    offset: Offset = 0


class ListNotes(Request, tag="list"):
    tag: _described(list[Filter], "Only notes with every one of these tags") = []
    path: _described(list[Filter], "Only notes under these folders, relative to the vault (or whose path "
                                   "starts so: journal/2025)") = []
    headings: _described(bool, "Each note with its headings (level, text, line, anchor)") = False
    limit: _limit("list", "notes") = ops.LIMITS["list"]
    offset: Offset = 0


class Resolve(Request, tag="resolve"):
    link: _described(Annotated[str, msgspec.Meta(min_length=1, max_length=65536)],
                     "A link as written in a note ([[Note#Heading]], ![[embed]], [text](x.md#a), [[file:x.org::*H]], "
                     "[[id:UUID]], denote:ID, ...) or a note name as a wikilink would say it (Note#Heading); with "
                     "`col`, a line of text holding the link")
    from_: _described(NoteName | None, "The note the link is written in (a note name or a path, one the vault "
                                       "does not hold yet too): relative links, names and [[#Heading]] are read "
                                       "from there; else from the vault's top") = msgspec.field(default=None,
                                                                                                  name="from")
    col: _described(Annotated[int, msgspec.Meta(ge=1)] | None,
                    "`link` is a line of text: resolve the link at this 1-based character column of it") = None


class Mentions(Request, tag="mentions"):
    text: _described(Annotated[str, msgspec.Meta(max_length=65536)],
                     "A line of text (an editor's line at its cursor)") = ""
    col: _described(Annotated[int, msgspec.Meta(ge=1)] | None,
                    "The cursor: only the mentions that hold the character at this 1-based column of `text`") = None
    end_col: _described(Annotated[int, msgspec.Meta(ge=1)] | None,
                        "With `col`, a selection: the text from `col` to this column (end exclusive), when it is "
                        "a note's name") = None
    from_: _described(NoteName | None, "The note the text is written in (its path): its own name is no mention "
                                       "of another") = msgspec.field(default=None, name="from")
    limit: _described(Annotated[int, msgspec.Meta(ge=1, le=100)], "At most this many mentions (default 5)") = 5


class Context(Request, tag="context"):
    q: _described(str, "What it is about: words, as for search (empty: the HOT notes' openings only)")
    budget: _described(Annotated[int, msgspec.Meta(ge=1, le=10_000_000)], "At most this much, in `unit`") = 2000
    unit: _described(Literal["tokens", "bytes"], "What the budget counts: tokens (estimated: ASCII 3.5 "
                                                 "characters a token, Hangul/Han/Kana 1.3 tokens a character) "
                                                 "or bytes") = "tokens"
    scope: _described(Scope, "warm: never the archive (COLD notes); all: the archive too") = "warm"
    hot: _described(bool | None, "Begin with the HOT notes' openings. Default: only for a `q` with no words (with "
                                 "words, only what answers it: a HOT note the query earns comes as a hit; an agent "
                                 "has the working set from its session start)") = None
    explain: _described(bool, "True: each item says why it passed (`explain`: the share of the query's weighed "
                              "words its section holds, the threshold `[context] min_evidence`, the words held "
                              "and lacking, those that weigh nothing), in its `why` too") = False
    after_generation: _described(AfterGeneration, "First wait (up to 10 s) until the index has committed this "
                                                  "generation") = None


class Changes(Request, tag="changes"):
    since: _described(Annotated[int, msgspec.Meta(ge=0)], "A generation an earlier answer carried")
    limit: _limit("changes", "paths (added, then changed, deleted and moved)") = ops.LIMITS["changes"]
    offset: Offset = 0


NoteName = Annotated[str, msgspec.Meta(min_length=1, max_length=4096, description=(
    "A note: its path (relative to the vault, or absolute), Denote identifier, Org ID, a name as written in a "
    "wikilink, or its title"))]


class Backlinks(Request, tag="backlinks"):
    note: NoteName
    limit: _limit("backlinks", "links") = ops.LIMITS["backlinks"]
    offset: Offset = 0


class Links(Request, tag="links"):
    note: NoteName
    limit: _limit("links", "links") = ops.LIMITS["links"]
    offset: Offset = 0


class Graph(Request, tag="graph"):
    note: NoteName
    depth: Annotated[int, msgspec.Meta(ge=1, le=5)] = 1
    limit: _limit("graph", "notes (each with the edges that leave it)") = ops.LIMITS["graph"]
    offset: Offset = 0


class Broken(Request, tag="broken"):
    """No arguments."""


class Orphans(Request, tag="orphans"):
    """No arguments."""


class Problems(Request, tag="problems"):
    """No arguments."""


class Tags(Request, tag="tags"):
    limit: _limit("tags", "tags") = ops.LIMITS["tags"]
    offset: Offset = 0


class Read(Request, tag="read"):
    note: NoteName
    lines: _described(Annotated[list[Annotated[int, msgspec.Meta(ge=1)]], msgspec.Meta(min_length=2, max_length=2)]
                      | None, "Only lines [A, B] (1-based, inclusive; of the section, with `heading`)") = None
    heading: _described(str | None, "Only the section under this heading (its text, anchor or custom id)") = None
    budget: _described(Annotated[int, msgspec.Meta(ge=1, le=1 << 31)],
                       f"At most this much text, in `unit` (default {ops.READ_BUDGET}): a longer text is cut at a "
                       "whole line, and the answer's `next` says the `lines` to ask for the rest") = ops.READ_BUDGET
    unit: _described(Literal["tokens", "bytes"], "What the budget counts: tokens (estimated, as for context) or "
                                                 "bytes") = "tokens"


class Pin(Request, tag="pin"):
    note: NoteName


class Unpin(Request, tag="unpin"):
    note: NoteName


class Pins(Request, tag="pins"):
    """No arguments."""


class Hot(Request, tag="hot"):
    limit: _limit("hot", "notes") = ops.LIMITS["hot"]
    offset: Offset = 0


class Recent(Request, tag="recent"):
    days: _described(Annotated[float, msgspec.Meta(gt=0)], "How many days back") = 7.0
    limit: _limit("recent", "notes") = ops.LIMITS["recent"]
    offset: Offset = 0


class Split(Request, tag="split"):
    note: NoteName | None = None
    dry_run: bool = False
    list: bool = False
    history: bool = False
    all: bool = False
    undo: str | builtins.list[str] | None = None  # `list` is a field here
    force: bool = False


class Rename(Request, tag="rename"):
    note: NoteName
    title: _described(Annotated[str, msgspec.Meta(min_length=1, max_length=4096)],
                      "The note's new title (with `line`: the heading's new text)")
    line: _described(Annotated[int, msgspec.Meta(ge=1)] | None,
                     "Rename the heading on this line (1-based) of the note instead of the note") = None
    dry_run: _described(bool, "Only say what would change, with a diff of every file; write nothing") = False
    check_editors: _described(bool, "Refuse while an editor's lock or swap file says it holds a file the rename "
                                    "writes (false: the caller checked its own buffers)") = True
    diff_max: _described(Annotated[int, msgspec.Meta(ge=0, le=64 << 20)],
                         "With `dry_run`: the diff cut after this many characters, at a whole line "
                         "(`diff_cut` then says how many were left out)") = ops.DIFF_MAX
    files_max: _described(Annotated[int, msgspec.Meta(ge=1, le=ops.MOST)],
                          "At most this many of the files written are named (`files_total` then says how "
                          "many there are)") = ops.LIMITS["links"]


class History(Request, tag="history"):
    """No arguments."""


class Undo(Request, tag="undo"):
    ops: builtins.list[Annotated[str, msgspec.Meta(min_length=1, max_length=64)]] = []
    all: bool = False
    force: bool = False


class Remember(Request, tag="remember"):
    text: _described(str, "What to remember: a fact, a decision, a preference, in a few lines (at most 64 KB of "
                          "UTF-8). Not written when one section of the vault already holds 80% of its keywords (an "
                          "entry remembered before is counted instead); one that changes a value (a number, a day, a "
                          "name, a negation) of what the vault holds supersedes it")
    tags: _described(list[str], "Tags of the entry, each one word of letters, digits and _ (at most 16)") = []
    source: _described(str | None, "Who remembers it: the agent's or client's name (the MCP server gives its "
                                   "client's)") = None
    session: _described(str | None, "The agent's session id, when it has one") = None
    force: _described(bool, "Write it even when a section of the vault already holds its keywords (a "
                            "correction the dedup took for the same fact)") = False


# -- replies: each operation's answer ----------------------------------------------------
# Nested items stay dicts (their keys are the parts' own: snippets, links, context items);
# every top-level key is declared, and one a type lacks is an error (forbid_unknown_fields),
# so a reply never drifts from its type unseen.


class Reply(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """What every answer may carry: until the first index is built, `indexing` and how far it
    is (`progress`: files read, files to read, null while the vault is listed)."""

    indexing: bool | UnsetType = UNSET
    progress: dict | UnsetType = UNSET


class PingReply(Reply):
    pong: bool
    version: str
    vault: str
    vaults: list[str]


class StatusReply(Reply):
    version: str
    vault: str
    state_dir: str
    notes: int
    generation: int
    parsed: int
    reconciled: bool
    problems: int
    links: int | None
    broken: int | None
    graph: str
    writer: bool
    split_mode: str
    writer_why: str | None
    """Why this vaultd does not write into the vault (null when it does): the config names
    another host (`[split] host`), or another vaultd of this machine holds the writer lock."""
    capture: str | None
    index_rebuilt: str | None
    uptime_s: float
    pid: int
    socket: str
    pending: int
    last_error: str | None
    watch: dict
    name: str
    vaults: list[dict]
    semantic: dict | None = None
    """Semantic recall, when on: its models, notes embedded, notes pending, its last error."""


class SearchReply(Reply):
    """Of several vaults: `vault` is the first vault's, `generation` its generation, and
    `vaults` says each vault's (name, vault: its folder, total, generation); each hit has
    its `vault` (name)."""

    query: str
    vault: str
    total: int
    total_estimated: bool
    """Whether `total` is estimated: for a phrase whose words most notes hold, checked only
    in the notes its words rank best (see docs/performance.md)."""
    took_ms: float
    cold: bool
    generation: int
    hits: list[dict]
    caught_up: bool | UnsetType = UNSET
    vaults: list[dict] | UnsetType = UNSET


class Page(Reply):
    """A paged answer: `total` items in all, these from `offset` on; `more` when some are left
    past them, and `next` the `offset` that asks for them (null: none left)."""

    total: int
    offset: int
    more: bool
    next: int | None


class GrepReply(Reply):
    """Of several vaults: each row has its `vault` (name), and `vaults` says each vault's
    (name, vault: its folder, total, generation). `total`: the rows given (`notes`: the notes
    they are in); `more` (and `truncated`, its older name) when rows are left past them, from
    `next` on (an `offset`)."""

    query: str
    words: list[str]
    total: int
    notes: int
    truncated: bool
    offset: int
    more: bool
    next: int | None
    took_ms: float
    generation: int
    matches: list[dict]
    vaults: list[dict] | UnsetType = UNSET


class ListReply(Page):
    notes: list[dict]


class ResolveReply(Reply):
    """Where a link leads: `path` (null: broken, or not a note: a URL, an attachment), `line` of
    its heading or block (null: the note as a whole), `heading` (that line's heading text);
    else `broken` (why) and, when ambiguous, the `candidates`. `col` and `end_col` are 1-based
    character columns of the link in the text asked about, end exclusive."""

    link: str
    col: int
    end_col: int
    kind: str
    target: str
    anchor: str
    from_: str | None = msgspec.field(name="from")
    vault: str
    path: str | None
    title: str | None
    line: int | None
    heading: str | None
    broken: str | None
    candidates: list[str]
    url: str | None


class MentionsReply(Reply):
    """Each mention: `col` and `end_col` (1-based characters of `text`, end exclusive), the
    `text` written there, the note it names (`path`, `title`, Denote `id`), and `alias` when
    it names the note by that alias; longest first. `more`: there were more than `limit`."""

    mentions: list[dict]
    more: bool
    from_: str | None = msgspec.field(name="from")


class ContextReply(Reply):
    """Of several vaults: each item has its `vault` (name), and `vaults` says each vault's
    (name, vault: its folder, generation)."""

    query: str
    budget: int
    unit: str
    used: int | float
    generation: int
    items: list[dict]
    caught_up: bool | UnsetType = UNSET
    vaults: list[dict] | UnsetType = UNSET


class ChangesReply(Page):
    """The paths in one list, paged: `added`, then `changed`, `deleted` and `moved` (each
    sorted); a page gives its part of each."""

    generation: int
    since: int
    reset: bool
    added: list[str]
    changed: list[str]
    deleted: list[str]
    moved: list[list[str]]


class BacklinksReply(Page):
    note: str
    title: str
    backlinks: list[dict]


class LinksReply(Page):
    note: str
    title: str
    links: list[dict]


class GraphReply(Page):
    """`nodes` paged (`total` of them), each page with the `edges` that leave its nodes."""

    note: str
    depth: int
    nodes: list[dict]
    edges: list[list[str]]


class BrokenReply(Reply):
    total: int
    broken: list[dict]


class OrphansReply(Reply):
    orphans: list[dict]


class ProblemsReply(Reply):
    problems: list[dict]


class TagsReply(Page):
    tags: list[dict]


class ReadReply(Reply):
    """Lines `first`-`last` of the note (`total_lines`). `more`: the text asked for was cut
    at a whole line to stay within the budget, and `next` is the `lines` to ask (with the same
    `heading`, if any) for the rest; `line_cut`: a line longer alone than the budget, given in
    part (its first characters). `truncated`: the file is over the size cap."""

    path: str
    title: str
    first: int
    last: int
    total_lines: int
    truncated: bool
    more: bool
    next: list[int] | None
    line_cut: int | None
    text: str


class PinReply(Reply):
    path: str
    pinned: bool
    changed: bool


class PinsReply(Reply):
    pins: list[dict]


class HotReply(Page):
    hot: list[dict]


class RecentReply(Page):
    days: float
    recent: list[dict]


class SplitReply(Reply):
    """One of five answers, as the request asked: `list` (threshold .. growing), `history`,
    `undo` (op, undone, restored), `all` (split, skipped), or a note's split (note .. op)."""

    threshold: int | UnsetType = UNSET
    warn: int | UnsetType = UNSET
    mode: str | UnsetType = UNSET
    over: list[dict] | UnsetType = UNSET
    cannot: list[dict] | UnsetType = UNSET
    growing: list[dict] | UnsetType = UNSET
    history: list[dict] | UnsetType = UNSET
    op: str | None | UnsetType = UNSET
    undone: list[str] | UnsetType = UNSET
    restored: list[str] | UnsetType = UNSET
    split: list[dict] | UnsetType = UNSET
    skipped: list[dict] | UnsetType = UNSET
    note: str | UnsetType = UNSET
    parts: list[str] | UnsetType = UNSET
    rewritten: int | UnsetType = UNSET
    oversized: list | UnsetType = UNSET
    files: list[str] | UnsetType = UNSET
    dry_run: bool | UnsetType = UNSET
    diff: str | UnsetType = UNSET


class RenameReply(Reply):
    """`note` (its path before) is at `to` (the same for a heading, on line `heading`);
    `rewritten` links written anew to lead there, `relabeled` of them whose label said the old
    title; `files`: every file written (or that would be); `op`: the journal's operation
    (undone by `undo`), or with `dry_run`, `diff` instead."""

    note: str
    to: str
    heading: int | None
    rewritten: int
    relabeled: int
    files: list[str]
    dry_run: bool
    op: str | UnsetType = UNSET
    diff: str | UnsetType = UNSET
    diff_cut: int | UnsetType = UNSET
    files_total: int | UnsetType = UNSET


def capped_diff(answer: dict, limit: int) -> dict:
    """`answer` with its `diff` cut after `limit` characters, at a whole line, and `diff_cut`
    saying how many were left out (an answer's size is bounded: a rename's preview of a note
    a thousand notes link to ran to megabytes)."""
    diff = answer.get("diff")
    if diff is None or len(diff) <= limit:
        return answer
    cut = diff.rfind("\n", 0, limit) + 1
    return {**answer, "diff": diff[:cut], "diff_cut": len(diff) - cut}


class HistoryReply(Reply):
    """`history`: each journaled write, newest first (op, kind, time, note, status, parts,
    rewritten, oversized; a rename's to, heading, relabeled; reason, events, entry when held)."""

    history: list[dict]


class UndoReply(Reply):
    """`undone`: the ops undone, newest first (`op`: the one, when one); `restored`: the files
    put back."""

    op: str | None
    undone: list[str]
    restored: list[str]


class RememberReply(Reply):
    """`written`: the entry is at `path`:`first`-`last` under `heading`, undone by `op`
    (`vaultq undo OP`); `created`: the capture note is new; `supersedes`: the entry
    or section it changes a value of (path, first, last, heading, `value`: number, day,
    name or negation), marked superseded when it is an entry remembered before. Not
    `written`: the section at `path`:`first`-`last` (`heading`, null for a note's opening)
    holds `overlap` of its keywords; when it is an entry remembered before, it is counted:
    `seen` times now, undone by `op`. `generation`: the index holds the answer's state from
    there on."""

    written: bool
    path: str
    first: int
    last: int
    heading: str | None
    overlap: float | None
    op: str | None
    created: bool
    generation: int
    seen: int | None = None
    supersedes: dict | None = None


def replies(reply: type[Reply]):
    """Marks a method's reply type: its answer (a dict, as the daemon's parts give it) is
    converted to it by Operations.answer."""
    def mark(method):
        method.reply = reply
        return method
    return mark


# -- the operations --------------------------------------------------------------------


class Operations:
    """One method per operation, each taking its request and giving its answer. Built by the
    server over the vault and the indexer; `answer` is what the socket calls."""

    def __init__(self, vault: Vault, indexer: Indexer, socket: str, name: str = "", every: Vaults | None = None):
        self.vault = vault
        self.indexer = indexer
        self.socket = socket
        self.name = name or vault.root.name
        """The vault's name in requests and answers (see paths.vault_labels)."""
        self.every = every
        """All the daemon's vaults (status lists them); None: this one alone."""

    def answer(self, req: Request) -> Reply:
        """The operation's answer as its reply type (see `result`). Raises QueryError for a
        request it cannot answer."""
        return msgspec.convert(self.result(req), TABLE[req.__struct_config__.tag].reply)

    def result(self, req: Request) -> dict:
        """The operation's answer, its note paths as the request asks (`paths`), and while the
        first index is being built, saying so (`indexing`, `progress`)."""
        v = self.vault
        res = TABLE[req.__struct_config__.tag].method(self, req)
        show = shown(str(v.root), req.paths)
        if show is not None and not isinstance(req, Context):  # context shows its own (it counts them)
            res = show_paths(res, show)
        if v.indexing:
            res = {**res, "indexing": True, "progress": v.indexing_progress()}
        return res

    def _waited(self, generation: int | None, answer) -> dict:
        """`answer()` after waiting for `generation`; with `caught_up` when one was asked for
        (false: the wait ran out, and the answer is of the index as it stands)."""
        caught_up = self.indexer.catch_up(generation)
        res = answer()
        return res if generation is None else {**res, "caught_up": caught_up}

    @replies(PingReply)
    def ping(self, req: Ping) -> dict:
        """Whether the daemon answers, its version and its vault (`vaults`: every vault it serves)."""
        every = self.every.served if self.every else (self,)
        return {"pong": True, "version": __version__, "vault": str(self.vault.root),
                "vaults": [str(o.vault.root) for o in every]}

    @replies(StatusReply)
    def status(self, req: Status) -> dict:
        """What the daemon is doing: notes, links, pending changes, generation, whether the first index is
        still being built, the watch, the last error."""
        return {
            **self.vault.status(),
            "pid": os.getpid(),
            "socket": self.socket,
            "pending": self.indexer.pending,
            "last_error": self.indexer.last_error,
            "watch": self.indexer.watcher.health(),
            "name": self.name,
            "vaults": [o.summary() for o in (self.every.served if self.every else (self,))]
            + [{"name": n, "vault": c.vault, "notes": 0, "pending": 0, "generation": None, "reconciled": False,
                "indexing": False, "waiting": True} for n, c in list(self.every.waiting.items() if self.every else ())],
        }

    def summary(self) -> dict:
        """This vault in a line of `status`: name, folder (`vault`), notes, pending, generation, whether
        its first reconcile is done, whether its first index is being built."""
        v = self.vault
        return {"name": self.name, "vault": str(v.root), "notes": len(v.notes), "pending": self.indexer.pending,
                "generation": v.generation, "reconciled": v.reconciled, "indexing": v.indexing, "waiting": False}

    @replies(SearchReply)
    def search(self, req: Search) -> dict:
        """Notes ranked for a query (BM25 over titles, aliases, headings, tags, folder names and text, then
        recency), each with its best lines: path, line and text."""
        searcher = self.vault.searcher
        return self._waited(req.after_generation, lambda: searcher.search(req.query(), req.limit, req.scope,
                                                                           req.snippets, req.explain))

    @replies(GrepReply)
    def grep(self, req: Grep) -> dict:
        """Every occurrence of the words on every line that holds all of them, in every note the filters keep
        (the archive too): path, line, col (characters), byte_col (bytes, as rg) and the line. Words are
        literal and match inside longer words (`word`: whole words only); case is ignored unless
        `case_sensitive`; lines end at LF. For one word, the lines `rg --vimgrep -i WORD` gives."""
        return self.vault.grepper.grep(req.q, req.tag, req.path, req.after, req.before, req.case_sensitive,
                                       req.word, req.limit, req.offset)

    @replies(ListReply)
    def list(self, req: ListNotes) -> dict:
        """Every note, by path (those with these tags, under these folders): its title, aliases, Denote
        identifier, tags and date; with `headings`, its headings. Paged: `limit` notes from `offset`."""
        res = self.vault.working_set.note_list(req.tag, req.path, req.headings)
        notes, fields = page(res["notes"], req.offset, req.limit)
        return {**fields, "notes": notes}

    @replies(ResolveReply)
    def resolve(self, req: Resolve) -> dict:
        """Where a link leads, as the link graph resolves it: the note (path, title), the line of the heading
        or block it points into, or why it is broken (with the candidates of an ambiguous name). The link is
        read as written in the `from` note, or at the cursor `col` of a line of text."""
        return {**self.vault.link_graph.resolve(req.link, req.from_, req.col), "vault": str(self.vault.root)}

    @replies(MentionsReply)
    def mentions(self, req: Mentions) -> dict:
        """Plain mentions of notes' titles and aliases in a line of text, for an editor to make links of: runs
        of whole words (a Korean word's particle aside) equal to a name, case and spacing aside, each with
        the note it names; those that hold the cursor `col` (a name of one word: at least 3 characters),
        longest first, or the selection `col`..`end_col` when it is a name; never the `from` note's own. One
        look-up per run of words around the cursor, however big the vault."""
        return self.vault.titles.mentions(req.text, req.col, req.end_col, req.from_, req.limit)

    @replies(ContextReply)
    def context(self, req: Context) -> dict:
        """What an agent should read about a query, within a budget: with no query, the HOT notes' opening
        lines; with one, the best section of each top hit, then runners-up, each only if it holds enough of
        the query's weighed words (`[context] min_evidence`): nothing when none does. Whole lines only, each
        item with its path and line range; comments and image-only lines elided, and marked so."""
        v = self.vault
        show = shown(str(v.root), req.paths)
        return self._waited(req.after_generation,
                            lambda: v.working_set.context(req.q, req.budget, req.unit, req.scope, show=show,
                                                          with_hot=req.hot, explain=req.explain))

    @replies(ReadReply)
    def read(self, req: Read) -> dict:
        """A note's text, or the lines of one section or range of it, with the line numbers it spans, within a
        budget: a longer text is cut at a whole line (`more`), and `next` is the `lines` to ask for the rest."""
        return self.vault.working_set.read(req.note, tuple(req.lines) if req.lines else None, req.heading,
                                           agent=req.agent, budget=req.budget, unit=req.unit)

    @replies(BacklinksReply)
    def backlinks(self, req: Backlinks) -> dict:
        """Links into a note, each with the file, line and the text of the line it stands on; paged: `limit`
        links from `offset`."""
        res = self.vault.link_graph.backlinks(req.note, slice(req.offset, req.offset + req.limit))
        return {**res, **_page_fields(res.pop("total"), req.offset, len(res["backlinks"]))}

    @replies(LinksReply)
    def links(self, req: Links) -> dict:
        """Links out of a note: where each leads (path and line), or why it is broken; paged: `limit` links
        from `offset`."""
        res = self.vault.link_graph.links(req.note, slice(req.offset, req.offset + req.limit))
        return {**res, **_page_fields(res.pop("total"), req.offset, len(res["links"]))}

    @replies(GraphReply)
    def graph(self, req: Graph) -> dict:
        """The notes around a note, both directions, up to `depth` links away; paged: `limit` notes from
        `offset`, each page with the edges that leave its notes."""
        res = self.vault.link_graph.neighbourhood(req.note, req.depth)
        nodes, fields = page(res["nodes"], req.offset, req.limit)
        at = {n["path"]: i for i, n in enumerate(res["nodes"])}
        end = req.offset + len(nodes)
        edges = [e for e in res["edges"] if req.offset <= at.get(e[0], 0) < end]
        return {**res, **fields, "nodes": nodes, "edges": edges}

    @replies(HotReply)
    def hot(self, req: Hot) -> dict:
        """The HOT working set, best first, and why each note is in it (pinned, a hot tag, changed lately, read
        often); paged: `limit` notes from `offset`."""
        hot, fields = page(self.vault.working_set.hot()["hot"], req.offset, req.limit)
        return {**fields, "hot": hot}

    @replies(RecentReply)
    def recent(self, req: Recent) -> dict:
        """Notes changed in the last days, newest first; paged: `limit` notes from `offset`."""
        res = self.vault.working_set.recent(req.days)
        recent, fields = page(res["recent"], req.offset, req.limit)
        return {**res, **fields, "recent": recent}

    @replies(ChangesReply)
    def changes(self, req: Changes) -> dict:
        """Notes added, changed, deleted and moved since an index generation (every answer carries the
        generation it reflects); paged: `limit` paths from `offset`, of the added, then the changed, deleted
        and moved (ask every page with the same `since`, then changes since the first page's generation)."""
        res = self.vault.ingest.changes(req.since)
        kinds = ("added", "changed", "deleted", "moved")
        got, fields = page([(k, p) for k in kinds for p in res[k]], req.offset, req.limit)
        return {**res, **fields, **{k: [p for kind, p in got if kind == k] for k in kinds}}

    @replies(PinReply)
    def pin(self, req: Pin) -> dict:
        """Keep a note in the HOT working set until unpinned."""
        return self.vault.working_set.pin(req.note, True)

    @replies(PinReply)
    def unpin(self, req: Unpin) -> dict:
        """Stop pinning a note."""
        return self.vault.working_set.pin(req.note, False)

    @replies(PinsReply)
    def pins(self, req: Pins) -> dict:
        """The pinned notes."""
        return self.vault.working_set.pins()

    @replies(BrokenReply)
    def broken(self, req: Broken) -> dict:
        """Every broken link in the vault, with the reason."""
        return self.vault.link_graph.broken()

    @replies(OrphansReply)
    def orphans(self, req: Orphans) -> dict:
        """Notes nothing links to and that link nowhere."""
        return self.vault.link_graph.orphans()

    @replies(ProblemsReply)
    def problems(self, req: Problems) -> dict:
        """Every note indexed with a problem (bad front matter, not UTF-8, binary, past the size cap...),
        every sync tool's conflict copy of a note (Syncthing, Dropbox, Nextcloud, Obsidian Sync, git
        mergetool; `conflict_of`: the note it is a copy of), and every note file that could not be read
        (title null: not indexed): its path, title and each problem, as `status` counts them."""
        notes, unreadable = self.vault.notes, dict(self.vault.unreadable)
        copies = self.vault.conflict_copies()
        found = []
        for p in notes:
            if notes[p].problems or p in copies:
                row = {"path": p, "title": notes[p].title, "problems": list(notes[p].problems)}
                if (c := copies.get(p)) is not None:
                    row["problems"].append(c.problem(c.of in notes))
                    row["conflict_of"] = c.of
                found.append(row)
        found += [{"path": p, "title": None, "problems": [why]} for p, why in unreadable.items() if p not in notes]
        return {"problems": sorted(found, key=lambda x: x["path"])}

    @replies(TagsReply)
    def tags(self, req: Tags) -> dict:
        """Every tag, its count and the tags most often beside it, most used first; paged: `limit` tags from
        `offset`."""
        tags, fields = page(self.vault.link_graph.tags()["tags"], req.offset, req.limit)
        return {**fields, "tags": tags}

    @replies(SplitReply)
    def split(self, req: Split) -> dict:
        """One of: `note` (with `dry_run`), `list`, `history`, `all` (apply every proposal), or
        `undo` (op ids, newest first, with `force`; with `all` instead: every done split)."""
        splits = self.vault.splits
        if req.dry_run and (not req.note or req.list or req.history or req.all or req.undo is not None):
            # never a preview that writes: it previews one note's split, and nothing else
            raise QueryError("dry_run previews the split of one note (give `note` alone); `list` shows every "
                             "proposal `all` would split, `history` what each op did")
        if req.list:
            return splits.split_candidates()
        history = self.vault.history  # history and undo: the history job's, as `history` and `undo`
        if req.history:
            return history.split_history()
        if req.undo or (req.undo is not None and req.all):
            return history.undo(req.undo, req.force, every=req.all)
        if req.all:
            return splits.split_all()
        if req.note:
            return splits.split_note(req.note, req.dry_run)
        raise QueryError("split: give a note, or list, history, all or undo")

    @replies(RenameReply)
    def rename(self, req: Rename) -> dict:
        """Rename a note: title it `title`, and rewrite every link to it in the vault, each in its own syntax
        (Markdown, wiki, Org, Denote), the label a link's writer gave kept (one that said the old title says the
        new one). A Denote note keeps its identifier, signature and keywords: the title part of its file name and
        its title keyword change, as `denote-rename-file` does; another note is named by its new title beside
        itself. With `line`: the heading on that line is renamed, and every `#heading`/`::*heading` link into it
        rewritten. Checked before the first byte (every link still leads where it led), journaled and undoable
        (`undo` with its `op`); with `dry_run`, the diff and nothing written. A refusal says why and changes
        nothing."""
        renamer = self.vault.renamer
        if req.line is None:
            done = renamer.rename(req.note, req.title, req.dry_run, req.check_editors)
        else:
            done = renamer.rename_heading(req.note, req.line, req.title, req.dry_run, req.check_editors)
        if len(done["files"]) > req.files_max:
            done = {**done, "files": done["files"][: req.files_max], "files_total": len(done["files"])}
        return capped_diff(done, req.diff_max)

    @replies(HistoryReply)
    def history(self, req: History) -> dict:
        """Every write vaultd journaled into the vault (splits, stale saves' repairs, remembered entries,
        renames), newest first: its op (what `undo` takes), kind, time, note, status, and what it made or
        rewrote."""
        return self.vault.history.history()

    @replies(UndoReply)
    def undo(self, req: Undo) -> dict:
        """Undo journaled writes, newest first, all or nothing: `ops`, or with `all` every split and rename
        still done (the entries `remember` wrote are undone one by one, by their op). A split's or rename's
        files are put back byte for byte; a remembered entry is taken out. Refused when a file changed since
        (`force`: undone all the same, what it replaces kept in the journal)."""
        if req.all and req.ops:
            raise QueryError("undo: give `ops` or `all`, not both")
        return self.vault.history.undo(req.ops, req.force, every=req.all)

    @replies(RememberReply)
    def remember(self, req: Remember) -> dict:
        """Keep a short fact for later sessions: append it to today's capture note in the vault (or under the
        heading a `[[capture.route]]` rule names), unless one section of the vault already holds 80% of its
        keywords (then nothing new is written, and the answer names that section: path, lines, heading; an entry
        remembered before is counted, `seen`; `force` writes it all the same). An entry that changes a value of
        one (a number, a day, a name, a negation) supersedes it: the older entry is marked, and search shows it
        after the newer one. Each entry carries its time, source, session and tags. Off unless the user set
        `[capture] folder`; the user undoes an entry (and what it marked) with `vaultq undo OP`. The
        entry is searchable when the answer comes."""
        return self.vault.capture.remember(req.text, req.tags, req.source, req.session, req.force)


# -- several vaults: which one a request is for ------------------------------------------


class Vaults:
    """The vaults one daemon serves (config `vaults`), each with its Operations, and which
    one each request is for: any operation takes the envelope's `vault`, so none of them
    needs to know of the others. A `search` that names no vault asks each and merges."""

    def __init__(self, served: list[Operations], waiting: dict | None = None):
        self.served = served
        self.waiting = waiting if waiting is not None else {}
        """Vaults whose folder is not there yet, by name (each a config: the server's own
        dict, which it empties as they join)."""
        for o in served:
            o.every = self

    def join(self, o: Operations) -> None:
        """A vault served from now on (one that was waiting for its folder)."""
        o.every = self
        self.served.append(o)

    def answer(self, req: Request) -> Reply:
        """The request answered by the vault it is for (see `pick`); a search, grep or context
        that names no vault, by every vault."""
        if isinstance(req, Search) and req.all_vaults and req.vault is not None:
            raise QueryError("give `vault` or `all_vaults`, not both")
        every = {Search: (self._search_all, SearchReply), Grep: (self._grep_all, GrepReply),
                 Context: (self._context_all, ContextReply)}.get(type(req))
        if every and req.vault is None and len(self.served) > 1:
            merge, reply = every
            return msgspec.convert(merge(req), reply)
        return self.pick(req).answer(req)

    def pick(self, req: Request) -> Operations:
        """The vault named by `vault` (its name, else its folder); else the one that holds the
        note the request names by an absolute path (`note`, `from`: an editor's buffer), or
        the asker's folder (`paths`); else the first. A note named by an absolute path inside a
        served vault is always that vault's (a path a search of every vault gave is read
        through any face, whichever vault it was started for). A name that is none of them:
        QueryError `unknown_vault`, listing them."""
        here = req.paths if os.path.isabs(req.paths) else None  # the asker's folder (vaultq sends it)
        if (held := self._holder(getattr(req, "note", None))) is not None:
            return held  # a note named by its absolute path is its own vault's, whatever `vault` says
        if req.vault is not None:
            want = req.vault.rstrip("/") or "/"
            for o in self.served:
                if want == o.name:
                    return o
            path = os.path.expanduser(want) if "/" in want or want.startswith("~") else \
                os.path.join(here, want) if here else None  # a bare word: a folder under the asker's
            real = _real(path) if path else None
            for o in self.served:
                if real == str(o.vault.root):
                    return o
            for name, c in list(self.waiting.items()):
                if want == name or real == c.vault:
                    raise VaultMissing(name, c.vault)
            raise UnknownVault(req.vault, [(o.name, str(o.vault.root)) for o in self.served]
                               + [(n, c.vault) for n, c in list(self.waiting.items())])
        if len(self.served) > 1:  # the vault of the note named by its absolute path, else of the asker's folder
            for val in (getattr(req, "note", None), getattr(req, "from_", None), here):
                if isinstance(val, str) and os.path.isabs(val) and (real := _real(val)):
                    for o in self.served:
                        if real == str(o.vault.root) or real.startswith(str(o.vault.root) + os.sep):
                            return o
        return self.served[0]

    def _holder(self, note: object) -> Operations | None:
        """The served vault whose folder holds `note`, an absolute path (one a search of every
        vault gave); None for anything else."""
        if not (isinstance(note, str) and os.path.isabs(note) and (real := _real(note))):
            return None
        return next((o for o in self.served if real.startswith(str(o.vault.root) + os.sep)), None)

    def _search_all(self, req: Search) -> dict:
        """Every vault's best `limit` hits, merged into one list of `limit` (see `merged`)."""
        one = msgspec.structs.replace(req, all_vaults=False, after_generation=None)
        answers = [(o, o.result(one)) for o in self.served]
        hits = merged([[{**h, "vault": o.name} for h in res["hits"]] for o, res in answers], req.limit)
        first = answers[0][1]
        return _indexing(answers, {
            "query": first["query"], "vault": first["vault"], "total": sum(r["total"] for _, r in answers),
            "total_estimated": any(r["total_estimated"] for _, r in answers),
            "took_ms": round(sum(r["took_ms"] for _, r in answers), 2), "cold": any(r["cold"] for _, r in answers),
            "generation": first["generation"], "hits": hits, "vaults": _each(answers, "total")})

    def _grep_all(self, req: Grep) -> dict:
        """Every vault's rows, a vault after another (as rg over several folders), `limit` in all
        from `offset`."""
        want = min(ops.MOST, req.offset + req.limit)
        answers = [(o, o.result(msgspec.structs.replace(req, offset=0, limit=want))) for o in self.served]
        rows = [{**m, "vault": o.name} for o, r in answers for m in r["matches"]]
        got = rows[req.offset : req.offset + req.limit]
        more = len(rows) > req.offset + req.limit or any(r["more"] for _, r in answers)
        first = answers[0][1]
        return _indexing(answers, {
            "query": first["query"], "words": first["words"], "total": len(got),
            "notes": len({(m["vault"], m["path"]) for m in got}), "matches": got, "truncated": more,
            "offset": req.offset, "more": more, "next": req.offset + len(got) if more else None,
            "took_ms": round(sum(r["took_ms"] for _, r in answers), 2), "generation": first["generation"],
            "vaults": _each(answers, "total")})

    def _context_all(self, req: Context) -> dict:
        """Every vault's context merged within the budget, as one vault's is made: the HOT
        openings of each vault in turn (within a quarter of the budget; all of it with no
        words), then the best section of each hit in the order a search of every vault gives
        (`merged`), then the runners-up by score, never two items over the same lines; each
        item with its `vault`. Each vault is asked twice: for its HOT openings within that
        share, and for its hits alone within the whole budget. (A vault counts a note it gave
        as an agent's read even when the merge leaves it out.)"""
        one = msgspec.structs.replace(req, after_generation=None, hot=False)
        answers = [(o, o.result(one)) for o in self.served]
        hot_budget = req.budget // 4 if req.q.strip() else req.budget
        openings = msgspec.structs.replace(one, q="", budget=hot_budget, hot=True)
        with_hot = not req.q.strip() if req.hot is None else req.hot
        hots = [[{**it, "vault": o.name} for it in o.result(openings)["items"]] for o in self.served] if with_hot else []
        best, more = [], []  # per vault: each hit's first item; the runners-up
        for o, r in answers:
            seen, mine = set(), []
            for it in r["items"]:
                (more if it["path"] in seen else mine).append({**it, "vault": o.name})
                seen.add(it["path"])
            best.append(mine)
        items, used, taken, rank = [], 0, {}, {}
        for share, it in [(hot_budget, it) for turn in itertools.zip_longest(*hots) for it in turn if it] + \
                [(req.budget, it) for it in merged(best, sum(map(len, best))) + sorted(more, key=lambda i: -i["score"])]:
            spans = taken.setdefault((it["vault"], it["path"]), [])
            if any(a <= it["last"] and it["first"] <= b for a, b in spans):
                continue
            if it["kind"] == "hit":  # numbered again: its place among every vault's hits
                rank.setdefault((it["vault"], it["path"]), len(rank) + 1)
                it["why"] = re.sub(r"^hit \d+", f"hit {rank[it['vault'], it['path']]}", it["why"])
                it["cost"] = cost(context_item(it), req.unit)
            if used + it["cost"] <= share:
                items.append(it)
                spans.append((it["first"], it["last"]))
                used += it["cost"]
        return _indexing(answers, {"query": req.q, "budget": req.budget, "unit": req.unit, "used": used,
                                   "generation": answers[0][1]["generation"], "items": items,
                                   "vaults": _each(answers)})


def page(items: list, offset: int, limit: int) -> tuple[list, dict]:
    """items[offset:offset + limit], and the fields that say so (see Page)."""
    got = items[offset : offset + limit]
    return got, _page_fields(len(items), offset, len(got))


def _page_fields(total: int, offset: int, shown: int) -> dict:
    """A Page's fields: `shown` items from `offset` of `total`."""
    end = offset + shown
    more = end < total
    return {"total": total, "offset": offset, "more": more, "next": end if more else None}


def _each(answers: list, *keys: str) -> list[dict]:
    """Each vault of a merged answer: name, folder (`vault`), `keys` of its answer, generation."""
    return [{"name": o.name, "vault": str(o.vault.root), **{k: r[k] for k in keys}, "generation": r["generation"]}
            for o, r in answers]


def _indexing(answers: list, res: dict) -> dict:
    """A merged answer, saying so while a vault's first index is being built (`indexing`,
    `progress`: the sum of theirs)."""
    busy = [r for _, r in answers if r.get("indexing")]
    if busy:
        res |= {"indexing": True, "progress": {k: sum(r["progress"][k] or 0 for r in busy)
                                               if all(r["progress"][k] is not None for r in busy) else None
                                               for k in ("done", "total")}}
    return res


def _real(path: str) -> str | None:
    """`path` with its symlinks resolved; None for one no file can have (a NUL in it)."""
    try:
        return os.path.realpath(path)
    except ValueError:
        return None


HEAD = 3
"""Places at the top of a search across vaults where every vault's best hit has one (more
when there are more vaults than this)."""


def merged(each: list[list[dict]], limit: int) -> list[dict]:
    """Several vaults' hits (each list best first) as one list of `limit`: by score, but with
    each vault's best hit among the first HEAD.

    The scores compare: every vault's index has the same fields, boosts and blend
    (recency, tier, anchors), and BM25 weighs a word by its rarity among that vault's own
    notes and a note's length against that vault's average, so a score says how well a
    note answers within its vault. But a word rare in one vault and common in the other
    lifts the first vault's weaker notes above the other's answer; reciprocal-rank fusion
    gives each vault's first hit a top place, however weak. Both halves: by score, and each
    vault's best in the first places. bench/vaults.py measures all of these against one
    index of all the notes (docs/running.md, "Several vaults, one daemon")."""
    ranked = sorted((h for hits in each for h in hits), key=lambda h: -h["score"])  # stable: ties in vault order
    best = [hits[0] for hits in each if hits]
    size = max(HEAD, len(best))
    head = {id(h) for h in best}
    head |= {id(h) for h in [h for h in ranked if id(h) not in head][: max(0, size - len(head))]}
    return ([h for h in ranked if id(h) in head] + [h for h in ranked if id(h) not in head])[:limit]


# -- the table: ops.OPS bound to the methods and types here ------------------------------


class Operation(typing.NamedTuple):
    op: ops.Op
    request: type[Request]
    reply: type[Reply]
    method: typing.Callable
    doc: str


def _bind(op: ops.Op) -> Operation:
    method = getattr(Operations, op.name, None)
    if method is None:
        raise TypeError(f"operation {op.name!r} (ops.OPS) has no method Operations.{op.name}")
    request = typing.get_type_hints(method).get("req")
    if not (isinstance(request, type) and issubclass(request, Request) and request.__struct_config__.tag == op.name):
        raise TypeError(f"Operations.{op.name}: its `req` must be annotated with a request type tagged {op.name!r}")
    reply = getattr(method, "reply", None)
    if not (isinstance(reply, type) and issubclass(reply, Reply)):
        raise TypeError(f"Operations.{op.name}: say its reply type with @replies(...)")
    if not (method.__doc__ or "").strip():
        raise TypeError(f"Operations.{op.name} has no docstring: it is the operation's documentation")
    doc = "\n\n".join(" ".join(par.split()) for par in inspect.cleandoc(method.__doc__).split("\n\n"))
    return Operation(op, request, reply, method, doc)


TABLE: dict[str, Operation] = {op.name: _bind(op) for op in ops.OPS}
"""Every operation by name: its row, request type, reply type, method and documentation."""

REQUESTS = tuple(o.request for o in TABLE.values())
decode_request = Decoder(REQUESTS).decode
