"""A build apart (Graph.snapshot_of: what `vaultd index` and a first start save) holds what
the whole graph's snapshot holds, resolved in one process or in two."""

from __future__ import annotations

from pathlib import Path

import pytest

from vaultd.note import compact
from vaultd.parse import parse_file
from vaultd.query.analysis import terms
from vaultd.store import graph
from vaultd.store.graph import Graph, dep_codes

FIXTURES = Path(__file__).parent / "fixtures"


def vault() -> dict:
    """The fixture vaults' notes (every dialect: Obsidian, Dendron, Denote, Foam, org-roam),
    and notes written here with links of every kind, broken, ambiguous and by anchor, as
    the note table holds them."""
    notes = {}
    for root in (FIXTURES / "vault", *sorted((FIXTURES / "dialects").iterdir())):
        for f in sorted(root.rglob("*")):
            if f.suffix in (".md", ".org") and f.is_file():
                rel = f"{root.name}/{f.relative_to(root).as_posix()}"
                notes[rel] = parse_file(rel, f.read_bytes())
    for i in range(120):
        folder = ("a", "b", "a/c")[i % 3]
        text = (f"# Head {i}\n\nSee [[n{(i + 1) % 120}]], [[n{i % 7}#Head {i % 7}|the {i % 7}th]], "
                f"[x]({'../' if '/' in folder else ''}b/n{(i + 2) % 120}.md#head-{(i + 2) % 120}), "
                f"[[missing {i % 5}]], [[same]], [[#Head {i}]], ![[n{(i + 3) % 120}]] and https://e.org/{i}.\n")
        notes[f"{folder}/n{i}.md"] = parse_file(f"{folder}/n{i}.md", text.encode())
    notes["a/same.md"] = parse_file("a/same.md", b"")
    notes["b/same.md"] = parse_file("b/same.md", b"")
    return {p: compact(n) for p, n in notes.items()}


def picture(snap: graph.Snapshot) -> tuple:
    """A snapshot's content, by value: destinations, lookup key codes, anchor terms."""
    out = {p: [(d.target, d.line, d.broken, tuple(d.candidates)) for d in ds] for p, ds in snap.out.items()}
    deps = {p: dep_codes(ds) for p, ds in snap.deps.items()}
    anchors = {p: sorted(zip(a[::2], a[1::2])) for p, a in snap.anchor.items()}
    return out, deps, anchors


@pytest.mark.parametrize("split_min", [1_000_000, 10], ids=["one process", "two processes"])
def test_a_build_apart_holds_what_the_whole_graph_holds(monkeypatch, split_min):
    notes = vault()
    whole = picture(Graph(notes, terms).snapshot())
    assert sum(map(len, whole[0].values())) > 800 and any(d[2] for ds in whole[0].values() for d in ds)
    monkeypatch.setattr(graph, "SPLIT_MIN", split_min)
    assert picture(Graph.snapshot_of(notes, terms)) == whole
