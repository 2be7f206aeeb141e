"""The operations, one row each: the list every face reads.

Adding an operation is one row here and one method, with its typed request and reply, in
api.py (plus its line in docs/operations.md, which tests/test_docs.py asks for). From this table:
the daemon's dispatch (api.py binds each row to its method, request and reply types by
its name, and refuses to start when one is missing), vaultq's commands and their
arguments (vaultq.py), the MCP tools (mcp.py: the rows with `tool`), and the docs'
list of operations (tests/test_docs.py).

Standard library only, and plain data (names, help texts, argparse arguments as tuples):
vaultq reads this table at every start, and its whole start must stay within 1.25x a bare
`python -c 'import socket, json'` (bench/run.py). This is where that is decided: the types
and methods cannot live here, since msgspec alone would cost vaultq more than its budget
(click costs it 1.8x, measured), so api.py holds them and tests/test_docs.py checks the two
agree.
"""

from __future__ import annotations


class Cli:
    """An operation's vaultq command: its help line and its argparse arguments, each
    `(flags, options)`; a "type" option names one of vaultq's readers (int, float, date,
    days). Unless vaultq has its own runner for the command, each argument's dest is a field
    of the request and the answer is printed as JSON."""

    __slots__ = ("help", "args")

    def __init__(self, help: str, *args: tuple[tuple[str, ...], dict]):
        self.help = help
        self.args = args


class Op:
    """One operation: its name (the request's `op`), its vaultq command (`cli`, None for
    none), whether it is an MCP tool (`tool`), and whether it changes anything (`writes`:
    the state file's pins, or the vault: split, rename, undo, remember)."""

    __slots__ = ("name", "cli", "tool", "writes")

    def __init__(self, name: str, cli: Cli | None = None, tool: bool = False, writes: bool = False):
        self.name = name
        self.cli = cli
        self.tool = tool
        self.writes = writes

    def __repr__(self) -> str:
        return f"Op({self.name!r})"


JSON = (("--json",), {"action": "store_true", "help": "print JSON"})
NOTE = (("note",), {"metavar": "NOTE", "help": "a path, Denote identifier, Org ID or note name"})
AFTER_GENERATION = (("--after-generation",), {"type": "int", "metavar": "G",
                                               "help": "first wait until the index has caught up to G"})


NULL = (("-0", "--null"), {"action": "store_true",
                           "help": "after each file name a NUL instead of ':' (as rg --null; with --format paths, "
                                   "a NUL after each path)"})
TAG = (("--tag",), {"action": "append", "default": [], "help": "only notes with this tag (repeatable)"})
PATH = (("--path",), {"action": "append", "default": [], "help": "only notes under this folder (repeatable)"})


LIMITS = {"list": 1000, "grep": 1000, "backlinks": 100, "links": 100, "graph": 200, "tags": 500, "hot": 100,
          "recent": 100, "changes": 500}
"""Each paged operation's default `limit`: its answer holds at most this many items (rows,
links, notes, tags, paths), from `offset` on, and says `more` (true when there are more) and
`next` (the `offset` to ask for them). Every face reads it from here: the request types
(api.py), vaultq's --limit, the MCP tools' schemas, docs/operations.md."""

MOST = 100_000
"""The largest `limit` a paged operation takes (grep's rows too): a bigger answer is paged."""

READ_BUDGET = 8000
"""`read`'s default budget, in tokens (about 28 KB of English; `unit: bytes` counts bytes): a
longer text is cut at a whole line, and the answer's `next` says which lines to ask for the rest."""

DIFF_MAX = 32_000
"""Characters of a preview's diff (`rename --dry-run`) an answer holds unless asked for more."""


GREP_ROWS = MOST
"""`vaultq grep`'s default --limit: as many rows as an answer may hold, as rg gives every one
(`vaultq grep WORD` gives the lines `rg --vimgrep -i WORD` gives, for editors' quickfix and
the shell); a request that names no limit gets LIMITS["grep"]."""


def paged(op: str, what: str, default: int | None = None) -> tuple[tuple[tuple[str, ...], dict], ...]:
    """-n/--limit (`default`, else LIMITS[op]) and --offset of a paged operation (see LIMITS)."""
    default = LIMITS[op] if default is None else default
    return ((("-n", "--limit"), {"type": "int", "default": default, "metavar": "N",
                                 "help": f"at most N {what} (default {default}; at most {MOST})"}),
            (("--offset",), {"type": "int", "default": 0, "metavar": "K",
                             "help": f"skip the first K {what}: the next page (vaultq says where it starts)"}))


def fmt(*choices: str, default: str = "human") -> tuple[tuple[str, ...], dict]:
    """--format: human, or one of `choices`. Columns (see docs/editors.md): vimgrep's are 1-based
    bytes (as rg --vimgrep), emacs's 1-based characters, grep has none."""
    return ("--format",), {"choices": tuple(dict.fromkeys(("human", *choices))), "default": default,
                           "help": f"output format (default {default})"}


OPS = (
    Op("ping"),
    Op("search", Cli(
        "full-text search",
        (("query",), {"nargs": "*", "help": "words to look for (-word: without it)"}),
        (("-n", "--limit"), {"type": "int", "default": 10, "help": "at most this many notes (default 10)"}),
        (("--json",), {"action": "store_true", "help": "print the JSON result"}),
        fmt("paths", "vimgrep", "emacs", "grep"), NULL, TAG, PATH,
        (("--after",), {"type": "date", "help": "only notes dated on or after YYYY[-MM[-DD]]"}),
        (("--before",), {"type": "date", "help": "only notes dated before YYYY[-MM[-DD]]"}),
        (("--all",), {"action": "store_true", "help": "search the COLD archive too"}),
        (("--all-vaults",), {"action": "store_true", "help": "search every vault the daemon serves (config `vaults`): "
                                                             "one list, paths of other vaults absolute"}),
        (("--explain",), {"action": "store_true", "help": "show the parts of each hit's score (lexical, semantic)"}),
        AFTER_GENERATION), tool=True),
    Op("grep", Cli(
        "every line of every note that holds WORDS, each occurrence (as rg -i: see docs/editors.md)",
        (("query",), {"nargs": "+", "metavar": "WORDS", "help": "literal words (\"a phrase\": one word); lines holding "
                                                              "every one"}),
        (("-s", "--case-sensitive"), {"action": "store_true", "help": "case matters (default: ignored)"}),
        (("-w", "--word"), {"action": "store_true", "help": "whole words only (as rg -w)"}),
        *paged("grep", "rows", default=GREP_ROWS),
        JSON, fmt("paths", "vimgrep", "emacs", "grep", default="vimgrep"), NULL, TAG, PATH,
        (("--after",), {"type": "date", "help": "only notes dated on or after YYYY[-MM[-DD]]"}),
        (("--before",), {"type": "date", "help": "only notes dated before YYYY[-MM[-DD]]"}))),
    Op("list", Cli(
        "every note: its path, title, aliases, Denote identifier and tags",
        TAG, PATH,
        (("--headings",), {"action": "store_true", "help": "with each note's headings (--json)"}),
        *paged("list", "notes"), JSON, fmt("paths", "vimgrep", "emacs", "grep"), NULL)),
    Op("resolve", Cli(
        "where a link goes: the note, its line and heading; or why it is broken",
        (("link",), {"metavar": "LINK", "help": "a link as written ([[Note#Heading]], [t](x.md#a), "
                                                "[[file:x.org::*H]], denote:ID, ...) or a note name (Note#Heading)"}),
        (("--from",), {"dest": "from_", "metavar": "FILE",
                       "help": "the note LINK is written in: relative links and names are read from there"}),
        (("--col",), {"type": "col", "metavar": "N",
                      "help": "LINK is a line of text: the link at its 1-based character column N"}),
        JSON, fmt("vimgrep", "emacs", "grep"), NULL), tool=True),
    Op("mentions"),
    Op("context", Cli(
        "HOT notes and the best sections for QUERY, within a budget, with line ranges",
        (("query",), {"nargs": "*"}),
        (("--budget",), {"type": "int", "default": 2000, "help": "at most this much (default 2000)"}),
        (("--unit",), {"choices": ("tokens", "bytes"), "default": "tokens", "help": "what the budget counts"}),
        (("--all",), {"action": "store_true", "help": "the COLD archive too"}),
        (("--explain",), {"action": "store_true", "help": "say why each item passed (the share of the query's "
                                                            "weighed words its section holds)"}),
        AFTER_GENERATION, JSON), tool=True),
    Op("read", Cli(
        "a note's text, or part of it (counts as an access)",
        (("note",), {"metavar": "NOTE"}),
        (("--lines",), {"metavar": "A:B", "help": "only lines A to B (1-based, inclusive)"}),
        (("--heading",), {"metavar": "H", "help": "only the section under heading H"}),
        (("--budget",), {"type": "int", "default": READ_BUDGET,
                         "help": f"at most this much, cut at a whole line (default {READ_BUDGET})"}),
        (("--unit",), {"choices": ("tokens", "bytes"), "default": "tokens", "help": "what the budget counts"}),
        JSON), tool=True),
    Op("backlinks", Cli("links into NOTE, with the line each stands on", NOTE, *paged("backlinks", "links"), JSON,
                        fmt("paths", "vimgrep", "emacs", "grep"), NULL), tool=True),
    Op("links", Cli("links out of NOTE: where each leads, or why it is broken", NOTE, *paged("links", "links"), JSON,
                    fmt("paths", "vimgrep", "emacs", "grep"), NULL), tool=True),
    Op("graph", Cli(
        "notes around NOTE, both directions",
        (("note",), {"metavar": "NOTE"}),
        (("-d", "--depth"), {"type": "int", "default": 1, "help": "how many links away (1-5, default 1)"}),
        *paged("graph", "notes"), JSON, fmt("paths", "dot"))),
    Op("hot", Cli("the HOT working set, with why each note is in it", *paged("hot", "notes"), JSON, fmt("paths")),
       tool=True),
    Op("recent", Cli(
        "notes changed in the last days",
        (("--days",), {"type": "days", "default": 7.0, "help": "how many days back (default 7)"}),
        *paged("recent", "notes"), JSON, fmt("paths")), tool=True),
    Op("changes", Cli(
        "notes added, changed, moved and deleted since generation G",
        (("--since",), {"type": "int", "required": True, "metavar": "G"}),
        *paged("changes", "paths"), JSON), tool=True),
    Op("pin", Cli("keep NOTE in the HOT set", (("note",), {"metavar": "NOTE"}), JSON), tool=True, writes=True),
    Op("unpin", Cli("stop pinning NOTE", (("note",), {"metavar": "NOTE"}), JSON), tool=True, writes=True),
    Op("status", Cli("what the daemon is doing", JSON), tool=True),
    Op("pins", Cli("pinned notes", JSON, fmt("paths"))),
    Op("broken", Cli("every broken link, with the reason", JSON, fmt("paths", "vimgrep", "emacs", "grep"), NULL)),
    Op("orphans", Cli("notes nothing links to and that link nowhere", JSON, fmt("paths", "vimgrep"))),
    Op("problems", Cli("notes indexed with a problem (bad front matter, not UTF-8, binary, past the size cap), "
                       "each with what it is", JSON, fmt("paths", "vimgrep"))),
    Op("tags", Cli("each tag, its count and the tags that share notes with it", *paged("tags", "tags"), JSON)),
    Op("split", Cli(
        "split an oversized note into a hub and parts (or list, history, undo)",
        (("note",), {"metavar": "NOTE", "nargs": "?"}),
        (("--dry-run",), {"action": "store_true", "help": "show the plan and a diff of every file; write nothing"}),
        (("--list",), {"action": "store_true",
                       "help": "notes over the threshold, growing ones, and those it cannot split"}),
        (("--history",), {"action": "store_true", "help": "every journaled write, oldest first (`vaultq history` "
                                                          "lists them newest first)"}),
        (("--all",), {"action": "store_true",
                      "help": "apply every proposal (the notes --list offers); with --undo: undo every split and "
                              "rename (not the entries remember wrote: undo those one by one)"}),
        (("--undo",), {"metavar": "OP", "nargs": "*",
                       "help": "undo these operations, newest first, as `vaultq undo`: a split's files restored, a "
                               "remembered entry taken out (--undo --all: every split and rename)"}),
        (("--force",), {"action": "store_true", "help": "with --undo: even if files changed since"}),
        JSON), writes=True),
    Op("rename", Cli(
        "title NOTE NEW-TITLE, every link to it rewritten in its own syntax (labels kept; one that said the old title "
        "follows it); a Denote note keeps its identifier (with --line: rename the heading on line N)",
        NOTE,
        (("title",), {"metavar": "NEW-TITLE", "help": "the note's new title (with --line: the heading's new text)"}),
        (("--line",), {"type": "int", "metavar": "N", "help": "rename the heading on line N (1-based) of NOTE"}),
        (("--dry-run",), {"action": "store_true", "help": "show the diff of every file it would write; write nothing"}),
        JSON), tool=True, writes=True),
    Op("history", Cli("every write vaultd journaled into the vault (splits, renames, remembered entries), newest "
                      "first, each with its op (undo: vaultq undo OP)", JSON)),
    Op("undo", Cli(
        "undo journaled writes, newest first, all or nothing: a split's or a rename's files restored byte for byte, "
        "a remembered entry taken out",
        (("ops",), {"metavar": "OP", "nargs": "*", "help": "the operations to undo (`vaultq history` lists them)"}),
        (("--all",), {"action": "store_true", "help": "every split and rename still done (not the entries remember "
                                                      "wrote: undo those one by one)"}),
        (("--force",), {"action": "store_true", "help": "even if files changed since (what it replaces is kept in "
                                                        "the journal)"}),
        JSON), writes=True),
    Op("remember", Cli(
        "append TEXT to the day's capture note (or a routed note), unless the vault holds it already (an entry "
        "remembered before is counted); one that changes a value of an entry supersedes it (needs [capture] folder)",
        (("text",), {"metavar": "TEXT", "help": "what to remember (-: read it from standard input)"}),
        (("--tag",), {"action": "append", "default": [], "dest": "tags", "metavar": "T",
                      "help": "a tag of the entry, one word (repeatable)"}),
        (("--source",), {"help": "who remembers it (default: claude-code under Claude Code, else vaultq)"}),
        (("--session",), {"metavar": "ID", "help": "the agent's session id"}),
        (("--force",), {"action": "store_true",
                        "help": "write it even when a section of the vault already holds its keywords"}),
        JSON), tool=True, writes=True),
)
"""Every operation, in the order vaultq's help, the MCP tool list and docs/operations.md give them."""

BY_NAME = {op.name: op for op in OPS}
