"""The link graph and note table saved beside the index: a restart loads them instead of
resolving every link again, and what it loads equals a graph built fresh; a file that is
damaged, of another format, vault or index, or of an older commit is rebuilt, never used."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import stat
import struct

import msgspec
import pytest

from vaultd.config import Config
from vaultd.query.analysis import terms
from vaultd.store import graph_file
from vaultd.store.graph import Graph, dep_codes
from vaultd.store.index import path_key
from vaultd.vault import Vault

from conftest import Daemon, wait_for

@pytest.fixture(autouse=True)
def info_logged(caplog):
    caplog.set_level(logging.INFO, logger="vaultd")


EXTRA = {
    # anchors, blocks, aliases, labels (anchor text), a denote link, broken ones, a name two notes share
    "hub.md": "---\naliases: [Centre]\n---\n# Hub\nSee [[Deep work#Rules|the rules of deep work]], [[alpha#Two]], "
              "[[alpha#^blk]], [[beta|beta notes]], [[nowhere]], [[dup]], [[gamma#Gone]] and "
              "[[denote:20251016T080208]] and [a](notes/Deep%20work.md) and https://example.com\n",
    "alpha.md": "# One\ntext\n## Two\npara ^blk\n[[hub]] [[Centre|centre of it]]\n",
    "beta.md": "# Beta\n[[alpha#One|first part]] [[hub#Hub]]\n",
    "gamma.md": "# Gone\n# Stays\n[[beta]]\n",
    "x/dup.md": "# dup x\n",
    "y/dup.md": "# dup y\n[[dup]] [[../hub]] [[x/dup]]\n",
}


def _vault(vault) -> None:
    for p, text in EXTRA.items():
        (vault / p).parent.mkdir(parents=True, exist_ok=True)
        (vault / p).write_text(text)


def _edit_while_stopped(vault) -> None:
    """An edit (a heading gone: links into it break), a delete, a rename, a note added that
    takes a name others link to."""
    (vault / "gamma.md").write_text("# Stays\n[[beta]] [[hub|hub again]]\n")
    os.unlink(vault / "x" / "dup.md")
    os.rename(vault / "beta.md", vault / "y" / "beta.md")
    (vault / "nowhere.md").write_text("# Now here\n[[alpha#Two]]\n")


def _picture(g) -> dict:
    """Everything a graph answers from: every link (as written, where it leads, why broken),
    backlinks, anchor text, the lookup tables, what each note's links depend on, counts."""
    enc = msgspec.msgpack.encode
    return {
        "notes": {p: enc(n) for p, n in g.notes.items()},
        "links": {p: [(r.link.raw, r.link.line, r.link.col, r.link.label, r.target, r.line, r.broken,
                       tuple(r.candidates)) for r in g.links(p)] for p in g.notes},
        "back": g.back,
        "backlinks": {p: [(s, r.link.raw, r.line) for s, r in g.backlinks(p)] for p in g.notes},
        "broken": [(s, r.link.raw, r.broken) for s, r in g.broken()],
        "anchor_text": {t: dict(c) for t, c in g._anchor_text.items() if c},
        "src_anchor": {p: sorted(zip(a[::2], a[1::2])) for p, a in g._src_anchor.items()},
        "deps": {p: sorted(dep_codes(d)) for p, d in g._src_deps.items()},  # as saved: their codes
        "tables": [{k: sorted(v) for k, v in getattr(g, t).items() if v}
                   for t in ("_by_stem", "_by_alias", "_by_id", "_by_uuid")] + [dict(g._by_path)],
        "count": g.count(),
    }


def _config(vault, state) -> Config:
    return Config(vault=str(vault), state_dir=str(state))


def _fresh(vault, state, tmp_path, name="fresh"):
    """A graph built from scratch: the same index, without the saved graph."""
    other = tmp_path / name
    shutil.copytree(state, other, ignore=shutil.ignore_patterns("graph.msgpack", ".vaultd.lock"))
    v = Vault(_config(vault, other))
    assert v.ingest.saved_graph is None
    try:
        v.reconcile(graph=False)
        return _picture(Graph(v.notes, terms))  # built here, as it is made: neither saved nor loaded
    finally:
        v.index.close()
        v.writer.release()


def test_a_loaded_graph_equals_one_built_fresh_also_after_changes_made_while_stopped(vault, tmp_path, caplog):
    _vault(vault)
    state = tmp_path / "s"
    v = Vault(_config(vault, state))
    assert v.ingest.saved_graph is None  # nothing saved yet
    v.reconcile()
    built = _picture(v.graph)
    assert built["count"][1] >= 3 and built["anchor_text"]  # broken links and anchor text to carry over
    v.close()
    path = state / graph_file.FILE_NAME
    assert stat.S_IMODE(path.stat().st_mode) == 0o600

    caplog.clear()
    v = Vault(_config(vault, state))
    assert v.ingest.saved_graph is not None and v.notes is v.ingest.saved_graph.notes, "the notes loaded from it"
    assert v.core.by_key == {path_key(p): n for p, n in v.notes.items()}, "their keys in the index loaded too"
    assert v.reconcile() == (0, 0)
    assert "links resolved" not in caplog.text
    assert _picture(v.graph) == built
    v.close()

    _edit_while_stopped(vault)
    caplog.clear()
    v = Vault(_config(vault, state))
    assert v.ingest.saved_graph is not None
    assert v.reconcile() == (3, 2)
    assert "loaded from graph.msgpack" in caplog.text and "links resolved" not in caplog.text  # gamma, nowhere, y/beta; x/dup.md, beta.md
    after = _picture(v.graph)
    v.close()
    fresh = _fresh(vault, state, tmp_path)
    assert after == fresh
    assert after != built
    assert ("hub.md", "[[gamma#Gone]]", "no such heading") in after["broken"]
    assert after["links"]["hub.md"][1][4] == "alpha.md"

    # and what was saved at shutdown, after those changes, loads as that graph too
    v = Vault(_config(vault, state))
    v.reconcile()
    assert _picture(v.graph) == fresh
    v.close()


def _saved(vault, tmp_path, state_name="s"):
    _vault(vault)
    state = tmp_path / state_name
    v = Vault(_config(vault, state))
    v.reconcile()
    want = _picture(v.graph)
    v.close()
    return state, want


def _old_format(data: bytes) -> bytes:
    (n,) = struct.unpack("<I", data[-4:])
    t = msgspec.msgpack.decode(data[-4 - n:-4])
    t[0][0] = graph_file.FORMAT - 1
    trailer = msgspec.msgpack.encode(t)
    return data[:-4 - n] + trailer + struct.pack("<I", len(trailer))


DAMAGE = {
    "garbage": (lambda d: os.urandom(len(d)), "is not a saved graph"),
    "empty": (lambda d: b"", "is not a saved graph"),
    "truncated": (lambda d: d[: len(d) // 2], "cut short"),
    "trailer cut": (lambda d: d[:-3], "cut short"),
    "a byte changed": (lambda d: d[:100] + bytes([d[100] ^ 1]) + d[101:], "checksum"),
    "old format": (_old_format, f"is of format {graph_file.FORMAT - 1}"),
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_or_old_graph_file_is_rebuilt_with_a_log_line(vault, tmp_path, caplog, damage):
    state, want = _saved(vault, tmp_path)
    path = state / graph_file.FILE_NAME
    spoil, why = DAMAGE[damage]
    path.write_bytes(spoil(path.read_bytes()))
    (state / f".{graph_file.FILE_NAME}.1.tmp").write_bytes(b"half a save")  # the daemon killed while saving
    caplog.clear()
    v = Vault(_config(vault, state))
    assert v.ingest.saved_graph is None
    assert why in caplog.text and "building it anew" in caplog.text
    assert not list(state.glob("*.tmp"))
    v.reconcile()
    assert _picture(v.graph) == want
    v.close()
    v = Vault(_config(vault, state))  # and saved whole again
    assert v.ingest.saved_graph is not None
    v.reconcile()
    assert _picture(v.graph) == want
    v.close()


def test_a_graph_of_another_vault_index_or_commit_is_not_used(vault, tmp_path, caplog):
    state, want = _saved(vault, tmp_path)
    path = state / graph_file.FILE_NAME
    saved = path.read_bytes()

    # another vault's file (its own index, at the same commit number)
    other = tmp_path / "other"
    shutil.copytree(vault, other)
    (other / "hub.md").write_text("# elsewhere\n[[alpha]]\n")
    ostate, _ = _saved(other, tmp_path, "os")
    (ostate / graph_file.FILE_NAME).write_bytes(saved)
    caplog.clear()
    v = Vault(_config(other, ostate))
    assert v.ingest.saved_graph is None and "for another vault" in caplog.text
    v.close()

    # this vault's file, beside an index rebuilt since (a new instance, its commits counted anew)
    shutil.rmtree(state / "index")
    v = Vault(_config(vault, state))
    v.reconcile(graph=False)
    v.index.close()
    v.writer.release()
    path.write_bytes(saved)
    caplog.clear()
    v = Vault(_config(vault, state))
    assert v.ingest.saved_graph is None and "from another index" in caplog.text
    v.reconcile()
    assert _picture(v.graph) == want
    v.close()

    # a commit the file has not seen (a crash before it was saved again)
    saved = path.read_bytes()
    v = Vault(_config(vault, state))
    assert v.ingest.saved_graph is not None
    (vault / "alpha.md").write_text("# One\n[[beta]]\n")
    v.reconcile()
    v.index.close()  # gone without a word: no save at shutdown
    v.writer.release()
    assert path.read_bytes() == saved
    caplog.clear()
    v = Vault(_config(vault, state))
    assert v.ingest.saved_graph is None and "was saved at index commit" in caplog.text
    v.reconcile()
    assert _picture(v.graph) == _fresh(vault, state, tmp_path)
    v.close()


def _answers(d: Daemon, paths: list[str]) -> dict:
    return {
        "links": {p: d.request("links", note=p)["links"] for p in paths},
        "backlinks": {p: d.request("backlinks", note=p)["backlinks"] for p in paths},
        "broken": d.request("broken"),
        "status": {k: d.status()[k] for k in ("links", "broken", "notes", "graph")},
        "search": d.search_paths("centre"),  # anchor text: only a label says it
    }


def test_the_daemon_restarts_with_its_saved_graph_and_answers_as_a_fresh_build(make_daemon, vault, tmp_path):
    _vault(vault)
    d = make_daemon()
    wait_for(lambda: d.status()["graph"] == "ready")
    assert d.stop() == 0
    assert "link graph saved" in d.output() or (tmp_path / "state" / graph_file.FILE_NAME).exists()
    _edit_while_stopped(vault)
    d = make_daemon(extra=["--log-level", "info"], start=False)
    d.start(wait=False)
    wait_for(lambda: d.proc.poll() is not None or d._ready(), interval=0.05)
    assert d.status()["graph"] == "ready"
    paths = [p for p in (h["path"] for h in d.request("list")["notes"])]
    assert len(paths) >= 9
    loaded = _answers(d, paths)
    assert d.stop() == 0
    assert "loaded from graph.msgpack" in d.output()
    assert "links resolved in" not in d.output()

    os.unlink(tmp_path / "state" / graph_file.FILE_NAME)
    d = make_daemon(extra=["--log-level", "info"])
    wait_for(lambda: d.status()["graph"] == "ready")
    fresh = _answers(d, paths)
    assert d.stop() == 0
    assert "links resolved in" in d.output()
    assert loaded == fresh
    assert loaded["status"]["broken"] >= 2 and "hub.md" in loaded["search"]


def test_the_daemon_does_not_die_of_a_damaged_graph_file(make_daemon, vault, tmp_path):
    _vault(vault)
    d = make_daemon()
    wait_for(lambda: d.status()["graph"] == "ready")
    want = d.request("backlinks", note="alpha")
    d.stop(signal.SIGINT)
    path = tmp_path / "state" / graph_file.FILE_NAME
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])
    d = make_daemon(extra=["--log-level", "info"])
    wait_for(lambda: d.status()["graph"] == "ready")
    assert d.request("backlinks", note="alpha") == want
    assert d.stop() == 0
    out = d.output()
    assert "saved link graph" in out and "cut short" in out and "building it anew" in out
    assert "link graph saved" in out
    assert path.read_bytes() != data[: len(data) // 3]


def test_restore_of_a_snapshot_equals_the_graph():
    """Graph.restore works out backlinks and anchor text itself when a snapshot has none."""
    from vaultd.parse import parse_file
    from vaultd.query.ranking import terms

    g = Graph({p: parse_file(p, t.encode()) for p, t in EXTRA.items()}, terms)
    assert _picture(Graph.restore(g.snapshot(), terms)) == _picture(g)


def test_a_lazy_table_over_a_column_acts_as_a_dict():
    """What a loaded graph's tables are made of: values decoded as first asked for, records
    with no numbers absent where the table says so, a copy independent of the original."""
    from array import array

    from vaultd.store.graph import Column, Lazy

    at = {"a": 0, "b": 1, "c": 2, "d": 3}
    data = memoryview(array("i", [1, 2, 3, 4, 5]).tobytes()).cast("i")
    ends = memoryview(array("q", [0, 2, 2, 5, 5]).tobytes()).cast("q")
    for empty, want in ((True, {"a": [1, 2], "b": [], "c": [3, 4, 5], "d": []}), (False, {"a": [1, 2], "c": [3, 4, 5]})):
        t = Lazy(Column(at, data, ends, empty), list, list)
        assert len(t) == len(want) and sorted(t) == sorted(want) and ("b" in t) == empty
        c = t.copy()
        assert t.get("a") == [1, 2] and t.get("zz", 0) == 0
        t["c"].append(9)
        t["new"].append(1)  # a key in neither: made, as a defaultdict does
        assert t.pop("a") == [1, 2] and "a" not in t
        del t["new"]
        assert dict(t.items()) == {**{k: v for k, v in want.items() if k != "a"}, "c": [3, 4, 5, 9]}
        assert dict(c.items()) == want, "the copy: its own values"
        assert len(t) == len(want) - 1


def test_a_save_of_a_partly_decoded_graph_equals_a_fresh_build(vault, tmp_path):
    """A loaded graph's parts never asked for are saved from their numbers as loaded (records
    renumbered: a note deleted, one renamed, one added), not decoded; what loads from that
    save equals a graph built fresh."""
    state, _ = _saved(vault, tmp_path)
    v = Vault(_config(vault, state))
    v.reconcile()
    g = v.graph
    _edit_while_stopped(vault)  # while it runs, this time
    v.apply(["gamma.md", "x/dup.md", "beta.md", "y/beta.md", "nowhere.md"])
    with v.ingest.apply_lock:
        snap, stamp = g.snapshot(), graph_file.stamp_of(vault, v.index, terms)
    tables = snap[1:4]  # out, deps, anchor: copies of the graph's
    untouched = [len(t.raw) for t in tables]
    assert all(untouched), "parts not asked for still as saved"
    graph_file.save(state / graph_file.FILE_NAME, stamp, snap)
    assert [len(t.raw) for t in tables] == untouched, "the save decoded none of them"
    v.ingest.graph_saved = v.generation  # saved just now (else close saves it again)
    v.close()
    v = Vault(_config(vault, state))
    assert v.ingest.saved_graph is not None, "what was saved is what loads"
    v.reconcile()
    assert "nowhere.md" in v.graph.notes and "x/dup.md" not in v.graph.notes
    loaded = _picture(v.graph)
    v.close()
    assert loaded == _fresh(vault, state, tmp_path)


def test_work_done_apart_runs_in_a_child_and_its_answer_or_error_comes_back():
    from vaultd.ingest.update import _apart

    assert _apart(os.getpid) not in (os.getpid(), 0)
    assert _apart(len, b"x" * 5000) == 5000
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        _apart(divmod, 1, 0)


def test_a_save_made_apart_loads_as_a_fresh_build(vault, tmp_path):
    _vault(vault)
    state = tmp_path / "state"
    v = Vault(_config(vault, state))
    v.reconcile()
    (vault / "alpha.md").write_text("# Alpha\n\nnow [[beta]] and [[nowhere]]\n")
    v.apply(["alpha.md"])
    assert v.save_graph(apart=True)
    assert not v.save_graph(apart=True)  # nothing changed since
    v.close()
    v = Vault(_config(vault, state))
    assert v.ingest.saved_graph is not None
    v.reconcile()
    assert _picture(v.graph) == _fresh(vault, state, tmp_path)
    v.close()


def _maps(pid: int | str, path) -> bool:
    """Whether process `pid` maps the file at `path` (Linux's /proc)."""
    with open(f"/proc/{pid}/maps") as f:
        return f" {os.path.realpath(path)}\n" in f.read()


needs_proc = pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="reads /proc/PID/maps")


@needs_proc
def test_a_graph_built_is_saved_at_once_and_then_mapped_as_a_restart_maps_it(vault, tmp_path, caplog):
    """The graph built from the notes (in a child process) is saved as it is built, and what
    the Vault keeps is then what it saved: the note table and graph loaded from the file (its
    pages mapped), equal to the table it had and to a graph built here."""
    _vault(vault)
    state = tmp_path / "s"
    path = state / graph_file.FILE_NAME
    v = Vault(_config(vault, state))
    v.reconcile(graph=False)
    enc = msgspec.msgpack.encode
    table = {p: enc(n) for p, n in v.notes.items()}
    want = _picture(Graph(v.notes, terms))
    assert not path.exists() and not _maps("self", path)
    before = v.notes
    caplog.clear()
    v.build_graph()
    assert "built in a child process" in caplog.text and "loaded from graph.msgpack" in caplog.text
    assert v.notes is before, "no second table read from the file: its notes' bytes are the file's now"
    assert path.exists() and v.ingest.graph_saved == v.generation, "saved as built, not at shutdown"
    assert _maps("self", path), "the table and graph in use are the file's"
    assert {p: enc(n) for p, n in v.notes.items()} == table
    assert v.core.by_key == {path_key(p): n for p, n in v.notes.items()}
    assert _picture(v.graph) == want
    v.index.close()  # gone without a word: no save at shutdown
    v.writer.release()
    v = Vault(_config(vault, state))
    assert v.ingest.saved_graph is not None, "what was saved as built is what a restart loads"
    v.reconcile()
    assert _picture(v.graph) == want
    v.close()


def test_a_save_is_taken_over_only_the_table_it_was_saved_from(vault, tmp_path, caplog):
    """graph_file.load_over: the notes of the table given, in its order, or nothing."""
    from vaultd.note import NoteTable

    state, want = _saved(vault, tmp_path)
    v = Vault(_config(vault, state))
    try:
        stamp = graph_file.stamp_of(v.root, v.index, terms)
        path = state / graph_file.FILE_NAME
        shuffled = NoteTable(reversed(list(v.notes.items())))
        assert graph_file.load_over(path, stamp, shuffled) is None and "not saved from these notes" in caplog.text
        fewer = NoteTable(list(v.notes.items())[1:])
        assert graph_file.load_over(path, stamp, fewer) is None
        same = NoteTable(v.notes.items())
        saved = graph_file.load_over(path, stamp, same)
        assert saved is not None and saved.notes is same and _picture(saved.graph(terms)) == want
    finally:
        v.close()


def test_a_graph_build_is_given_up_when_vaultd_stops(vault, tmp_path):
    from vaultd.ingest.update import Stopped

    _vault(vault)
    state = tmp_path / "s"
    v = Vault(_config(vault, state))
    v.reconcile(graph=False)
    v.stopping.set()
    v.ingest.saved_graph = None
    with pytest.raises(Stopped):
        v.ingest._build_graph()
    assert v.graph is None and not (state / graph_file.FILE_NAME).exists()
    v.index.close()
    v.writer.release()


def test_vaultd_index_leaves_the_graph_the_first_run_loads(make_daemon, vault, tmp_path):
    import subprocess
    import sys

    _vault(vault)
    state = tmp_path / "state"
    r = subprocess.run([sys.executable, "-m", "vaultd", "index", "--vault", str(vault), "--state-dir", str(state)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert (state / graph_file.FILE_NAME).exists()
    d = make_daemon(extra=["--log-level", "info"])
    wait_for(lambda: d.status()["graph"] == "ready")
    paths = [h["path"] for h in d.request("list")["notes"]]
    loaded = _answers(d, paths)
    assert d.stop() == 0
    out = d.output()
    assert "loaded from graph.msgpack" in out and "links resolved in" not in out, "the first run: a restart"
    os.unlink(state / graph_file.FILE_NAME)
    d = make_daemon(extra=["--log-level", "info"])
    wait_for(lambda: d.status()["graph"] == "ready")
    assert _answers(d, paths) == loaded
    assert d.stop() == 0
    assert "links resolved in" in d.output()


@needs_proc
def test_a_first_run_saves_the_graph_it_built_and_a_restart_loads_it(make_daemon, vault, tmp_path):
    _vault(vault)
    path = tmp_path / "state" / graph_file.FILE_NAME
    d = make_daemon(extra=["--log-level", "info"])
    wait_for(lambda: d.status()["graph"] == "ready")
    assert "links resolved in" in d.output() and path.exists(), "built, and saved as built"
    assert _maps(d.proc.pid, path), "the daemon keeps what it saved, mapped, as a restart does"
    paths = [h["path"] for h in d.request("list")["notes"]]
    built = _answers(d, paths)
    links = d.request("links", note="hub.md", paths="absolute")["links"]  # the graph as read from the file
    candidates = [c for link in links for c in link.get("candidates") or ()]
    assert candidates and all(os.path.isabs(c) for c in candidates), "shown as asked, as every other path"
    d.stop(signal.SIGKILL)  # no save at shutdown: what loads next is what was saved as built
    d = make_daemon(extra=["--log-level", "info"])
    wait_for(lambda: d.status()["graph"] == "ready")
    assert _answers(d, paths) == built
    assert d.stop() == 0
    out = d.output()
    assert "loaded from graph.msgpack" in out and "links resolved in" not in out
