"""Known-item search: every needle phrase genvault planted must come back first for its query.

    python bench/needles.py                    # a --seed-scale vault (3,142 files, ~474 MB)
    python bench/needles.py --files 3000       # a smaller one
    python bench/needles.py --vault V --oracle V.ORACLE.json [--state-dir S]

Indexes in-process with the daemon's code (the index is kept in --state-dir when given),
then asks each needle's query for one hit. Prints the counts and any miss; exit 0 when all hit.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vaultd.config import Config
from vaultd.vault import Vault

GENVAULT = Path(__file__).resolve().parent.parent.parent / "shared" / "tools" / "genvault.py"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int)
    ap.add_argument("--vault")
    ap.add_argument("--oracle")
    ap.add_argument("--state-dir")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="vn"))
    if args.vault:
        vault, oracle = Path(args.vault), Path(args.oracle)
    else:
        vault, oracle = work / "vault", work / "vault.ORACLE.json"
        cmd = [sys.executable, str(GENVAULT), "--out", str(vault), "--seed", "7"]
        cmd += ["--files", str(args.files), "--total-mb", str(args.files / 100)] if args.files else ["--seed-scale"]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    needles = json.loads(oracle.read_text())["needles"]
    v = Vault(Config(vault=str(vault), state_dir=args.state_dir or str(work / "state")).load())
    t = time.perf_counter()
    v.reconcile(graph=False)
    t_index = time.perf_counter() - t
    misses, took = [], []
    for n in needles:
        res = v.search(n["query"], 1)
        took.append(res["took_ms"])
        got = res["hits"][0]["path"] if res["hits"] else None
        if got != n["path"]:
            misses.append((n["query"], n["path"], got))
    v.close()
    took.sort()
    print(f"vault: {vault} ({len(v.notes)} notes); index {t_index:.1f} s")
    print("| needles | hit 1 | missed | search p50 ms | p95 ms |")
    print("|---|---|---|---|---|")
    print(f"| {len(needles)} | {len(needles) - len(misses)} | {len(misses)} | {took[len(took) // 2]:.2f} | "
          f"{took[int(len(took) * 0.95)]:.2f} |")
    for q, want, got in misses[:10]:
        print(f"  miss {q!r}: want {want}, got {got}")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
