"""Does the prompt hook say nothing when the vault has nothing to say, and the right note
when it has? Each prompt of a prompt set goes through the real hook (`vaultq hook prompt`,
fed the JSON Claude Code sends) against a real daemon on a copy of its corpus, for this
code and for a baseline checkout, in the same run.

    python bench/prompts.py                               # bench/prompts-dev.json, baseline d976ee6
    python bench/prompts.py --split dev                   # only the half rules are tuned on
    python bench/prompts.py --baseline /tmp/base          # a checkout already made
    python bench/prompts.py --no-baseline --show          # each prompt's answer, this code only

A prompt set is a JSON list of {"id", "corpus", "lang", "kind", "prompt", "relevant":
[paths], "split"}: `relevant` empty for a prompt the vault cannot answer (small talk, a
coding task about other code, general knowledge, a near miss that shares words with the
vault); paths are relative to DIR/<corpus> (default ../shared/corpora).

Printed per group (all, split, corpus, lang, answerable kind, lang within split) for each code:
silence (unanswerable prompts with nothing injected), noise (mean tokens injected for an
unanswerable prompt, as render.estimate_tokens counts them), recall (answerable prompts
with a relevant note among the items injected), precision (the relevant share of the
items injected for answerable prompts), and the mean tokens injected for an answerable
prompt.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SHARED = ROOT.parent / "shared"
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT))

from quality import Daemon  # noqa: E402  (bench/quality.py: vaultd on a corpus copy)
from vaultd.render import estimate_tokens  # noqa: E402

HEADER = re.compile(r"^## (/[^\n]*?):(\d+)-(\d+) ", re.M)
"""An injected item's provenance line: `## /abs/path:first-last title (why)`."""


def hook(sock: Path, prompt: str, project: Path, budget: int, env: dict) -> str:
    """What `vaultq hook prompt` prints for `prompt` (it must exit 0)."""
    data = {"session_id": "bench-prompts", "cwd": str(project), "transcript_path": str(project / "t.jsonl"),
            "permission_mode": "default", "hook_event_name": "UserPromptSubmit", "prompt": prompt}
    r = subprocess.run([sys.executable, "-m", "vaultd.vaultq", "--socket", str(sock), "hook", "prompt",
                        "--budget", str(budget)], input=json.dumps(data), capture_output=True, text=True,
                       cwd=project, env=env, timeout=60)
    if r.returncode != 0:
        raise SystemExit(f"the hook failed ({r.returncode}) for {prompt!r}: {r.stderr}")
    return r.stdout


def injected(out: str, vault: Path) -> list[str]:
    """The vault-relative path of each item the hook's output holds, in order."""
    root = str(vault) + "/"
    return [m.group(1)[len(root):] for m in HEADER.finditer(out) if m.group(1).startswith(root)]


def run(code: str, pythonpath: str | None, prompts: list[dict], corpora: Path, work: Path, budget: int) -> list[dict]:
    """Each prompt's answer from the code at `pythonpath`: its items and tokens."""
    env = {**os.environ}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    project = work / "project"  # where the agent runs: outside the vault
    project.mkdir(exist_ok=True)
    rows = []
    by_corpus = defaultdict(list)
    for q in prompts:
        by_corpus[q["corpus"]].append(q)
    for corpus, qs in sorted(by_corpus.items()):
        vault = work / "vaults" / corpus  # a copy (mtimes kept): a daemon never runs on the shared corpora
        if not vault.exists():
            shutil.copytree(corpora / corpus, vault, symlinks=True)
        d = Daemon(vault, work, name=f"{code}-{corpus}", env=env)
        try:
            for q in qs:
                out = hook(d.sock, q["prompt"], project, budget, env)
                rows.append({**q, "items": injected(out, vault), "tokens": estimate_tokens(out) if out else 0})
        finally:
            d.stop()
    return rows


def figures(rows: list[dict]) -> dict:
    ans = [r for r in rows if r["relevant"]]
    una = [r for r in rows if not r["relevant"]]
    items = [(p, r) for r in ans for p in r["items"]]
    return {
        "n": (len(ans), len(una)),
        "silence": sum(not r["items"] for r in una) / len(una) if una else None,
        "noise": sum(r["tokens"] for r in una) / len(una) if una else None,
        "recall": sum(any(p in r["relevant"] for p in r["items"]) for r in ans) / len(ans) if ans else None,
        "precision": sum(p in r["relevant"] for p, r in items) / len(items) if items else None,
        "tokens": sum(r["tokens"] for r in ans) / len(ans) if ans else None,
    }


def groups(rows: list[dict]) -> list[tuple[str, list[dict]]]:
    """The groups a table shows: all, each split, corpus, language and kind, and each
    language within each split."""
    def values(key: str) -> list[str]:
        return sorted({r[key] for r in rows})

    keys = [[]] + [[(k, v)] for k in ("split", "corpus", "lang", "kind") for v in values(k)] \
        + [[("split", s), ("lang", lang)] for s in values("split") for lang in values("lang")]
    return [(" ".join(f"{k}={v}" for k, v in key) or "all", [r for r in rows if all(r[k] == v for k, v in key)])
            for key in keys]


def fmt(x, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def table(results: dict[str, list[dict]]) -> None:
    codes = list(results)
    head = ["group", "answerable", "unanswerable"]
    for m in ("silence", "noise", "recall", "precision", "tokens"):
        head += [f"{m} {c}" for c in codes]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    per = {c: dict(groups(rows)) for c, rows in results.items()}
    for g, _ in groups(results[codes[0]]):
        f = {c: figures(per[c][g]) for c in codes}
        n = f[codes[0]]["n"]
        cells = [g, str(n[0]), str(n[1])]
        for m, spec in (("silence", ".2f"), ("noise", ".0f"), ("recall", ".2f"), ("precision", ".2f"), ("tokens", ".0f")):
            cells += [fmt(f[c][m], spec) for c in codes]
        print("| " + " | ".join(cells) + " |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("prompts", nargs="?", default=str(HERE / "prompts-dev.json"))
    ap.add_argument("--corpora", default=str(SHARED / "corpora"))
    ap.add_argument("--budget", type=int, default=1000, help="the hook's budget (the plugin's: 1000)")
    ap.add_argument("--split", choices=("dev", "held", "all"), default="all")
    ap.add_argument("--corpus", action="append", default=[], help="only prompts on this corpus (repeatable)")
    ap.add_argument("--baseline", help="a checkout of the baseline code (default: --baseline-rev in a temporary worktree)")
    ap.add_argument("--baseline-rev", default="d976ee6", help="the baseline commit (default d976ee6)")
    ap.add_argument("--no-baseline", action="store_true")
    ap.add_argument("--show", action="store_true", help="each prompt's items")
    ap.add_argument("--dump", help="write every prompt's answer (each code) to this JSON file")
    args = ap.parse_args()
    prompts = [q for q in json.loads(Path(args.prompts).read_text())
               if (args.split == "all" or q["split"] == args.split) and (not args.corpus or q["corpus"] in args.corpus)]
    work = Path(tempfile.mkdtemp(prefix="vp"))
    worktree = None
    try:
        codes: dict[str, str | None] = {"this": str(ROOT)}
        if not args.no_baseline:
            base = args.baseline
            if base is None:
                worktree = work / "base"
                subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(worktree), args.baseline_rev],
                               check=True, capture_output=True)
                base = str(worktree)
            codes["baseline"] = base
        results = {c: run(c, p, prompts, Path(args.corpora), work, args.budget) for c, p in codes.items()}
    finally:
        if worktree is not None:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    if args.dump:
        Path(args.dump).write_text(json.dumps(results, ensure_ascii=False, indent=1))
    if args.show:
        for c, rows in results.items():
            for r in rows:
                ok = "ans" if r["relevant"] else "una"
                good = [("+" if p in r["relevant"] else "-") + p for p in r["items"]]
                print(f"[{c}] {r['id']} {ok} {r['tokens']:4d} {r['prompt']!r}: {good}")
    print(f"{Path(args.prompts).name}: {len(prompts)} prompts ({args.split}), hook budget {args.budget} tokens; "
          + ", ".join(f"{c}: {p}" for c, p in codes.items()))
    table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
