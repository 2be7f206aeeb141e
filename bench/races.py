"""An editor's save raced against every step of every journaled write, many times (issue 38).

    python bench/races.py                 # 1,200 races: every step of split, undo, remember
                                          # and its undo, with each kind of save, 8 times over
    python bench/races.py --rounds 2 --baseline

Each race is tests/write_race.py's: a fresh vault, one operation through the real Vault,
an editor's save (in place, renamed over, backup-renamed) of one of the files it writes at
one step. A save is lost when its line is in no file of the vault afterwards. Prints, per
operation and kind of save: races, operations that took effect, refused (the save came
first), saves lost, refusals the journal does not explain, temporary files left behind.
`--baseline` runs the same races again with the write path before issue 38 (check the
bytes, then write a temporary file and rename it over) in the same run, to show what the
races catch. Exits 1 when a save was lost (by the code under test).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import write_race as w  # noqa: E402
from vaultd.store import checked, state  # noqa: E402


def _old_replace(path, expect, data, mode=None):
    """The write before issue 38: the bytes checked, then an atomic rename over the path."""
    if path.read_bytes() != expect:
        raise checked.Changed(path, "its content changed since it was read")
    checked.step("checked", path, None)
    return state.write_atomic(path, data, mode)


def _old_remove(path, expect):
    if path.read_bytes() != expect:
        raise checked.Changed(path, "its content changed since it was read")
    checked.step("checked", path, None)
    path.unlink()


def run(rounds: int, seed: int) -> tuple[dict, int]:
    rows: dict = defaultdict(Counter)
    rng = random.Random(seed)
    n = 0
    for op in w.OPS:
        with tempfile.TemporaryDirectory(prefix="vrace") as t:
            count = len(w.steps(Path(t), op))
        for _ in range(rounds):
            for k in range(count):
                for ed in w.EDITORS:
                    with tempfile.TemporaryDirectory(prefix="vrace") as t:
                        r = w.race(Path(t), op, k, ed, rng)
                    row = rows[(op, ed)]
                    row["races"] += 1
                    row[r.outcome] += 1
                    row["lost"] += r.lost
                    row["unrecorded"] += r.outcome == "refused" and not r.recorded
                    row["leftovers"] += r.leftovers
                    n += 1
    return rows, n


def table(title: str, rows: dict) -> None:
    cols = ["races", "done", "refused", "lost", "unrecorded", "leftovers"]
    print(f"\n{title}\n")
    print("| operation | save | " + " | ".join(cols) + " |")
    print("|---|---|" + "---:|" * len(cols))
    total = Counter()
    for (op, ed), row in sorted(rows.items()):
        total.update(row)
        print(f"| {op} | {ed} | " + " | ".join(str(row[c]) for c in cols) + " |")
    print("| **all** | | " + " | ".join(f"**{total[c]}**" for c in cols) + " |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=8, help="times every (operation, step, save) is raced")
    ap.add_argument("--seed", type=int, default=38)
    ap.add_argument("--baseline", action="store_true", help="also race the write path before issue 38")
    a = ap.parse_args()
    t0 = time.monotonic()
    rows, n = run(a.rounds, a.seed)
    table(f"This code: {n} races in {time.monotonic() - t0:.0f} s (seed {a.seed})", rows)
    lost = sum(r["lost"] for r in rows.values())
    if a.baseline:
        new = checked.replace, checked.remove
        checked.replace, checked.remove = _old_replace, _old_remove
        try:
            base, m = run(a.rounds, a.seed)
        finally:
            checked.replace, checked.remove = new
        table(f"Baseline, the write before issue 38 (check, then rename over), same run: {m} races", base)
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
