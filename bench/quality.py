"""Search quality: run a query set through the daemon and score it, beside a grep baseline.

    python bench/quality.py                                    # ../shared/eval/queries-dev.json
    python bench/quality.py ../shared/eval/anchors-dev.json
    python bench/quality.py my-queries.json --corpora DIR
    python bench/quality.py --generated                        # + symbol and tag queries from the corpora
    python bench/quality.py --semantic                         # every group with and without semantic recall

A query set is a JSON list of {"query", "relevant": [paths], "corpus", "lang"?, "kind"?,
"heading"?}; paths are relative to DIR/<corpus> (default ../shared/corpora). One daemon
per corpus answers the queries (limit 10). Printed per group (all, by lang, by kind):
Recall@1/5/10 (the share of queries with a relevant note in the top k), MRR (first
relevant rank), heading accuracy (queries with a "heading": the top hit is relevant and
one of its snippets sits under that heading), the same for grep: files ranked by how
many distinct query words they contain (case-insensitive), the way a grep pipeline would,
and for plain whole-word BM25: one Tantivy field for the file's text and one for its
name, Tantivy's default tokenizer (words split at anything not a letter or digit,
lower-cased), the query's words as terms in either (bm25_rank). Groups: all, by lang, by
kind, by lang and kind, and `<lang>/sentence`: the questions and synonym queries (long
sentences and paraphrases).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unicodedata
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared"
BIN = Path(sys.executable).parent
WORD = re.compile(r"\w+")


def norm(s: str) -> str:
    return " ".join(re.sub(r"[`*_=~#?]", "", unicodedata.normalize("NFC", s)).casefold().split())


class Daemon:
    def __init__(self, vault: Path, work: Path, semantic: bool = False, semantic_config: str = "",
                 name: str | None = None, env: dict | None = None):
        """`semantic`: with semantic recall on (and these more `[semantic]` keys), answering once
        every note's vectors are made. `name`: of its state folder and socket; `env`: its
        environment (another checkout's code through PYTHONPATH, bench/prompts.py)."""
        name = name or vault.name + ("-semantic" if semantic else "")
        self.sock = work / f"{abs(hash(name)) % 10**8}.sock"
        cfg = work / f"{name}.toml"
        cfg.write_text('[split]\nmode = "off"\n'  # the corpora are read, never split
                       + ("[semantic]\nenabled = true\n" + semantic_config.replace(";", "\n") + "\n" if semantic else ""))
        self.proc = subprocess.Popen(
            [str(BIN / "vaultd"), "run", "--vault", str(vault), "--state-dir", str(work / name), "--socket",
             str(self.sock), "--log-level", "warning", "--config", str(cfg)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + 3600
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"vaultd exited ({self.proc.returncode}) on {vault}")
            try:
                st = self.ask("status")
                if st.get("graph") == "ready" and not (semantic and (st["semantic"]["pending"] or
                                                                     st["semantic"]["notes"] < st["notes"])):
                    if semantic and st["semantic"]["error"]:
                        raise SystemExit(f"semantic recall failed on {vault}: {st['semantic']['error']}")
                    return
                time.sleep(0.5)
            except OSError:
                time.sleep(0.05)
        raise SystemExit(f"vaultd did not come up on {vault}")

    def ask(self, op: str, **kw):
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(str(self.sock))
            s.sendall(json.dumps({"op": op, **kw}).encode() + b"\n")
            with s.makefile("rb") as f:
                msg = json.loads(f.readline())
        if not msg["ok"]:
            raise RuntimeError(msg["error"])
        return msg["result"]

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=30)


def grep_rank(texts: dict[str, str], query: str) -> list[str]:
    words = {w.casefold() for w in WORD.findall(query)}
    scored = [(-sum(w in t for w in words), p) for p, t in texts.items()]
    return [p for s, p in sorted(scored) if s < 0][:10]


class BM25:
    """Plain whole-word BM25 over one corpus's notes, in memory: a field for the file's text,
    one for its file name (less the extension), the default tokenizer."""

    def __init__(self, texts: dict[str, str]):
        import tantivy

        b = tantivy.SchemaBuilder()
        b.add_text_field("path", stored=True, tokenizer_name="raw")
        for f in ("text", "name"):
            b.add_text_field(f, tokenizer_name="default")
        self.schema = b.build()
        self.index = tantivy.Index(self.schema)
        w = self.index.writer(heap_size=50_000_000, num_threads=1)
        for p, t in texts.items():
            w.add_document(tantivy.Document(path=p, text=t, name=Path(p).stem))
        w.commit()
        w.wait_merging_threads()
        self.index.reload()

    def rank(self, query: str) -> list[str]:
        """The top 10 files for the query's words (each a term in text or name, BM25 summed)."""
        import tantivy

        words = dict.fromkeys(w[:255] for w in BM25_WORD.findall(query.lower()))
        clauses = [(tantivy.Occur.Should, tantivy.Query.term_query(self.schema, f, w)) for w in words
                   for f in ("text", "name")]
        if not clauses:
            return []
        s = self.index.searcher()
        hits = s.search(tantivy.Query.boolean_query(clauses), 10).hits
        return [s.doc(a)["path"][0] for _, a in hits]


BM25_WORD = re.compile(r"[^\W_]+")
"""A word as Tantivy's default tokenizer cuts text: a run of letters and digits."""


def score(ranked: list[str], relevant: set[str]) -> tuple[float, float, float, float]:
    first = next((i for i, p in enumerate(ranked) if p in relevant), None)
    return (float(first == 0), float(first is not None and first < 5), float(first is not None and first < 10),
            1.0 / (first + 1) if first is not None else 0.0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("queries", nargs="?", default=str(SHARED / "eval" / "queries-dev.json"))
    ap.add_argument("--corpora", default=str(SHARED / "corpora"))
    ap.add_argument("--show-misses", action="store_true")
    ap.add_argument("--generated", action="store_true",
                    help="also symbol and Org-tag queries made from the corpora (bench/generated_queries.py)")
    ap.add_argument("--semantic", action="store_true",
                    help="each corpus also with semantic recall on (the semantic extra): every group with and without")
    ap.add_argument("--semantic-config", default="", help="more [semantic] keys, e.g. 'cjk = false; weight = 0.4'")
    ap.add_argument("--dump", help="with --semantic: write each query's top 50 with the parts of their scores "
                                   "(search explain) to this JSON file, to study the fusion")
    args = ap.parse_args()
    queries = json.loads(Path(args.queries).read_text())
    if args.generated:
        from generated_queries import queries as generated

        queries += generated(Path(args.corpora))
    work = Path(tempfile.mkdtemp(prefix="vq"))
    modes = (False, True) if args.semantic else (False,)
    rows = {m: [] for m in modes}  # (groups, vaultd scores, grep scores, heading ok or None)
    built = {}  # corpus -> seconds until every note's vectors were made
    dump = {}
    try:
        by_corpus = defaultdict(list)
        for q in queries:
            by_corpus[q["corpus"]].append(q)
        for corpus, qs in sorted(by_corpus.items()):
            vault = work / "vaults" / corpus  # a copy (mtimes kept): a daemon never runs on the shared corpora
            shutil.copytree(Path(args.corpora) / corpus, vault, symlinks=True)
            raw = {p.relative_to(vault).as_posix(): p.read_text(errors="replace")
                   for p in vault.rglob("*") if p.suffix in (".md", ".org") and p.is_file()}
            texts = {p: t.casefold() for p, t in raw.items()}
            bm25 = BM25(raw)
            for semantic in modes:
                t = time.monotonic()
                d = Daemon(vault, work, semantic, args.semantic_config)
                if semantic:
                    built[corpus] = time.monotonic() - t
                try:
                    for q in qs:
                        rows[semantic].append(_ask(d, q, texts, bm25, args.show_misses, corpus))
                        if semantic and args.dump:
                            hits = d.ask("search", q=q["query"], limit=50, snippets=False, explain=True)["hits"]
                            dump[q.get("id", q["query"])] = {"q": q, "hits": [
                                (h["path"], h["explain"]["lexical"], h["explain"]["semantic"], h["explain"]["coverage"])
                                for h in hits]}
                finally:
                    d.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)

    if args.dump:
        Path(args.dump).write_text(json.dumps(dump, ensure_ascii=False))
    print(f"{Path(args.queries).name}: {len(rows[False])} queries")
    for semantic in modes:
        if args.semantic:
            print("\nsemantic recall " + ("on (vectors made in " + ", ".join(f"{c} {s:.0f} s" for c, s in built.items())
                                        + ")" if semantic else "off"))
        _table(rows[semantic])
    if args.semantic:
        print("\n| group | n | R@1 off | R@1 on | R@5 off | R@5 on | MRR off | MRR on | MRR change |")
        print("|---|---|---|---|---|---|---|---|---|")
        for g in _groups(rows[False]):
            a, b = _means(rows[False], g), _means(rows[True], g)
            print(f"| {g} | {a[4]} | {a[0]:.2f} | {b[0]:.2f} | {a[1]:.2f} | {b[1]:.2f} | {a[3]:.3f} | {b[3]:.3f} | "
                  f"{b[3] - a[3]:+.3f} |")
    return 0


def _ask(d: Daemon, q: dict, texts: dict[str, str], bm25: BM25, show_misses: bool, corpus: str) -> tuple:
    res = d.ask("search", q=q["query"], limit=10)
    ranked = [h["path"] for h in res["hits"]]
    rel = set(q["relevant"])
    heading_ok = None
    if q.get("heading"):
        top = res["hits"][0] if res["hits"] else None
        heading_ok = bool(top and top["path"] in rel and any(
            norm(s.get("heading") or "") == norm(q["heading"]) for s in top["snippets"]))
    s = score(ranked, rel)
    if show_misses and s[1] == 0:
        print(f"miss@5 [{corpus}] {q['query']!r} want {sorted(rel)[0]} got {ranked[:3]}")
    lang, kind = q.get("lang", "?"), q.get("kind", "?")
    groups = ["all", f"lang={lang}", f"kind={kind}", f"{lang}/{kind}"]
    if kind in ("question", "synonym"):
        groups.append(f"{lang}/sentence")
    return groups, s, score(grep_rank(texts, q["query"]), rel), heading_ok, score(bm25.rank(q["query"]), rel)


def _groups(rows: list) -> list[str]:
    return ["all"] + sorted({g for r in rows for g in r[0][1:]})


def _means(rows: list, g: str) -> tuple:
    sel = [r for r in rows if g in r[0]]
    return (*(sum(r[1][i] for r in sel) / len(sel) for i in range(4)), len(sel))


def _table(rows: list) -> None:
    print("| group | n | R@1 | R@5 | R@10 | MRR | heading | BM25 R@1 | BM25 R@5 | BM25 MRR | grep R@1 | grep R@5 "
          "| grep R@10 | grep MRR |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for g in _groups(rows):
        sel = [r for r in rows if g in r[0]]
        n = len(sel)
        v = [sum(r[1][i] for r in sel) / n for i in range(4)]
        gr = [sum(r[2][i] for r in sel) / n for i in range(4)]
        bm = [sum(r[4][i] for r in sel) / n for i in range(4)]
        hs = [r[3] for r in sel if r[3] is not None]
        h = f"{sum(hs) / len(hs):.2f} ({len(hs)})" if hs else "-"
        print(f"| {g} | {n} | {v[0]:.2f} | {v[1]:.2f} | {v[2]:.2f} | {v[3]:.3f} | {h} | "
              f"{bm[0]:.2f} | {bm[1]:.2f} | {bm[3]:.3f} | {gr[0]:.2f} | {gr[1]:.2f} | {gr[2]:.2f} | {gr[3]:.2f} |")


if __name__ == "__main__":
    sys.exit(main())
