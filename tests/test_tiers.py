"""HOT/WARM/COLD rules, access counts and pins, `read`."""

import os
import signal
import time

import msgspec
import pytest

from conftest import wait_for
from vaultd.config import Config
from vaultd.vault import Vault

DAY = 86400


def make_vault(root, files: dict[str, tuple[str, float]], **tiers):
    vault = root / "vault"
    for rel, (text, age_days) in files.items():
        p = vault / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        t = time.time() - age_days * DAY
        os.utime(p, (t, t))
    cfg = Config(vault=str(vault), state_dir=str(root / "state"))
    cfg = msgspec.structs.replace(cfg, tiers=msgspec.structs.replace(cfg.tiers, **tiers)).load()
    v = Vault(cfg)
    v.reconcile()
    return v


def hot_why(v):
    return {h["path"]: h["why"] for h in v.hot()["hot"]}


@pytest.fixture
def v(tmp_path):
    vlt = make_vault(tmp_path, {
        "active.md": ("---\ntags: [active]\n---\nwork\n", 20),
        "stale-active.md": ("---\ntags: [active]\n---\nold work\n", 60),
        "done.md": ("---\ntags: [todo, done]\n---\nfinished\n", 1),
        "fresh.md": ("just written\n", 1),
        "old.md": ("# Old\n\n## Part\nline a\nline b\n\n## Other\nline c\n", 90),
        "archive/active-but-cold.md": ("---\ntags: [urgent]\n---\narchived\n", 1),
    })
    yield vlt
    vlt.close()


def test_hot_rules(v):
    why = hot_why(v)
    assert why["active.md"] == ["tag:active"]
    assert why["fresh.md"] == ["changed 1 days ago"]
    assert "stale-active.md" not in why, "a tag alone goes stale after warm_after_days"
    assert "done.md" not in why, "done demotes"
    assert "old.md" not in why
    assert "archive/active-but-cold.md" not in why, "COLD is never HOT"


def test_pins_and_access_make_hot(v):
    v.pin("old.md", True)
    v.read("stale-active.md")
    v.read("stale-active.md")
    why = hot_why(v)
    assert why["old.md"] == ["pinned"]
    assert why["stale-active.md"] == ["tag:active", "read 2 times"]
    v.pin("done.md", True)
    assert "done.md" in hot_why(v), "a pin beats done"
    assert v.pin("old.md", False)["changed"] and "old.md" not in hot_why(v)


def test_hot_is_capped_and_ordered(tmp_path):
    v = make_vault(tmp_path, {f"n{i}.md": ("---\ntags: [todo]\n---\n", i) for i in range(5)}, hot_max=2)
    try:
        assert [h["path"] for h in v.hot()["hot"]] == ["n0.md", "n1.md"]
    finally:
        v.close()


def test_read_lines_and_heading(v):
    r = v.read("old.md", heading="Part")
    assert (r["first"], r["last"], r["text"]) == (3, 6, "## Part\nline a\nline b\n")
    r = v.read("old.md", lines=(4, 5))
    assert r["text"] == "line a\nline b"
    r = v.read("old.md", lines=(2, 3), heading="Part")
    assert (r["first"], r["last"], r["text"]) == (4, 5, "line a\nline b")
    with pytest.raises(Exception, match="no heading"):
        v.read("old.md", heading="Nope")


def test_recent(v):
    assert [r["path"] for r in v.recent(7)["recent"]] == sorted(
        ["done.md", "fresh.md", "archive/active-but-cold.md"], key=lambda p: -os.stat(v.root / p).st_mtime_ns)


def test_access_and_pins_survive_a_restart_and_a_sigkill_after_flush(make_daemon):
    d = make_daemon()
    d.request("pin", note="Deep work")
    d.request("read", note="Deep work")
    state = d.state / "state.json"
    wait_for(lambda: state.exists() and b"Deep work" in state.read_bytes(), timeout=3)
    d.stop(signal.SIGKILL)
    d2 = make_daemon()
    why = {h["path"]: h["why"] for h in d2.request("hot")["hot"]}
    assert why["notes/Deep work.md"][:1] == ["pinned"] and "read 1 times" in why["notes/Deep work.md"]
    assert d2.request("pins")["pins"][0]["path"] == "notes/Deep work.md"
    d2.request("read", note="Deep work", lines=[1, 2])
    assert d2.stop() == 0
    d3 = make_daemon()
    assert "read 2 times" in {h["path"]: h["why"] for h in d3.request("hot")["hot"]}["notes/Deep work.md"]


def test_pin_follows_a_move(make_daemon):
    d = make_daemon()
    d.request("pin", note="Deep work")
    g = d.status()["generation"]
    (d.vault / "deep").mkdir()
    os.rename(d.vault / "notes" / "Deep work.md", d.vault / "deep" / "Deep work.md")
    d.wait_generation(g)
    assert [p["path"] for p in d.request("pins")["pins"]] == ["deep/Deep work.md"]


def test_corrupt_state_file_is_set_aside(tmp_path, vault):
    state = tmp_path / "st"
    state.mkdir()
    (state / "state.json").write_text("{not json")
    v = Vault(Config(vault=str(vault), state_dir=str(state)).load())
    try:
        assert v.state.state.pins == []
        assert any(p.name.startswith("state.json.bad-") for p in state.iterdir())
    finally:
        v.close()
