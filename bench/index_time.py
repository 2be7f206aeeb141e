"""Full index time of one vault (`vaultd index`, a fresh state folder each run) with this
checkout and others, taking turns: wall and CPU seconds (the process and its workers), and
the index's size. The best of the rounds is kept.

    python bench/index_time.py ../shared/corpora/junghan-garden-ko --baseline /tmp/base --rounds 4

The vault is copied first (mtimes kept): vaultd never runs on the shared corpora.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def index_once(vault: Path, code: Path) -> tuple[float, float, int]:
    """(wall s, CPU s, index bytes) of one full index of `vault` by the package in `code`."""
    state = Path(tempfile.mkdtemp(prefix="it"))
    try:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.monotonic()
        subprocess.run([sys.executable, "-m", "vaultd", "index", "--vault", str(vault), "--state-dir", str(state),
                        "--log-level", "warning"], env={**os.environ, "PYTHONPATH": str(code)}, check=True,
                       stdout=subprocess.DEVNULL)
        wall = time.monotonic() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        return wall, cpu, sum(f.stat().st_size for f in state.rglob("*") if f.is_file())
    finally:
        shutil.rmtree(state, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("vault")
    ap.add_argument("--baseline", action="append", default=[], metavar="DIR", help="another checkout (a git worktree)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    codes = [Path(b).resolve() for b in args.baseline] + [HERE.parent]
    work = Path(tempfile.mkdtemp(prefix="itv"))
    try:
        vault = work / Path(args.vault).name
        shutil.copytree(args.vault, vault, symlinks=True)
        runs: dict[Path, list[tuple[float, float, int]]] = {c: [] for c in codes}
        for _ in range(args.rounds):
            for c in codes:
                runs[c].append(index_once(vault, c))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{Path(args.vault).name}: best of {args.rounds}")
    print("| code | wall s | CPU s | index MB |\n|---|---|---|---|")
    for c, rs in runs.items():
        print(f"| {c} | {min(r[0] for r in rs):.2f} | {min(r[1] for r in rs):.2f} | {rs[0][2] / 1e6:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
