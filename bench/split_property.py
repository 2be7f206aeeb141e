"""The split property of tests/test_split_property.py over many more generated vaults, counted.

    python bench/split_property.py               # 2,000 examples
    python bench/split_property.py -n 5000 --seed 7
    python bench/split_property.py --minimal     # then shrink an example of each failure class

Every example is a generated vault whose big note is split through the real planner and
journal, checked by the independent oracle (tests/split_oracle.py) and undone. Unlike the
test, a failing example does not stop the run: failures are counted by class (the kind of
problem and the link syntax), with the smallest example seen of each. `--minimal` asks
hypothesis for the smallest vault showing each class. Prints a table: examples, split,
refused (by reason), failures (by class), and the link forms the vaults held. Exits 1
when any example failed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from hypothesis import HealthCheck, Phase, find, given, seed, settings  # noqa: E402

from test_split_property import check_split, refusal_class, vaults  # noqa: E402

SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example,
            HealthCheck.filter_too_much]


def run(gv):
    with tempfile.TemporaryDirectory(prefix="vsp") as tmp:
        return check_split(gv, Path(tmp))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", "--examples", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--minimal", action="store_true", help="shrink an example of each failure class (slow)")
    args = ap.parse_args()

    stats = Counter()
    refused: Counter = Counter()
    failures: Counter = Counter()  # class -> examples showing it
    smallest: dict[str, tuple[int, str, str]] = {}  # class -> (bytes, vault, one problem)
    forms: Counter = Counter()
    t = time.perf_counter()

    @seed(args.seed)
    @settings(max_examples=args.examples, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=SUPPRESS)
    @given(gv=vaults())
    def prop(gv):
        out = run(gv)
        stats["examples"] += 1
        stats["split"] += bool(out.split)
        stats["refused"] += bool(out.refused)
        stats["failed"] += bool(out.problems)
        for why in out.refused.values():
            refused[refusal_class(why)] += 1
        forms.update(out.forms)
        size = sum(len(x.encode()) for x in gv.files.values())
        for cls in sorted(set(out.classes)):
            failures[cls] += 1
            if cls not in smallest or size < smallest[cls][0]:
                problem = next(p for c, p in zip(out.classes, out.problems) if c == cls)
                smallest[cls] = (size, gv.describe(), problem)
        if stats["examples"] % 250 == 0:
            print(f"  {stats['examples']} examples, {stats['failed']} failed ({time.perf_counter() - t:.0f} s)",
                  file=sys.stderr)

    prop()
    took = time.perf_counter() - t
    print(f"| examples | split | refused | failed | time |\n|---|---|---|---|---|\n"
          f"| {stats['examples']} | {stats['split']} | {stats['refused']} | {stats['failed']} | {took:.0f} s |\n")
    if refused:
        print("| refused because | notes |\n|---|---|")
        for why, n in refused.most_common():
            print(f"| {why} | {n} |")
        print()
    if failures:
        print("| failure class | examples |\n|---|---|")
        for cls, n in failures.most_common():
            print(f"| {cls.replace('|', '&#124;')} | {n} |")
        print()
    print("link forms held by the vaults (examples holding each): "
          + ", ".join(f"`{f}` {n}" for f, n in sorted(forms.items())) + "\n")
    for cls, (size, vault, problem) in sorted(smallest.items()):
        print(f"### {cls}: smallest example seen ({size} bytes)\n\n{problem}\n\n{vault}\n")
    if args.minimal:
        for cls in sorted(failures):
            t = time.perf_counter()
            try:
                gv = find(vaults(), lambda gv, cls=cls: cls in run(gv).classes,
                          settings=settings(max_examples=max(2000, args.examples), deadline=None, database=None,
                                            suppress_health_check=SUPPRESS))
            except Exception as e:  # hypothesis found none this time
                print(f"### {cls}: no minimal example found ({type(e).__name__})\n")
                continue
            out = run(gv)
            problem = next(p for c, p in zip(out.classes, out.problems) if c == cls)
            print(f"### {cls}: minimal example ({time.perf_counter() - t:.0f} s to find)\n\n{problem}\n\n{gv.describe()}\n")
    return 1 if stats["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
