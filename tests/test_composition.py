"""The Vault is composed, not mixed in (issue 40 item 1): it has no base classes, and no
job reaches into another's private state: in the jobs' modules and the Vault's callers, a
name starting with `_` is only ever read off `self` (never `self.core._x`, `vault._root`...).
An `ast` walk, as tests/test_architecture.py does for imports."""

from __future__ import annotations

import ast
from pathlib import Path

from vaultd.vault import Vault

PACKAGE = Path(__file__).resolve().parent.parent / "vaultd"
JOBS = ["vault.py", "store/vault_state.py", "store/writer.py", "ingest/update.py", "query/search.py",
        "query/grep.py", "query/links.py", "query/working_set.py", "query/embedder.py", "split/auto.py",
        "capture/remember.py", "history.py", "rename/job.py", "api.py", "server.py", "cli.py", "ingest/indexer.py"]
"""The facade, the state the jobs share, each job's module, and the Vault's callers in the daemon."""


def reaches_in(path: Path) -> list[str]:
    """Each `x._name` in the file where `x` is not `self` itself (nor a module: `os._exit`),
    as `line: x._name`."""
    tree = ast.parse(path.read_text(), str(path))
    modules = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            owner = node.value
            if isinstance(owner, ast.Name) and (owner.id == "self" or owner.id in modules):
                continue
            out.append(f"{node.lineno}: {ast.unparse(node)}")
    return out


def test_the_vault_has_no_base_classes():
    assert Vault.__bases__ == (object,), f"Vault mixes in {Vault.__bases__}: compose its jobs instead"


def test_no_job_reaches_into_another_jobs_private_state():
    found = [f"vaultd/{rel}:{hit}" for rel in JOBS for hit in reaches_in(PACKAGE / rel)]
    assert not found, "private state read off another object (make it a public attribute of its owner):\n" + \
        "\n".join(found)


def test_the_check_sees_a_reach_in(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nclass J:\n    def f(self):\n        os._exit(0)\n        return self._x, "
                   "self.writer._taken, core._notes\n")
    assert reaches_in(bad) == ["5: self.writer._taken", "5: core._notes"]
