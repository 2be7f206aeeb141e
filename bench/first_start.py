"""First contact: `vaultd run` on a copy of each corpus writes nothing; a note that grows is split.

    python bench/first_start.py                      # every corpus under ../shared/corpora, and a generated vault
    python bench/first_start.py ../shared/corpora/foam-docs --wait 10

Per vault, on a copy (../shared is never written): the real daemon is started in its
default `auto` mode (quiet 2 s) and left running `--wait` seconds after its first index;
every file of the vault must then be byte for byte as before (notes already over the
threshold are only proposed). Then one note under the threshold, with headings, is
grown past it while the daemon watches, and must be split within 40 s. Exits 1 when a
first start wrote anything or a grown note was not split.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"
THRESHOLD = 15360


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def ask(sock: str, op: str, **args) -> dict:
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(sock)
        s.sendall(json.dumps({"op": op, **args}).encode() + b"\n")
        return json.loads(s.makefile("rb").readline())["result"]


def growable(files: dict[str, bytes]) -> str | None:
    """The biggest note under the threshold with three headings or more."""
    def heads(k: str, b: bytes) -> int:
        return b.count(b"\n* ") + b.count(b"\n** ") if k.endswith(".org") else b.count(b"\n# ") + b.count(b"\n## ")
    fit = [k for k, b in files.items() if k.endswith((".md", ".org")) and 4000 < len(b) < THRESHOLD and heads(k, b) >= 3]
    return max(fit, key=lambda k: len(files[k]), default=None)


def run(src: Path, work: Path, wait: float) -> tuple[list, bool]:
    vault = work / "vault"
    shutil.copytree(src, vault)
    for p in [vault, *vault.rglob("*")]:  # a copy of a read-only tree: the splitter skips read-only files
        p.chmod(p.stat().st_mode | 0o200)
    before = tree(vault)
    cfg = work / "config.toml"
    cfg.write_text("[split]\nquiet = 2.0\n")
    (work / "run").mkdir(mode=0o700)
    sock = str(work / "run" / "d.sock")
    log = open(work / "vaultd.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "vaultd", "run", "--vault", str(vault), "--state-dir",
                             str(work / "state"), "--socket", sock, "--config", str(cfg)], stdout=log, stderr=log)
    try:
        t = time.monotonic()
        while time.monotonic() - t < 300:
            try:
                if ask(sock, "status")["reconciled"]:
                    break
            except OSError:
                pass
            time.sleep(0.2)
        time.sleep(wait)
        now = tree(vault)
        written = sorted(k for k in before.keys() | now.keys() if before.get(k) != now.get(k))
        k = growable(before)
        if k is None:
            return written, None
        heading = b"\n## Added later\n\n" if k.endswith(".md") else b"\n* Added later\n\n"
        (vault / k).write_bytes(before[k] + heading + b"More text written while vaultd watches.\n" * 300)
        t = time.monotonic()
        while time.monotonic() - t < 40:
            time.sleep(1)
            if any(e["note"] == k and e["status"] == "done" for e in ask(sock, "split", history=True)["history"]):
                return written, k
        return written, False
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpora", nargs="*")
    ap.add_argument("--wait", type=float, default=20.0, help="seconds to watch after the first index")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="vfs"))
    sources = [Path(c) for c in args.corpora]
    if not sources:
        sources = sorted(p for p in (SHARED / "corpora").iterdir() if p.is_dir())
        gen = base / "generated"
        subprocess.run([sys.executable, str(SHARED / "tools" / "genvault.py"), "--out", str(gen), "--files", "300",
                        "--total-mb", "20", "--seed", "7", "--oracle", str(base / "ORACLE.json")],
                       check=True, capture_output=True)
        sources.append(gen)
    print("| vault | notes | over 15 KB | files written on first start | grown note split |")
    print("|---|---|---|---|---|")
    bad = False
    try:
        for i, src in enumerate(sources):
            files = tree(src)
            notes = sum(1 for k in files if k.endswith((".md", ".org")))
            over = sum(1 for k, b in files.items() if k.endswith((".md", ".org")) and len(b) > THRESHOLD)
            written, grown = run(src, base / f"w{i}", args.wait)
            bad |= bool(written) or grown is False
            shown = "no note to grow" if grown is None else "yes" if grown else "NO"
            print(f"| {src.name} | {notes} | {over} | {len(written)} {' '.join(written[:3])} | {shown} |", flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
