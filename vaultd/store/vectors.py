"""Section vectors for semantic recall (see query/semantic.py): one store per model, each
note's sections (their first lines) and vectors (int8, a scale each), saved beside the index.
What keeps them up to date (a background thread that never holds up a commit or a search)
and asks them is query/embedder.py.

A saved file names its format version and model; one of another version or model, or
one that does not read whole, is dropped and its vectors made anew. A note's vectors
carry the hash of the text they were made from: changed notes are embedded again.
"""

from __future__ import annotations

import logging
import mmap
import os
import struct
from pathlib import Path
from typing import NamedTuple

import msgspec
import numpy as np

from .state import fsync_dir

logger = logging.getLogger("vaultd.semantic")

VERSION = 2
"""Bump when what is embedded (section texts) or the file's layout changes: saved vectors are made anew."""

MAGIC = b"VAULTD-VECTORS\n"
SCAN_WIDTH = 5
"""A vector scan for k notes compares the sections of the 5k nearest by their mean (see Store.scan)..."""
COARSE = 8
"""...found among the 8 x 5k nearest by their means' main directions (see _basis)."""


class _Meta(msgspec.Struct, array_like=True):
    version: int
    model: str
    dim: int
    notes: list[tuple[str, str, list[int]]]  # (path, hash, first line of each section)


ALIGN = 64
"""The vectors start at a multiple of this many bytes into the file (mapped, they are aligned)."""


def _at(header: int) -> int:
    """Where the vectors start in a file whose header (MAGIC, its length, the meta) is this long."""
    return -(-header // ALIGN) * ALIGN


def quantized(m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of floats as int8 and a scale each (row ~ int8s x scale): half the bytes of float16,
    made float32 for a product 15x faster than float16 is (measured: 25 us, not 410, for 380
    rows of 256), and the same cosines to within 0.002."""
    scale = np.abs(m).max(axis=1).astype(np.float32) / 127 if len(m) else np.zeros(0, np.float32)
    scale[scale == 0] = 1.0
    return np.rint(m / scale[:, None]).astype(np.int8), scale


def _means(vecs: np.ndarray, scales: np.ndarray, counts: list[int]) -> np.ndarray:
    """The mean vector (float32, normalised) of each run of `counts` (each > 0) consecutive
    rows of `vecs` x `scales`, some thousands of rows at a time (never a float32 copy of all)."""
    out = np.zeros((len(counts), vecs.shape[1]), np.float32)
    ends = np.cumsum(counts)
    i = 0
    while i < len(counts):
        lo = int(ends[i] - counts[i])
        j = max(i + 1, int(np.searchsorted(ends, lo + 4096, "right")))
        hi = int(ends[j - 1])
        starts = np.concatenate([[0], ends[i : j - 1] - lo])
        out[i:j] = np.add.reduceat(vecs[lo:hi].astype(np.float32) * scales[lo:hi, None], starts, axis=0)
        i = j
    out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)
    return out


PCS = 64
"""Dimensions of the notes' means kept for the coarse pass of a vector scan (see _basis)."""


def _basis(means: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The notes' average mean and the PCS directions in which their means differ most (the
    principal components of at most 4,096 of them): a mean's product with a query is, but for
    the same amount for every note, that of their parts along these directions, in a quarter
    of the dimensions or fewer, so the notes nearest a query are found among the nearest by these parts
    in a fraction of the time a product with every whole mean takes (measured on 10,000 notes:
    97-99% of the nearest 50 among the nearest 400 by 64 directions, in 0.3 ms, not 1-3)."""
    dim = means.shape[1]
    none = np.zeros(dim, np.float32), np.zeros((dim, 0), np.float32)
    sample = means[:: -(-len(means) // 4096)] if len(means) else means
    sample = sample[np.isfinite(sample).all(axis=1)]  # a damaged row: left out, not the whole basis
    if len(sample) < 2:
        return none
    center = sample.mean(0, dtype=np.float32)
    try:
        _, _, vt = np.linalg.svd(sample - center, full_matrices=False)
    except np.linalg.LinAlgError:
        return none
    return center, np.ascontiguousarray(vt[:PCS].T, dtype=np.float32)


class _Rows:
    """A growing array of rows: appended into spare room and never changed once written, so a
    reader that knows how many rows it may read needs no lock; made anew (half as big again)
    when full. Spare room is never touched: it costs no resident memory."""

    def __init__(self, dim: int, dtype, room: int = 256):
        self.a = np.empty((room, dim), dtype)
        self.n = 0

    def append(self, rows: np.ndarray) -> None:
        if self.n + len(rows) > len(self.a):
            a = np.empty((max(self.n + len(rows), len(self.a) * 3 // 2), self.a.shape[1]), self.a.dtype)
            a[: self.n] = self.a[: self.n]
            self.a = a
        self.a[self.n : self.n + len(rows)] = rows
        self.n += len(rows)


class _View(NamedTuple):
    """What a reader reads, all of one moment: each note's (hash, first row, sections, its mean's
    row or -1); the saved vectors (mapped) and those made since (`made`, their rows numbered
    on from the saved ones), all int8; each row's scale and section's first line; the notes'
    means (int8, a scale each), their parts along the main directions (see _basis) and whose they are."""

    notes: dict[str, tuple[str, int, int, int]]
    saved: np.ndarray
    made: np.ndarray
    scales: np.ndarray
    lines: np.ndarray
    means: np.ndarray
    mean_scales: np.ndarray
    parts: np.ndarray
    center: np.ndarray
    basis: np.ndarray
    owners: list[str]


class Store:
    """One model's section vectors: every section's vector a row (int8 and a scale, see
    quantized), those read from the saved file mapped (its pages are the page cache's, in this
    process only as they are read) and those made since in memory until the next save maps
    them too; and each note's mean vector, for the vector scan. Its view is replaced, never
    changed in place: a reader needs no lock. One writer (the embedder's thread)."""

    def __init__(self, name: str, dim: int, path: Path):
        self.name, self.dim, self.path = name, dim, path
        self._start(np.zeros((0, dim), np.int8), {}, np.zeros(0, np.float32), np.zeros(0, np.int32),
                    np.zeros((0, dim), np.float32), [])

    def _start(self, saved: np.ndarray, notes: dict, scales: np.ndarray, lines: np.ndarray, means: np.ndarray,
               owners: list[str]) -> None:
        self._made, self._means = _Rows(self.dim, np.int8), _Rows(self.dim, np.int8)
        self._scales, self._lines, self._mean_scales = _Rows(1, np.float32), _Rows(1, np.int32), _Rows(1, np.float32)
        self._scales.append(scales[:, None])
        self._lines.append(lines[:, None])
        m, s = quantized(means)
        self._means.append(m)
        self._mean_scales.append(s[:, None])
        self._center, self._basis = _basis(means)  # made again at each save, from every note's mean then
        self._based_on = len(means)
        self._parts = _Rows(self._basis.shape[1], np.float32)
        for i in range(0, len(means), 8192):  # a slice at a time: no temporary as big as the means
            self._parts.append((means[i : i + 8192] - self._center) @ self._basis)
        self._owners = list(owners)
        self._dead = 0  # means of notes since made anew or gone
        self._publish(notes, saved)

    def _publish(self, notes: dict, saved: np.ndarray) -> None:
        self.view = _View(notes, saved, self._made.a[: self._made.n], self._scales.a[: self._scales.n, 0],
                          self._lines.a[: self._lines.n, 0], self._means.a[: self._means.n],
                          self._mean_scales.a[: self._mean_scales.n, 0], self._parts.a[: self._parts.n],
                          self._center, self._basis, self._owners)
        self.rows = sum(n for _, _, n, _ in notes.values())
        """Sections with vectors, over every note."""

    @property
    def notes(self) -> dict[str, tuple[str, int, int, int]]:
        """Each note's (hash of the text its vectors were made from, first row, sections, mean's row)."""
        return self.view.notes

    def put(self, made: dict[str, tuple[str, list[int], np.ndarray]], gone=()) -> None:
        """Notes' vectors made anew, {path: (hash, first lines, float32 vectors)}, and notes gone."""
        v = self.view
        notes = dict(v.notes)
        for p in (*gone, *made):
            if (old := notes.pop(p, None)) is not None and old[3] >= 0:
                self._dead += 1
        at = len(v.saved) + self._made.n
        for p, (h, lines, vecs) in made.items():
            mean = -1
            if len(vecs):
                q, s = quantized(vecs)
                self._made.append(q)
                self._scales.append(s[:, None])
                self._lines.append(np.asarray(lines, np.int32)[:, None])
                mean_vec = _means(q, s, [len(vecs)])
                self._parts.append((mean_vec - self._center) @ self._basis)
                q, s = quantized(mean_vec)
                self._means.append(q)
                self._mean_scales.append(s[:, None])
                self._owners.append(p)
                mean = self._means.n - 1
            notes[p] = (h, at, len(vecs), mean)
            at += len(vecs)
        self._publish(notes, v.saved)

    def raw(self, v: _View, rows: np.ndarray) -> np.ndarray:
        """These rows' int8s."""
        old = rows < len(v.saved)
        if old.all():
            return v.saved[rows]
        out = np.empty((len(rows), self.dim), np.int8)
        out[old] = v.saved[rows[old]]
        out[~old] = v.made[rows[~old] - len(v.saved)]
        return out

    def best(self, q: np.ndarray, paths: list[str]) -> dict[str, tuple[float, int]]:
        """For each of `paths` with vectors: (the best section's cosine with `q`, its first line).
        One product for all their sections; the best of each note found by numpy, not a loop."""
        v = self.view
        have = [(p, r) for p in paths if (r := v.notes.get(p)) is not None and r[2]]
        if not have:
            return {}
        first = np.fromiter((r[1] for _, r in have), np.int64, len(have))
        count = np.fromiter((r[2] for _, r in have), np.int64, len(have))
        offs = np.zeros(len(have), np.int64)
        np.cumsum(count[:-1], out=offs[1:])
        rows = np.repeat(first - offs, count) + np.arange(int(count.sum()))
        sims = (self.raw(v, rows).astype(np.float32) @ q) * v.scales[rows]
        top = np.maximum.reduceat(sims, offs)
        at = np.where(sims == np.repeat(top, count), np.arange(len(rows)), len(rows))
        lines = v.lines[rows[np.minimum.reduceat(at, offs)]]  # each note's first best section
        return {p: (c, line) for (p, _), c, line in zip(have, top.tolist(), lines.tolist())}

    def scan(self, q: np.ndarray, k: int) -> list[tuple[float, str]]:
        """The `k` notes whose best section is nearest `q`, (cosine, path), best first, for
        queries whose words find too few notes: the COARSE x SCAN_WIDTH x `k` notes nearest by
        their mean vectors' main directions (see _basis), of those the SCAN_WIDTH x `k`
        nearest by the whole means, and of those the best sections."""
        v = self.view
        if not len(v.means):
            return []
        n = min(len(v.means), SCAN_WIDTH * k + self._dead)  # old means of notes made anew may be among them
        near = np.arange(len(v.means))
        # the coarse pass only with a basis made from most of these notes (not from the few
        # there were at the last save, before a vault's worth was embedded)
        if len(near) > COARSE * n and v.basis.shape[1] == min(PCS, self.dim) and len(near) <= 2 * self._based_on:
            near = np.argpartition(-(v.parts @ (q @ v.basis)), COARSE * n - 1)[: COARSE * n]
        sims = (v.means[near].astype(np.float32) @ q) * v.mean_scales[near]
        near = near[np.argpartition(-sims, n - 1)[:n]]
        best = self.best(q, list(dict.fromkeys(v.owners[i] for i in near.tolist())))
        return sorted(((c, p) for p, (c, _) in best.items()), reverse=True)[:k]

    def save(self) -> int:
        """Write the store atomically (temp file, fsync, rename), readable by its owner alone;
        then map it: what was made since the last save is no longer held in memory."""
        v = self.view
        order = list(v.notes.items())
        meta = _Meta(VERSION, self.name, self.dim,
                     [(p, h, v.lines[first : first + n].tolist()) for p, (h, first, n, _) in order])
        head = msgspec.msgpack.encode(meta)
        top = len(MAGIC) + 8 + len(head)
        rows = np.concatenate([np.arange(first, first + n) for _, (_, first, n, _) in order] or [np.zeros(0, np.int64)])
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            with open(fd, "wb", closefd=False) as f:
                f.write(MAGIC + struct.pack("<Q", len(head)) + head + bytes(_at(top) - top))
                f.write(v.scales[rows].tobytes())
                for i in range(0, len(rows), 8192):
                    f.write(self.raw(v, rows[i : i + 8192]).tobytes())
                f.flush()
                os.fsync(fd)
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        os.close(fd)
        os.replace(tmp, self.path)
        fsync_dir(self.path.parent)
        keep = [r[3] for _, r in order if r[3] >= 0]
        means = v.means[keep].astype(np.float32) * v.mean_scales[keep, None]
        if not self.load(means=(means, [v.owners[i] for i in keep])):
            raise OSError(f"{self.path} just saved does not read back")
        return self.path.stat().st_size

    def load(self, means: tuple[np.ndarray, list[str]] | None = None) -> bool:
        """Map the saved store, when it is of this version and model and reads whole. `means`:
        its notes' means and whose (in the file's order), when known: not made from it again."""
        try:
            with open(self.path, "rb") as f:
                mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except FileNotFoundError:
            return False
        except (OSError, ValueError) as e:
            logger.warning("semantic vectors at %s not read (%s): made anew", self.path, e)
            return False
        try:
            if mm[: len(MAGIC)] != MAGIC:
                raise ValueError("not a vectors file")
            n = struct.unpack("<Q", mm[len(MAGIC) : len(MAGIC) + 8])[0]
            meta = msgspec.msgpack.decode(mm[len(MAGIC) + 8 : len(MAGIC) + 8 + n], type=_Meta)
            if (meta.version, meta.model, meta.dim) != (VERSION, self.name, self.dim):
                logger.info("semantic vectors at %s are of another model or version: made anew", self.path)
                return False
            counts = [len(lines) for _, _, lines in meta.notes]
            rows, at = sum(counts), _at(len(MAGIC) + 8 + n)
            if len(mm) - at != rows * (4 + self.dim):
                raise ValueError(f"{len(mm) - at} bytes of vectors, not {rows * (4 + self.dim)}")
        except (ValueError, struct.error, msgspec.DecodeError) as e:
            logger.warning("semantic vectors at %s cannot be read (%s): made anew", self.path, e)
            return False
        scales = np.frombuffer(mm, np.float32, rows, at).copy()
        saved = np.frombuffer(mm, np.int8, rows * self.dim, at + 4 * rows).reshape(rows, self.dim)
        lines = np.fromiter((x for _, _, ls in meta.notes for x in ls), np.int32, rows)
        if means is None:
            means = (_means(saved, scales, [c for c in counts if c]),
                     [p for (p, _, _), c in zip(meta.notes, counts) if c])
            if hasattr(mmap, "MADV_DONTNEED"):
                mm.madvise(mmap.MADV_DONTNEED)  # read whole for the means: out of this process's pages until asked for
        notes, first, k = {}, 0, 0
        for (p, h, _), c in zip(meta.notes, counts):
            notes[p] = (h, first, c, k if c else -1)
            first += c
            k += bool(c)
        self._start(saved, notes, scales, lines, *means)
        return True
