"""Full index time of one vault (`vaultd index`, a fresh state folder each run) with this
checkout and others, and raw Tantivy's (bench/run.py's script: each file read and handed
to Tantivy whole), taking turns: wall and CPU seconds (the process and its workers), the
link graph's part of the wall time (built and saved, from the index's log), and the
index's size; each checkout's rate as a share of raw Tantivy's, whole and for the index
alone. The best of the rounds is kept.

    python bench/index_time.py ../shared/corpora/junghan-garden-ko --baseline /tmp/base --rounds 4
    python bench/index_time.py ../shared/corpora/junghan-garden-ko --semantic   # + semantic recall's cost

With --semantic, also the CPU seconds semantic recall takes to make every note's vectors:
a daemon with it on (a fresh state folder) until every note is embedded, less one with it
off until its link graph is ready, both read from /proc (the daemon's every thread), per
1,000 notes; and the sections each model embedded. The multilingual model's token table
copy in $XDG_CACHE_HOME/vaultd is made before the first round, so no round pays for it.

The vault is copied first (mtimes kept): vaultd never runs on the shared corpora.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def index_once(vault: Path, code: Path) -> tuple[float, float, int, float]:
    """(wall s, CPU s, index bytes, link graph s) of one full index of `vault` by the package
    in `code`; its split mode off (it indexes, it does not write)."""
    state = Path(tempfile.mkdtemp(prefix="it"))
    try:
        cfg = state / "bench.toml"
        cfg.write_text('[split]\nmode = "off"\n')
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "vaultd", "index", "--vault", str(vault), "--state-dir",
                               str(state / "s"), "--config", str(cfg), "--log-level", "info"],
                              env={**os.environ, "PYTHONPATH": str(code)}, cwd=code, check=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # -m puts the cwd first
        wall = time.monotonic() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        found = re.findall(r"link graph: \d+ links resolved in ([\d.]+) s", done.stderr)
        return wall, cpu, sum(f.stat().st_size for f in state.rglob("*") if f.is_file()), \
            float(found[-1]) if found else float("nan")
    finally:
        shutil.rmtree(state, ignore_errors=True)


def raw_once(vault: Path) -> tuple[float, float]:
    """(wall s, CPU s) of raw Tantivy indexing `vault` (bench/run.py's RAW_TANTIVY)."""
    from run import RAW_TANTIVY  # bench/run.py

    out = Path(tempfile.mkdtemp(prefix="raw"))
    try:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.monotonic()
        subprocess.run([sys.executable, "-c", RAW_TANTIVY, str(vault), str(out)], check=True,
                       env={**os.environ, "PYTHONPATH": str(HERE.parent)}, cwd=HERE.parent, stdout=subprocess.DEVNULL)
        wall = time.monotonic() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    finally:
        shutil.rmtree(out, ignore_errors=True)


def daemon_cpu(vault: Path, code: Path, semantic: bool) -> tuple[float, dict]:
    """CPU seconds of a daemon on `vault` (code from `code`, a fresh state folder) from its
    start until it is ready (with `semantic`: every note's vectors made), and its status."""
    from quality import Daemon  # bench/quality.py: a daemon, answering once ready

    work = Path(tempfile.mkdtemp(prefix="sc"))
    try:
        d = Daemon(vault, work, semantic=semantic, env={**os.environ, "PYTHONPATH": str(code)})
        try:
            fields = Path(f"/proc/{d.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
            cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime
            return cpu, d.ask("status")
        finally:
            d.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def semantic_rows(vault: Path, codes: list[Path], rounds: int) -> None:
    """Print semantic recall's CPU seconds per 1,000 notes for each checkout, best of `rounds`."""
    print(f"\nsemantic recall on {vault.name}: CPU s of a daemon until every note's vectors are made, less one "
          f"with it off until ready (best of {rounds})")
    print("| code | notes | sections (model: n) | CPU s on | CPU s off | semantic CPU s | per 1,000 notes |")
    print("|---|---|---|---|---|---|---|")
    daemon_cpu(vault, codes[-1], True)  # the token table copy written, the page cache warm
    for c in codes:
        on = min((daemon_cpu(vault, c, True) for _ in range(rounds)), key=lambda r: r[0])
        off = min(daemon_cpu(vault, c, False)[0] for _ in range(rounds))
        st = on[1]
        n = st["notes"]
        secs = ", ".join(f"{m.split(' ')[0]}: {k}" for m, k in st["semantic"]["sections"].items())
        print(f"| {c} | {n} | {secs} | {on[0]:.1f} | {off:.1f} | {on[0] - off:.1f} | {(on[0] - off) / n * 1000:.1f} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("vault")
    ap.add_argument("--baseline", action="append", default=[], metavar="DIR", help="another checkout (a git worktree)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--semantic", action="store_true", help="also semantic recall's CPU seconds per 1,000 notes")
    args = ap.parse_args()
    codes = [Path(b).resolve() for b in args.baseline] + [HERE.parent]
    work = Path(tempfile.mkdtemp(prefix="itv"))
    try:
        vault = work / Path(args.vault).name
        shutil.copytree(args.vault, vault, symlinks=True)
        runs: dict[Path, list[tuple[float, float, int, float]]] = {c: [] for c in codes}
        raws: list[tuple[float, float]] = []
        for _ in range(args.rounds):
            for c in codes:
                runs[c].append(index_once(vault, c))
            raws.append(raw_once(vault))
        if args.semantic:
            semantic_rows(vault, codes, args.rounds)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    raw_wall, raw_cpu = min(r[0] for r in raws), min(r[1] for r in raws)
    print(f"{Path(args.vault).name}: best of {args.rounds}; raw Tantivy {raw_wall:.2f} s wall, {raw_cpu:.2f} CPU s")
    print("| code | wall s | CPU s | of which the link graph s | the index alone s | index MB "
          "| x raw rate | index alone x raw rate |\n|---|---|---|---|---|---|---|---|")
    for c, rs in runs.items():
        wall, cpu, graph = min(r[0] for r in rs), min(r[1] for r in rs), min(r[3] for r in rs)
        alone = min(r[0] - r[3] for r in rs)
        print(f"| {c} | {wall:.2f} | {cpu:.2f} | {graph:.2f} | {alone:.2f} | {rs[0][2] / 1e6:.1f} "
              f"| {raw_wall / wall:.2f} | {raw_wall / alone:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
