"""Parse every note of a real vault, resolve its links, and print what broke.

    python bench/corpus_links.py ../shared/corpora/obsidian-help [--sample 50] [--out DIR]

Prints: files, parse failures (must be 0), links by kind, resolved, broken by reason;
with --sample N writes N random broken and N random resolved links (seed 7) to
DIR/<corpus>.md for review by hand.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter
from pathlib import Path

from vaultd.ingest.filters import NoteFilter
from vaultd.store.graph import Graph
from vaultd.parse import parse_file


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("vaults", nargs="+")
    ap.add_argument("--sample", type=int, default=0)
    ap.add_argument("--out", default="bench/out")
    args = ap.parse_args()
    failed = 0
    print("| corpus | notes | parse errors | links | note links | resolved | broken | broken by reason |")
    print("|---|---|---|---|---|---|---|---|")
    for v in map(Path, args.vaults):
        notes, errors = {}, []
        t = time.perf_counter()
        for rel, _ in NoteFilter().walk(v):
            try:
                notes[rel] = parse_file(rel, (v / rel).read_bytes())
            except Exception as e:  # the parser must never raise: count it
                errors.append((rel, repr(e)))
        g = Graph(notes)
        all_links = [(p, r) for p in sorted(notes) for r in g.links(p)]
        note_links = [(p, r) for p, r in all_links if r.link.kind not in ("url",) and (r.target or r.broken)]
        broken = [(p, r) for p, r in all_links if r.broken]
        resolved = [(p, r) for p, r in all_links if r.target and not r.broken]
        reasons = Counter(r.broken for _, r in broken)
        print(f"| {v.name} | {len(notes)} | {len(errors)} | {len(all_links)} | {len(note_links)} | {len(resolved)} | "
              f"{len(broken)} | {', '.join(f'{k}: {n}' for k, n in reasons.most_common())} |")
        for rel, e in errors[:5]:
            print(f"  parse error: {rel}: {e}", file=sys.stderr)
        failed += len(errors)
        if args.sample:
            rnd = random.Random(7)
            out = Path(args.out)
            out.mkdir(parents=True, exist_ok=True)
            lines = [f"# {v.name}: {args.sample} broken and {args.sample} resolved links (seed 7)\n"]
            for title, items in (("broken", broken), ("resolved", resolved)):
                lines.append(f"\n## {title} ({len(items)} in all)\n")
                for p, r in rnd.sample(items, min(args.sample, len(items))):
                    where = r.target + (f":{r.line}" if r.line else "") if r.target else ""
                    why = f" BROKEN: {r.broken}" + (f" ({', '.join(r.candidates)})" if r.candidates else "") if r.broken else ""
                    lines.append(f"- `{p}:{r.link.line}` `{r.link.raw}` -> {where}{why}\n")
            (out / f"{v.name}.md").write_text("".join(lines))
        print(f"  ({time.perf_counter() - t:.1f} s)", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
