"""Search across several vaults: is merging the vaults' hits by score sound?

    python bench/vaults.py                       # ../shared/eval/queries-dev.json, ../shared/corpora
    python bench/vaults.py QUERIES.json --corpora DIR

Two corpora at a time are served as two vaults by one daemon (config `vaults`), the way
a user with two silos runs it, and every query of either corpus is asked of both (no
`vault`: every vault), limit 10. Four rankings of the same query, each scored against the
query's relevant notes (in its own corpus: a hit from the other vault is never relevant):

- vaultd: what it does (api.merged): the vaults' hits by score, each vault's best hit
  among the first three;
- by score alone: the vaults' hits by score;
- rrf: reciprocal-rank fusion (k = 60) of each vault's own top 10;
- own vault: the query asked of its own corpus's vault alone (the ceiling: a user who
  knew which vault to ask);
- one index: both corpora copied into one vault (as two folders) and searched as one,
  with one set of BM25 statistics: what a merge tries to match.

Printed: Recall@1/5/10 (queries with a relevant note in the top k) and MRR. The corpora
are copied to a temp folder first: the daemon never runs on ../shared itself.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared"
BIN = Path(sys.executable).parent
PAIRS = (("obsidian-help", "braindump-orgroam"), ("dendron-vault", "foam-docs"), ("junghan-garden-ko", "denote-manual"))
"""Corpora served together: every corpus that has queries, each beside another."""
K = 60
"""Reciprocal-rank fusion's constant (Cormack, Clarke and Buettcher, 2009)."""


def ask(sock: Path, op: str, **args) -> dict:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(120)
        s.connect(str(sock))
        s.sendall(json.dumps({"op": op, **args}).encode() + b"\n")
        reply = json.loads(s.makefile("rb").readline())
    if not reply["ok"]:
        raise SystemExit(f"{op} {args}: {reply['error']}")
    return reply["result"]


class Daemon:
    def __init__(self, work: Path, name: str, vaults: list[Path]):
        self.sock = work / f"{name}.sock"
        cfg = work / f"{name}.toml"
        cfg.write_text(f"vaults = {json.dumps([str(v) for v in vaults])}\n[split]\nmode = \"off\"\n")
        self.proc = subprocess.Popen(
            [str(BIN / "vaultd"), "run", "--config", str(cfg), "--state-dir", str(work / f"{name}-state"),
             "--socket", str(self.sock), "--log-level", "warning"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            try:
                st = ask(self.sock, "status")
                if all(ask(self.sock, "status", vault=v["name"])["graph"] == "ready" and v["reconciled"]
                       for v in st["vaults"]):
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise SystemExit(f"vaultd did not come up on {vaults}")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=60)


def rrf(lists: list[list[tuple[str, str]]], limit: int) -> list[tuple[str, str]]:
    score: dict[tuple[str, str], float] = {}
    for hits in lists:
        for rank, hit in enumerate(hits, 1):
            score[hit] = score.get(hit, 0.0) + 1 / (K + rank)
    return sorted(score, key=lambda h: -score[h])[:limit]


def by_score(scored, limit):
    return [h for _, h in sorted((t for hits in scored for t in hits), key=lambda t: -t[0])][:limit]


def rank_of(hits: list[tuple[str, str]], relevant: set[tuple[str, str]]) -> int | None:
    return next((i for i, h in enumerate(hits, 1) if h in relevant), None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("queries", nargs="?", default=str(SHARED / "eval" / "queries-dev.json"))
    ap.add_argument("--corpora", default=str(SHARED / "corpora"))
    a = ap.parse_args()
    queries = json.loads(Path(a.queries).read_text())
    methods = ("vaultd", "by score alone", "rrf", "own vault", "one index")
    ranks: dict[str, list[int | None]] = {m: [] for m in methods}
    with tempfile.TemporaryDirectory(prefix="vaultd-bench-vaults-") as tmp:
        work = Path(tmp)
        for pair in PAIRS:
            asked = [q for q in queries if q["corpus"] in pair]
            if not asked:
                continue
            vaults = []
            for c in pair:
                shutil.copytree(Path(a.corpora) / c, work / "apart" / c)
                shutil.copytree(Path(a.corpora) / c, work / "one" / "-".join(pair) / c)
                vaults.append(work / "apart" / c)
            two = Daemon(work, "two-" + pair[0], vaults)
            one = Daemon(work, "one-" + pair[0], [work / "one" / "-".join(pair)])
            try:
                for q in asked:
                    rel = {(q["corpus"], p) for p in q["relevant"]}
                    merged = [(h["vault"], h["path"]) for h in ask(two.sock, "search", q=q["query"])["hits"]]
                    scored = [[(h["score"], (c, h["path"])) for h in ask(two.sock, "search", q=q["query"], vault=c)["hits"]]
                              for c in pair]
                    each = [[h for _, h in hits] for hits in scored]
                    whole = [tuple(h["path"].split("/", 1)) for h in ask(one.sock, "search", q=q["query"])["hits"]]
                    ranks["vaultd"].append(rank_of(merged, rel))
                    ranks["by score alone"].append(rank_of(by_score(scored, 10), rel))
                    ranks["rrf"].append(rank_of(rrf(each, 10), rel))
                    ranks["own vault"].append(rank_of(each[pair.index(q["corpus"])], rel))
                    ranks["one index"].append(rank_of(whole, rel))
            finally:
                two.stop()
                one.stop()
            print(f"{' + '.join(pair)}: {len(asked)} queries", file=sys.stderr)
    n = len(ranks["vaultd"])
    print(f"\n{n} queries, two corpora per daemon ({', '.join(' + '.join(p) for p in PAIRS)})\n")
    print(f"| ranking | R@1 | R@5 | R@10 | MRR |\n|---|---|---|---|---|")
    for m in methods:
        r = ranks[m]
        at = [sum(1 for x in r if x is not None and x <= k) / n for k in (1, 5, 10)]
        mrr = sum(1 / x for x in r if x) / n
        print(f"| {m} | {at[0]:.3f} | {at[1]:.3f} | {at[2]:.3f} | {mrr:.3f} |")


if __name__ == "__main__":
    main()
