"""Semantic recall's background work and its questions: the Embedder keeps each model's
vector store (store/vectors.py) up to date with the vault's notes, in a thread that never
holds up a commit or a search, and rescores a search's hits by their sections' vectors."""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..memory import release_freed_memory
from ..note import headings_of
from ..parse import decode
from ..paths import read_head
from ..store.vectors import Store
from . import semantic
from .context import note_lines, sections

if TYPE_CHECKING:
    from ..store.vault_state import VaultState

logger = logging.getLogger("vaultd.semantic")

SAVE_EVERY = 60.0
"""Seconds at least between two saves while vectors are being made; saved when done, and at shutdown."""
BATCH = 16
"""Notes embedded between two looks at what else changed (and at whether to stop)."""
SCAN_MIN = 0.3
"""A note a vector scan adds must have a section at least this close to the query: a word no
note holds (an identifier, a token) is near nothing (WordLlama: below 0.2; a note about the
query's meaning in other words: 0.35-0.75)."""


@functools.lru_cache(maxsize=256)
def _query_vector(model: semantic.Model, text: str) -> np.ndarray:
    """A query's vector, kept for the next time the same words are asked (an agent's `context`
    after its `search`, an editor asking again as the user types): the multilingual model
    takes milliseconds a query. Read-only: it is shared."""
    q = model.embed([text])[0]
    q.flags.writeable = False
    return q


class Embedder:
    """Keeps the stores up to date with the vault's notes, in a background thread: told of
    every commit's changed and deleted notes (`changed`), it reads them, cuts them into
    sections and embeds them. Searches use whatever vectors there are meanwhile."""

    def __init__(self, core: VaultState, cjk: bool = True):
        self.core = core
        folder = Path(core.state_dir)
        self.models = ["wordllama"] + (["use"] if cjk else [])
        dims = {"wordllama": semantic.WordLlama.dim, "use": semantic.MultilingualUSE.dim}
        self.stores = {m: Store(semantic.model_id(m), dims[m], folder / f"vectors-{m}.bin") for m in self.models}
        self._dirty: dict[str, None] = {}
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._unsaved = False
        self.embedded = 0
        """Notes embedded since start."""
        self.error: str | None = None
        """The last failure (for status)."""
        self.broken: str | None = None
        """Why semantic recall is off (a model that could not be loaded), or None."""

    def start(self) -> None:
        """Start the thread: it reads the saved vectors, queues every note whose vectors are
        missing or stale (and drops those of notes gone), loads the model, and embeds."""
        self._thread = threading.Thread(target=self._run, name="semantic embedder", daemon=True)
        self._thread.start()

    def _load(self) -> None:
        notes = self.core.notes
        for s in self.stores.values():
            s.load()
            gone = [p for p in s.notes if p not in notes]
            if gone:
                s.put({}, gone)
                self._unsaved = True
        # every store holds every note it embedded (with no sections, where a model has none
        # to read): a note missing from one (its file lost or damaged) is embedded again
        self.changed([p for p, n in notes.items()
                      if any((e := s.notes.get(p)) is None or e[0] != n.hash for s in self.stores.values())])

    def changed(self, paths) -> None:
        """Notes committed (changed, added or deleted): their vectors are made anew (or dropped)."""
        with self._cond:
            self._dirty.update(dict.fromkeys(paths))
            self._cond.notify()

    @property
    def pending(self) -> int:
        return len(self._dirty)

    def close(self) -> None:
        self._stop.set()
        with self._cond:
            self._cond.notify()
        if self._thread is not None:
            self._thread.join(timeout=30)
        self.save()

    def save(self) -> None:
        if not self._unsaved:
            return
        self._unsaved = False
        for s in self.stores.values():
            try:
                t = time.perf_counter()
                size = s.save()
                logger.info("semantic vectors saved: %s, %d notes, %.1f MB in %.2f s", s.name, len(s.notes),
                            size / 2**20, time.perf_counter() - t)
            except OSError as e:
                logger.warning("semantic vectors not saved to %s (%s): made anew at the next start", s.path, e)

    def status(self) -> dict:
        """Its models, whether queries get their semantic part now (`ready`: the model is loaded,
        a second or so after start), the notes embedded (and the sections of each model), the
        notes waiting to be, its last error."""
        return {"models": [self.stores[m].name for m in self.models],
                "ready": not self.broken and semantic.loaded("wordllama") is not None,
                "notes": len(self.stores["wordllama"].notes),
                "sections": {self.stores[m].name: self.stores[m].rows for m in self.models},
                "pending": self.pending, "error": self.error}

    def _run(self) -> None:
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)  # this thread only: the indexer first
        except (OSError, AttributeError):
            pass
        try:  # WordLlama now; the multilingual model once a note has a section for it
            self._load()
            for m in self.models:
                if m == "wordllama" or self.stores[m].rows:
                    semantic.model(m)
            self._settle()
        except Exception as e:
            self.error = self.broken = f"{type(e).__name__}: {e}"
            logger.error("semantic recall is off: its model could not be loaded (%s)", self.error)
            return
        saved_at = time.monotonic()
        while not self._stop.is_set():
            with self._cond:
                if not self._dirty and not self._stop.is_set():  # idle: until a change, or the next save
                    self._cond.wait(max(0.0, saved_at + SAVE_EVERY - time.monotonic()) if self._unsaved else None)
                batch = list(self._dirty)[:BATCH]
            if self._stop.is_set():
                return
            if batch:
                try:
                    self._embed(batch)
                except Exception as e:  # a bug must not stop the daemon: these notes go without vectors
                    self.error = f"{type(e).__name__}: {e}"
                    logger.exception("semantic vectors of %d notes not made", len(batch))
                with self._cond:
                    for p in batch:
                        self._dirty.pop(p, None)
                    drained = not self._dirty
                if drained:
                    self._settle()
            if self._unsaved and time.monotonic() - saved_at >= SAVE_EVERY:  # at most once a minute: a
                self.save()  # save writes every vector (40 MB at 10,000 notes), not one note's
                saved_at = time.monotonic()
                self._settle()

    def _settle(self) -> None:
        """Once the queue is empty (and after a save): the pages of the models' mapped tables
        that embedding touched, and the heap it freed, given back (a query touches its own
        tokens' rows again, at a minor fault each)."""
        for m in self.models:
            if (model := semantic.loaded(m)) is not None:
                model.release()
        release_freed_memory()

    def _embed(self, batch: list[str]) -> None:
        core = self.core
        cap = core.config.index.max_file_mb << 20
        texts: dict[str, list[tuple[int, str]]] = {}
        hashes = {}
        for p in batch:
            note = core.notes.get(p)
            if note is None:
                continue
            try:
                text = decode(read_head(core.root_str, p, cap)[0])[0]
            except OSError:  # gone meanwhile: the commit that says so comes
                continue
            lines, start = note_lines(text, p)
            texts[p] = semantic.section_texts(note.title, lines, sections(lines, headings_of(note), start)) \
                or [(1, note.title)]
            hashes[p] = note.hash
        for m, store in self.stores.items():
            if self._stop.is_set():
                return  # shutting down: these notes stay queued, for the next start
            want = {p: semantic.for_model(m, ts) for p, ts in texts.items()}
            flat = [t for ts in want.values() for _, t in ts]
            vecs = semantic.model(m).embed(flat) if flat else np.zeros((0, store.dim), np.float32)
            made, i = {}, 0
            for p, ts in want.items():
                made[p] = (hashes[p], [f for f, _ in ts], vecs[i : i + len(ts)])
                i += len(ts)
            store.put(made, [p for p in batch if p not in texts])
        self.embedded += len(texts)
        self._unsaved = True

    def rescore(self, text: str, ranked: list, weight: float, scan: int, notes: dict) -> tuple[list, dict]:
        """`ranked` [(lexical score, note)] re-scored with the cosine of each note's best section
        to `text` (see semantic.fuse), and, when `scan`, the `scan` notes nearest by their
        vectors added; (the list re-sorted, {path: (lexical, cosine, section's line)}).
        Hangul/Han/Kana text uses the multilingual model, or none when it is off."""
        m = "use" if semantic.is_cjk(text) else "wordllama"
        store = self.stores.get(m)
        model = semantic.loaded(m)  # loaded by the embedder: a query never waits for a model to load
        if store is None or not store.rows or model is None or self.broken:
            return ranked, {}
        q = _query_vector(model, text)
        if scan:
            seen = {n.path for _, n in ranked}
            ranked = ranked + [(0.0, notes[p]) for c, p in store.scan(q, scan)
                               if c >= SCAN_MIN and p not in seen and p in notes]
        best = store.best(q, [n.path for _, n in ranked])
        cos = [best[n.path][0] if n.path in best else None for _, n in ranked]
        fused = semantic.fuse([s for s, _ in ranked], cos, weight)
        parts = {n.path: (s, c, best[n.path][1] if n.path in best else None) for (s, n), c in zip(ranked, cos)}
        return sorted(zip(fused, (n for _, n in ranked)), key=lambda t: (-t[0], t[1].path)), parts
