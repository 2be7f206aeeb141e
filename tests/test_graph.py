"""Link resolution against a whole vault, one rule at a time."""

import pytest

from conftest import DEADLINE
from vaultd.store.graph import Graph
from vaultd.parse import parse_file


def build(files: dict[str, str]) -> Graph:
    return Graph({p: parse_file(p, t.encode()) for p, t in files.items()})


def resolved(g: Graph, src: str) -> list[tuple]:
    return [(r.link.raw, r.target, r.line, r.broken) for r in g.links(src)]


def one(files: dict[str, str], src: str = "src.md"):
    g = build(files)
    (r,) = g.links(src)
    return r.target, r.line, r.broken, r.candidates


def test_wikilink_unique_file_name_case_insensitive_extension_optional():
    files = {"a/Deep Work.md": "# Deep Work\n", "src.md": "[[deep work]]"}
    assert one(files)[0] == "a/Deep Work.md"
    assert one({**files, "src.md": "[[Deep Work.md]]"})[0] == "a/Deep Work.md"


def test_wikilink_path_relative_then_vault_then_suffix():
    files = {"x/y/N.md": "", "x/N.md": "", "N.md": "", "x/src.md": "[[y/N]]"}
    assert one(files, "x/src.md")[0] == "x/y/N.md"
    assert one({**files, "x/src.md": "[[x/N]]"}, "x/src.md")[0] == "x/N.md"
    assert one({"deep/er/x/N.md": "", "src.md": "[[er/x/N]]"})[0] == "deep/er/x/N.md"


def test_same_name_prefers_own_folder_then_nearest_shallowest_shortest_else_ambiguous():
    files = {"a/N.md": "", "b/N.md": "", "a/src.md": "[[N]]"}
    assert one(files, "a/src.md")[0] == "a/N.md"
    assert one({"N.md": "", "b/c/N.md": "", "x/src.md": "[[N]]"}, "x/src.md")[0] == "N.md"
    assert one({"ja/x/N.md": "", "ja/long name/N.md": "", "ja/y/src.md": "[[N]]"}, "ja/y/src.md")[0] == "ja/x/N.md"
    target, _, broken, cands = one({"a/N.md": "", "b/N.md": "", "c/src.md": "[[N]]"}, "c/src.md")
    assert target is None and broken == "ambiguous" and cands == ["a/N.md", "b/N.md"]


def test_wikilink_by_alias_after_file_names():
    files = {"Deep work.md": "---\naliases: [focus, Flow]\n---\n", "src.md": "[[flow]]"}
    assert one(files)[0] == "Deep work.md"
    assert one({**files, "flow.md": "", "src.md": "[[flow]]"})[0] == "flow.md", "a file name beats an alias"


def test_org_note_by_wikilink_name():
    assert one({"20250101T000000--title__kw.org": "", "src.md": "[[20250101T000000--title__kw]]"})[0].endswith(".org")


def test_markdown_links():
    files = {"notes/My Note.md": "# Sec One\n", "notes/src.md": "[a](My%20Note.md#sec-one)"}
    assert one(files, "notes/src.md")[:2] == ("notes/My Note.md", 1)
    assert one({**files, "notes/src.md": "[a](/notes/My%20Note.md)"}, "notes/src.md")[0] == "notes/My Note.md"
    assert one({**files, "notes/src.md": "[a](../../out.md)"}, "notes/src.md")[2] == "outside the vault"
    assert one({**files, "other/src.md": "[a](My%20Note.md)"}, "other/src.md")[0] == "notes/My Note.md", "by name, as Obsidian"
    assert one({**files, "notes/src.md": "![pic](img/x.png)"}, "notes/src.md")[:3] == (None, None, None), "attachments are not broken"
    assert one({**files, "notes/src.md": "[a](nope.md)"}, "notes/src.md")[2] == "no such note"


def test_org_file_links_with_search_options():
    files = {
        "a/t.org": "* First Head\n* Second :tag:\n:PROPERTIES:\n:CUSTOM_ID: sec\n:END:\n",
        "a/b/src.org": "[[file:../t.org::*First Head][x]] [[file:../t.org::#sec]] [[file:../t.org::*Nope]] [[file:../t.org::some text]]",
    }
    g = build(files)
    assert resolved(g, "a/b/src.org") == [
        ("[[file:../t.org::*First Head][x]]", "a/t.org", 1, None),
        ("[[file:../t.org::#sec]]", "a/t.org", 2, None),
        ("[[file:../t.org::*Nope]]", "a/t.org", None, "no such heading"),
        ("[[file:../t.org::some text]]", "a/t.org", None, None),
    ]


def test_id_and_denote_links():
    files = {
        "20250101T000000--t__k.org": ":PROPERTIES:\n:ID: FILE-ID\n:END:\n* H\n:PROPERTIES:\n:ID: HEAD-ID\n:CUSTOM_ID: cid\n:END:\n",
        "src.org": "[[id:FILE-ID]] [[id:HEAD-ID][h]] [[denote:20250101T000000]] [[denote:20250101T000000::#cid]] [[id:NOPE]] [[denote:19990101T000000]]",
    }
    g = build(files)
    assert [(t, l, b) for _, t, l, b in resolved(g, "src.org")] == [
        ("20250101T000000--t__k.org", None, None),
        ("20250101T000000--t__k.org", 4, None),
        ("20250101T000000--t__k.org", None, None),
        ("20250101T000000--t__k.org", 4, None),
        (None, None, "no such ID"),
        (None, None, "no such identifier"),
    ]


def test_heading_and_block_anchors():
    files = {
        "T.md": "# Top\n## Sub: Part (x)\npara ^blk\n",
        "src.md": "[[T#Sub Part (x)]] [[T#sub-part-x]] [[T#Top#Sub: Part (x)]] [[T#^blk]] [[T#^nope]] [[T#Nope]] [[#Local]]\n# Local\n",
    }
    g = build(files)
    assert [(l, b) for _, _, l, b in resolved(g, "src.md")] == [
        (2, None), (2, None), (2, None), (3, None), (None, "no such block"), (None, "no such heading"), (2, None),
    ]


def test_backlinks_orphans_neighbours():
    g = build({"a.md": "[[b]] [[c]]", "b.md": "[[c]]", "c.md": "", "lone.md": "", "self.md": "[[self]]"})
    assert sorted(s for s, _ in g.backlinks("c.md")) == ["a.md", "b.md"]
    assert g.orphans() == ["lone.md", "self.md"]
    nodes, edges = g.neighbours("b.md", 1)
    assert nodes == ["a.md", "b.md", "c.md"]
    assert edges == [("a.md", "b.md"), ("a.md", "c.md"), ("b.md", "c.md")]


@pytest.mark.parametrize("name, want", [
    ("notes/Deep work.md", ["notes/Deep work.md"]),
    ("/V/notes/Deep work.md", ["notes/Deep work.md"]),
    ("deep work", ["notes/Deep work.md"]),
    ("[[Deep work]]", ["notes/Deep work.md"]),
    ("focus", ["notes/Deep work.md"]),
    ("20250101T000000", ["20250101T000000--x.org"]),
    ("denote:20250101T000000", ["20250101T000000--x.org"]),
    ("FILE-ID", ["20250101T000000--x.org"]),
    ("id:FILE-ID", ["20250101T000000--x.org"]),
    ("dup", ["a/dup.md", "b/dup.md"]),
    ("ch", ["a/b/ch.md", "x/ch.md"]),  # typed, a name is never guessed: links from a folder may pick the shallowest
    ("a/b/ch", ["a/b/ch.md"]),
    ("nothing", []),
    ("/elsewhere/x.md", []),
    ("Memory Tiers", ["20250101T000000--x.org"]),  # a title, last
])
def test_find_note_by_any_name(name, want):
    g = build({"notes/Deep work.md": "---\naliases: [focus]\n---\n", "20250101T000000--x.org": ":PROPERTIES:\n:ID: FILE-ID\n:END:\n#+title: Memory tiers\n",
               "a/dup.md": "", "b/dup.md": "", "x/ch.md": "", "a/b/ch.md": "", "y/src.md": "[[ch]]"})
    assert g.find(name, "/V") == want
    assert resolved(g, "y/src.md")[0][1] == "x/ch.md"


def _snapshot(g: Graph) -> dict:
    return {p: [(r.link.raw, r.target, r.line, r.broken, tuple(r.candidates)) for r in g.links(p)] for p in g.notes}


def test_incremental_updates_equal_a_fresh_build():
    """200 random adds, edits and deletes: after each, the incrementally updated graph
    resolves every link exactly as a graph built from scratch."""
    import random

    rnd = random.Random(7)
    names = ["a", "b", "c", "dup"]
    folders = ["", "x/", "y/"]

    def random_note(path: str) -> str:
        parts = []
        if rnd.random() < 0.3:
            parts.append(f"---\naliases: [{rnd.choice(names)}]\n---\n")
        parts.append(f"# {rnd.choice(['H1', 'H2'])}\npara ^b{rnd.randint(1, 2)}\n")
        for _ in range(rnd.randint(0, 4)):
            n = rnd.choice(names)
            parts.append(rnd.choice([f"[[{n}]]", f"[[{n}#H1]]", f"[[{n}#^b1]]", f"[t](../{n}.md)", f"[[x/{n}]]",
                                     f"[[denote:2025010{rnd.randint(1, 3)}T000000]]"]) + "\n")
        return "".join(parts)

    from vaultd.query.ranking import terms

    notes: dict = {}
    g = Graph(terms=terms)
    for _ in range(200):
        path = rnd.choice(folders) + rnd.choice(names) + rnd.choice([".md", ".md", f"-{rnd.randint(1, 2)}.md"])
        if rnd.random() < 0.2 and rnd.random() < 0.5:
            path = f"{rnd.choice(folders)}2025010{rnd.randint(1, 3)}T000000--{rnd.choice(names)}.md"
        new = dict(notes)
        if path in notes and rnd.random() < 0.4:
            del new[path]
            g.update(new, [], [path])
        else:
            new[path] = parse_file(path, (random_note(path) + f"[[{rnd.choice(names)}|label {rnd.choice(names)}]]\n").encode())
            g.update(new, [path], [])
        notes = new
        fresh = Graph(notes, terms)
        assert _snapshot(g) == _snapshot(fresh)
        assert g.back == fresh.back
        assert g._anchor_text == fresh._anchor_text
        # every term's order asked for (and so kept) now: the next update must renew what it changes
        every = set(fresh._anchor_text) | set(g._anchor_order)
        assert {t: g.anchored_by(t) for t in every} == {t: sorted(fresh._anchor_text.get(t, ()), reverse=True)
                                                       for t in every}


def test_anchor_best_equals_ranking_every_note_named():
    """AnchorMatch visits a level of notes at a time: it must pick what ranking every named
    note by (share, path) picks, ties and skips included."""
    import heapq
    import random
    import threading
    from collections import Counter

    from vaultd.store.graph import AnchorMatch

    rnd = random.Random(3)
    for _ in range(300):
        n_terms = rnd.randint(1, 10)
        sets = []
        for i in range(n_terms):
            named = Counter({f"n{rnd.randint(0, 40):02d}.md": 1 for _ in range(rnd.randint(0, 30))})
            sets.append((f"t{i}", named, rnd.choice([1.0, 2.0, rnd.random()])))
        total = sum(w for *_, w in sets)
        sets = sorted([(t, c, w / total) for t, c, w in sets], key=lambda x: -len(x[1]))
        every: dict[str, float] = {}
        for _, named, w in sets:
            for t in named:
                every[t] = every.get(t, 0.0) + w
        skipped = {f"n{rnd.randint(0, 40):02d}.md" for _ in range(5)}
        k, least = rnd.randint(1, 12), rnd.choice([0.5, 0.3, 0.0])
        m = AnchorMatch([x for x in sets if x[1]], lambda t: sorted(next(c for u, c, _ in sets if u == t), reverse=True),
                        threading.RLock())
        want = heapq.nlargest(k, ((s, t) for t, s in every.items() if s >= least and t not in skipped))
        assert m.best(k, least, skipped.__contains__) == want
        assert all(m.get(t) == s for t, s in every.items()) and m.get("none.md") == 0.0


def test_a_child_forked_while_a_saved_value_is_being_decoded_can_decode_one(monkeypatch):
    """The graph is saved in a forked child (update._apart) while queries run: a thread in
    the middle of decoding a saved table's value held its lock in the child for good."""
    import threading

    from vaultd.ingest import update
    from vaultd.store import graph

    monkeypatch.setattr(update, "APART_S", DEADLINE)  # a child that hangs is killed: the test fails, not hangs
    table = graph.Lazy({"a": b"xyz"}, len)
    decoding, done = threading.Event(), threading.Event()

    def slow(raw):  # another table's value, decoded as the fork happens
        decoding.set()
        done.wait(2 * DEADLINE)  # until the fork is done with (set in the finally below)
        return raw

    other = graph.Lazy({"b": b""}, slow)
    t = threading.Thread(target=lambda: other["b"])
    t.start()
    try:
        assert decoding.wait(DEADLINE)
        assert update._apart(lambda: table["a"]) == 3
    finally:
        done.set()
        t.join()
