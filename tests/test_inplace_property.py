"""In-place rewrites are always indexed: random sequences of truncate, same-size rewrite,
append, rename, utime and chmod on notes while the real daemon runs (its real socket,
real watchdog events); once it has settled, the index equals a fresh build of the vault
(see inplace_ops.py: every token on disk found exactly where it is, none written over
found, `list` exactly the notes on disk). bench/inplace.py runs the same at volume."""

from __future__ import annotations

import os

from inplace_ops import Rounds

EXAMPLES = 120
SEED = int(os.environ.get("VAULTD_INPLACE_SEED", "38"))


def test_in_place_rewrites_index_as_a_fresh_build(make_daemon, tmp_path):
    vault = tmp_path / "inplace"
    vault.mkdir()
    d = make_daemon(vault, ["--split", "off", "--log-level", "warning"])
    failures: list[str] = []
    seen = 0

    def on_result(ex, mismatches: list[str]) -> None:
        nonlocal seen
        seen += 1
        if mismatches:
            failures.append("\n".join([f"{ex.folder} ({ex.cls}):", *(f"  did: {s}" for s in ex.done),
                                       *(f"  {m}" for m in mismatches)]))

    Rounds(vault, d.request, SEED, per_round=12).run(EXAMPLES, on_result)
    assert seen == EXAMPLES
    assert not failures, f"{len(failures)} of {EXAMPLES} examples differ from a fresh build (seed {SEED}):\n" + \
        "\n".join(failures[:5])
    assert d.proc.poll() is None, "the daemon exited"
