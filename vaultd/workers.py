"""Reading and parsing many files at once, in worker processes.

A full index is bounded by parsing, which is pure Python: worker processes (one per
core) parse while the main process feeds Tantivy. Small batches, the daily case, parse
inline: a pool costs more to start than a few files take.
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context

import msgspec

from .index import fields, meta_note
from .note import Note
from .parse import parse_file

logger = logging.getLogger("vaultd.workers")

POOL_MIN = 200
"""Fewer files than this parse inline."""
CHUNK = 16
"""Files per task: enough to amortise the round trip, few enough to stream."""

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(dict[str, list])

Parsed = tuple[str, Note | None, dict | None]
"""(path, its note, its index document when a worker made it), or (path, None, None) when
it could not be read (gone, or an OS error, logged)."""


def read_parse(root: str, rel: str, mtime_ns: int, max_bytes: int) -> Note | str | None:
    """The parsed note; None when the file is gone; why, when it cannot be read."""
    try:
        with open(os.path.join(root, rel), "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return None
    except OSError as e:
        return f"cannot read {rel}: {e.strerror}"
    return parse_file(rel, data, max_bytes=max_bytes, mtime_ns=mtime_ns)


def _chunk(root: str, items: list[tuple[str, int]], max_bytes: int) -> list[tuple[str, bytes | str | None]]:
    out = []
    for rel, mtime_ns in items:
        note = read_parse(root, rel, mtime_ns, max_bytes)
        out.append((rel, _encoder.encode(fields(note)) if isinstance(note, Note) else note))
    return out


def _inline(root: str, items: list[tuple[str, int]], max_bytes: int) -> Iterator[Parsed]:
    for rel, mtime_ns in items:
        note = read_parse(root, rel, mtime_ns, max_bytes)
        if isinstance(note, str):
            logger.warning("%s", note)
            note = None
        yield rel, note, None


def workers_for(setting: int) -> int:
    """`index.workers`: 0 means one per core (processes; 1 means parse in the daemon itself)."""
    return setting if setting > 0 else (os.cpu_count() or 1)


def parse_many(root: str, items: list[tuple[str, int]], max_bytes: int, workers: int) -> Iterator[Parsed]:
    """Each (path, mtime_ns) of `items` read and parsed, in order. At most a few chunks per
    worker are in flight, so parsed bodies never pile up ahead of the index."""
    if workers <= 1 or len(items) < POOL_MIN:
        yield from _inline(root, items, max_bytes)
        return
    chunks = [items[i : i + CHUNK] for i in range(0, len(items), CHUNK)]
    done = 0
    try:
        # spawn, not fork: the daemon has threads (watcher, server) a fork would copy mid-step
        with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
            pending = deque(pool.submit(_chunk, root, c, max_bytes) for c in chunks[: workers * 4])
            queued = len(pending)
            while pending:
                for rel, data in pending.popleft().result():
                    if not isinstance(data, bytes):
                        if data:  # the worker could not read it: logged here, with the daemon's logging
                            logger.warning("%s", data)
                        yield rel, None, None
                    else:
                        doc = _decoder.decode(data)
                        yield rel, meta_note(doc), doc
                done += 1
                if queued < len(chunks):
                    pending.append(pool.submit(_chunk, root, chunks[queued], max_bytes))
                    queued += 1
    except BrokenProcessPool:
        logger.warning("a parsing worker died; parsing the rest in the daemon")
        for c in chunks[done:]:
            yield from _inline(root, c, max_bytes)
