"""The console blocks of README.md and docs/*.md, read and compared: what a block shows
against what its commands print. tests/test_docs_examples.py runs them against one daemon.

What a ```console block is (docs/README.md, "Examples in this manual", says it to readers):

- A session: `$ COMMAND` lines (a line ending in ` \\` goes on to the next), each followed
  by what it prints, standard output and standard error as a terminal shows them. Its
  commands run in order in one bash, in the vault's folder (`~/notes`, a copy of
  `examples/vault` served by one daemon with `[capture] folder = "inbox"`), unless a
  `<!-- doctest: cwd=clone -->` comment just before the block starts it in the clone's
  root (where `examples/vault` is that same vault).
- A command with no lines under it prints nothing. Trailing blanks of each line, and
  blank lines at the end of a command's output, do not count.
- `…` in an output line stands for any text on that line; a line of `…` alone for any
  lines (none too).
- Variable parts match whatever the program prints there: a time (`2.1 ms`), an index
  generation (`generation 7`, `"generation": 7`), a journal op (`20261130T010655-ffc0b5`:
  bound, so a later command naming it is given the real one), a socket's hash
  (`notes-3f1c9a2e`). Paths are shown as on a machine where the vault is `/home/me/notes`,
  the clone `/home/me/src/vaultd`, HOME `/home/me` and XDG_RUNTIME_DIR `/run/user/1000`:
  the real ones are written so before comparing, and `/home/me` in a command is the real
  HOME.
- `<!-- doctest: now -->` before a block: what the clock decides varies too (dates, times
  of day, Denote identifiers, UTC offsets), for a transcript of notes written as it runs.

Blocks of other kinds (```sh, ```text, ```json, ```toml, ```vim...) are not run: they show
configuration, or programs other than a shell (Vim, Emacs), whose own tests are named
beside them.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
DIRECTIVE = re.compile(r"<!--\s*doctest:([^>]*?)-->\s*\Z")

SHOWN = {"vault": "/home/me/notes", "clone": "/home/me/src/vaultd", "home": "/home/me", "runtime": "/run/user/1000"}
"""How the docs show each real place (the order the real ones are written so: the deepest first)."""

ANY = "…"

OP = r"\d{8}T\d{6}-[0-9a-f]{6}"
VARIABLE = [  # (pattern in the docs' text, what it matches in the program's), the first that fits wins
    (OP, OP),
    (r"\d+(?:\.\d+)? ms\b", r"\d+(?:\.\d+)? ms\b"),
    (r"generation \d+", r"generation \d+"),
    (r'"generation": \d+', r'"generation": \d+'),
    (r"\bnotes-[0-9a-f]{8}\b", r"notes-[0-9a-f]{8}"),
]
NOW = [  # with `now`
    (r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d", r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d"),
    (r"\d{8}T\d{6}", r"\d{8}T\d{6}"),
    (r"\d{4}-\d\d-\d\d", r"\d{4}-\d\d-\d\d"),
    (r"\d\d:\d\d:\d\d(?:-\d+)?", r"\d\d:\d\d:\d\d(?:-\d+)?"),  # a second entry in one second: 14:32:05-2
]


@dataclass
class Step:
    command: str
    shown: list[str]  # the output lines the block shows under it


@dataclass
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    steps: list[Step]
    cwd: str = "vault"
    now: bool = False

    @property
    def name(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """Every ```console block of a page, with its directives."""
    text = page.read_text()
    out = []
    for m in FENCE.finditer(text):
        if m.group(1) != "console":
            continue
        before = text[: m.start()]
        d = DIRECTIVE.search(before)
        words = d.group(1).split() if d else []
        b = Block(page, before.count("\n") + 1, session(m.group(2)))
        for w in words:
            if w == "now":
                b.now = True
            elif w.startswith("cwd=") and w[4:] in ("vault", "clone"):
                b.cwd = w[4:]
            else:
                raise ValueError(f"{b.name}: unknown doctest directive {w!r}")
        out.append(b)
    return out


def session(text: str) -> list[Step]:
    """A console block's commands, each with the lines shown under it."""
    steps: list[Step] = []
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    i = 0
    while i < len(lines):
        ln = lines[i]
        if ln.startswith("$ "):
            cmd = [ln[2:]]
            while cmd[-1].endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd.append(lines[i])
            steps.append(Step("\n".join(cmd), []))
        elif steps:
            steps[-1].shown.append(ln)
        else:
            raise ValueError(f"a console block starts with a `$ ` command, not {ln!r}")
        i += 1
    return steps


def tidy(lines: list[str]) -> list[str]:
    """Trailing blanks of each line and trailing blank lines do not count."""
    out = [ln.rstrip() for ln in lines]
    while out and not out[-1]:
        out.pop()
    return out


def pattern(shown: list[str], now: bool, bound: dict[str, str]) -> tuple[re.Pattern, list[str]]:
    """The shown lines as a regular expression, and the ops it binds, group by group."""
    kinds = VARIABLE + (NOW if now else [])
    token = re.compile("|".join(f"({d})" for d, _ in kinds) + "|" + re.escape(ANY))
    groups: list[str] = []
    out = []
    for ln in tidy(shown):
        if ln.strip() == ANY:
            out.append(r"(?:[^\n]*\n)*?")
            continue
        pos, piece = 0, []
        for m in token.finditer(ln):
            piece.append(re.escape(ln[pos : m.start()]))
            pos = m.end()
            if m.group(0) == ANY:
                piece.append(r"[^\n]*?")
            elif m.group(1) and m.group(0) in bound:  # an op already met: the real one, exactly
                piece.append(re.escape(bound[m.group(0)]))
            elif m.group(1):  # an op: bound, so each one shown stands for one real op
                if m.group(0) in groups:
                    piece.append(f"(?P=op{groups.index(m.group(0))})")
                else:
                    piece.append(f"(?P<op{len(groups)}>{OP})")
                    groups.append(m.group(0))
            else:
                kind = next(real for (d, real), g in zip(kinds, m.groups()) if g is not None)
                piece.append(f"(?:{kind})")
        piece.append(re.escape(ln[pos:]))
        out.append("".join(piece) + r"\n")
    return re.compile("".join(out)), groups


def compare(step: Step, printed: str, now: bool, bound: dict[str, str]) -> str | None:
    """None when `printed` is what the step shows; else a diff that says how it differs.
    Binds the ops the step shows to the real ones (into `bound`)."""
    rx, groups = pattern(step.shown, now, bound)
    actual = "".join(ln + "\n" for ln in tidy(printed.split("\n")))
    m = rx.fullmatch(actual)
    if m is None:
        diff = difflib.unified_diff(tidy(step.shown), tidy(printed.split("\n")), "the docs show", "it prints",
                                    lineterm="")
        return f"$ {step.command}\n" + "\n".join(diff)
    for i, shown in enumerate(groups):
        bound[shown] = m.group(f"op{i}")
    return None


@dataclass
class Places:
    """The real places the docs' ones stand for."""

    vault: Path
    clone: Path
    home: Path
    runtime: Path
    extra: dict[str, str] = field(default_factory=dict)

    def shown(self, text: str) -> str:
        """The program's output with the real places written as the docs show them."""
        for what in ("vault", "clone", "home", "runtime"):
            real = getattr(self, what)
            for form in {str(real), str(real.resolve())}:
                text = text.replace(form, SHOWN[what])
        return text

    def real(self, command: str, bound: dict[str, str]) -> str:
        """A command as it is run: /home/me is HOME, and each op shown is the real one."""
        for shown, real in bound.items():
            command = command.replace(shown, real)
        return command.replace(SHOWN["home"], str(self.home))
