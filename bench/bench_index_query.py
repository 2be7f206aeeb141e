"""Index build time and query round trip on a synthetic vault, against grep in the same run.

    python bench/bench_index_query.py                      # 3,000 notes, ~30 MB
    python bench/bench_index_query.py --seed-scale         # 3,142 files, ~474 MB
    python bench/bench_index_query.py --vault ~/notes      # an existing vault

The vault comes from ../shared/tools/genvault.py (deterministic). Prints a table:
vaultd's index build against one `grep -rl` pass over the same files, and the
socket query round trip (p50/p95) against `grep -rl` (and `rg -l` when installed)
for the same queries.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
GENVAULT = HERE.parent.parent / "shared" / "tools" / "genvault.py"
BIN = Path(sys.executable).parent


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def timed(cmd: list[str], **kw) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)
    return time.perf_counter() - t


def make_vault(args, work: Path) -> tuple[Path, list[str]]:
    if args.vault:
        return Path(args.vault).resolve(), []
    if not GENVAULT.exists():
        sys.exit(f"bench: {GENVAULT} not found; pass --vault DIR")
    out = work / "vault"
    cmd = [sys.executable, str(GENVAULT), "--out", str(out), "--seed", "7"]
    cmd += ["--seed-scale"] if args.seed_scale else ["--files", str(args.files), "--total-mb", str(args.total_mb)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    oracle = json.loads((work / "vault.ORACLE.json").read_text())
    return out, [n["query"] for n in oracle["needles"]]


class Conn:
    def __init__(self, path: str):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(path)
        self.f = self.s.makefile("rb")

    def ask(self, op: str, **kw) -> dict:
        self.s.sendall(json.dumps({"op": op, **kw}).encode() + b"\n")
        return json.loads(self.f.readline())

    def close(self) -> None:
        self.f.close()
        self.s.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=3000)
    ap.add_argument("--total-mb", type=float, default=30)
    ap.add_argument("--seed-scale", action="store_true")
    ap.add_argument("--vault")
    ap.add_argument("--queries", type=int, default=300, help="socket queries to time")
    ap.add_argument("--grep-queries", type=int, default=10, help="queries to time grep on")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="vb"))
    try:
        run(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(args, work: Path) -> None:
    vault, needles = make_vault(args, work)
    files = [p for p in vault.rglob("*") if p.suffix in (".md", ".org") and p.is_file()]
    mb = sum(p.stat().st_size for p in files) / 2**20
    print(f"vault: {vault} — {len(files)} notes, {mb:.1f} MB")
    state, sock = work / "state", work / "d.sock"
    common = ["--vault", str(vault), "--state-dir", str(state)]

    subprocess.run(["cat", *map(str, files)], stdout=subprocess.DEVNULL)  # warm the page cache for everyone
    t_index = timed([str(BIN / "vaultd"), "index", *common], check=True)
    words = ["memory", "search", "project", "가치관", "index"]
    t_grep_all = statistics.median(timed(["grep", "-rl", w, str(vault)]) for w in words[:3])

    t0 = time.perf_counter()
    proc = subprocess.Popen([str(BIN / "vaultd"), "run", *common, "--socket", str(sock)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            try:
                c = Conn(str(sock))
                if c.ask("status")["result"]["reconciled"]:
                    break
                c.close()
            except OSError:
                pass
            time.sleep(0.01)
        t_restart = time.perf_counter() - t0

        rnd = random.Random(7)
        pool = needles or words
        queries = [rnd.choice(pool) if i % 2 else rnd.choice(words) for i in range(args.queries)]
        for q in queries[:20]:
            c.ask("search", q=q)
        rt = []
        for q in queries:
            t = time.perf_counter()
            r = c.ask("search", q=q, limit=10)
            rt.append((time.perf_counter() - t) * 1000)
            assert r["ok"], r
        took = [c.ask("search", q=q)["result"]["took_ms"] for q in queries[:50]]
        c.close()

        cli = [timed([str(BIN / "vaultq"), "--socket", str(sock), "search", q]) * 1000 for q in queries[:20]]
        bare = [timed([sys.executable, "-c", "import socket, json"]) * 1000 for _ in range(20)]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)

    gq = queries[: args.grep_queries]
    grep = [timed(["grep", "-rli", q, str(vault)]) * 1000 for q in gq]
    rg = [timed(["rg", "-li", q, str(vault)]) * 1000 for q in gq] if shutil.which("rg") else None

    p50, p95 = pct(rt, 50), pct(rt, 95)
    g50 = statistics.median(grep)
    rows = [
        ("index build (s)", f"{t_index:.2f}", f"{t_grep_all:.2f} (one grep -rl pass)", f"{t_index / t_grep_all:.1f}x grep"),
        ("notes/s", f"{len(files) / t_index:.0f}", "", ""),
        ("MB/s", f"{mb / t_index:.1f}", "", ""),
        ("restart to reconciled (s)", f"{t_restart:.2f}", "", ""),
        ("query round trip p50 (ms)", f"{p50:.2f}", f"{g50:.1f} (grep -rli)", f"{g50 / p50:.0f}x faster"),
        ("query round trip p95 (ms)", f"{p95:.2f}", f"{pct(grep, 95):.1f} (grep -rli)", f"{pct(grep, 95) / p95:.0f}x faster"),
        ("  of which in daemon p50 (ms)", f"{statistics.median(took):.2f}", "", ""),
        ("vaultq search, process (ms)", f"{statistics.median(cli):.1f}",
         f"{statistics.median(bare):.1f} (python -c 'import socket, json')",
         f"{statistics.median(cli) / statistics.median(bare):.2f}x"),
    ]
    if rg:
        r50 = statistics.median(rg)
        rows.insert(6, ("  rg -li p50 (ms)", "", f"{r50:.1f}", f"{r50 / p50:.0f}x faster"))
    head = ("measure", "vaultd", "baseline, same run", "ratio")
    w = [max(len(r[i]) for r in [*rows, head]) for i in range(4)]
    print(f"| {head[0]:<{w[0]}} | {head[1]:>{w[1]}} | {head[2]:<{w[2]}} | {head[3]:<{w[3]}} |")
    print(f"|{'-' * (w[0] + 2)}|{'-' * (w[1] + 2)}|{'-' * (w[2] + 2)}|{'-' * (w[3] + 2)}|")
    for r in rows:
        print(f"| {r[0]:<{w[0]}} | {r[1]:>{w[1]}} | {r[2]:<{w[2]}} | {r[3]:<{w[3]}} |")
    print(f"({len(rt)} socket queries over one connection, limit 10 with snippets; {len(gq)} grep queries; "
          f"{os.cpu_count()} CPUs)")


if __name__ == "__main__":
    main()
