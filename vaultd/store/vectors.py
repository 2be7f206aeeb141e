"""Section vectors for semantic recall (see query/semantic.py): one store per model, each
note's sections (their first lines) and vectors (float16), saved beside the index and
kept up to date by a background thread that never holds up a commit or a search.

A saved file names its format version and model; one of another version or model, or
one that does not read whole, is dropped and its vectors made anew. A note's vectors
carry the hash of the text they were made from: changed notes are embedded again.
"""

from __future__ import annotations

import logging
import os
import struct
import threading
import time
from pathlib import Path

import msgspec
import numpy as np

from ..note import headings_of
from ..parse import decode
from ..paths import read_head
from ..query import semantic
from ..query.context import note_lines, sections
from .state import fsync_dir

logger = logging.getLogger("vaultd.semantic")

VERSION = 1
"""Bump when what is embedded (section texts) or the file's layout changes: saved vectors are made anew."""

MAGIC = b"VAULTD-VECTORS\n"
SAVE_EVERY = 60.0
"""Seconds at least between two saves while vectors are being made; saved when done, and at shutdown."""
BATCH = 16
"""Notes embedded between two looks at what else changed (and at whether to stop)."""
SCAN_WIDTH = 5
"""A vector scan for k notes compares the sections of the 5k nearest by their mean (see Store.scan)."""
SCAN_MIN = 0.3
"""A note a vector scan adds must have a section at least this close to the query: a word no
note holds (an identifier, a token) is near nothing (WordLlama: below 0.2; a note about the
query's meaning in other words: 0.35-0.75)."""


class _Meta(msgspec.Struct, array_like=True):
    version: int
    model: str
    dim: int
    notes: list[tuple[str, str, list[int]]]  # (path, hash, first line of each section)


def _means(vecs: np.ndarray, counts: list[int]) -> np.ndarray:
    """Each note's mean vector (float32, normalised) of its `counts` consecutive rows of `vecs`;
    a zero row for a note with none."""
    out = np.zeros((len(counts), vecs.shape[1]), np.float32)
    have = [i for i, n in enumerate(counts) if n]
    if have:
        starts = np.cumsum([0] + counts)[have]
        out[have] = np.add.reduceat(vecs.astype(np.float32), starts, axis=0) if len(vecs) else 0
    out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)
    return out


class Store:
    """One model's section vectors, by note path: (hash, first lines, float16 vectors, their
    mean). Entries are replaced, never changed in place: a reader needs no lock."""

    def __init__(self, name: str, dim: int, path: Path):
        self.name, self.dim, self.path = name, dim, path
        self.entries: dict[str, tuple[str, np.ndarray, np.ndarray, np.ndarray]] = {}
        self.rows = 0
        """Sections with vectors, over every note."""
        self._centroids: tuple[dict, list[str], np.ndarray] | None = None

    def best(self, q: np.ndarray, paths: list[str]) -> dict[str, tuple[float, int]]:
        """For each of `paths` with vectors: (the best section's cosine with `q`, its first line).
        One product for all of them (float16 has no BLAS: made float32 first)."""
        entries = self.entries
        have = [(p, e) for p in paths if (e := entries.get(p)) is not None and len(e[2])]
        if not have:
            return {}
        sims = np.concatenate([e[2] for _, e in have]).astype(np.float32) @ q
        out, i = {}, 0
        for p, (_, lines, vecs, _) in have:
            seg = sims[i : i + len(vecs)]
            j = int(seg.argmax())
            out[p] = (float(seg[j]), int(lines[j]))
            i += len(vecs)
        return out

    def scan(self, q: np.ndarray, k: int) -> list[tuple[float, str]]:
        """The `k` notes whose best section is nearest `q`, (cosine, path), best first, for
        queries whose words find too few notes: every note's mean vector read (a float32 copy,
        4 bytes x dims a note, made again after the vectors change), and the best sections of
        the SCAN_WIDTH x `k` nearest by it compared."""
        cache = self._centroids
        if cache is None or cache[0] is not self.entries:
            entries = self.entries
            paths = [p for p, e in entries.items() if len(e[2])]
            cent = np.stack([entries[p][3] for p in paths]) if paths else np.zeros((0, self.dim), np.float32)
            cache = self._centroids = (entries, paths, cent)
        _, paths, cent = cache
        if not paths:
            return []
        sims = cent @ q
        n = min(len(paths), SCAN_WIDTH * k)
        near = np.argpartition(-sims, n - 1)[:n]
        best = self.best(q, [paths[i] for i in near])
        return sorted(((c, p) for p, (c, _) in best.items()), reverse=True)[:k]

    def save(self) -> int:
        """Write the store atomically (temp file, fsync, rename), readable by its owner alone."""
        entries = self.entries
        meta = _Meta(VERSION, self.name, self.dim, [(p, h, lines.tolist()) for p, (h, lines, _, _) in entries.items()])
        head = msgspec.msgpack.encode(meta)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            with open(fd, "wb", closefd=False) as f:
                f.write(MAGIC + struct.pack("<Q", len(head)) + head)
                for _, _, vecs, _ in entries.values():
                    f.write(np.ascontiguousarray(vecs, np.float16).tobytes())
                f.flush()
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        os.close(fd)
        os.replace(tmp, self.path)
        fsync_dir(self.path.parent)
        return self.path.stat().st_size

    def load(self) -> bool:
        """Read the saved store, when it is of this version and model and reads whole."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return False
        except OSError as e:
            logger.warning("semantic vectors at %s not read (%s): made anew", self.path, e)
            return False
        try:
            if not raw.startswith(MAGIC):
                raise ValueError("not a vectors file")
            n = struct.unpack("<Q", raw[len(MAGIC) : len(MAGIC) + 8])[0]
            at = len(MAGIC) + 8 + n
            meta = msgspec.msgpack.decode(raw[len(MAGIC) + 8 : at], type=_Meta)
            if (meta.version, meta.model, meta.dim) != (VERSION, self.name, self.dim):
                logger.info("semantic vectors at %s are of another model or version: made anew", self.path)
                return False
            rows = sum(len(lines) for _, _, lines in meta.notes)
            if len(raw) - at != rows * self.dim * 2:
                raise ValueError(f"{len(raw) - at} bytes of vectors, not {rows * self.dim * 2}")
            mat = np.frombuffer(raw, np.float16, rows * self.dim, at).reshape(rows, self.dim)
        except (ValueError, struct.error, msgspec.DecodeError) as e:
            logger.warning("semantic vectors at %s cannot be read (%s): made anew", self.path, e)
            return False
        i, entries = 0, {}
        means = _means(mat, [len(lines) for _, _, lines in meta.notes])
        for (p, h, lines), mean in zip(meta.notes, means):
            entries[p] = (h, np.asarray(lines, np.int32), mat[i : i + len(lines)], mean)
            i += len(lines)
        self.entries, self.rows = entries, rows
        return True


class Embedder:
    """Keeps the stores up to date with the vault's notes, in a background thread: told of
    every commit's changed and deleted notes (`changed`), it reads them, cuts them into
    sections and embeds them. Searches use whatever vectors there are meanwhile."""

    def __init__(self, vault, cjk: bool = True):
        self.vault = vault
        folder = Path(vault.state_dir)
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
        notes = self.vault.notes
        for s in self.stores.values():
            s.load()
            gone = [p for p in s.entries if p not in notes]
            if gone:
                s.entries = {p: e for p, e in s.entries.items() if p in notes}
                s.rows = sum(len(e[2]) for e in s.entries.values())
                self._unsaved = True
        wl = self.stores["wordllama"].entries
        self.changed([p for p, n in notes.items() if (e := wl.get(p)) is None or e[0] != n.hash])

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
                logger.info("semantic vectors saved: %s, %d notes, %.1f MB in %.2f s", s.name, len(s.entries),
                            size / 2**20, time.perf_counter() - t)
            except OSError as e:
                logger.warning("semantic vectors not saved to %s (%s): made anew at the next start", s.path, e)

    def status(self) -> dict:
        """Its models, whether queries get their semantic part now (`ready`: the model is loaded,
        a second or so after start), the notes embedded (and the sections of each model), the
        notes waiting to be, its last error."""
        return {"models": [self.stores[m].name for m in self.models],
                "ready": not self.broken and semantic.loaded("wordllama") is not None,
                "notes": len(self.stores["wordllama"].entries),
                "sections": {self.stores[m].name: self.stores[m].rows for m in self.models},
                "pending": self.pending, "error": self.error}

    def _run(self) -> None:
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)  # this thread only: the indexer first
        except (OSError, AttributeError):
            pass
        try:  # WordLlama now; the multilingual model (117 MB) once a note has a section for it
            self._load()
            for m in self.models:
                if m == "wordllama" or self.stores[m].rows:
                    semantic.model(m)
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
            if self._unsaved and time.monotonic() - saved_at >= SAVE_EVERY:  # at most once a minute: a
                self.save()  # save writes every vector (40 MB at 10,000 notes), not one note's
                saved_at = time.monotonic()

    def _embed(self, batch: list[str]) -> None:
        v = self.vault
        cap = v.config.index.max_file_mb << 20
        texts: dict[str, list[tuple[int, str]]] = {}
        hashes = {}
        for p in batch:
            note = v.notes.get(p)
            if note is None:
                continue
            try:
                text = decode(read_head(v._root, p, cap)[0])[0]
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
            vecs = semantic.model(m).embed(flat).astype(np.float16) if flat else np.zeros((0, store.dim), np.float16)
            entries = dict(store.entries)
            for p in batch:
                entries.pop(p, None)
            i = 0
            means = _means(vecs, [len(ts) for ts in want.values()])
            for (p, ts), mean in zip(want.items(), means):
                entries[p] = (hashes[p], np.asarray([f for f, _ in ts], np.int32), vecs[i : i + len(ts)], mean)
                i += len(ts)
            store.entries, store.rows = entries, sum(len(e[2]) for e in entries.values())
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
        q = model.embed([text])[0]
        if scan:
            seen = {n.path for _, n in ranked}
            ranked = ranked + [(0.0, notes[p]) for c, p in store.scan(q, scan)
                               if c >= SCAN_MIN and p not in seen and p in notes]
        best = store.best(q, [n.path for _, n in ranked])
        cos = [best[n.path][0] if n.path in best else None for _, n in ranked]
        fused = semantic.fuse([s for s, _ in ranked], cos, weight)
        parts = {n.path: (s, c, best[n.path][1] if n.path in best else None) for (s, n), c in zip(ranked, cos)}
        return sorted(zip(fused, (n for _, n in ranked)), key=lambda t: (-t[0], t[1].path)), parts
