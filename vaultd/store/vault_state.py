"""What every job of a Vault shares (see vault.py): its config and folders, the index, the
note table, the link graph, the state file, the generation, and how far the first index is.
One object, handed to each job (ingest, search, grep, links, working set, splits, capture):
the jobs read it, and only ingest changes the note table, the graph and the generation."""

from __future__ import annotations

import threading
from pathlib import Path

from ..config import Config
from ..errors import QueryError, StillIndexing
from ..note import Note, NoteTable
from .graph import Graph
from .index import NoteIndex
from .state import StateStore, make_private

GRAPH_WAIT_S = 120.0
"""Seconds a query that needs the link graph waits for its first build (see ready_graph)."""


class VaultState:
    """One vault's stores and the state its jobs share."""

    def __init__(self, config: Config):
        self.config = config
        self.root = Path(config.vault)
        self.root_str = str(self.root)
        """The vault's folder as a string, as the os calls of the query paths take it."""
        self.state_dir = Path(config.state_dir)
        make_private(self.state_dir)
        self.index = NoteIndex(self.state_dir / "index", config.index.heap_mb)
        self.notes: dict[str, Note] = NoteTable()
        """Every indexed note's metadata (no body). Replaced, never mutated, per batch; loaded
        at start by ingest (from the saved graph, else the index)."""
        self.by_key: dict[str, Note] = {}
        """The same notes by their index key; replaced with `notes`."""
        self.first_index = True
        """The index held no note at start (a new vault, a rebuild): until the first reconcile
        is done, every answer says it is still being built (see `indexing`). Set by ingest
        once the note table is loaded."""
        self.graph: Graph | None = None
        """Read from where it was saved, else built after the first reconcile (seconds on a
        big vault; search does not wait for it)."""
        self.graph_ready = threading.Event()
        """Set once `graph` is there."""
        self.unreadable: dict[str, str] = {}
        """Files of notes that could not be read (permission denied, an I/O error), and why:
        not indexed, listed by `problems`; read again when they change (a chmod too)."""
        self.state = StateStore(self.state_dir / "state.json")
        self.generation = self.state.state.generation + 1
        """Grows by one with every commit, and by one at each start (from the state file)."""
        self.reconciled = False
        """The first reconcile is done."""
        self.progress: tuple[int, int | None] = (0, None)
        """(files read, files to read) of the batch being applied; None while the vault is walked."""
        self.stopping = threading.Event()
        """Set on shutdown: a batch in progress stops, and rolls back (the next start redoes it)."""

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

    def progress_words(self) -> str:
        """How far the batch being applied is, in words."""
        done, total = self.progress
        return "listing the vault's files" if total is None else f"{done} of {total} files read"

    def ready_graph(self) -> Graph:
        """The link graph, once built: StillIndexing while the first index is being built
        (not a wait: that takes minutes on a big vault), QueryError when it is not there
        within GRAPH_WAIT_S."""
        if self.indexing:
            raise StillIndexing(self.progress_words())
        if not self.graph_ready.wait(GRAPH_WAIT_S):
            raise QueryError("the link graph is still being built; try again in a moment")
        return self.graph
