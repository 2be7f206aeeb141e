"""The ranking signals (vaultd/query/signals.py), one unit each: every one has its weight in
the config (and in config.example.toml), shows in `explain`, lifts or lowers exactly the
note it reads something of, by the factor `explain` shows, and by nothing once its weight is
neutral. A real vault, a real index, searched twice: with the default weights and with each
signal's weight made neutral.

Adding a signal: its unit in signals.py, its weight in config.Search and the example; the
row for it below.
"""

from __future__ import annotations

import time
from pathlib import Path

import msgspec
import pytest

from vaultd import Config, Vault
from vaultd.query.signals import COVERAGE, SIGNALS

EXAMPLE = Path(__file__).parent.parent / "config.example.toml"
TODAY = time.strftime("%Y-%m-%d")

NOTES = {
    "old.md": "---\ndate: 2015-01-01\n---\n# Old\n\nThe heron waits by the water.\n",
    "new.md": f"---\ndate: {TODAY}\n---\n# New\n\nThe heron waits by the water.\n",
    "Heron.md": "---\ndate: 2015-01-01\n---\nThe heron waits by the water.\n",
    "archive/kept.md": "---\ndate: 2015-01-01\n---\n# Kept\n\nThe heron waits by the water.\n",
    "linked.md": "---\ndate: 2015-01-01\n---\n# Linked\n\nThe heron waits by the water.\n",
    "pointer.md": "---\ndate: 2015-01-01\n---\n# Pointer\n\nSee [[linked|the grey heron]].\n",
    "both.md": "---\ndate: 2015-01-01\n---\n# Both\n\nThe heron and the egret wait by the water.\n",
}

ROWS = [
    # (signal, its neutral weight, the note it favours or lowers, the query)
    ("recency", {"recency_weight": 0.0}, "new.md", "heron"),
    ("title", {"exact_title_weight": 0.0}, "Heron.md", "heron"),
    ("tier", {"cold_factor": 1.0}, "archive/kept.md", "heron"),
    ("anchor", {"anchor_weight": 0.0}, "linked.md", "heron"),
    ("coverage", {"coverage_weight": 0.0}, "new.md", "heron egret"),  # new.md lacks egret: lowered
]


def _vault(root: Path, search: dict) -> Vault:
    cfg = Config(vault=str(root / "vault"), state_dir=str(root / "state")).load()
    cfg.search = msgspec.structs.replace(cfg.search, **search)
    v = Vault(cfg)
    v.reconcile()
    return v


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("signals")
    for rel, text in NOTES.items():
        (root / "vault" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "vault" / rel).write_text(text)
    return root


def _explained(v: Vault, q: str) -> dict[str, dict]:
    return {h["path"]: h["explain"] for h in v.search(q, 20, scope="all", explain=True)["hits"]}


def test_every_signal_has_its_weight_in_the_config_and_the_example():
    example = EXAMPLE.read_text()
    fields = {f.name for f in msgspec.structs.fields(Config().search)}
    for s in (*SIGNALS, COVERAGE):
        assert s.key in fields, f"{s.name}: [search] {s.key} is not a config key"
        assert f"\n{s.key} = " in example, f"{s.name}: {s.key} missing from config.example.toml"
    assert {r[0] for r in ROWS} == {s.name for s in (*SIGNALS, COVERAGE)}, "a signal with no row here"


@pytest.mark.parametrize("name,neutral,note,q", ROWS, ids=[r[0] for r in ROWS])
def test_a_signal_moves_its_note_by_the_factor_explain_shows(root, name, neutral, note, q):
    on = _vault(root, {})
    try:
        with_it = _explained(on, q)
    finally:
        on.close()
    off = _vault(root, neutral)
    try:
        without = _explained(off, q)
    finally:
        off.close()
    factor = with_it[note]["signals"][name]
    assert factor != 1.0, f"{name} does not move {note}: {with_it[note]}"
    assert without[note]["signals"].get(name, 1.0) == 1.0  # coverage at weight 0 is not counted
    # the same BM25 either way: the lexical scores differ by that factor exactly
    assert with_it[note]["lexical"] == pytest.approx(without[note]["lexical"] * factor, rel=1e-3, abs=1e-4)  # shown to 4 places
    others = [p for p in with_it if p != note and with_it[p]["signals"][name] != 1.0]
    if name in ("title", "tier", "anchor"):  # what only that note has
        assert others == [], f"{name} moved {others} too"


def test_vaultq_says_which_signals_moved_a_score(root):
    from vaultd.vaultq import _explained as said

    v = _vault(root, {})
    try:
        e = _explained(v, "heron")["Heron.md"]
    finally:
        v.close()
    line = said(1.0, e)
    assert "title 1.5" in line and "BM25 x" in line, line
