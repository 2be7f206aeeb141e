"""`vaultq`: ask a running vaultd. Standard library only on this path, so it starts fast.

Exit codes: 0 results, 1 no result (as grep), 2 bad usage or bad request,
3 daemon unreachable (not running, busy, or no answer: the message says which), 4 the
first index is still being built (the answer is of the notes read so far). Paths are
shown relative to the current folder inside the vault, absolute outside it (the daemon
shows them so: see protocol.Request.paths); --json keeps them relative to the vault.
"""

from __future__ import annotations

import json
import os
import re
import sys

from . import ops
from .client import RequestFailed, Session
from .errors import EXIT_INDEXING, EXIT_NONE, EXIT_OK, EXIT_UNAVAILABLE, EXIT_USAGE, DaemonUnavailable, said
from .render import changes, context_item, progress, still_indexing, where


OPS = tuple(op for op in ops.OPS if op.cli)
"""The operations vaultq has a command for, with their arguments (ops.py: the one table)."""
COMMANDS = tuple(op.name for op in OPS) + ("hook", "completion", "man")
"""vaultq's commands: the operations', `hook` (for an agent's hooks; no operation of its own),
and `completion` and `man` (vaultq's own: no daemon asked)."""


class _Skipped:
    """Stands in for the subparser of a command not asked for: building all of them costs
    more than the rest of a `vaultq search` together."""

    def add_argument(self, *args, **kwargs) -> None:
        pass


def _command(argv: list[str]) -> str | None:
    """The command in `argv`, when nothing before it asks for help."""
    at = _command_at(argv)
    return None if at is None else argv[at]


def _command_at(argv: list[str]) -> int | None:
    for i, a in enumerate(argv):
        if a in COMMANDS and (i == 0 or argv[i - 1] not in ("--socket", "--vault")):
            return i
        if a in ("-h", "--help") or a.startswith("-") and not a.startswith(("--socket", "--vault")):
            return None
    return None


def _parser(only: str | None = None, helps: bool = True):  # -> argparse.ArgumentParser
    """vaultq's parser (of the command `only`; all when None), with the help texts of
    vaultq_help when `helps` (help may be shown)."""
    import argparse  # here: the quick path (see _quick) never needs it

    from . import __version__

    # A known command means no help will be shown: a fixed width spares argparse looking
    # up the terminal's (importing shutil), a tenth of a `vaultq search`.
    raw = argparse.RawDescriptionHelpFormatter
    fmt = raw if only is None or helps else (lambda prog: raw(prog, width=80))
    if helps:
        from .vaultq_help import EPILOGS, EXIT_CODES
    else:
        EPILOGS, EXIT_CODES = {}, None
    p = argparse.ArgumentParser(prog="vaultq", description="Query a running vaultd over its Unix socket.",
                                formatter_class=fmt, epilog=EXIT_CODES)
    p.add_argument("--version", action="version", version=f"vaultq {__version__}")
    def where(parser, after: bool = False) -> None:  # before the command, and after it too (as hooks write it)
        hidden = {"default": argparse.SUPPRESS} if after else {}  # after: only when given, not over the one before
        parser.add_argument("--socket", **hidden, help="socket path (default: $VAULTD_SOCKET, else the daemon of "
                                                       "the vault around the current folder, else the only one running)")
        parser.add_argument("--vault", metavar="DIR|NAME", **hidden, help="ask this vault (a folder, or its name in "
                                                                          "the daemon's `vaults`), of the daemon that "
                                                                          "serves it")

    where(p)
    subparsers = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def add(name: str, **kwargs):
        if only not in (None, name):
            return _Skipped()
        s = subparsers.add_parser(name, formatter_class=fmt, **kwargs)
        if name not in ("completion", "man"):
            where(s, after=True)
        return s

    types = {"int": int, "float": float, "date": _date, "days": _days, "col": _col}
    for op in OPS:
        s = add(op.name, help=op.cli.help, description=op.cli.help,
                epilog="\n\n".join(filter(None, (EPILOGS.get(op.name), EXIT_CODES))) or None)
        for flags, options in op.cli.args:
            s.add_argument(*flags, **{k: types[v] if k == "type" else v for k, v in options.items()})

    s = add("hook", help="for an agent's hooks (Claude Code): read its JSON on stdin, print what it should see")
    s.add_argument("event", choices=("session-start", "prompt"),
                   help="session-start: the HOT notes' openings and recent changes; prompt: context for the prompt")
    s.add_argument("--budget", type=int, help="at most this much output (default: 1500 at session start, 1000 "
                                              "for a prompt)")
    s.add_argument("--unit", choices=("tokens", "bytes"), default="tokens", help="what the budget counts")
    s = add("completion", help="print a shell completion script (eval \"$(vaultq completion bash)\")")
    s.add_argument("shell", choices=("bash", "zsh", "fish"))
    add("man", help="print vaultq's man page (vaultq man > vaultq.1; man -l vaultq.1)")
    return p


def _date(v: str) -> str:
    """An --after/--before value: YYYY, YYYY-MM or YYYY-MM-DD, a real date."""
    import argparse
    import datetime

    parts = v.split("-")
    try:  # as the daemon reads after:/before: (YYYY-M too, but a day takes two digits each)
        if not (v.isascii() and [len(x) for x in parts] in ([4], [4, 1], [4, 2], [4, 2, 2])):
            raise ValueError
        datetime.date(*(int(x) for x in parts), *([1] * (3 - len(parts))))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{v!r} is not a date: YYYY, YYYY-MM or YYYY-MM-DD") from None
    return v


def _col(v: str) -> int:
    """A --col value: a 1-based column (`--col -3` reaches here too: see _parse)."""
    import argparse

    try:
        n = int(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{v!r} is not a column (a number, 1 or more)") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"--col must be at least 1, got {v}")
    return n


def _days(v: str) -> float:
    import argparse
    import math

    try:
        d = float(v)
    except ValueError:
        d = math.nan
    if not (0 < d < math.inf):
        raise argparse.ArgumentTypeError(f"{v!r}: expected a number of days above 0")
    return d


_VALUED = frozenset(("--socket", "--vault", "-n", "--limit", "--format", "--tag", "--path", "--after", "--before",
                     "--after-generation", "--budget", "--unit"))
"""Options whose value is the next word (which is never a search word)."""


def _minus_word(a: str) -> bool:
    """A search word to leave out (`-archive`), not a short option (-h, -n, -n5, -0)."""
    return a[:1] == "-" and a[1:2] not in ("", "-") and a not in ("-h", "-n", "-0") and not (a[:2] == "-n" and a[2:].isdigit())


def _parse(argv: list[str]):
    """argv read by argparse. A search's or context's words may start with '-' (`-archive`:
    without that word), which argparse would take for options (`-notes` as `-n otes`):
    they stand in argv as words it cannot take for options, and come back in the order
    typed. A misspelt `--option` is still an error."""
    at = _command_at(argv)
    cmd = None if at is None else argv[at]
    p = _parser(cmd, at is None or "-h" in argv or "--help" in argv)
    words: dict[str, str] = {}
    # `--col -3`: with -0 among its options argparse takes "-3" for an option too and says
    # only "expected one argument"; as `--col=-3` the value reaches its type, which says why
    argv = list(argv)
    for i in range((argv.index("--") if "--" in argv else len(argv)) - 2, -1, -1):
        if argv[i] == "--col" and argv[i + 1][:1] == "-" and argv[i + 1][1:].isdigit():
            argv[i : i + 2] = [f"--col={argv[i + 1]}"]
    if cmd in ("search", "context") and at is not None:
        argv = list(argv)
        for j in range(at + 1, len(argv)):
            if _minus_word(argv[j]) and argv[j - 1] not in _VALUED:
                words[f"\0{j}"], argv[j] = argv[j], f"\0{j}"  # no typed word holds a NUL
    args, extra = p.parse_known_args(argv)
    bad = [a for a in extra if a.startswith("-") or args.command not in ("search", "context")]
    if bad:
        p.error(f"unrecognized arguments: {' '.join(bad)}")
    if args.command not in ("search", "context"):
        return args
    args.query = [words.get(a, a) for a in args.query + extra]  # extra: words after an option
    if not args.query and not (args.command == "search" and (args.tag or args.path or args.after or args.before)):
        p.error(f"{args.command} needs words" + (" or a filter (--tag, --path, --after, --before)"
                                                  if args.command == "search" else ""))
    return args


def _lines(spec: str | None) -> list[int] | None:
    if spec is None:
        return None
    a, sep, b = spec.partition(":")
    if not (a.isdigit() and (not sep or b.isdigit())):
        raise ValueError(f"--lines: expected A:B, got {spec!r}")
    return [int(a), int(b) if sep else int(a)]


def _socket(args, cwd: str | None = None) -> str:
    if args.socket:
        return args.socket
    from .paths import pick_socket  # only when no socket is given

    return pick_socket(None, args.vault, cwd)


def _color() -> bool:
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def _highlight(text: str, spans, on: bool) -> str:
    if not on:
        return text
    out, last = [], 0
    for a, b in spans:
        out += [text[last:a], "\033[1;31m", text[a:b], "\033[0m"]
        last = b
    out.append(text[last:])
    return "".join(out)


def print_search(res: dict, fmt: str, null: bool = False) -> None:
    w = sys.stdout.write
    color = _color()
    for hit in res["hits"]:
        path = hit["path"]
        if fmt == "paths":
            w(path + ("\0" if null else "\n"))
        elif fmt != "human":
            for s in hit["snippets"] or [{"line": 1, "col": 1, "byte_col": 1, "text": hit["title"]}]:
                w(located(path, s["line"], s["col"], s["byte_col"], s["text"], fmt, null))
        else:
            tags = f"  [{', '.join(hit['tags'])}]" if hit["tags"] else ""
            head = f"\033[35m{path}\033[0m" if color else path
            w(f"{head}  {hit['title']}{tags}\n")
            if "explain" in hit:
                w(f"       {_explained(hit['score'], hit['explain'])}\n")
            for s in hit["snippets"]:
                num = f"\033[32m{s['line']:>5}\033[0m" if color else f"{s['line']:>5}"
                w(f"{num}: {_highlight(s['text'], s['highlights'], color)}\n")
            w("\n")
    if fmt == "human":
        shown = len(res["hits"])
        about = "about " if res.get("total_estimated") else ""
        sys.stderr.write(f"{shown} of {about}{res['total']} notes, {res['took_ms']:.1f} ms\n")


def _explained(score: float, e: dict) -> str:
    """A hit's score and its parts, on one line (search --explain): the ranking signals that
    moved its lexical score (a factor other than 1) after it."""
    moved = " x ".join(f"{name} {f:.3g}" for name, f in (e.get("signals") or {}).items() if f != 1)
    lexical = f"lexical {e['lexical']:.4g}" + (f" (BM25 x {moved})" if moved else "")
    if not e["weight"]:
        return f"score {score:.4g} = {lexical}"
    sem = "no vectors yet" if e["semantic"] is None else f"{e['semantic']:.3f}" + (
        f" (section at line {e['section']})" if e["section"] else "")
    return f"score {score:.4g} from {lexical} (weight {1 - e['weight']:.2f}, as a share of the best " \
           f"hit's) and semantic {sem} (weight {e['weight']:.2f}, placed between the candidates' lowest and highest)"


def located(path: str, line: int, col: int, byte_col: int, text: str, fmt: str, null: bool = False) -> str:
    """One `path:line:col:text` row, the column as `fmt` has it: vimgrep a 1-based byte column
    (as rg --vimgrep), emacs a 1-based character column, grep none (`path:line:text`, as
    grep -n); with `null`, a NUL after the path instead of ':' (as rg --null). Nothing for a
    file whose name holds a line break, which would split the row in two (rg prints it so,
    and an editor's quickfix reads two broken rows): left out, counted in LEFT_OUT, and said
    on stderr (see say_left_out); --json carries such a name whole."""
    if "\n" in path:
        LEFT_OUT[path] = LEFT_OUT.get(path, 0) + 1
        return ""
    sep = "\0" if null else ":"
    if fmt == "grep":
        return f"{path}{sep}{line}:{text}\n"
    return f"{path}{sep}{line}:{byte_col if fmt == 'vimgrep' else col}:{text}\n"


LEFT_OUT: dict[str, int] = {}
"""Rows `located` left out, by the file name that holds a line break."""


def say_left_out(me: str) -> None:
    """On stderr, each file whose rows were left out (its name holding a line break), escaped
    as JSON escapes it, and where its rows are."""
    for path, n in LEFT_OUT.items():
        rows = "1 row" if n == 1 else f"{n} rows"
        print(f"{me}: {rows} of {json.dumps(path, ensure_ascii=False)} left out: its file name holds a line break, "
              f"which would split a row in two (--json gives {'it' if n == 1 else 'them'} whole)", file=sys.stderr)
    LEFT_OUT.clear()


def print_list(res: dict, fmt: str, null: bool) -> None:
    w = sys.stdout.write
    for n in res["notes"]:
        if fmt == "paths":
            w(n["path"] + ("\0" if null else "\n"))
        elif fmt == "human":
            tags = f"  [{', '.join(n['tags'])}]" if n["tags"] else ""
            aka = f"  (also: {', '.join(n['aliases'])})" if n["aliases"] else ""
            w(f"{n['path']}  {n['title']}{tags}{aka}\n")
        else:
            w(located(n["path"], 1, 1, 1, n["title"], fmt, null))


def print_resolved(res: dict, fmt: str, null: bool) -> int:
    """A resolved link: human `path:line  title > heading`, or a located row (line 1 for the
    whole note); an ambiguous one: a row per candidate (exit 1), and why on stderr. A link
    into a note that lacks its heading or block is broken too (exit 1, why on stderr): the
    note's row is still printed, saying so."""
    w = sys.stdout.write
    if res["path"]:
        where = f"{res['title']} > {res['heading']}" if res["heading"] else res["title"]
        if res["broken"]:
            where += f"  (broken: {res['broken']})"
        if fmt == "human":
            w(f"{res['path']}:{res['line']}  {where}\n" if res["line"] else f"{res['path']}  {where}\n")
        else:
            w(located(res["path"], res["line"] or 1, 1, 1, where, fmt, null))
        if res["broken"]:
            print(f"vaultq: {res['link']}: {res['broken']} (the note is above)", file=sys.stderr)
            return EXIT_NONE
        return EXIT_OK
    if res["url"] is not None and not res["broken"]:
        if fmt == "human":
            w(f"{res['url']}  (a URL)\n")
        return EXIT_OK
    if res["kind"] != "url" and not res["broken"]:  # an attachment: not a note
        print(f"vaultq: {res['link']}: leads to {res['target']}, not a note", file=sys.stderr)
        return EXIT_NONE
    for c in res["candidates"]:
        w(c + "\n" if fmt == "human" else located(c, 1, 1, 1, f"ambiguous: {res['link']}", fmt, null))
    print(f"vaultq: {res['link']}: {res['broken']}" + (" (it may be any of the notes above)" if res["candidates"]
                                                         else ""), file=sys.stderr)
    return EXIT_NONE


def print_status(st: dict) -> None:
    for k in ("vault", "notes", "links", "broken", "pending", "generation", "reconciled", "problems", "socket", "pid",
              "version", "uptime_s"):
        if k in st:
            print(f"{k + ':':<12}" + ("not counted yet (the link graph is loading)" if st[k] is None else str(st[k])))
    if "capture" in st:
        print(f"{'capture:':<12}" + (f"on: `vaultq remember` appends to the day's capture note in {st['capture']}/"
                                     if st["capture"] else "off: remember is refused ([capture] folder turns it on)"))
    if st.get("indexing"):
        print(f"{'indexing:':<12}the first index is being built: {progress(st)}")
    if sem := st.get("semantic"):
        print(f"{'semantic:':<12}{sem['notes']} notes embedded, {sem['pending']} to go"
              + ("" if sem["ready"] else " (its model is loading)") + (f"; error: {sem['error']}" if sem["error"] else ""))
    # what is wrong, or not this daemon's to do: said only when so
    if (w := st.get("watch")) and not w.get("ok", True):
        print(f"{'watch:':<12}DEGRADED: {w.get('problem')}")
    if st.get("writer") is False:
        print(f"{'writer:':<12}no: " + (st.get("writer_why") or "another vaultd writes into this vault (splits, undo); "
                                                                "this one indexes and answers"))
    if st.get("last_error"):
        print(f"{'last error:':<12}{st['last_error']}")
    if st.get("index_rebuilt"):
        print(f"{'rebuilt:':<12}{st['index_rebuilt']}")
    if len(st.get("vaults", ())) > 1:  # config `vaults`: the lines above are of `name`
        print(f"{'vaults:':<12}" + f"\n{'':<12}".join(
            f"{v['name']}{' *' if v['name'] == st.get('name') else ''}  {v['vault']}  " + (
                "not there: served once its folder appears" if v.get("waiting") else
                f"{v['notes']} notes, {v['pending']} pending" + (", first index being built" if v["indexing"] else ""))
            for v in st["vaults"]))


def print_links(res: dict, items: list[dict], fmt: str, mode: str, null: bool = False) -> None:
    """backlinks, links and broken: one line per link. Every column printed is a byte column
    (as rg and Vim count), but --format emacs's, in characters."""
    w = sys.stdout.write
    if fmt == "paths":
        seen = dict.fromkeys(it["path"] if mode != "links" else it["resolved"]
                             for it in items if mode != "links" or it.get("resolved"))
        for p in seen:
            w(p + ("\0" if null else "\n"))
        return
    for it in items:
        src = it.get("path", res.get("note", ""))
        byte_col = it.get("byte_col", it["col"])
        shown = it.get("text", it["raw"]) if mode == "backlinks" else f"{it['raw']}  -> {where(it)}"
        if fmt != "human":
            w(located(src, it["line"], it["col"], byte_col, shown, fmt, null))
        elif mode == "links":
            w(f"{it['line']:>5}:{byte_col:<4} {shown}\n")
        else:
            w(f"{src}:{it['line']}:{byte_col}: {shown.strip()}\n")


def print_grep(res: dict, fmt: str, null: bool = False) -> None:
    w = sys.stdout.write
    if fmt == "paths":
        for p in dict.fromkeys(m["path"] for m in res["matches"]):
            w(p + ("\0" if null else "\n"))
    elif fmt != "human":
        for m in res["matches"]:
            w(located(m["path"], m["line"], m["col"], m["byte_col"], m["text"], fmt, null))
    else:  # as rg prints to a terminal: the path, then line:text
        color, last = _color(), None
        for m in res["matches"]:
            if m["path"] != last:
                w(("\n" if last is not None else "") + (f"\033[35m{m['path']}\033[0m" if color else m["path"]) + "\n")
                last = m["path"]
            w(f"{m['line']}:{m['byte_col']}:{m['text']}\n")
    if res["more"]:
        which = f"the first {res['total']}" if not res["offset"] else \
            f"{res['total']}, from the {_nth(res['offset'] + 1)},"
        print(f"vaultq: only {which} matches (--limit); the next: --offset {res['next']}", file=sys.stderr)
    elif res.get("offset") and not res["matches"]:
        print(f"vaultq: --offset {res['offset']} is past the last match", file=sys.stderr)


def print_problems(items: list[dict], fmt: str) -> None:
    """problems: each note's path, with its problems (a vimgrep row each, at line 1)."""
    w = sys.stdout.write
    for n in items:
        p = n["path"]
        if fmt == "paths":
            w(p + "\n")
        elif fmt == "vimgrep":
            w("".join(located(p, 1, 1, 1, x, fmt) for x in n["problems"]) if n["problems"] else "\n")
        else:
            w(f"{p}  {n['title'] or '(not indexed)'}\n" + "".join(f"    {x}\n" for x in n["problems"]) + "\n")


def _dot(s: str) -> str:
    """A Graphviz quoted string: UTF-8 as it is (DOT has no \\u escapes, which JSON's
    quoting gave for every Korean title), only backslash, quote and line ends escaped."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def print_graph(res: dict, fmt: str) -> None:
    if fmt == "dot":
        titles = {n["path"]: n["title"] for n in res["nodes"]}
        print("digraph vault {")
        print('  node [shape=box, style=rounded];')
        for p, t in titles.items():
            attrs = ', penwidth=2' if p == res["note"] else ""
            print(f"  {_dot(p)} [label={_dot(t)}{attrs}];")
        for a, b in res["edges"]:
            print(f"  {_dot(a)} -> {_dot(b)};")
        print("}")
        return
    for n in res["nodes"]:
        p = n["path"]
        print(p if fmt == "paths" else f"{p}  {n['title']}")
    if fmt == "human":
        for a, b in res["edges"]:
            print(f"  {a} -> {b}")


def _behind(res: dict, wanted: int | None) -> None:
    if res.get("caught_up") is False:
        print(f"vaultq: the index has not reached generation {wanted} after 10 s (it is at {res['generation']}); "
              "this answer may miss the latest changes", file=sys.stderr)


def _vault(given: str) -> str:
    """--vault as the daemon reads it: a path (`--vault .`, `--vault ~/notes`, `--vault
    ../work`) as its absolute folder; a bare word (`--vault work`) as given: the daemon takes
    it as a vault's name first, then as a folder under the asker's current one."""
    return os.path.realpath(given) if ("/" in given or given in (".", "..")) else given


def _cwd() -> str:
    """Where vaultq runs, to show paths from (a folder since deleted: absolute paths)."""
    try:
        return os.getcwd()
    except OSError:
        return "absolute"


def _agent() -> bool:
    """Whether an agent runs vaultq (its reads are then counted apart from a person's): set
    VAULTD_AGENT=1, or Claude Code's shell (CLAUDECODE=1)."""
    return os.environ.get("VAULTD_AGENT", os.environ.get("CLAUDECODE", "")) not in ("", "0")


def _run(c: Session, args) -> int:
    """Run the command `args` names against the daemon `c` (its runner in RUNNERS; an
    operation with none: `_generic`); its exit code. The arguments are the request types' to
    check (api.py): the daemon refuses what they refuse, in the words of vaultq's options
    (see `_in_options`); vaultq checks only how its own options go together."""
    if getattr(args, "null", False) and args.format == "human":
        print("vaultq: --null goes with --format paths, vimgrep, emacs or grep", file=sys.stderr)
        return EXIT_USAGE
    return RUNNERS.get(args.command, _generic)(c, args)


def _run_status(c: Session, args) -> int:
    """status: what the daemon is doing, a line per fact (or JSON)."""
    st = c.request("status")
    print(json.dumps(st, ensure_ascii=False, indent=2)) if args.json else print_status(st)
    return EXIT_OK


def _run_grep(c: Session, args) -> int:
    """grep: each line that matches, in the format asked."""
    extra = _given(args, "tag", "path", "after", "before", "case_sensitive", "word")
    res = c.request("grep", q=" ".join(args.query), **_page(args), **extra)
    print(json.dumps(res, ensure_ascii=False)) if args.json else print_grep(res, args.format, args.null)
    return EXIT_OK if res["matches"] else EXIT_NONE


def _given(args, *names: str) -> dict:
    """The options of `names` that were given (sent only then: a bare request stays bare)."""
    return {k: v for k in names if (v := getattr(args, k))}


def _run_search(c: Session, args) -> int:
    """search: the best notes for the query, in the format asked."""
    # filters, and no snippets for a list of paths (they cost most of a search), sent
    # only when asked for: the quick path's request stays the bare one
    extra = _given(args, "tag", "path", "after", "before")
    if args.format == "paths" and not args.json:
        extra["snippets"] = False
    if getattr(args, "all_vaults", False):
        extra["all_vaults"] = True
    if args.explain:
        extra["explain"] = True
    res = c.request("search", q=" ".join(args.query), limit=args.limit, scope="all" if args.all else "auto",
                    after_generation=args.after_generation, **extra)
    _behind(res, args.after_generation)
    print(json.dumps(res, ensure_ascii=False)) if args.json else print_search(res, args.format, args.null)
    return EXIT_OK if res["hits"] else EXIT_NONE


def _run_context(c: Session, args) -> int:
    """context: the sections that earn their place within the budget."""
    res = c.request("context", q=" ".join(args.query), budget=args.budget, unit=args.unit,
                    scope="all" if args.all else "warm", after_generation=args.after_generation,
                    **({"explain": True} if args.explain else {}))
    _behind(res, args.after_generation)
    if args.json:
        print(json.dumps(res, ensure_ascii=False))
    else:
        for it in res["items"]:
            sys.stdout.write(context_item(it))
        if not res["items"]:
            print(f"vaultq: nothing to give within {args.budget} {args.unit}" + (
                "" if args.query else " (no words: only the HOT notes' openings, and none fits or none is HOT)"),
                  file=sys.stderr)
    return EXIT_OK if res["items"] else EXIT_NONE


def _run_changes(c: Session, args) -> int:
    """changes: what was added, changed, deleted and moved since a generation."""
    res = c.request("changes", since=args.since, **_page(args))
    _say_more(res, "paths", args)
    if args.json:
        print(json.dumps(res, ensure_ascii=False))
    else:
        reset, rows, now = changes(res)
        print("\n".join(([f"# {reset}"] if reset else []) + rows + [f"# {now}"]))
    return EXIT_OK


def _run_split(c: Session, args) -> int:
    """split: one note, --list, --history, --all or --undo, and what each did."""
    undo = args.undo is not None
    if sum(map(bool, (args.note, args.list, args.history, args.all or undo))) != 1 or \
            undo and bool(args.undo) == args.all:
        print("vaultq: split takes one of NOTE, --list, --history, --all, --undo OP [OP...], --undo --all",
              file=sys.stderr)
        return EXIT_USAGE
    if args.dry_run and not args.note:  # a preview never writes: it is of one note
        print("vaultq: --dry-run previews the split of one NOTE; --list shows every proposal --all would split, "
              "--history what each op did", file=sys.stderr)
        return EXIT_USAGE
    res = c.request("split", note=args.note, dry_run=args.dry_run, list=args.list, history=args.history,
                    all=args.all, undo=args.undo, force=args.force)
    if args.json:
        print(json.dumps(res, ensure_ascii=False))
    elif args.list:
        if not (res["over"] or res["cannot"] or res["growing"]):
            return EXIT_NONE
        for it in res["over"]:
            when = "auto" if it.get("auto") else "split"  # auto: it grew while watched, split once quiet
            print(f"{when:<6} {it['path']}  {it['size']} B -> {it['parts']} parts, {it['rewritten']} links rewritten")
        for it in res["cannot"]:
            print(f"cannot {it['path']}  {it['size']} B: {it['why']}")
        for it in res["growing"]:
            print(f"grows  {it['path']}  {it['size']} B (over {res['warn']})")
    elif args.history:  # `vaultq history`'s lines, oldest first
        print_history(res["history"])
    elif undo:  # as `vaultq undo`
        return print_undone(res, "vaultq: no split operation to undo (see `vaultq split --history`)")
    elif args.all:
        for it in res["split"]:
            if it.get("stale"):
                print(f"{it['note']} was saved whole again: removed the parts it duplicated "
                      f"(undo: vaultq undo {it['op']})")
                continue
            print(f"split {it['note']} into {len(it['parts'])} parts, {it['rewritten']} links rewritten "
                  f"(undo: vaultq undo {it['op']})")
        for it in res["skipped"]:
            print(f"skipped {it['note']}: {it['why']}", file=sys.stderr)
        if not res["split"]:
            if not res["skipped"]:
                print("vaultq: no note is proposed for splitting (see `vaultq split --list`)", file=sys.stderr)
            return EXIT_NONE
    elif res["dry_run"]:
        sys.stdout.write(res["diff"])
    else:
        print(f"split {res['note']} into {len(res['parts'])} parts, {res['rewritten']} links rewritten "
              f"(undo: vaultq undo {res['op']})")
        for p in res["parts"]:
            print(f"  {p}")
    return EXIT_OK


def _run_rename(c: Session, args) -> int:
    """rename: what changed (or the diff, with --dry-run), and the undo."""
    res = c.request("rename", note=args.note, title=args.title, line=args.line, dry_run=args.dry_run,
                    diff_max=64 << 20, files_max=100_000)  # a person's: all of it
    if args.json:
        print(json.dumps(res, ensure_ascii=False))
    elif res["dry_run"]:
        sys.stdout.write(res["diff"])
        if res.get("diff_cut"):
            print(f"vaultq: the diff is cut: {res['diff_cut']} characters more", file=sys.stderr)
    else:
        print(renamed(res))
    return EXIT_OK


def renamed(res: dict) -> str:
    """What a rename did, in a few lines: the note (or heading) and its new name, the links
    rewritten, the files written, and the undo."""
    what = f"the heading on line {res['heading']} of {res['note']}" if res["heading"] is not None else \
        f"{res['note']} -> {res['to']}"
    links = f"{res['rewritten']} link{'' if res['rewritten'] == 1 else 's'} rewritten"
    labels = f", {res['relabeled']} label{'' if res['relabeled'] == 1 else 's'} followed" if res["relabeled"] else ""
    return "\n".join([f"renamed {what}: {links}{labels}", *(f"  {p}" for p in res["files"]),
                      f"undo: vaultq undo {res['op']}"])


def _run_history(c: Session, args) -> int:
    """history: every journaled write, newest first, one line each (and what was refused or left)."""
    res = c.request("history")
    if args.json:
        print(json.dumps(res, ensure_ascii=False))
    else:
        print_history(res["history"])
    if not res["history"] and not args.json:
        print("vaultq: vaultd has written nothing into this vault (no split, rename or remembered entry)",
              file=sys.stderr)
    return EXIT_OK if res["history"] else EXIT_NONE


def print_history(entries: list[dict]) -> None:
    """A history's entries, one line each: op, status, note and what it did (`split --history`'s
    lines, and a rename's)."""
    for e in entries:
        print(f"{e['op']}  {e['status']:<11} {e['note']} -> {_did(e)}")
        if e["status"] == "aborted" and e.get("reason"):
            print(f"    why: {e['reason']}")
        for ev in e.get("events") or []:  # a step refused or a file left: a save landed meanwhile
            print(f"    {ev['what']} {ev['path']}: {ev['reason']}")


def _did(e: dict) -> str:
    """What one journaled write did, as its history line says it."""
    if e["kind"] == "split":
        return f"{len(e['parts'] or [])} parts"
    if e["kind"] == "capture":
        return _remembered_row(e)
    if e["kind"] == "rename":
        where = f"heading on line {e['heading']} renamed" if e.get("heading") else e.get("to")
        n = e.get("rewritten") or 0
        return f"{where} (rename: {n} link{'' if n == 1 else 's'} rewritten)"
    return f"saved whole again: {len(e['parts'] or [])} duplicate parts removed"


def _run_undo(c: Session, args) -> int:
    """undo: OP... or --all, and what was put back."""
    if bool(args.ops) == args.all:
        print("vaultq: undo takes OP [OP...] or --all", file=sys.stderr)
        return EXIT_USAGE
    res = c.request("undo", ops=args.ops, all=args.all, force=args.force)
    if args.json:
        print(json.dumps(res, ensure_ascii=False))
        return EXIT_OK
    return print_undone(res, "vaultq: nothing to undo (see `vaultq history`)")


def print_undone(res: dict, none: str) -> int:
    """What an undo did (each op, the files restored), or `none` when it had nothing to undo;
    the exit status."""
    if not res["undone"]:
        print(none, file=sys.stderr)
        return EXIT_NONE
    for op in res["undone"]:
        print(f"undid {op}")
    print(f"restored {len(res['restored'])} file{'' if len(res['restored']) == 1 else 's'}")
    return EXIT_OK


def _run_read(c: Session, args) -> int:
    """read: a note's lines within the budget, and where the rest is."""
    try:
        lines = _lines(args.lines)
    except ValueError as e:
        print(f"vaultq: {e}", file=sys.stderr)
        return EXIT_USAGE
    res = c.request("read", note=args.note, lines=lines, heading=args.heading, budget=args.budget, unit=args.unit)
    print(json.dumps(res, ensure_ascii=False)) if args.json else print(res["text"], end="" if res["text"].endswith("\n") else "\n")
    if res.get("truncated") and not args.json:
        print(f"vaultq: {res['path']} is over the size cap (index.max_file_mb): only its first "
              f"{res['total_lines']} lines were read", file=sys.stderr)
    if res["line_cut"] and not args.json:
        print(f"vaultq: line {res['line_cut']} is longer alone than --budget {args.budget} {args.unit}: only its "
              "first part is shown (a bigger --budget shows all of it)", file=sys.stderr)
    if res["more"] and not args.json:
        a, b = res["next"]
        print(f"vaultq: cut after line {res['last']} to stay within --budget {args.budget} {args.unit}; the rest: "
              f"--lines {a}:{b}" + (" with the same --heading" if args.heading is not None else "")
              + " (or a bigger --budget)", file=sys.stderr)
    return EXIT_OK


def _run_pin(c: Session, args) -> int:
    """pin, unpin: the note pinned or unpinned."""
    cmd = args.command
    res = c.request(cmd, note=args.note)
    print(json.dumps(res, ensure_ascii=False) if args.json else f"{cmd}ned {res['path']}")
    return EXIT_OK


def _run_notes(c: Session, args) -> int:
    """pins, hot, recent: the notes, one a line, and why each is there."""
    cmd = args.command
    paged = _page(args) if cmd != "pins" else {}
    res = c.request(cmd, days=args.days, **paged) if cmd == "recent" else c.request(cmd, **paged)
    items = res[cmd]
    if paged:
        _say_more(res, "notes", args)
    if args.json:
        print(json.dumps(res, ensure_ascii=False))
    for it in [] if args.json else items:
        extra = f"  ({', '.join(it['why'])})" if "why" in it else ""
        print(it["path"] if args.format == "paths" else f"{it['path']}  {it['title']}{extra}")
    return EXIT_OK if items else EXIT_NONE


def _run_graph(c: Session, args) -> int:
    """graph: the notes around a note, to --depth."""
    res = c.request("graph", note=args.note, depth=args.depth, **_page(args))
    print(json.dumps(res, ensure_ascii=False)) if args.json else print_graph(res, args.format)
    _say_more(res, "notes", args)
    return EXIT_OK


def _run_items(c: Session, args) -> int:
    """backlinks, links, broken, orphans, tags, problems: the items, one a line (or JSON)."""
    cmd = args.command
    if cmd in ("backlinks", "links"):
        res = c.request(cmd, note=args.note, **_page(args))
        items = res[cmd]
        _say_more(res, "links", args)
    else:
        res = c.request(cmd, **(_page(args) if cmd == "tags" else {}))
        items = res[cmd]
        if cmd == "tags":
            _say_more(res, "tags", args)
    if args.json:
        print(json.dumps(res, ensure_ascii=False))
    elif cmd == "tags":
        for t in items:
            rel = ", ".join(f"{o} ({k})" for o, k in t["related"])
            print(f"{t['count']:>6}  {t['tag']}" + (f"   with {rel}" if rel else ""))
    elif cmd == "orphans":
        for n in items:
            p = n["path"]
            print(p if args.format != "human" else f"{p}  {n['title']}")
    elif cmd == "problems":
        print_problems(items, args.format)
    else:
        print_links(res, items, args.format, cmd, args.null)
    return EXIT_OK if items else EXIT_NONE


def _run_list(c: Session, args) -> int:
    """list: the notes (with a tag, under a path), in the format asked."""
    res = c.request("list", tag=args.tag, path=args.path, headings=args.headings, **_page(args))
    print(json.dumps(res, ensure_ascii=False)) if args.json else print_list(res, args.format, args.null)
    _say_more(res, "notes", args)
    return EXIT_OK if res["notes"] else EXIT_NONE


def _run_resolve(c: Session, args) -> int:
    """resolve: where a link leads."""
    res = c.request("resolve", link=args.link, col=args.col, **{"from": args.from_})
    if args.json:
        print(json.dumps(res, ensure_ascii=False))
        return EXIT_OK if (res["path"] or res["url"]) and not res["broken"] else EXIT_NONE
    return print_resolved(res, args.format, args.null)


def _page(args) -> dict:
    """A paged command's --limit and --offset as its request's fields (a limit out of range is
    the daemon's to refuse, saying its bounds)."""
    return {"limit": args.limit, "offset": args.offset}


def _nth(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def _say_more(res: dict, what: str, args) -> None:
    """On stderr, unless --json (whose `more` and `next` say it): which part of a paged
    answer is shown, and how to ask for the rest."""
    if getattr(args, "json", False):
        return
    if res.get("more"):
        shown = res["next"] - res["offset"]
        print(f"vaultq: {shown} of {res['total']} {what} shown (from the {_nth(res['offset'] + 1)}); the next: "
              f"--offset {res['next']} (or a bigger --limit, at most {ops.MOST})", file=sys.stderr)
    elif res.get("offset") and res.get("total") is not None and res["offset"] >= res["total"]:
        print(f"vaultq: --offset {res['offset']} is past the end: there are {res['total']} {what}", file=sys.stderr)


def _run_remember(c: Session, args) -> int:
    """Remember TEXT (- : standard input): where it was written, or where the vault holds it
    already (exit 0 either way)."""
    if args.text == "-":
        raw = sys.stdin.buffer.read() if sys.stdin is not None else b""
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            print(f"vaultq: standard input is not UTF-8 (byte {e.start}); nothing was written", file=sys.stderr)
            return EXIT_USAGE
    else:
        text = args.text
    for name, val in (("TEXT", text), ("--session", args.session), ("--source", args.source), *(
            ("--tag", t) for t in args.tags)):
        try:
            (val or "").encode("utf-8")
        except UnicodeEncodeError:  # argv bytes that are not UTF-8 arrive as lone surrogates
            print(f"vaultq: {name} is not valid UTF-8; nothing was written", file=sys.stderr)
            return EXIT_USAGE
    source = args.source or ("claude-code" if os.environ.get("CLAUDECODE", "") not in ("", "0") else "vaultq")
    res = c.request("remember", text=text, tags=args.tags, source=source, session=args.session, force=args.force)
    where = f"{res['path']}:{res['first']}-{res['last']}"
    if args.json:
        print(json.dumps(res, ensure_ascii=False))
    elif res["written"]:
        print(f"remembered in {where}{' (a new capture note)' if res['created'] else ''} "
              f"(undo: vaultq undo {res['op']})")
        if sup := res.get("supersedes"):
            print(f"supersedes {sup['path']}:{sup['first']}-{sup['last']} (a {sup['value']} changed)")
    elif res.get("seen"):
        print(f"already remembered: {where} “{res['heading']}”, seen {res['seen']} times now "
              f"(undo: vaultq undo {res['op']})")
    else:
        section = f"“{res['heading']}”" if res["heading"] else "its opening"
        print(f"not written: {where} {section} already holds {res['overlap']:.0%} of its keywords "
              "(vaultq remember --force writes it anyway)")
    return EXIT_OK


def _remembered_row(e: dict) -> str:
    """What a remembered entry's op did, as `split --history` shows it: the entry's time
    (its heading) and first words, counted again or superseding another."""
    it = e.get("entry")
    if not it:
        return "an entry remembered"
    did = "counted again" if it.get("what") == "strengthened" else "remembered"
    sup = f", supersedes {it['supersedes']}" if it.get("supersedes") else ""
    return f"entry {it.get('heading')} {did}: “{it.get('words')}”{sup}"


def _generic(c: Session, args) -> int:
    """Ask the command's operation with each of its arguments (ops.py) as the request field
    of that name, and print the answer as JSON."""
    cmd = args.command
    fields = {}
    for flags, options in ops.BY_NAME[cmd].cli.args:
        dest = options.get("dest") or flags[-1].lstrip("-").replace("-", "_")
        if dest not in ("json", "format"):
            fields[dest] = getattr(args, dest)
    res = c.request(cmd, **fields)
    print(json.dumps(res, ensure_ascii=False, indent=None if args.json else 2))
    return EXIT_OK


HOOK_EVENTS = {"session-start": "SessionStart", "prompt": "UserPromptSubmit"}
"""`vaultq hook EVENT`: the Claude Code hook event each reads the input of."""
HOOK_BUDGET = {"session-start": 1500, "prompt": 1000}
"""Default budgets, in tokens: well under the 10,000 characters Claude Code takes whole."""
MAX_PROMPT = 2000
"""Characters of a prompt searched for (a pasted log is not a query)."""


def _clean(v):
    return v.encode("utf-8", "replace").decode("utf-8") if isinstance(v, str) else v


def _hook_input(event: str) -> dict:
    """The JSON an agent's hook gets on standard input (Claude Code: session_id, cwd,
    hook_event_name, and the prompt for UserPromptSubmit); ValueError saying what is wrong."""
    if sys.stdin is None or sys.stdin.isatty():
        raise ValueError("reads the hook's JSON on standard input (as Claude Code sends it); none was given")
    # bytes that are not UTF-8, and lone surrogates escaped in the JSON (\ud800), become U+FFFD:
    # one bad character must not cost the agent the whole hook
    raw = sys.stdin.buffer.read().decode("utf-8", "replace")
    try:
        data = json.loads(raw, object_hook=lambda d: {k: _clean(v) for k, v in d.items()})
    except ValueError as e:
        raise ValueError(f"standard input is not JSON ({e}): expected the hook's input, as Claude Code sends it") \
            from None
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object on standard input (the hook's input)")
    want = HOOK_EVENTS[event]
    if data.get("hook_event_name") not in (None, want):
        raise ValueError(f"this is the input of a {data['hook_event_name']} hook: `vaultq hook {event}` is for {want}")
    if event == "prompt" and not isinstance(data.get("prompt"), str):
        raise ValueError('the hook\'s input has no "prompt" (UserPromptSubmit sends it)')
    return data


def _run_hook(c: Session, args) -> int:
    """What the agent should see, within the budget: at session start the HOT notes' openings
    and the notes changed lately; for a prompt, `context` for it (nothing when nothing fits
    or matches: that is no failure)."""
    from .render import cost

    budget = args.budget if args.budget is not None else HOOK_BUDGET[args.event]
    if budget < 100:
        raise ValueError("--budget must be at least 100")
    out: list[str] = []
    used = 0

    def put(text: str) -> bool:
        nonlocal used
        c_ = cost(text, args.unit)
        if used + c_ > budget:
            return False
        out.append(text)
        used += c_
        return True

    if args.event == "prompt":
        q = args.hook_input["prompt"].strip()[:MAX_PROMPT]
        head = "# vaultd: from the notes vault, for this prompt (path:first-last; more: vaultq read PATH --lines A:B)\n"
        if q:
            # no HOT openings: the session start gave them
            items = c.request("context", q=q, budget=budget - cost(head, args.unit), unit=args.unit,
                              hot=False)["items"]
            if items:
                put(head)
                for it in items:  # counted by the daemon with these very paths: they fit
                    out.append(context_item(it))
    else:
        vault = c.request("ping")["vault"]
        put(f"# vaultd: the working set of the notes vault {vault} (what agents remembered lately, HOT notes' "
            "openings, then notes changed lately; more: the vaultd MCP tools, or vaultq search/context/read)\n")
        shown = set()
        room = used + (budget - used) // 3  # the rest for the working set, but the newest entry if it fits
        for i, it in enumerate(_remembered(c)):
            text = ("# Remembered lately (newest first; superseded entries left out):\n" if i == 0 else "") + \
                context_item(it)
            if (i and used + cost(text, args.unit) > room) or not put(text):
                break
        items = c.request("context", q="", budget=(budget - used) * 3 // 4, unit=args.unit)["items"]
        for it in items:
            if put(context_item(it)):
                shown.add(it["path"])
        recent = [it for it in c.request("recent", days=7.0)["recent"] if it["path"] not in shown]
        if recent and put("# Changed in the last 7 days:\n"):
            for it in recent:
                if not put(f"{it['path']}  {it['title']}\n"):
                    break
    sys.stdout.write("".join(out))
    return EXIT_OK


REMEMBERED_NOTES = 3
"""Capture notes, newest first, whose entries the session-start hook shows."""
REMEMBERED_LINES = 400
"""Lines of each capture note's end read for them."""
_ENTRY_HEAD = re.compile(r"(?:#{1,6}|\*+)[ \t]+(\d\d:\d\d:\d\d(?:-\d+)?)(?:[ \t]+:([\w@#%:]+):)?[ \t]*")


def _remembered(c: Session) -> list[dict]:
    """The entries agents remembered in the newest capture notes (changed in the last 7
    days), newest first, each as a context item (path, first, last, title, text); none when
    capture is off. Entries a newer one superseded are left out."""
    st = c.request("status")
    folder = st.get("capture")
    if not folder:
        return []
    mine = (folder + "/", f"{st['vault']}/{folder}/")  # as the daemon gives paths: in the vault, or absolute
    notes = [it for it in c.request("recent", days=7.0, limit=100)["recent"] if it["path"].startswith(mine)]
    out: list[dict] = []
    for it in notes[:REMEMBERED_NOTES]:
        total = c.request("read", note=it["path"], lines=[1, 1])["total_lines"]
        first = max(1, total - REMEMBERED_LINES)
        res = c.request("read", note=it["path"], lines=[first, total])
        day = re.search(r"\d{4}-\d\d-\d\d", it["path"].rsplit("/", 1)[-1])
        for e in reversed(_entries(res["text"].split("\n"), res["first"])):
            out.append({"path": it["path"], "first": e[0], "last": e[1], "text": e[2],
                        "title": f"remembered {day.group() + ' ' if day else ''}{e[3]}"})
    return out


def _entries(lines: list[str], start: int) -> list[tuple[int, int, str, str]]:
    """The entries `remember` wrote among `lines` (the first being line `start`): (first
    and last line of its text, the text, its heading), in order; superseded ones left out.
    An entry is a heading that is a time, its tags (a #tag line, or Org heading tags), its
    property drawer, its text, and (Markdown) who remembered it."""
    heads = [i for i, ln in enumerate(lines) if _ENTRY_HEAD.fullmatch(ln)]
    out = []
    for k, i in enumerate(heads):
        end = heads[k + 1] if k + 1 < len(heads) else len(lines)
        m = _ENTRY_HEAD.fullmatch(lines[i])
        tags = (m.group(2) or "").lower().split(":")
        j = i + 1
        if j < end and re.fullmatch(r"(?:#\w+[ \t]*)+", lines[j]):
            tags += lines[j].lower().replace("#", " ").split()
            j += 1
        if "superseded" in tags:
            continue
        if j < end and lines[j].strip() == ":PROPERTIES:":
            j = next((x + 1 for x in range(j, end) if lines[x].strip() == ":END:"), j)
        stop = next((x for x in range(j, end) if lines[x].startswith("Remembered by ")), end)
        while j < stop and not lines[j].strip():
            j += 1
        while stop > j and not lines[stop - 1].strip():
            stop -= 1
        if stop > j:
            out.append((start + j, start + stop - 1, "\n".join(lines[j:stop]), m.group(1)))
    return out


RUNNERS = {
    "status": _run_status, "grep": _run_grep, "search": _run_search, "context": _run_context,
    "changes": _run_changes, "split": _run_split, "remember": _run_remember,
    "rename": _run_rename, "history": _run_history, "undo": _run_undo,
    "read": _run_read, "pin": _run_pin, "unpin": _run_pin, "pins": _run_notes, "hot": _run_notes,
    "recent": _run_notes, "graph": _run_graph, "list": _run_list, "resolve": _run_resolve,
    **dict.fromkeys(("backlinks", "links", "broken", "orphans", "tags", "problems"), _run_items),
    "hook": _run_hook,
}
"""Each command vaultq runs against the daemon, by name: its runner asks, prints and says its
exit status. An operation with a command (ops.py) and no runner here is asked with its
arguments as its request's fields, and its answer printed as JSON (`_generic`)."""


def _quick(argv: list[str]) -> dict | None:
    """`[--socket S | --vault V] search WORD... [--json] [--format F] [-n N]` (--socket and
    --vault after the command too), the call editors
    and agents make most, read without argparse: importing and building it costs about as
    much as the search. None for anything else, which argparse reads (and explains)."""
    args: dict = dict(socket=None, vault=None, command="search", query=[], limit=10, json=False, format="human",
                      tag=[], path=[], after=None, before=None, all=False, all_vaults=False, after_generation=None,
                      null=False, explain=False)
    it = iter(argv)
    command = option = False
    for a in it:
        key, eq, val = a.partition("=")
        if key in ("--socket", "--vault"):  # before or after the command
            val = val if eq else next(it, None)
            if not val or val.startswith("-"):
                return None
            args[key[2:]] = val
        elif not command:
            if a != "search":
                return None
            command = True
        elif a == "--json":
            args["json"] = option = True
        elif a in ("-n", "--limit", "--format"):
            option = True
            val = next(it, "")
            if a == "--format" and val in ("human", "paths", "vimgrep", "emacs", "grep"):
                args["format"] = val
            elif a != "--format" and val.isdigit():
                args["limit"] = int(val)
            else:
                return None
        elif option or a.startswith("-") and not _minus_word(a):
            return None  # another option, or words after options: argparse's to read
        else:
            args["query"].append(a)
    return args if command and args["query"] else None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not _is_hook(argv):
        return _main(argv)
    try:
        code = _main(argv)
    except SystemExit as e:  # argparse's: a usage error (said on stderr) is its 2
        code = e.code if isinstance(e.code, int) else EXIT_NONE
    return EXIT_NONE if code == EXIT_USAGE else code  # never 2: Claude Code takes it as "block this prompt"


def _is_hook(argv: list[str]) -> bool:
    """Whether `argv` runs `vaultq hook` (its first word that is neither an option nor the
    value of --socket or --vault is `hook`), however wrong the rest of it is."""
    it = iter(argv)
    for a in it:
        if a in ("--socket", "--vault"):
            next(it, None)
        elif not a.startswith("-"):
            return a == "hook"
    return False


def _main(argv: list[str]) -> int:
    quick = _quick(argv)
    if quick is not None:
        from types import SimpleNamespace

        args = SimpleNamespace(**quick)
    else:
        args = _parse(argv)
    if args.command in ("completion", "man"):
        from . import vaultq_help

        full = _parser()
        sys.stdout.write(vaultq_help.man(full) if args.command == "man" else vaultq_help.completion(args.shell, full))
        return EXIT_OK
    if getattr(args, "vault", None) == "":
        print("vaultq: --vault needs a vault's name or folder", file=sys.stderr)
        return EXIT_USAGE
    hook = args.command == "hook"
    me = f"vaultq hook {args.event}" if hook else "vaultq"
    cwd = _cwd()
    if hook:
        try:
            args.hook_input = _hook_input(args.event)
        except ValueError as e:
            print(f"{me}: {e}", file=sys.stderr)
            return EXIT_NONE  # never 2 (see main)
        if isinstance(args.hook_input.get("cwd"), str) and os.path.isabs(args.hook_input["cwd"]):
            cwd = args.hook_input["cwd"]  # the agent's folder: paths are shown as from there
    if not hook and not getattr(args, "json", False) and sys.stdout.isatty():
        sys.stdout = _Inert(sys.stdout)
    return _ask(args, cwd, me)


_CONTROL = {c: f"^{chr(c ^ 64)}" for c in (*range(32), 127) if c not in (9, 10, 13)} | \
    {c: f"\\x{c:02x}" for c in range(0x80, 0xA0)}
"""Control characters as caret notation (ESC as ^[), as `cat -v` shows them."""


_UNSAFE = None
"""Control characters, less colours (SGR), as a pattern: compiled when first needed (`re` is not
imported at vaultq's start)."""


def inert(text: str) -> str:
    """`text` with its control characters as caret notation, colours (SGR) left (see _Inert)."""
    global _UNSAFE
    if _UNSAFE is None:
        import re

        _UNSAFE = re.compile("(\x1b\\[[0-9;]*m)|[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
    return _UNSAFE.sub(lambda m: m.group(1) or m.group().translate(_CONTROL), text)


class _Inert:
    """A terminal's stdout that prints a note's control characters as text: a note (a web
    clipping, a file someone sent) may hold escape sequences that would retitle or clear
    the terminal, move its cursor or set the clipboard (OSC 52). Colours alone (SGR, ours
    among them) pass, as `less -R` lets them. Pipes and --json get the characters as they are."""

    def __init__(self, out):
        self._out = out

    def write(self, text: str) -> int:
        return self._out.write(inert(text))

    def __getattr__(self, name):
        return getattr(self._out, name)


def _ask(args, cwd: str, me: str) -> int:
    """Run the command against the daemon: its exit status, and on stderr what went wrong
    (errors.CODES' words), or that the answer is of the notes read so far (exit 4)."""
    try:
        with _session(args, cwd) as c:
            code = _run(c, args)
        say_left_out(me)
        if c.indexing is not None:
            print(f"{me}: {still_indexing(c.indexing)}; try again in a moment", file=sys.stderr)
            return EXIT_INDEXING
        return code
    except DaemonUnavailable as e:
        print(f"{me}: {e}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except RequestFailed as e:
        message = _in_options(args.command, e.message) if e.code == "bad_request" else e.message
        print(f"{me}: {said(e.code, message)}", file=sys.stderr)
        return e.exit
    except ValueError as e:  # a hook's bad option
        print(f"{me}: {e}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return EXIT_OK


def _session(args, cwd: str) -> Session:
    """The session the command asks over: paths shown from `cwd` (left relative to the vault
    for --json), an agent's when a hook or an agent runs vaultq, of the vault --vault names.
    A split of every proposal may take minutes (WRITES_LONG); a hook must answer well within the agent's
    own hook timeout (10 s in integrations/), a hung daemon or not."""
    hook = args.command == "hook"
    return Session(_socket(args, None if cwd == "absolute" else cwd),
                   timeout=None if args.command in WRITES_LONG else 5.0 if hook else 30.0,
                   paths=None if getattr(args, "json", False) else cwd, agent=hook or _agent(),
                   vault=_vault(args.vault) if args.vault else None, files_here=True)


WRITES_LONG = ("split", "rename", "undo")
"""Commands that write into the vault and may take long (every proposal split, the links of a
much-linked note checked and rewritten): vaultq waits for their answer however long."""


_FIELD = re.compile(r"^(\w+)(?=[\[:])|`(\w+)`")
"""A request field a refusal names: the word it starts with (`limit: expected ...`), or one in
backquotes (`give `vault` or `all_vaults``)."""


def _in_options(command: str, message: str) -> str:
    """The daemon's refusal of a request in the words of vaultq's options: each request field
    it names as the option or argument that gives it (`limit` as --limit, `all_vaults` as
    --all-vaults, `note` as NOTE); other words as they are."""
    names = {"vault": "--vault"}
    op = ops.BY_NAME.get(command)
    for flags, options in op.cli.args if op and op.cli else ():
        dest = options.get("dest") or flags[-1].lstrip("-").replace("-", "_")
        names[_REQUEST_FIELD.get(dest, dest)] = flags[-1] if flags[-1][:1] == "-" else options.get("metavar", dest)
    return _FIELD.sub(lambda m: names.get(m[1] or m[2], m[0]), message)


_REQUEST_FIELD = {"query": "q", "from_": "from"}
"""Options whose request field has another name than the option's (see the runners)."""


def entry() -> None:
    code = main()
    # Python's own teardown takes about 3 ms, a tenth of a `vaultq search`: once the
    # output is out, nothing here needs it.
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # the reader had enough (`vaultq search x | head -1`)
        code = EXIT_OK
    os._exit(code)


if __name__ == "__main__":
    entry()
