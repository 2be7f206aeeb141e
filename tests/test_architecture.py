"""Imports follow the pipeline (issue 40): an `ast` walk over vaultd/ checks every import
against the layers ARCHITECTURE.md declares, lowest first, in its fenced `layers` block.

- No module imports one of a layer above its own (nor, for a layer that says `may import`,
  one of a layer it does not name). Imports inside functions count; imports under
  `if TYPE_CHECKING:` do not (they never run).
- No name starting with `_` crosses modules: neither `from x import _name` nor
  `module._name` on a module imported by name (`__version__` and other dunders aside).
- No cycle between packages (vaultd.store, vaultd.query, ... ; a top-level module is its own).
- Every module of vaultd/ is in exactly one layer.
- No function is longer than MAX_FUNCTION_LINES (issue 40: split at its natural steps).
An exception is allowed only when ARCHITECTURE.md's `exceptions` block names it, dated,
and one that no longer occurs fails too (delete its line).
"""

from __future__ import annotations

import ast
import fnmatch
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "vaultd"
ARCHITECTURE = ROOT / "ARCHITECTURE.md"
MAX_FUNCTION_LINES = 120
LONG = "long"  # an exceptions line `DATE vaultd.module.function -> long  why`: a function allowed longer


# -- what ARCHITECTURE.md declares -------------------------------------------------------


def _block(name: str) -> list[str]:
    """The lines of ARCHITECTURE.md's fenced block ```name (comments and blanks dropped)."""
    text = ARCHITECTURE.read_text()
    m = re.search(rf"^```{name}\n(.*?)^```", text, re.M | re.S)
    assert m, f"ARCHITECTURE.md has no ```{name} block"
    return [ln.split("#", 1)[0].strip() for ln in m[1].splitlines() if ln.split("#", 1)[0].strip()]


def layers() -> list[tuple[str, list[str], list[str] | None]]:
    """Each layer, lowest first: its name, its module globs, and the layers it may import
    (None: every layer up to its own)."""
    out = []
    for ln in _block("layers"):
        m = re.fullmatch(r"([\w/-]+):\s*(.*?)(?:\s*\|\s*may import:\s*(.*))?", ln)
        assert m, f"ARCHITECTURE.md layers: cannot read {ln!r}"
        out.append((m[1], m[2].split(), m[3].split() if m[3] else None))
    return out


def exceptions() -> dict[tuple[str, str], str]:
    """Allowed violations: (importer, what it takes) -> the dated line that allows it."""
    out = {}
    for ln in _block("exceptions"):
        m = re.fullmatch(r"(\d{4}-\d{2}-\d{2})\s+(\S+)\s+->\s+(\S+)\s+(.+)", ln)
        assert m, f"ARCHITECTURE.md exceptions: cannot read {ln!r} (want: DATE importer -> imported  why)"
        if m[3] != LONG:
            out[(m[2], m[3])] = ln
    return out


def long_allowed() -> set[str]:
    """The functions allowed longer than MAX_FUNCTION_LINES (`module.qualified.name`)."""
    lines = (re.fullmatch(r"\d{4}-\d{2}-\d{2}\s+(\S+)\s+->\s+(\S+)\s+.+", ln) for ln in _block("exceptions"))
    return {m[1] for m in lines if m and m[2] == LONG}


# -- what vaultd/ does ---------------------------------------------------------------------


def modules() -> dict[str, Path]:
    out = {}
    for f in sorted(PACKAGE.rglob("*.py")):
        parts = f.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    return out


def _type_checking(node: ast.AST) -> bool:
    t = node.test if isinstance(node, ast.If) else None
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or \
        (isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _walk(tree: ast.AST):
    """Every node, but for what sits under `if TYPE_CHECKING:`."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if not _type_checking(child):
                todo.append(child)
            else:
                todo.extend(child.orelse)


def imports(name: str, path: Path, known: set[str]) -> list[tuple[str, str, int, str | None]]:
    """Every vaultd import of a module: (module imported, name taken from it or "", line,
    the name it binds to that module when it takes a module whole, else None)."""
    is_pkg = path.name == "__init__.py"
    here = name.split(".") if is_pkg else name.split(".")[:-1]
    out = []
    for node in _walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(a.name, "", node.lineno, a.asname) for a in node.names if a.name.split(".")[0] == "vaultd"]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(here[: len(here) - node.level + 1] + ([base] if base else []))
            if base.split(".")[0] != "vaultd":
                continue
            for a in node.names:
                sub = f"{base}.{a.name}"
                out.append((sub, "", node.lineno, a.asname or a.name) if sub in known else
                           (base, a.name, node.lineno, None))
    return out


def layer_of(mod: str, table) -> str | None:
    hits = [name for name, globs, _ in table if any(fnmatch.fnmatchcase(mod, g) for g in globs)]
    assert len(hits) <= 1, f"{mod} is in more than one layer: {hits}"
    return hits[0] if hits else None


def _unit(mod: str) -> str:
    """The package a module counts in for cycles: vaultd.store.graph -> vaultd.store."""
    parts = mod.split(".")
    return ".".join(parts[:2])


def violations() -> list[tuple[str, str, str]]:
    """(importer, what it takes, why) for every import against the rules."""
    table = layers()
    order = [name for name, _, _ in table]
    allowed = {name: may for name, _, may in table}
    mods = modules()
    known = set(mods)
    out = []
    graph: dict[str, set[str]] = {}
    for mod, path in mods.items():
        mine = layer_of(mod, table)
        found = imports(mod, path, known)
        for dep, taken, line, _ in found:
            if taken.startswith("_") and not (taken.startswith("__") and taken.endswith("__")):
                out.append((mod, f"{dep}.{taken}", f"line {line}: a private name from another module"))
            if dep == mod or (dep == "vaultd" and taken == "__version__"):
                continue  # the package is loaded before any of its modules: its version is anyone's
            if _unit(dep) != _unit(mod):
                graph.setdefault(_unit(mod), set()).add(_unit(dep))
            theirs = layer_of(dep, table)
            if mine is None or theirs is None:
                continue  # reported by test_every_module_has_a_layer
            ok = order.index(theirs) <= order.index(mine) if allowed[mine] is None else \
                theirs == mine or theirs in allowed[mine]
            if not ok:
                out.append((mod, dep, f"line {line}: {mine} imports {theirs}"))
        bound = {name: dep for dep, _, _, name in found if name}
        for node in _walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound \
                    and node.attr.startswith("_") and not node.attr.startswith("__"):
                out.append((mod, f"{bound[node.value.id]}.{node.attr}",
                            f"line {node.lineno}: a private name from another module"))
    for cycle in _cycles(graph):
        out.append((cycle[0], cycle[1], "a package cycle: " + " -> ".join(cycle + [cycle[0]])))
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected set of packages (Tarjan), as a path through it."""
    index, low, stack, on, sccs = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                sccs.append(sorted(scc))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    out = []
    for scc in sccs:  # a path around it: from the first, along edges inside it, back
        path, seen = [scc[0]], {scc[0]}
        while True:
            nxt = next((w for w in sorted(graph[path[-1]]) if w in scc and w not in seen), None)
            if nxt is None:
                break
            path.append(nxt)
            seen.add(nxt)
        out.append(path)
    return out


# -- the tests -----------------------------------------------------------------------------


def test_every_module_has_a_layer():
    table = layers()
    missing = [m for m in modules() if layer_of(m, table) is None]
    assert not missing, f"modules in no layer of ARCHITECTURE.md (add them to its layers block): {missing}"


def test_every_layer_named_in_may_import_exists():
    names = [name for name, _, _ in layers()]
    for name, _, may in layers():
        assert set(may or ()) <= set(names), f"layer {name} may import unknown layers {set(may) - set(names)}"


def test_imports_follow_the_pipeline():
    allowed = exceptions()
    found = violations()
    bad = [f"{a} takes {b}: {why}" for a, b, why in found if (a, b) not in allowed]
    assert not bad, "imports against ARCHITECTURE.md:\n" + "\n".join(sorted(bad))
    stale = sorted(set(allowed) - {(a, b) for a, b, _ in found})
    assert not stale, f"exceptions in ARCHITECTURE.md that no longer occur (delete them): {stale}"


def test_the_module_map_names_every_module():
    """ARCHITECTURE.md's module map has one line per module (`vaultd/x.py` or `vaultd/x/`
    for a package's __init__)."""
    text = ARCHITECTURE.read_text()
    missing = []
    for mod, path in modules().items():
        rel = path.relative_to(ROOT).as_posix()
        shown = rel[: -len("__init__.py")] if path.name == "__init__.py" else rel
        if f"`{shown}`" not in text:
            missing.append(shown)
    assert not missing, f"modules ARCHITECTURE.md's module map does not name: {missing}"


def long_functions() -> dict[str, int]:
    """Every function of vaultd/ (methods and nested ones too) longer than MAX_FUNCTION_LINES:
    `module.qualified.name` -> its lines (decorators aside, its docstring in)."""
    out = {}
    for mod, path in modules().items():
        todo = [(ast.parse(path.read_text(), str(path)), mod)]
        while todo:
            node, prefix = todo.pop()
            for child in ast.iter_child_nodes(node):
                name = f"{prefix}.{child.name}" if isinstance(
                    child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else prefix
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                        (n := child.end_lineno - child.lineno + 1) > MAX_FUNCTION_LINES:
                    out[name] = n
                todo.append((child, name))
    return out


def test_no_function_is_longer_than_the_limit():
    """A function over MAX_FUNCTION_LINES is split at its natural steps, or named in
    ARCHITECTURE.md's exceptions block (`DATE module.function -> long  why`)."""
    allowed = long_allowed()
    found = long_functions()
    bad = [f"{name}: {n} lines" for name, n in sorted(found.items()) if name not in allowed]
    assert not bad, f"functions longer than {MAX_FUNCTION_LINES} lines (split them at their steps):\n" + "\n".join(bad)
    stale = sorted(allowed - set(found))
    assert not stale, f"long-function exceptions in ARCHITECTURE.md that no longer occur (delete them): {stale}"


def test_the_errors_vaultd_raises_are_vaultd_errors():
    """The journaled writers' refusal and a bad request line are under VaultdError, so one
    `except VaultdError` at an executable's boundary takes them."""
    from vaultd.errors import VaultdError
    from vaultd.protocol import BadRequest
    from vaultd.store.journal import Raced, SplitError

    for cls in (SplitError, Raced, BadRequest):
        assert issubclass(cls, VaultdError), cls

