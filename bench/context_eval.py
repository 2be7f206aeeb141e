"""Does `context` hand an agent the right section? For each query of a query set on one
corpus, ask the daemon for `context QUERY --budget N` and check the items.

    python bench/context_eval.py                      # obsidian-help, queries-dev.json, budget 2000
    python bench/context_eval.py --corpus foam-docs --budget 1000

Prints: the share of queries whose context holds a relevant note, and, for queries that
name the heading of the answer, the share whose context holds that heading's section
(an item from a relevant note whose line range covers the heading line).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from quality import SHARED, Daemon, norm  # bench/quality.py

from vaultd.parse import parse_file


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("queries", nargs="?", default=str(SHARED / "eval" / "queries-dev.json"))
    ap.add_argument("--corpus", default="obsidian-help")
    ap.add_argument("--corpora", default=str(SHARED / "corpora"))
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--show-misses", action="store_true")
    args = ap.parse_args()
    qs = [q for q in json.loads(Path(args.queries).read_text()) if q["corpus"] == args.corpus]
    work = Path(tempfile.mkdtemp(prefix="vc"))
    vault = work / args.corpus  # a copy (mtimes kept): a daemon never runs on the shared corpora
    shutil.copytree(Path(args.corpora) / args.corpus, vault, symlinks=True)
    note_hits = section_hits = with_heading = over = 0
    try:
        d = Daemon(vault, work)
        try:
            for q in qs:
                res = d.ask("context", q=q["query"], budget=args.budget)
                over += res["used"] > args.budget
                rel = set(q["relevant"])
                items = [it for it in res["items"] if it["path"] in rel]
                note_hits += bool(items)
                if q.get("heading"):
                    with_heading += 1
                    ok = False
                    for it in items:
                        note = parse_file(it["path"], (vault / it["path"]).read_bytes())
                        lines = [h.line for h in note.headings if norm(h.text) == norm(q["heading"])]
                        ok = ok or any(it["first"] <= ln <= it["last"] for ln in lines)
                    section_hits += ok
                    if args.show_misses and not ok:
                        print(f"miss {q['query']!r}: want {sorted(rel)[0]} § {q['heading']}; got "
                              f"{[(it['path'], it['first'], it['last']) for it in res['items'] if it['kind'] == 'hit'][:3]}")
        finally:
            d.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    n = len(qs)
    print(f"{args.corpus}: {n} queries, context --budget {args.budget} tokens")
    print("| measure | share |")
    print("|---|---|")
    print(f"| context holds a relevant note | {note_hits / n:.2f} ({note_hits}/{n}) |")
    print(f"| holds the section under the answer's heading | {section_hits / max(1, with_heading):.2f} "
          f"({section_hits}/{with_heading}) |")
    print(f"| answers over budget | {over} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
