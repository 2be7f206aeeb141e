"""Check vaultd's link graph against a genvault ORACLE.json: every note's outgoing links and
backlinks must equal the oracle's, and nothing may be broken.

    python bench/check_links.py --files 1000          # generate and check
    python bench/check_links.py --seed-scale
    python bench/check_links.py --vault V --oracle V.ORACLE.json

Parses the vault in-process (the same code the daemon runs) and prints the counts.
Exit 0 when everything matches.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vaultd.ingest.filters import NoteFilter
from vaultd.store.graph import Graph
from vaultd.note import Note
from vaultd.parse import parse_file

GENVAULT = Path(__file__).resolve().parent.parent.parent / "shared" / "tools" / "genvault.py"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=1000)
    ap.add_argument("--total-mb", type=float, default=10)
    ap.add_argument("--seed-scale", action="store_true")
    ap.add_argument("--vault")
    ap.add_argument("--oracle")
    args = ap.parse_args()
    if args.vault:
        vault, oracle_path = Path(args.vault), Path(args.oracle)
    else:
        work = Path(tempfile.mkdtemp(prefix="vl"))
        vault, oracle_path = work / "vault", work / "vault.ORACLE.json"
        cmd = [sys.executable, str(GENVAULT), "--out", str(vault), "--seed", "7"]
        cmd += ["--seed-scale"] if args.seed_scale else ["--files", str(args.files), "--total-mb", str(args.total_mb)]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    oracle = json.loads(oracle_path.read_text())

    t0 = time.perf_counter()
    notes: dict[str, Note] = {}
    for rel, st in NoteFilter().walk(vault):
        notes[rel] = parse_file(rel, (vault / rel).read_bytes(), mtime_ns=st.st_mtime_ns)
    t1 = time.perf_counter()
    g = Graph(notes)
    t2 = time.perf_counter()

    want_out = {n["path"]: set(n["links"]) for n in oracle["notes"]}
    want_back = {k: set(v) for k, v in oracle["backlinks"].items()}
    bad_out = [p for p in want_out if g.edges(p) != want_out[p]]
    back = g.back
    got_back = {p: back.get(p, set()) for p in notes}
    bad_back = [p for p in want_out if got_back.get(p, set()) != want_back.get(p, set())]
    broken = list(g.broken())
    n_links = sum(len(v) for v in want_out.values())
    n_edges = sum(len(g.edges(p)) for p in notes)
    print(f"vault: {vault}  ({len(notes)} notes; oracle {len(want_out)})")
    print("| check                        | count |")
    print("|------------------------------|-------|")
    print(f"| oracle edges (src -> target) | {n_links} |")
    print(f"| vaultd edges                 | {n_edges} |")
    print(f"| notes with wrong out-links   | {len(bad_out)} |")
    print(f"| notes with wrong backlinks   | {len(bad_back)} |")
    print(f"| broken links                 | {len(broken)} |")
    print(f"parse {t1 - t0:.2f} s, graph {t2 - t1:.2f} s")
    for p in bad_out[:5]:
        print("  out", p, "missing", sorted(want_out[p] - g.edges(p))[:3], "extra", sorted(g.edges(p) - want_out[p])[:3])
    for src, r in broken[:5]:
        print("  broken", src, r.link.raw, r.broken, r.candidates[:3])
    ok = not bad_out and not bad_back and not broken and len(notes) == len(want_out)
    print("OK" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
