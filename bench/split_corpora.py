"""Apply every split proposal on a copy of each corpus, check every link, then undo it all.

    python bench/split_corpora.py                     # every corpus under ../shared/corpora, and a generated vault
    python bench/split_corpora.py ../shared/corpora/foam-docs
    python bench/split_corpora.py --no-generated --seed 3

Per corpus, on a copy (../shared is never written): notes over the threshold, notes split,
parts made, links rewritten, notes it could not split; broken links before and after (as
vaultd counts them); then, by the independent oracle (tests/split_oracle.py), which reads
the files on disk and resolves every link afresh:
  - newly broken: links that resolved before and are broken after;
  - re-targeted: links that lead to another note or heading than before (or are gone);
  - shown: links that lead where they did but show another alias (or no longer embed);
  - scaffold: hub lists and parts' back links that do not lead to the part / the hub;
  - lines lost: lines of the notes before (links masked) not found after;
  - split again: after every proposal is applied, the proposals are applied once more:
    nothing may be split in that second round (a part over the threshold that cannot be
    cut is listed, not split);
  - doubled spaces: parts whose names hold two blanks in a row;
  - undo identical: every operation undone, newest first, gives back the tree byte for byte.
The generated row is a seeded vault of about 200 notes (tests/test_split_property.py's
generator): eight over 15 KB, copies and drafts sharing identifiers across folders, every
link syntax and identity form. Exits 1 when any of those columns is bad.

    python bench/split_corpora.py --rename            # the rename mode (issue 42), same corpora
    python bench/split_corpora.py --rename --every 5  # every fifth note only

With --rename, on a copy of each corpus, every note that another note links to is renamed,
one at a time (a Denote note to "<its title> renamed", keeping its identifier; any other to
"<its file name> renamed"), then undone, through the library (rename.job.Renamer on a real
Vault). After each rename every link of the vault is compared with where it led before, by
the index's link graph (its line, and its place among the links of that line, identify it;
the renamed note stands for itself at its new name):
  - newly broken: links that resolved before and are broken after;
  - re-targeted: links that lead to another note or heading than before (or are gone, or new);
  - labels changed: labels that are not as they were, but for those that said the old title,
    which say the new one (counted as followed);
With --oracle, links are compared by a graph built afresh from the files on disk after each
rename (tests/split_oracle.py's View), independent of the index's incremental update.
  - undo identical: after its undo, every file the rename wrote is byte for byte as before
    (the `.vaultd/` journal aside) and every link leads where it led; and the whole tree is
    as it was once every rename is done and undone.
Refused renames are counted with their reasons (a title that makes no file name, a name
taken, a link that would change where it leads): refused, nothing is written.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from split_oracle import View, compare, doubled_spaces, lines_lost, read_tree  # noqa: E402
from vaultd.config import Config  # noqa: E402
from vaultd.errors import QueryError  # noqa: E402
from vaultd.parse.denote import parse_name  # noqa: E402
from vaultd.parse.syntaxes import DENDRON  # noqa: E402
from vaultd.rename.plan import shown  # noqa: E402
from vaultd.rename.job import Renamer  # noqa: E402
from vaultd.vault import Vault  # noqa: E402

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"
COLUMNS = ["corpus", "over 15 KB", "split", "parts", "links rewritten", "cannot split", "broken before", "after",
           "newly broken", "re-targeted", "shown", "scaffold", "lines lost", "split again", "doubled spaces",
           "undo identical"]
BAD = ["newly broken", "re-targeted", "shown", "scaffold", "lines lost", "split again", "doubled spaces"]


def broken(v: Vault) -> Counter:
    return Counter((b["raw"], b["broken"]) for b in v.broken()["broken"])


def apply_all(v: Vault, over: list[dict] | None = None) -> tuple[list[str], list[str]]:
    """Apply every proposal (`over`: split_candidates()["over"], when just asked), through
    Vault.split_all when there is one. Returns (ops, refusals)."""
    if hasattr(v, "split_all"):  # {"split": [{"note", "op", ...}], "skipped": [{"note", "why"}]}
        res = v.split_all()
        return [d["op"] for d in res["split"]], [f"{d['note']}: {d['why']}" for d in res["skipped"]]
    ops, refused = [], []
    for c in v.split_candidates()["over"] if over is None else over:
        try:
            ops.append(v.split_note(c["path"], check_quiet=False)["op"])
        except QueryError as e:
            refused.append(f"{c['path']}: {e}")
    return ops, refused


def writable(vault: Path) -> None:
    """A copy of a read-only tree made writable: the splitter and rename refuse read-only files."""
    for path in [vault, *vault.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | 0o200)


def run(name: str, vault: Path, work: Path) -> tuple[dict, list[str]]:
    """One row of the table, and lines of detail for stderr."""
    detail: list[str] = []
    writable(vault)
    original = read_tree(vault)
    before_view = View(original)
    cfg = Config(vault=str(vault), state_dir=str(work / "state"))
    cfg = msgspec.structs.replace(cfg, split=msgspec.structs.replace(cfg.split, quiet=0.0)).load()
    v = Vault(cfg)
    try:
        v.reconcile()
        before = broken(v)
        cand = v.split_candidates()
        over = len(cand["over"]) + len([c for c in cand["cannot"] if c["size"] > cfg.split.threshold])
        ops, refused = apply_all(v, cand["over"])
        again, refused2 = apply_all(v)  # a second round: must split nothing
        hist = {e["op"]: e for e in v.split_history()["history"]}
        done = ops + again
        parts = sum(len(hist[o]["parts"]) for o in ops)
        rewritten = sum(hist[o]["rewritten"] for o in ops)
        cannot = v.split_candidates()["cannot"]
        after = broken(v)
        origin = {p: hist[o]["note"] for o in done for p in hist[o]["parts"]}
        after_view = View(read_tree(vault), origin)
        mismatches = compare(before_view, after_view)
        kinds = Counter()
        for m in mismatches:
            n = max(len(m.before), len(m.after))
            kinds["newly broken" if m.kind == "newly broken" else "shown" if m.kind == "shown changed"
                  else "re-targeted"] += n
        scaffold = after_view.scaffold_problems()
        lost = lines_lost(before_view, after_view)
        doubled = doubled_spaces(origin)
        for op in reversed(done):
            v.split_undo(op)
    finally:
        v.close()
    notes = lambda tree: {p: b for p, b in tree.items() if not p.startswith(".vaultd/")}  # but the split journal
    same = notes(read_tree(vault)) == notes(original)
    row = {
        "corpus": name, "over 15 KB": over, "split": len(ops), "parts": parts, "links rewritten": rewritten,
        "cannot split": len(cannot), "broken before": sum(before.values()), "after": sum(after.values()),
        "newly broken": kinds["newly broken"], "re-targeted": kinds["re-targeted"], "shown": kinds["shown"],
        "scaffold": len(scaffold), "lines lost": sum(lost.values()), "split again": len(again),
        "doubled spaces": len(doubled), "undo identical": "yes" if same else "NO",
    }
    for m in mismatches[:8]:
        detail.append(f"  {m}")
    detail += [f"  scaffold: {p}" for p in scaffold[:5]]
    detail += [f"  line lost: {line!r} x{n}" for line, n in list(lost.items())[:5]]
    detail += [f"  split again: {hist[o]['note']} -> {len(hist[o]['parts'])} parts" for o in again[:5]]
    detail += [f"  doubled spaces: {p}" for p in doubled[:5]]
    detail += [f"  refused: {r}" for r in (refused + refused2)[:3]]
    detail += [f"  cannot: {c['path']}: {c['why']}" for c in cannot[:3]]
    return row, detail


# -- the rename mode --------------------------------------------------------------------------

RENAME_COLUMNS = ["corpus", "notes", "linked to", "renamed", "refused", "links rewritten", "labels followed",
                  "newly broken", "re-targeted", "labels changed", "undo identical", "ms per rename"]
RENAME_BAD = ["newly broken", "re-targeted", "labels changed"]


def meanings(v: Vault, oracle: bool = False) -> dict[tuple[str, int, int], tuple]:
    """Every link of the vault, by (note, line, place in the line): where it leads (note,
    line, broken) and what it shows, as the index's link graph says (`oracle`: as a graph
    built afresh from the files on disk says, tests/split_oracle.py)."""
    graph = View(read_tree(v.root)).graph if oracle else v.graph
    out = {}
    for src in sorted(graph.notes):
        seen: Counter = Counter()
        for r in graph.links(src):
            out[(src, r.link.line, seen[r.link.line])] = (r.target, r.line, r.broken is not None, shown(r.link))
            seen[r.link.line] += 1
    return out


def rename_title(note) -> str:
    """The new title a note gets: a Denote note its title, renamed; a Dendron note its
    hierarchy name, one word still (`a.b-renamed`); any other its file name, renamed."""
    stem = note.path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    if DENDRON.hierarchy(stem):
        return f"{stem}-renamed"
    return f"{note.title if parse_name(stem) else stem} renamed"


def compare_renamed(before: dict, after: dict, old: str, new: str, title: str, retitled: str) -> Counter:
    """What changed between two `meanings` of the vault across the rename of `old` (titled
    `title`) to `new` (titled `retitled`)."""
    back = lambda p: old if p == new else p  # noqa: E731  the renamed note stands for itself
    after = {(back(k[0]), *k[1:]): (back(m[0]), *m[1:]) for k, m in after.items()}
    out: Counter = Counter()
    for k in before.keys() | after.keys():
        b, a = before.get(k), after.get(k)
        if a is None or b is None:
            out["re-targeted"] += 1
            continue
        if not b[2] and a[2]:
            out["newly broken"] += 1
        elif not b[2] and a[:2] != b[:2]:
            out["re-targeted"] += 1
        if a[3] != b[3]:
            out["labels followed" if (b[3], a[3]) == (title, retitled) else "labels changed"] += 1
    return out


def rename_run(name: str, vault: Path, work: Path, every: int = 1, oracle: bool = False) -> tuple[dict, list[str]]:
    """One row of the rename table, and lines of detail for stderr."""
    writable(vault)
    original = read_tree(vault)
    cfg = Config(vault=str(vault), state_dir=str(work / "state"))
    cfg = msgspec.structs.replace(cfg, split=msgspec.structs.replace(cfg.split, quiet=0.0)).load()
    v = Vault(cfg)
    counts: Counter = Counter()
    refusals: Counter = Counter()
    detail, times = [], []
    try:
        v.reconcile()
        renamer = Renamer(v.core, v.link_graph, v.writer)
        start = meanings(v, oracle)
        linked = sorted(t for t, srcs in v.graph.back.items() if srcs - {t} and t in v.notes)
        for path in linked[::every]:
            note = v.notes[path]
            title = rename_title(note)
            t = time.perf_counter()
            try:
                res = renamer.rename(path, title, check_editors=False)
            except QueryError as e:
                counts["refused"] += 1
                refusals[str(e).split(": ", 1)[-1][:90]] += 1
                if len(detail) < 12:
                    detail.append(f"  refused: {path}: {e}")
                continue
            times.append(time.perf_counter() - t)
            counts["renamed"] += 1
            counts["links rewritten"] += res["rewritten"]
            now = compare_renamed(start, meanings(v, oracle), path, res["to"], note.title, v.notes[res["to"]].title)
            counts.update(now)
            if any(now[c] for c in RENAME_BAD) and len(detail) < 12:
                detail.append(f"  {path} -> {res['to']}: {dict(now)}")
            v.split_undo(res["op"])
            same = all(original.get(f) == _read(vault / f) for f in res["files"]) and meanings(v, oracle) == start
            counts["undo differs"] += not same
            if not same and len(detail) < 12:
                detail.append(f"  undo of {path} -> {res['to']} is not byte-identical")
    finally:
        v.close()
    notes = lambda tree: {p: b for p, b in tree.items() if not p.startswith(".vaultd/")}  # noqa: E731
    whole = notes(read_tree(vault)) == notes(original)
    row = {"corpus": name, "notes": len(v.notes), "linked to": len(linked), "renamed": counts["renamed"],
           "refused": counts["refused"], "links rewritten": counts["links rewritten"],
           "labels followed": counts["labels followed"], "newly broken": counts["newly broken"],
           "re-targeted": counts["re-targeted"], "labels changed": counts["labels changed"],
           "undo identical": "yes" if whole and not counts["undo differs"] else "NO",
           "ms per rename": f"{1000 * statistics.median(times):.0f}" if times else "-"}
    detail += [f"  refused x{n}: {why}" for why, n in refusals.most_common(5)]
    return row, detail


def _read(p: Path) -> bytes | None:
    try:
        return p.read_bytes()
    except FileNotFoundError:
        return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpora", nargs="*")
    ap.add_argument("--no-generated", action="store_true", help="leave out the generated vault")
    ap.add_argument("--seed", type=int, default=1, help="of the generated vault")
    ap.add_argument("--rename", action="store_true", help="the rename mode: rename every note linked to, one at a time")
    ap.add_argument("--every", type=int, default=1, help="rename mode: every Nth note linked to only")
    ap.add_argument("--oracle", action="store_true",
                    help="rename mode: compare links by a graph built afresh from the files (slower), not the index's")
    args = ap.parse_args()
    corpora = [Path(c) for c in args.corpora] or sorted(p for p in (SHARED / "corpora").iterdir() if p.is_dir())
    sources: list[tuple[str, Path | dict[str, str]]] = [(c.name, c) for c in corpora]
    if not args.no_generated:
        from test_split_property import big_vault

        gv = big_vault(args.seed)
        sources.append((f"generated (seed {args.seed}, {len(gv.files)} notes)", gv.files))
    columns, bad_columns = (RENAME_COLUMNS, RENAME_BAD) if args.rename else (COLUMNS, BAD)
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    failed = False
    for name, src in sources:
        work = Path(tempfile.mkdtemp(prefix="vs"))
        t = time.perf_counter()
        try:
            vault = work / "vault"
            if isinstance(src, Path):
                shutil.copytree(src, vault, symlinks=True)
            else:
                for rel, text in src.items():
                    (vault / rel).parent.mkdir(parents=True, exist_ok=True)
                    (vault / rel).write_bytes(text.encode())
            row, detail = rename_run(name, vault, work, args.every, args.oracle) if args.rename else run(name, vault, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        bad = any(row[c] for c in bad_columns) or row["undo identical"] != "yes"
        failed |= bad
        print("| " + " | ".join(str(row[c]) for c in columns) + " |", flush=True)
        print(f"{name}: {time.perf_counter() - t:.1f} s{' BAD' if bad else ''}", file=sys.stderr)
        for line in detail:
            print(line, file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
