"""Files over the size cap (index.max_file_mb) are read only as far as the cap, everywhere:
indexing, read, context, snippets, backlinks' line text, split. The big files are real
sparse files of 64 GiB (they cost no disk): read whole, each one is a MemoryError."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time

import pytest

from conftest import wait_for

BIG = 64 << 30
HEAD = "# Big\n\nzebra crossings, counted daily\nsee [[Deep work]] on focus\nand [[long#Section 3]]\n"
OLD = time.time() - 3600


def _sparse(path, size: int = BIG, head: str = "") -> None:
    path.write_text(head)
    try:
        os.truncate(path, size)
    except OSError as e:  # EFBIG/ENOSPC: a filesystem without sparse files this big
        pytest.skip(f"{path.parent} cannot hold a sparse {size >> 30} GiB file: {e.strerror}")
    if os.stat(path).st_blocks * 512 > 1 << 30:
        pytest.skip(f"{path.parent} makes no sparse files: {size >> 30} GiB would be written")


def _long_note() -> str:
    return "# Long\n\n" + "".join(f"## Section {i}\n\n" + f"paragraph {i} of the long note.\n" * 160 + "\n"
                                  for i in range(1, 5))


@pytest.fixture
def big_vault(vault):
    """The fixture vault, a note over the split threshold, a 64 GiB note whose head is text
    and which links to both, and a 64 GiB file of nothing but NULs, as the probe made."""
    (vault / "long.md").write_text(_long_note())
    _sparse(vault / "notes" / "big.md", head=HEAD)
    _sparse(vault / "x.md")
    for p in vault.rglob("*"):
        os.utime(p, (OLD, OLD))  # quiet: only the size cap may refuse a split
    return vault


def _peak_mb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) >> 10


def _error(daemon, op: str, **args) -> str:
    msg = daemon.send_raw(json.dumps({"v": 1, "id": 1, "op": op, **args}).encode() + b"\n")
    assert not msg["ok"], msg
    return msg["error"]["message"]


def _tree(root) -> dict:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def test_every_note_is_indexed_and_a_file_over_the_cap_only_as_far_as_the_cap(big_vault, make_daemon):
    # one file larger than memory aborted the whole start: 0 notes indexed
    d = make_daemon(big_vault, ["--split", "propose"])
    st = d.status()
    assert st["notes"] == 4 + 3 and st["problems"] >= 2
    assert d.search_paths("boredom") == ["notes/Deep work.md"]  # the normal notes, all there
    assert d.search_paths("paragraph") == ["long.md"]
    assert d.search_paths("zebra") == ["notes/big.md"]  # the big note, as far as the cap
    [hit] = d.request("search", q="zebra")["hits"]
    assert [s["line"] for s in hit["snippets"]] == [3]
    # one grown past memory while watched: indexed as far as the cap, the rest goes on
    _sparse(big_vault / "journal" / "grown.md", head="# Grown\n\nokapi\n")
    (big_vault / "journal" / "small.md").write_text("# Small\n\nquokka\n")
    wait_for(lambda: d.status()["notes"] == 4 + 3 + 2)
    assert d.search_paths("okapi") == ["journal/grown.md"] and d.search_paths("quokka") == ["journal/small.md"]
    peak = _peak_mb(d.proc.pid)
    d.stop()
    log = d.output()
    assert "x.md: file is 65536.0 MB; only the first 20 MB are indexed" in log
    assert "notes/big.md: file is 65536.0 MB; only the first 20 MB are indexed" in log
    assert peak < 1024, peak  # a few reads of the cap's 20 MB, not one of 64 GB


def test_read_context_and_backlinks_of_a_note_over_the_cap_answer_from_what_was_read(big_vault, make_daemon):
    d = make_daemon(big_vault, ["--split", "propose"])
    r = d.request("read", note="notes/big.md", lines=[1, 3])
    assert r["text"] == "# Big\n\nzebra crossings, counted daily" and r["truncated"] is True
    assert (r["first"], r["last"], r["total_lines"]) == (1, 3, 5)  # its lines as far as read
    r = d.request("read", note="notes/big.md")
    assert r["text"] == HEAD.rstrip("\n") and r["truncated"] is True
    assert "5 lines as far as read: the file is over index.max_file_mb" in _error(d, "read", note="notes/big.md",
                                                                                  lines=[9, 9])
    r = d.request("read", note="x.md", lines=[1, 3], budget=1 << 30, unit="bytes")  # a budget over the cap:
    # 20 MB of NULs, one line: the cap's worth, no more
    assert r["truncated"] is True and r["total_lines"] == 1 and len(r["text"]) == 20 << 20
    r = d.request("read", note="Deep work", lines=[1, 1])
    assert r["truncated"] is False and r["text"] == "---"  # its front matter
    # context reads each hit (and HOT note: both big files are new) as far as the cap
    r = d.request("context", q="zebra crossings", budget=2000)
    [item] = [it for it in r["items"] if it["path"] == "notes/big.md"]
    assert "zebra crossings, counted daily" in item["text"].splitlines() and r["used"] <= 2000
    # a backlink's line text: read from the big note only as far as its line
    [back] = [b for b in d.request("backlinks", note="Deep work")["backlinks"] if b["path"] == "notes/big.md"]
    assert (back["line"], back["text"]) == (4, "see [[Deep work]] on focus")
    assert _peak_mb(d.proc.pid) < 1024


def test_a_split_touching_a_file_over_the_cap_is_refused_and_writes_nothing(big_vault, make_daemon):
    d = make_daemon(big_vault, ["--split", "propose"])
    before = _tree(big_vault)
    why = _error(d, "split", note="notes/big.md")
    assert why.startswith(f"notes/big.md is {BIG} bytes, over the size cap (index.max_file_mb = 20)")
    assert "would lose the rest" in why
    # long.md is splittable, but big.md links to a section that would move: big.md cannot be rewritten
    why = _error(d, "split", note="long.md")
    assert why.startswith(f"notes/big.md is {BIG} bytes, over the size cap"), why
    cannot = {c["path"]: c["why"] for c in d.request("split", list=True)["cannot"]}
    assert {"notes/big.md", "x.md", "long.md"} <= set(cannot) and "size cap" in cannot["x.md"]
    assert _tree(big_vault) == before
    assert _peak_mb(d.proc.pid) < 1024


def test_a_file_that_cannot_be_read_for_want_of_memory_is_that_files_problem_only(big_vault, tmp_path):
    # a cap bigger than the memory the process may have: reading x.md is a MemoryError,
    # inline and in worker processes (201 files: the pool parses them)
    (big_vault / "bulk").mkdir()
    for i in range(201):
        (big_vault / "bulk" / f"n{i}.md").write_text(f"# Note {i}\n\nbulk item{i}\n")
    for workers in (1, 2):
        cfg = tmp_path / f"config{workers}.toml"
        cfg.write_text(f"[index]\nmax_file_mb = {1 << 17}\nworkers = {workers}\n")

        def limit() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))

        r = subprocess.run([sys.executable, "-m", "vaultd", "index", "--config", str(cfg), "--vault", str(big_vault),
                            "--state-dir", str(tmp_path / f"state{workers}")],
                           capture_output=True, text=True, timeout=120, preexec_fn=limit)
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith(f"{4 + 1 + 201} notes indexed"), r.stdout  # all but x.md and notes/big.md
        assert "cannot read x.md: out of memory" in r.stderr and "cannot read notes/big.md: out of memory" in r.stderr


def test_snippets_and_read_of_a_file_over_the_cap_stop_at_the_last_whole_line_indexed(tmp_path):
    # a 1 MB cap and a file of 30-byte lines: line 34953 straddles the cap, so it is not indexed
    from vaultd.config import Config, Index
    from vaultd.vault import Vault

    (tmp_path / "v").mkdir()
    lines = [f"line {i:05} of the filler text.\n"[-30:] for i in range(1, 40001)]
    lines[34950 - 1] = "wombat, well inside the cap..\n"
    lines[34953 - 1] = "wombat straddles the cap.....\n"
    (tmp_path / "v" / "w.md").write_text("".join(lines))
    v = Vault(Config(vault=str(tmp_path / "v"), state_dir=str(tmp_path / "st"), index=Index(max_file_mb=1)).load())
    try:
        v.reconcile()
        [hit] = v.search("wombat")["hits"]
        assert [s["line"] for s in hit["snippets"]] == [34950]  # never the cut line, which is not indexed
        r = v.read("w.md")
        assert r["truncated"] and r["total_lines"] == 34952 and r["text"].endswith(lines[34952 - 1].rstrip("\n"))
        assert v.notes["w.md"].size == 40000 * 30
    finally:
        v.close()


def test_a_hub_grown_huge_after_its_split_is_never_read_whole(tmp_path):
    """The stale-save check, undo and a later split's re-checks compare files with what the
    split wrote: a hub grown to 64 GiB since is none of those, and is not read to see it."""
    from test_split import _big_md, _vault

    from vaultd.errors import QueryError

    v = _vault(tmp_path, {"notes/Big.md": _big_md(), "notes/Other.md": "[[Big#Section 5]]\n"}, quiet=0)
    try:
        op = v.split_note("notes/Big.md")["op"]
        _sparse(v.root / "notes/Big.md", head=(v.root / "notes/Big.md").read_text())
        others = lambda: {p: p.read_bytes() for p in sorted(v.root.rglob("*.md")) if p.name != "Big.md"}
        before = others()
        v.splits.stale.add("notes/Big.md")
        assert v.splits.resolve_stale("notes/Big.md", check_quiet=False) is None  # no MemoryError: not a stale save
        with pytest.raises(QueryError, match="changed since split"):
            v.split_undo(op)
        assert others() == before and os.stat(v.root / "notes/Big.md").st_size == BIG
    finally:
        v.close()
