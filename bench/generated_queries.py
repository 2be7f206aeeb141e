"""Symbol and Org-tag queries made from the corpora themselves, for bench/quality.py
(`--generated`): the ground truth is read from the raw files here, never from vaultd.

- kind=symbol: a word joined by - or _ (`denote-link-description`, `org_roam_db`) found
  in 1 to 5 files; relevant: the files holding it whole (case-insensitive), as grep finds.
- kind=tag: `tag:X` for an Org tag carried by a heading (`* Heading :x:`) in 1 to 10
  files; relevant: the files carrying X on a heading or in #+filetags.

Chosen by a hash of the word, so the set is the same on every run of the same corpora.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from pathlib import Path

SYMBOL = re.compile(r"(?<![\w./-])([A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z][A-Za-z0-9]*)+)(?![\w/-]|\.\w)")
HEADING_TAGS = re.compile(r"^\*+[ \t].*?[ \t](:(?:[\w@#%]+:)+)[ \t]*$", re.M)
FILETAGS = re.compile(r"^#\+filetags:\s*(.*)$", re.M | re.I)
PER_CORPUS = {"symbol": 12, "tag": 8}


def _pick(found: dict[str, set[str]], lo: int, hi: int, n: int) -> list[tuple[str, set[str]]]:
    ok = [(k, v) for k, v in found.items() if lo <= len(v) <= hi]
    return sorted(ok, key=lambda kv: hashlib.sha1(kv[0].encode()).hexdigest())[:n]


def queries(corpora: Path) -> list[dict]:
    out = []
    for vault in sorted(p for p in corpora.iterdir() if p.is_dir()):
        symbols: dict[str, set[str]] = defaultdict(set)
        heading_tags: dict[str, set[str]] = defaultdict(set)
        any_tags: dict[str, set[str]] = defaultdict(set)
        for p in sorted(vault.rglob("*")):
            if p.suffix not in (".md", ".org") or not p.is_file() or any(x.startswith(".") for x in p.parts):
                continue
            rel = p.relative_to(vault).as_posix()
            text = p.read_text(errors="replace")
            for m in SYMBOL.finditer(text):
                if len(m.group(1)) >= 8:
                    symbols[m.group(1).lower()].add(rel)
            if p.suffix == ".org":
                for m in HEADING_TAGS.finditer(text):
                    for t in m.group(1).strip(":").split(":"):
                        heading_tags[t.lower()].add(rel)
                        any_tags[t.lower()].add(rel)
                for m in FILETAGS.finditer(text):
                    for t in re.split(r"[:\s]+", m.group(1)):
                        if t:
                            any_tags[t.lower()].add(rel)
        for sym, files in _pick(symbols, 1, 5, PER_CORPUS["symbol"]):
            out.append({"id": f"gen-sym-{vault.name}-{sym}", "corpus": vault.name, "kind": "symbol", "lang": "code",
                        "query": sym, "relevant": sorted(files)})
        for tag, _ in _pick(heading_tags, 1, 10, PER_CORPUS["tag"]):
            out.append({"id": f"gen-tag-{vault.name}-{tag}", "corpus": vault.name, "kind": "tag", "lang": "tag",
                        "query": f"tag:{tag}", "relevant": sorted(any_tags[tag])})
    return out


if __name__ == "__main__":
    import json
    import sys

    qs = queries(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "shared" / "corpora")
    print(json.dumps(qs, ensure_ascii=False, indent=1))
