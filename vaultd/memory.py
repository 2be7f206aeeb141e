"""The process's memory: freed heap given back to the system, and big blocks kept apart
from the heap (glibc; elsewhere, or with host's `malloc_trim` forced off, nothing to do).
Used wherever much is freed at once: the indexer after a batch and a graph build
(ingest/update.py), the vectors after a load (query/embedder.py)."""

from __future__ import annotations

import functools
from collections.abc import Callable

from . import host


@functools.cache
def _libc():
    """The C library, where it has malloc_trim and mallopt (host decides: glibc); else None."""
    if not host.has("malloc_trim"):
        return None
    import ctypes

    return ctypes.CDLL(None)


def _malloc_trim() -> Callable[[int], int] | None:
    return libc.malloc_trim if (libc := _libc()) else None


MMAP_THRESHOLD = 128 << 10
"""Blocks of this many bytes or more are mapped apart, and unmapped when freed (glibc's default)."""


@functools.cache
def keep_big_blocks_apart() -> None:
    """Keep glibc's threshold for mapping a block apart at its default, 128 KB. glibc raises it
    to the size of every such block freed (up to 32 MB): after the first batch, the copies of the
    note table each batch makes (5 MB at 100,000 notes) and Tantivy's buffers come from the heap,
    whose holes a trim cannot give back. Measured on 10,000 notes: 25 single-note batches left
    the daemon 11 MB bigger, 0.3 MB with the threshold kept (/proc RssAnon). Once per process."""
    if libc := _libc():
        libc.mallopt(-3, MMAP_THRESHOLD)  # M_MMAP_THRESHOLD; set, it is no longer raised


def release_freed_memory() -> None:
    """Give freed heap back to the system: glibc keeps it otherwise, in one arena per thread
    (the graph build frees tens of MB; each commit, Tantivy's threads ~15 MB). About 1 ms.
    Elsewhere than glibc, nothing to do."""
    if trim := _malloc_trim():
        trim(0)
