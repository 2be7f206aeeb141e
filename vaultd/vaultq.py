"""`vaultq`: ask a running vaultd. Standard library only on this path, so it starts fast.

Exit codes: 0 results, 1 no result (as grep), 2 bad usage or bad request,
3 daemon unreachable.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from .client import Client, RequestFailed
from .errors import DaemonUnavailable
from .paths import default_socket, find_socket

EXIT_OK, EXIT_NONE, EXIT_USAGE, EXIT_UNAVAILABLE = 0, 1, 2, 3


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="vaultq", description="Query a running vaultd over its Unix socket.")
    p.add_argument("--socket", help="socket path (default: $VAULTD_SOCKET, else the daemon of the vault around the current folder, else the only one running)")
    p.add_argument("--vault", help="use the daemon of this vault")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    s = sub.add_parser("status", help="what the daemon is doing")
    s.add_argument("--json", action="store_true", help="print JSON")

    s = sub.add_parser("search", help="full-text search")
    s.add_argument("query", nargs="+", help="words to look for")
    s.add_argument("-n", "--limit", type=int, default=10, help="at most this many notes (default 10)")
    s.add_argument("--json", action="store_true", help="print the JSON result")
    s.add_argument("--format", choices=("human", "paths", "vimgrep"), default="human", help="output format")
    return p


def _socket(args) -> str:
    if args.socket:
        return args.socket
    if os.environ.get("VAULTD_SOCKET"):
        return os.environ["VAULTD_SOCKET"]
    if args.vault:
        return str(default_socket(Path(args.vault).expanduser().resolve()))
    found, seen = find_socket(Path.cwd())
    if found:
        return str(found)
    if seen:
        raise DaemonUnavailable(
            "(several sockets)",
            "more than one vaultd runs: pick one with --socket or --vault:\n  " + "\n  ".join(map(str, seen)),
        )
    raise DaemonUnavailable(str(default_socket(Path.cwd())), "no vaultd is running")


def _display_path(vault: str, rel: str) -> str:
    """Relative to the current folder when that is inside the vault, else absolute."""
    full = os.path.join(vault, rel)
    cwd = os.getcwd()
    if cwd == vault or cwd.startswith(vault.rstrip("/") + "/"):
        return os.path.relpath(full, cwd)
    return full


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


def print_search(res: dict, fmt: str) -> None:
    w = sys.stdout.write
    color = _color()
    for hit in res["hits"]:
        path = _display_path(res["vault"], hit["path"])
        if fmt == "paths":
            w(path + "\n")
        elif fmt == "vimgrep":
            for s in hit["snippets"] or [{"line": 1, "col": 1, "text": hit["title"]}]:
                w(f"{path}:{s['line']}:{s['col']}:{s['text']}\n")
        else:
            tags = f"  [{', '.join(hit['tags'])}]" if hit["tags"] else ""
            head = f"\033[35m{path}\033[0m" if color else path
            w(f"{head}  {hit['title']}{tags}\n")
            for s in hit["snippets"]:
                num = f"\033[32m{s['line']:>5}\033[0m" if color else f"{s['line']:>5}"
                w(f"{num}: {_highlight(s['text'], s['highlights'], color)}\n")
            w("\n")
    if fmt == "human":
        shown = len(res["hits"])
        sys.stderr.write(f"{shown} of {res['total']} notes, {res['took_ms']:.1f} ms\n")


def print_status(st: dict) -> None:
    for k in ("vault", "notes", "pending", "generation", "reconciled", "problems", "socket", "pid", "version", "uptime_s"):
        if k in st:
            print(f"{k + ':':<12}{st[k]}")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        with Client(_socket(args)) as c:
            if args.command == "status":
                st = c.request("status")
                if args.json:
                    print(json.dumps(st, ensure_ascii=False, indent=2))
                else:
                    print_status(st)
                return EXIT_OK
            if args.command == "search":
                if args.limit < 1:
                    print("vaultq: --limit must be at least 1", file=sys.stderr)
                    return EXIT_USAGE
                res = c.request("search", q=" ".join(args.query), limit=args.limit)
                if args.json:
                    print(json.dumps(res, ensure_ascii=False))
                else:
                    print_search(res, args.format)
                return EXIT_OK if res["hits"] else EXIT_NONE
    except DaemonUnavailable as e:
        print(f"vaultq: {e}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    except RequestFailed as e:
        print(f"vaultq: {e.code}: {e.message}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return EXIT_OK
    return EXIT_USAGE


def entry() -> None:
    sys.exit(main())


if __name__ == "__main__":
    entry()
