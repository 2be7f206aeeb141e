"""The Vault facade in-process, on a real Tantivy index in a temp state dir."""

import os
import tempfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import msgspec
from conftest import wait_for

from vaultd.config import Config, Index
from vaultd.errors import IndexLocked
from vaultd.store.index import SCHEMA_VERSION
from vaultd.vault import Stopped, Vault


@pytest.fixture
def cfg(vault, tmp_path):
    return Config(vault=str(vault), state_dir=str(tmp_path / "st")).load()


@pytest.fixture
def v(cfg):
    vault = Vault(cfg)
    vault.reconcile()
    yield vault
    vault.close()


def paths(v, q):
    return [h["path"] for h in v.search(q)["hits"]]


def test_korean_particles_and_mixed_tokens(v):
    assert paths(v, "가치관이")[0] == "notes/20251101T120000--가치관__철학.md"
    assert paths(v, "가치관이 뭐야?")[0] == "notes/20251101T120000--가치관__철학.md"
    assert paths(v, "boredom에서") == ["notes/Deep work.md"]


def test_stemming_title_and_tag(v):
    assert paths(v, "pinning notes")[0].startswith("notes/20251016T080208")
    assert paths(v, "productivity") == ["notes/Deep work.md"]
    assert paths(v, "habit") == ["notes/Deep work.md"]


def test_snippet_line_numbers_and_highlights_on_korean(v):
    hit = v.search("가치관이")["hits"][0]
    by_line = {s["line"]: s for s in hit["snippets"]}
    assert sorted(by_line) == [5, 7], "front matter lines give way to body lines"
    assert by_line[7]["highlights"] == [[0, 3]], "every bigram lights up: all of 가치관"
    assert by_line[7]["heading"] == "가치관이란"
    s = by_line[5]
    assert s["text"] == "# 가치관이란"
    assert s["highlights"] == [[2, 6]]
    assert s["col"] == len("# ".encode()) + 1


@pytest.mark.parametrize("q", ["C++", "TODO: fix", "12:30", "http://example.com/a?b=c", '"unbalanced', "(", "*",
                               "title:", "AND OR NOT", "-", "", "   ", "a" * 500, "\x00", "🙂"])
def test_awkward_queries_never_raise(v, q):
    res = v.search(q)
    assert isinstance(res["hits"], list)


def test_colon_queries_still_find(v):
    assert paths(v, "TODO: fix")[0] == "journal/2025-11-20.md"
    assert paths(v, "12:30") == ["journal/2025-11-20.md"]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=200))
def test_no_query_string_raises(v, q):
    v.search(q, limit=5)


def test_reopen_loads_notes_without_parsing(cfg, v):
    v.close()
    again = Vault(cfg)
    try:
        assert len(again.notes) == 4
        assert again.reconcile() == (0, 0) and again.parsed == 0
    finally:
        again.close()


def test_index_of_another_schema_version_is_rebuilt(cfg, v):
    v.close()
    stamp = v.index.dir / "VERSION"
    stamp.write_text(f"{SCHEMA_VERSION - 1}\n")
    again = Vault(cfg)
    try:
        assert again.index.rebuilt and again.notes == {}
        again.reconcile()
        assert len(again.notes) == 4 and stamp.read_text().strip() == str(SCHEMA_VERSION)
    finally:
        again.close()


def test_corrupt_index_is_rebuilt(cfg, v):
    v.close()
    for f in v.index.dir.iterdir():
        if f.name == "meta.json":
            f.write_text("{ not json")
    again = Vault(cfg)
    try:
        assert again.index.rebuilt
        again.reconcile()
        assert len(again.notes) == 4
    finally:
        again.close()


def test_second_writer_is_refused(cfg, v):
    with pytest.raises(IndexLocked, match="in use by another process"):
        Vault(cfg)


def test_anchor_text_finds_a_note_by_what_links_call_it(v):
    # `[[Deep work|몰입]]` in the 가치관 note: Deep work itself never says 몰입
    assert "notes/Deep work.md" in paths(v, "몰입")
    assert "notes/Deep work.md" not in paths(v, "몰입 path:journal")


def test_a_big_batch_parses_in_worker_processes_exactly_as_inline(vault, tmp_path):
    from vaultd.ingest import workers

    (vault / "bulk").mkdir()
    for i in range(workers.POOL_MIN + 30):  # past the threshold: the pool is used
        if i % 3 == 0:
            (vault / f"bulk/n{i}.org").write_text(f"#+title: Org {i}\n* Head {i}\nwork item {i} [[file:n{i + 1}.md]]\n")
        else:
            (vault / f"bulk/n{i}.md").write_text(f"---\ntags: [bulk]\n---\n# Note {i}\n\nwork item {i} [md](n{i + 1}.md)\n")
    (vault / "bulk/bad.md").write_bytes(b"---\ntitle: [unclosed\n---\n\xff\xfe caf\xe9 work\n")
    on_disk = len(list(vault.rglob("*.md"))) + len(list(vault.rglob("*.org")))
    base = workers.spool_base()
    stale = tempfile.mkdtemp(prefix=f"{workers.SPOOL_PREFIX}{2**22 + 1}-", dir=base)  # past any pid: a killed daemon's
    tables = []
    for n in (1, 2):
        cfg = Config(vault=str(vault), state_dir=str(tmp_path / f"st{n}"), index=Index(workers=n)).load()
        v = Vault(cfg)
        try:
            v.reconcile()
            assert v.parsed == on_disk
            assert paths(v, "item 101")[0] == "bulk/n101.md"
            assert [b["path"] for b in v.backlinks("bulk/n101.md")["backlinks"]] == ["bulk/n100.md"]
            assert [b["path"] for b in v.backlinks("bulk/n103.md")["backlinks"]] == ["bulk/n102.org"]
            assert v.notes["bulk/bad.md"].problems
            tables.append({p: msgspec.msgpack.encode(note) for p, note in v.notes.items()})
        finally:
            v.close()
    assert {p: msgspec.msgpack.decode(b) for p, b in tables[0].items() if tables[1].get(p) != b} == {}
    # the workers' payload files went with the batch
    spools = [d for base in ("/dev/shm", tempfile.gettempdir()) if os.path.isdir(base)
              for d in os.listdir(base) if d.startswith(f"{workers.SPOOL_PREFIX}{os.getpid()}-")]
    assert spools == [] and not os.path.exists(stale)


def test_a_worker_that_cannot_write_its_payload_sends_it_through_the_pipe(vault, tmp_path):
    from vaultd.ingest import workers

    items = [(str(p.relative_to(vault)), 0, p.stat().st_size, 0) for p in sorted(vault.rglob("*.md"))] + [("gone.md", 0, 0, 0)]
    gone = tmp_path / "spool-that-is-not-there"
    payload, results = workers._chunk(str(vault), items, 1 << 20, str(gone))  # in this process: same code
    assert isinstance(payload, bytes) and not gone.exists()
    spool = tmp_path / "spool"
    spool.mkdir()
    path, same = workers._chunk(str(vault), items, 1 << 20, str(spool))
    assert isinstance(path, str) and same == results
    via_pipe = [(rel, note) for rel, note, _ in workers._documents(workers._take(payload), results)]
    via_file = [(rel, note) for rel, note, _ in workers._documents(workers._take(path), same)]
    assert via_pipe == via_file and via_pipe[-1] == ("gone.md", None) and len(via_pipe) == len(items)
    assert via_pipe[0][1].path == items[0][0] and not os.listdir(spool)  # the file is gone once read


def test_a_task_holds_at_most_chunk_files_or_chunk_bytes():
    from vaultd.ingest import workers

    small, big = workers.CHUNK_BYTES // 100, workers.CHUNK_BYTES * 3
    items = [(f"s{i}.md", 0, small, 0) for i in range(workers.CHUNK + 5)] + [("big.md", 0, big, 0), ("after.md", 0, small, 0)]
    items += [(f"h{i}.md", 0, workers.CHUNK_BYTES // 3, 0) for i in range(7)]
    chunks = list(workers._chunks(items))
    assert [c for chunk in chunks for c in chunk] == items  # all of them, in order
    assert [len(c) for c in chunks] == [workers.CHUNK, 5, 1, 3, 3, 2]  # a file bigger than the cap goes alone
    assert all(len(c) == 1 or sum(size for *_, size in c) <= workers.CHUNK_BYTES for c in chunks)


def test_workers_output_lost_from_the_spool_is_parsed_again(vault, caplog):
    from vaultd.ingest import workers

    (vault / "bulk").mkdir()
    for i in range(workers.CHUNK * 6):
        (vault / f"bulk/n{i}.md").write_text(f"# Note {i}\n\nwork item {i} [md](n{i + 1}.md)\n")
    items = [(f"bulk/n{i}.md", 0, 40, 0) for i in range(workers.CHUNK * 6)]
    got = workers.parse_many(str(vault), items, 1 << 20, 2)
    first = next(got)
    base = workers.spool_base()

    def spooled() -> list[str]:
        mine = [os.path.join(base, d) for d in os.listdir(base) if d.startswith(f"{workers.SPOOL_PREFIX}{os.getpid()}-")]
        return [os.path.join(d, f) for d in mine for f in os.listdir(d)]

    wait_for(lambda: len(spooled()) == 5)  # the 5 other chunks are parsed and waiting in the spool:
    for f in spooled():  # empty it, as a cleaner of /dev/shm would
        os.unlink(f)
    rest = [first, *got]
    assert [(rel, note.path if note else None) for rel, note, _ in rest] == [(rel, rel) for rel, *_ in items]
    assert "output is gone" in caplog.text


def test_a_stop_gives_up_the_batch_and_commits_nothing(cfg, vault):
    v = Vault(cfg)
    try:
        v.stopping.set()
        with pytest.raises(Stopped):
            v.reconcile()
        assert v.notes == {} and v.graph is None and v.index.searcher().num_docs == 0
        v.stopping.clear()
        v.reconcile()
        assert v.notes and paths(v, "deep work")
    finally:
        v.close()


def test_walk_finds_the_notes_the_filter_accepts_and_no_other_file(tmp_path):
    from vaultd.ingest.filters import NoteFilter

    root = tmp_path / "v"
    for rel in ["a.md", "b.org", "c.txt", "n/d.md", "n/m/e.MD", "n/.hidden/f.md", ".git/g.md", "node_modules/h.md",
                "n/.#i.md", "n/i.md~", "n/#i.md#", "n/i.md.swp", "n/4913", "j k/l ü.md", "n/m/.obsidian/o.md"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x\n")
    (root / "link").symlink_to(root / "n")  # a folder symlink: not followed
    (root / "p.md").symlink_to(root / "a.md")  # a file symlink: not a note of its own
    f = NoteFilter()
    every = {os.path.relpath(os.path.join(d, name), root).replace(os.sep, "/")
             for d, _, names in os.walk(root) for name in names if not os.path.islink(os.path.join(d, name))}
    want = {rel for rel in every if f(rel)}
    assert want == {"a.md", "b.org", "n/d.md", "n/m/e.MD", "j k/l ü.md"}
    assert dict(f.walk(root)).keys() == want
    assert dict(f.walk(root, "n")).keys() == {"n/d.md", "n/m/e.MD"} == dict(f.walk(root, "n/")).keys()
    assert not dict(f.walk(root, ".git")) and not dict(f.walk(root, "n/.hidden")) and not dict(f.walk(root, "gone"))
    st = dict(f.walk(root))["n/d.md"]
    assert st.st_size == 2


def test_a_folder_swapped_for_a_symlink_out_of_the_vault_is_never_read(v, tmp_path, caplog):
    sub = v.root / "notes" / "sub"
    sub.mkdir()
    (sub / "secret.md").write_text("# Inside\n\nzanzibarite inside\n")
    v.apply(["notes/sub/secret.md"])
    assert paths(v, "zanzibarite") == ["notes/sub/secret.md"]
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("# Outside\n\nzanzibarite quokkalicious outside\n")
    sub.rename(v.root / "notes" / "sub.old")
    sub.symlink_to(outside, target_is_directory=True)
    v.apply(["notes/sub/", "notes/sub/secret.md"])  # what the watcher reports for the swap
    assert paths(v, "quokkalicious") == [] and "notes/sub/secret.md" not in v.notes
    assert "symlink out of the vault" in caplog.text
    with pytest.raises(Exception, match="no note matches|cannot read"):
        v.read("notes/sub/secret.md")


def test_a_fifo_where_a_note_was_never_blocks(v):
    note = v.root / "notes" / "piped.md"
    note.write_text("# Piped\n\nfifoword\n")
    v.apply(["notes/piped.md"])
    assert paths(v, "fifoword") == ["notes/piped.md"]
    note.unlink()
    os.mkfifo(note)
    v.apply(["notes/piped.md"])  # would block forever on an open() that waits for a writer
    assert paths(v, "fifoword") == [] and "notes/piped.md" not in v.notes


def test_a_file_name_that_is_not_utf8_never_stops_the_rest(cfg, vault):
    bad = os.path.join(os.fsencode(vault), b"notes", b"caf\xe9 \xb0\xa1.md")  # Latin-1 and CP949 bytes
    with open(bad, "wb") as f:
        f.write(b"# Cafe\nuniqueword\n")
    os.mkdir(os.path.join(os.fsencode(vault), b"d\xe9j\xe0"))
    v = Vault(cfg)
    try:
        v.reconcile()
        assert len(v.notes) == sum(1 for _ in vault.rglob("*.md")) + sum(1 for _ in vault.rglob("*.org")) - 1
        (vault / "notes" / "Fresh.md").write_text("# Fresh\nfreshword\n")
        v.apply([os.fsdecode(bad)[len(str(vault)) + 1 :], "notes/Fresh.md"])  # the good one in the same batch
        assert "notes/Fresh.md" in v.notes
    finally:
        v.close()


def test_an_edit_that_keeps_size_and_mtime_is_indexed_when_reported(v, vault):
    p = vault / "notes" / "Deep work.md"
    st = p.stat()
    text = p.read_bytes()
    p.write_bytes(text[: -len(b"zanzibar\n")] + b"zanzibar\n" if len(text) > 9 else text)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))  # a coarse clock: the same mtime, the same size
    assert p.stat().st_size == st.st_size and p.stat().st_mtime_ns == st.st_mtime_ns
    v.apply(["notes/Deep work.md"])  # a stat scan sees it by the ctime the write changed
    assert paths(v, "zanzibar") == ["notes/Deep work.md"]
    parsed = v.parsed
    v.apply(["notes/Deep work.md"])  # unchanged since: not read again
    assert v.parsed == parsed
    v.apply(["notes/Deep work.md"], reread=True)  # the watcher reported it: read, the hash decides
    assert v.parsed == parsed + 1 and paths(v, "zanzibar") == ["notes/Deep work.md"]


@pytest.mark.skipif(not hasattr(__import__("ctypes").CDLL(None), "mallinfo2"), reason="glibc's allocator only")
def test_big_blocks_stay_out_of_the_heap_whose_holes_are_never_given_back(tmp_path):
    """glibc raises its threshold for mapping a block apart to the size of each such block freed:
    then the note table's copies each batch makes (5 MB at 100,000 notes) came from the heap,
    and a long-running daemon grew with edits (11 MB over 25 on 10,000 notes). A process that
    opens a vault keeps the threshold: a big block freed, the next is mapped apart again."""
    import subprocess
    import sys
    import textwrap

    (tmp_path / "v").mkdir()
    (tmp_path / "v" / "a.md").write_text("# a\n")
    script = textwrap.dedent(f"""
        import ctypes
        class Info(ctypes.Structure):
            _fields_ = [(n, ctypes.c_size_t) for n in
                        "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()]
        info = ctypes.CDLL(None).mallinfo2
        info.restype = Info
        from vaultd.config import Config
        from vaultd.vault import Vault
        v = Vault(Config(vault={str(tmp_path / "v")!r}, state_dir={str(tmp_path / "st")!r}).load())
        block = bytearray(8 << 20)
        del block  # left alone, glibc now serves blocks up to 8 MB from its heap
        heap = info().arena
        block = bytearray(4 << 20)
        print(info().arena - heap, info().hblkhd >= 4 << 20)
        v.close()
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    grown, mapped = out.stdout.split()
    assert int(grown) < 1 << 20 and mapped == "True"


def test_a_backlinks_line_is_read_from_where_it_begins_and_by_number_once_the_file_moved_on(v, vault):
    src = vault / "notes" / "hub.md"
    lines = [f"줄 {i} 가나다 filler text" for i in range(3000)]
    lines[2500] = "깊은 곳 [[Deep work]] 끝"
    src.write_text("\n".join(lines) + "\n")
    crlf = vault / "notes" / "crlf.md"
    crlf.write_bytes(b"a\r\nb\rc [[Deep work]] d\r\n")
    v.apply(["notes/hub.md", "notes/crlf.md"])
    by = {b["path"]: b for b in v.backlinks("Deep work")["backlinks"]}
    assert (by["notes/hub.md"]["line"], by["notes/hub.md"]["text"]) == (2501, "깊은 곳 [[Deep work]] 끝")
    assert by["notes/hub.md"]["byte_col"] == len("깊은 곳 ".encode()) + 1 and "at" not in by["notes/hub.md"]
    assert (by["notes/crlf.md"]["line"], by["notes/crlf.md"]["text"]) == (3, "c [[Deep work]] d")
    # edited but not yet re-read: the stored offset is no longer a line's start, so line 2501 is read by number
    src.write_text("x" + "\n".join(lines) + "\n")
    assert {b["path"]: b["text"] for b in v.backlinks("Deep work")["backlinks"]}["notes/hub.md"] == "깊은 곳 [[Deep work]] 끝"
    # a line cut short: its start still read, never a neighbour's text
    src.write_text("\n".join(lines[:2500]) + "\n깊은")
    assert {b["path"]: b["text"] for b in v.backlinks("Deep work")["backlinks"]}["notes/hub.md"] == "깊은"
    # the same size, a CR on the link's line: a line ends there, as the parser reads it
    src.write_text("\n".join(lines).replace("[[Deep work]] 끝", "[[Deep work]]\r끝") + "\n")
    assert {b["path"]: b["text"] for b in v.backlinks("Deep work")["backlinks"]}["notes/hub.md"] == "깊은 곳 [[Deep work]]"


def test_read_at_reads_lines_from_where_they_begin_and_refuses_a_changed_file(tmp_path):
    from vaultd.paths import LINE, read_at
    long = b"y" * (3 * LINE)  # past the first read: read on, block after block
    (tmp_path / "n.md").write_bytes(b"one\n" + long + b"\nlast")
    size = (tmp_path / "n.md").stat().st_size
    at_long, at_last = 4, 5 + len(long)
    assert read_at(str(tmp_path), "n.md", [0, at_long, at_last], 1 << 20, size) == {0: b"one", at_long: long, at_last: b"last"}
    assert read_at(str(tmp_path), "n.md", [at_last], at_last + 2, size) == {at_last: b"la"}  # cut at the size cap
    assert read_at(str(tmp_path), "n.md", [2], 1 << 20, size) is None  # not where a line begins
    assert read_at(str(tmp_path), "n.md", [size], 1 << 20, size) is None  # the end, after no LF
    assert read_at(str(tmp_path), "n.md", [at_long], 1 << 20, size + 1) is None  # another size: changed since


def test_nothing_worked_out_of_a_note_table_keeps_it_alive_once_replaced(v):
    """Each commit replaces the note table: what searches, status and the working set
    worked out of one (sizes, problems, conflict copies, hot groups, the vocabulary) must not
    keep it alive after that (a table kept so while another was read left 100 MB of
    Python's heap in holes at 100,000 notes). The mention lookup, which tells the notes
    changed since by identity, keeps the one it last answered from, and is not asked here."""
    import gc
    import weakref

    from vaultd.note import NoteTable

    v.status(), v.search("deep work"), v.search("가치관이"), v.hot(), v.context("deep work", 500)
    v.searcher.vocabulary().hangul_words()
    old = weakref.ref(v.core.notes)
    v.core.graph = None  # (a graph is of the table it was built over: here, only what is worked out of one)
    v.core.notes, v.core.by_key = NoteTable(v.core.notes), dict(v.core.by_key)
    gc.collect()
    assert old() is None, [type(r).__name__ for r in gc.get_referrers(old())]
    assert v.status()["notes"] == len(v.core.notes) and paths(v, "deep work")[0] == "notes/Deep work.md"
