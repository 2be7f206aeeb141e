"""Titles: does vaultd give every note of every corpus the title its own tools show?

    python bench/titles.py                  # every corpus in ../shared/corpora
    python bench/titles.py DIR... --show 5  # some vaults, and up to 5 wrong titles each

The rule (DESIGN.md, the Note): Markdown takes front matter `title` (YAML between `---`
lines, or TOML between `+++` lines), else the title part of a Denote file name, else the
file name; Org takes `#+title:` (the first one at the file's front, outside blocks),
else the Denote title, else the file name. Never a heading. The rule is read here on its
own, from the bytes, with no vaultd code, and set beside what `vaultd parse` gives.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from collections import Counter
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
CORPORA = HERE.parent.parent / "shared" / "corpora"
sys.path.insert(0, str(HERE.parent))

from vaultd.ingest.filters import NoteFilter  # noqa: E402  (only what a note is, as vaultd walks)
from vaultd.parse import parse_file  # noqa: E402

DENOTE = re.compile(r"^\d{8}T\d{6}(?:==[^-_]+?(?:=[^-_]+?)*)?(?:--(?P<title>.*?))?(?:__.*?)?$", re.DOTALL)


def denote_title(stem: str) -> str | None:
    m = DENOTE.match(stem)
    t = m and m["title"] and m["title"].replace("-", " ").strip()
    return t or None


def front_matter_title(lines: list[str]) -> str | None:
    fence = lines[0].rstrip() if lines else ""
    if fence not in ("---", "+++"):
        return None
    ends = ("---", "...") if fence == "---" else ("+++",)
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip() in ends), None)
    if end is None:
        return None
    block = "\n".join(lines[1:end])
    try:
        meta = yaml.safe_load(block) if fence == "---" else tomllib.loads(block)
    except Exception:
        return None
    title = meta.get("title") if isinstance(meta, dict) else None
    if title is None or isinstance(title, (list, dict, bytes)):
        return None
    title = title.isoformat() if hasattr(title, "isoformat") else str(title)
    return title.strip() or None


def org_title(lines: list[str]) -> str | None:
    """The first `#+title:` before the first heading and outside blocks (a `#+begin_X`
    with its `#+end_X` before the first heading; one without is a paragraph, as in Org)."""
    front = next((i for i, line in enumerate(lines) if re.match(r"\*+ ", line)), len(lines))
    i = 0
    while i < front:
        s = lines[i].strip().lower()
        m = re.match(r"#\+begin(?:_(\S+)|:)", s)
        if m:
            end = "#+end_" + m.group(1) if m.group(1) else "#+end"
            close = next((k for k in range(i + 1, front) if lines[k].strip().lower().split()[:1] == [end]
                          or (not m.group(1) and lines[k].strip().lower().startswith("#+end:"))), None)
            i = close + 1 if close is not None else i + 1
            continue
        t = re.match(r"#\+title:[ \t]*(.*?)[ \t]*$", lines[i].strip(), re.IGNORECASE)
        if t:
            return t.group(1) or None
        i += 1
    return None


def expected(rel: str, text: str) -> tuple[str, str]:
    """(title, where from) by the rule."""
    name = rel.rsplit("/", 1)[-1]
    stem = name.rsplit(".", 1)[0]
    lines = text.lstrip("\ufeff").replace("\r\n", "\n").split("\n")
    own = org_title(lines) if name.lower().endswith(".org") else front_matter_title(lines)
    if own:
        return own, "#+title" if name.lower().endswith(".org") else "front matter"
    dn = denote_title(stem)
    return (dn, "Denote name") if dn else (stem, "file name")


def check(vault: Path, show: int) -> tuple[int, int, Counter]:
    wrong, n, sources = 0, 0, Counter()
    for rel, _ in sorted(NoteFilter().walk(vault)):
        data = (vault / rel).read_bytes()
        want, source = expected(rel, data.decode("utf-8", "replace"))
        got = parse_file(rel, data).title
        n += 1
        sources[source] += 1
        if got != want:
            wrong += 1
            if wrong <= show:
                print(f"  {rel}: {got!r}, by the rule {want!r} ({source})")
    return n, wrong, sources


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("vaults", nargs="*", type=Path)
    ap.add_argument("--show", type=int, default=0, help="list up to this many wrong titles per vault")
    args = ap.parse_args()
    vaults = args.vaults or sorted(p for p in CORPORA.iterdir() if p.is_dir())
    print("| vault | notes | title as the rule says | wrong | titles from |")
    print("|---|---|---|---|---|")
    bad = 0
    for v in vaults:
        n, wrong, sources = check(v, args.show)
        bad += wrong
        src = ", ".join(f"{k} {c}" for k, c in sources.most_common())
        print(f"| {v.name} | {n} | {n - wrong} | {wrong} | {src} |")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
