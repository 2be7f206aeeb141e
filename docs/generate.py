"""Write the generated parts of the manual, from the program's own sources:

- docs/configuration.md, between its `<!-- generated -->` marks: every key of the config,
  section by section, with its default (`Config()`), its type and what it does: the key's
  docstring in vaultd/config.py, else the comment above it in config.example.toml (the
  two sources the config has; tests/test_config.py proves the example decodes to the
  defaults and lists every key);
- docs/man/vaultd.1 and docs/man/vaultq.1: what `vaultd man` and `vaultq man` print.

    .venv/bin/python docs/generate.py          # after changing a key, a command or a flag

tests/test_docs_config.py and tests/test_docs_man.py fail while what is here is not current.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG_PY = ROOT / "vaultd" / "config.py"
EXAMPLE = ROOT / "config.example.toml"
PAGE = ROOT / "docs" / "configuration.md"
MAN = {"vaultd": ["-m", "vaultd", "man"], "vaultq": ["-m", "vaultd.vaultq", "man"]}

BEGIN = "<!-- generated: python docs/generate.py (from vaultd/config.py and config.example.toml) -->"
END = "<!-- /generated -->"


def field_docs() -> dict[str, dict[str, tuple[str, str]]]:
    """Each class of config.py: its fields, in order, as (type, docstring)."""
    out: dict[str, dict[str, tuple[str, str]]] = {}
    for node in ast.parse(CONFIG_PY.read_text()).body:
        if not isinstance(node, ast.ClassDef):
            continue
        fields: dict[str, tuple[str, str]] = {}
        body = node.body
        for i, stmt in enumerate(body):
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                after = body[i + 1] if i + 1 < len(body) else None
                doc = (after.value.value if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                       and isinstance(after.value.value, str) else "")
                fields[stmt.target.id] = (ast.unparse(stmt.annotation), " ".join(doc.split()))
        out[node.name] = fields
    return out


def example_comments() -> dict[tuple[str, str], str]:
    """config.example.toml's comment just above each key: {(section, key): text}."""
    out: dict[tuple[str, str], str] = {}
    section, comment = "", []
    for line in EXAMPLE.read_text().splitlines():
        s = line.strip()
        if m := re.fullmatch(r"\[+([\w.]+)\]+", s):
            section, comment = m.group(1), []
        elif s.startswith("#"):
            comment.append(s.lstrip("#").strip())
        elif m := re.match(r"(\w+) = ", s):
            out[(section, m.group(1))] = " ".join(comment)
            comment = []
        elif not s:
            comment = []
    return out


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(value, ensure_ascii=False)


def reference() -> str:
    """The generated part of docs/configuration.md."""
    sys.path.insert(0, str(ROOT))
    import msgspec

    from vaultd.config import Config

    docs, comments = field_docs(), example_comments()
    defaults = Config()
    out = ["## Top level", ""]
    structs = []
    for name, (kind, doc) in docs["Config"].items():
        value = getattr(defaults, name)
        if isinstance(value, msgspec.Struct):
            structs.append((name, value))
            continue
        out.append(key_line(name, kind, value, doc or comments.get(("", name), "")))
    for section, value in structs:
        cls = type(value).__name__
        out += ["", f"## `[{section}]`", ""]
        if doc := docs_doc(cls):
            out += [markdown(" ".join(doc.split())), ""]
        for name, (kind, doc) in docs[cls].items():
            default = getattr(value, name)
            if name == "route":  # a list of tables: its rule's keys below
                out.append(key_line(name, kind, default, doc))
                out += ["", f"### `[[{section}.{name}]]`", "", " ".join(docs_doc("Route").split()), ""]
                for rname, (rkind, rdoc) in docs["Route"].items():
                    out.append(key_line(rname, rkind, _route_default(rname), rdoc))
                continue
            out.append(key_line(name, kind, default, doc or comments.get((section, name), "")))
    return "\n".join(out) + "\n"


def docs_doc(cls: str) -> str:
    node = next(n for n in ast.parse(CONFIG_PY.read_text()).body if isinstance(n, ast.ClassDef) and n.name == cls)
    return ast.get_docstring(node) or ""


def _route_default(name: str):
    from vaultd.config import Route

    field = Route.__struct_fields__.index(name)
    defaults = Route.__struct_defaults__
    first_default = len(Route.__struct_fields__) - len(defaults)
    return defaults[field - first_default] if field >= first_default else None


def key_line(name: str, kind: str, default, doc: str) -> str:
    value = "required" if default is None else f"`{toml_value(default)}`"
    return f"- **`{name}`** = {value} ({kind}){': ' + markdown(doc) if doc else ''}"


def markdown(text: str) -> str:
    """Plain text as Markdown shows it: `<` outside code spans escaped (`<vault-name>` is
    no HTML tag); code spans as they are."""
    parts = text.split("`")
    return "`".join(p if i % 2 else p.replace("<", "&lt;") for i, p in enumerate(parts))


def page(text: str) -> str:
    """docs/configuration.md's text with its generated part made anew."""
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n\n{reference()}\n{END}{tail}"


def man(name: str) -> str:
    return subprocess.run([sys.executable, *MAN[name]], capture_output=True, text=True, check=True,
                          cwd=ROOT).stdout


def main() -> None:
    PAGE.write_text(page(PAGE.read_text()))
    for name in MAN:
        (ROOT / "docs" / "man" / f"{name}.1").write_text(man(name))


if __name__ == "__main__":
    main()
