"""In-place rewrites at volume: random sequences of truncate, same-size rewrite, append,
rename, utime and chmod on notes while the real daemon runs (its real socket, real
watchdog events), each example checked against a fresh build once the daemon has settled
(see tests/inplace_ops.py for the operations, the barrier and the oracle).

    .venv/bin/python bench/inplace.py --examples 2000 [--seed N] [--per-round 20] [--keep]

Prints a table: per class of example, how many ran and how many had a mismatch (a token
on disk not found where it is, a former one still found, a note listed and gone or there
and not listed); the first mismatches go to stderr. Exit code 1 when any example had one.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from _faults_util import Daemon  # noqa: E402  (also puts tests/ on sys.path)
from inplace_ops import CLASSES, Rounds  # noqa: E402

CONFIG = '[split]\nmode = "off"\n'


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=int(time.time()) % 100_000)
    ap.add_argument("--per-round", type=int, default=20, help="examples run at once (disjoint folders)")
    ap.add_argument("--keep", action="store_true", help="keep the work folder (vault, state, the daemon's log)")
    args = ap.parse_args(argv)

    work = Path(tempfile.mkdtemp(prefix="vaultd-inplace-"))
    vault = work / "vault"
    vault.mkdir()
    config = work / "config.toml"
    config.write_text(CONFIG)
    d = Daemon(work, vault, config, split="off")
    runs, bad = Counter(), Counter()
    shown = 0
    t0 = time.perf_counter()

    def on_result(ex, mismatches: list[str]) -> None:
        nonlocal shown
        runs[ex.cls] += 1
        if mismatches:
            bad[ex.cls] += 1
            if shown < 10:
                shown += 1
                print(f"mismatch in {ex.folder} ({ex.cls}, seed {args.seed}):", file=sys.stderr)
                for line in ex.done:
                    print(f"  did: {line}", file=sys.stderr)
                for line in mismatches:
                    print(f"  {line}", file=sys.stderr)

    try:
        d.start()
        if not d.wait_up():
            print(f"the daemon did not start: {d.crashes}", file=sys.stderr)
            return 2
        Rounds(vault, d.ask, args.seed, per_round=args.per_round).run(args.examples, on_result)
        alive = d.alive()
    finally:
        d.stop()
        if args.keep:
            print(f"kept: {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    took = time.perf_counter() - t0
    rows = [[c, runs[c], bad[c]] for c in CLASSES] + [["all", sum(runs.values()), sum(bad.values())]]
    print(f"bench/inplace.py: {sum(runs.values())} examples, seed {args.seed}, {took:.0f} s"
          f"{'' if alive else ', THE DAEMON EXITED'}")
    print(f"{'class':<16}{'examples':>10}{'mismatches':>12}")
    for c, n, b in rows:
        print(f"{c:<16}{n:>10}{b:>12}")
    return 1 if sum(bad.values()) or not alive else 0


if __name__ == "__main__":
    sys.exit(main())
