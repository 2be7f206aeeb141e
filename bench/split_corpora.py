"""Auto-split every oversized note of a copy of each corpus, then undo it all.

    python bench/split_corpora.py                     # every corpus under ../shared/corpora
    python bench/split_corpora.py ../shared/corpora/foam-docs

Per corpus, on a copy: notes over the threshold, notes split, parts made, links
rewritten, notes it could not split (why), broken links before and after (and any
link that resolved before and is broken after: must be none), then every operation is
undone, newest first, and the tree is compared byte for byte with the original.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import msgspec

from vaultd.config import Config
from vaultd.vault import Vault

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def broken(v: Vault) -> Counter:
    return Counter((b["raw"], b["broken"]) for b in v.broken()["broken"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpora", nargs="*")
    args = ap.parse_args()
    corpora = [Path(c) for c in args.corpora] or sorted(p for p in (SHARED / "corpora").iterdir() if p.is_dir())
    print("| corpus | over 15 KB | split | parts | links rewritten | cannot split | broken before | after | newly broken | undo identical |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    failed = False
    for src in corpora:
        work = Path(tempfile.mkdtemp(prefix="vs"))
        try:
            vault = work / src.name
            shutil.copytree(src, vault)
            for path in [vault, *vault.rglob("*")]:  # a copy of a read-only tree: the splitter skips read-only files
                path.chmod(path.stat().st_mode | 0o200)
            original = tree(vault)
            cfg = Config(vault=str(vault), state_dir=str(work / "state"))
            cfg = msgspec.structs.replace(cfg, split=msgspec.structs.replace(cfg.split, quiet=0.0)).load()
            v = Vault(cfg)
            t = time.perf_counter()
            v.reconcile()
            before = broken(v)
            cand = v.split_candidates()
            over = len(cand["over"]) + len([c for c in cand["cannot"] if c["size"] > cfg.split.threshold])
            ops = []
            while True:
                new = v.auto_split()
                if not new:
                    break
                ops += new
            hist = {e["op"]: e for e in v.split_history()["history"]}
            parts = sum(len(hist[o]["parts"]) for o in ops)
            rewritten = sum(hist[o]["rewritten"] for o in ops)
            cannot = v.split_candidates()["cannot"]
            after = broken(v)
            newly = after - before
            for op in reversed(ops):
                v.split_undo(op)
            v.close()
            same = tree(vault) == original
            failed |= bool(newly) or not same
            print(f"| {src.name} | {over} | {len(ops)} | {parts} | {rewritten} | {len(cannot)} | {sum(before.values())} | "
                  f"{sum(after.values())} | {sum(newly.values())} | {'yes' if same else 'NO'} |")
            for (raw, why), n in list(newly.items())[:5]:
                print(f"  newly broken: {raw} ({why}) x{n}", file=sys.stderr)
            for c in cannot[:3]:
                print(f"  cannot: {c['path']}: {c['why']}", file=sys.stderr)
            print(f"  ({time.perf_counter() - t:.1f} s)", file=sys.stderr)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
