"""Reading and parsing many files at once, in worker processes.

A full index is bounded by parsing, which is pure Python: worker processes (one per
core) parse while the main process feeds Tantivy. Small batches, the daily case, parse
inline: a pool costs more to start than a few files take.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import mmap
import os
import shutil
import signal
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context

import msgspec

from .. import host
from ..store.index import fields, meta_note
from ..note import Note
from ..paths import read_head
from ..parse import parse_lines

logger = logging.getLogger("vaultd.workers")

POOL_MIN = 200
"""Fewer files than this parse inline."""
CHUNK = 48
"""Files per task: enough to amortise a task's round trip (on 10,000 notes of 5 KB, 48
a task take 7% less time than 16), few enough to stream."""
CHUNK_BYTES = 8 << 20
"""And at most this many bytes of files a task (or one file, when it is bigger): a few
tasks' documents wait, in RAM, for the index to take them."""

Item = tuple[str, int, int, int]
"""A file to parse: (vault path, mtime_ns, size, ctime_ns)."""

_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(dict[str, list])

Parsed = tuple[str, Note | None, dict | str | None]
"""(path, its note, its index document when a worker made it), or (path, None, why) when
it could not be read (an OS error, out of memory: logged), (path, None, None) when gone."""


def read(root: str, rel: str, max_bytes: int) -> tuple[bytes, int] | str | None:
    """The file's bytes as far as the size cap, and its size (see read_head); None when it
    is gone or no longer a regular file; why, when it cannot be read (outside the vault,
    see open_note, is one reason)."""
    try:
        return read_head(root, rel, max_bytes)
    except OSError as e:
        if e.errno in (errno.ENOENT, errno.ELOOP, errno.EINVAL, errno.ENOTDIR):
            return None
        return f"cannot read {rel}: {e.strerror}"
    except MemoryError:
        return f"cannot read {rel}: out of memory"


def parse_head(rel: str, data: bytes, size: int, max_bytes: int, mtime_ns: int,
               ctime_ns: int = 0) -> tuple[Note, list[str]]:
    """parse_lines of a file read by `read`: when it was cut there, the note still has the
    file's size (a stat scan compares it) and says it was cut, as parse_lines says of a
    file it cuts itself. Its hash is of the bytes indexed: what a change must change."""
    note, lines = parse_lines(rel, data, max_bytes=max_bytes, mtime_ns=mtime_ns)
    note.ctime_ns = ctime_ns
    if size > len(data):
        note.size = size
        note.problems.insert(0, f"file is {size / 2**20:.1f} MB; only the first {max_bytes / 2**20:.0f} MB are indexed")
    return note, lines


Payload = str | bytes | None
"""Where a worker's documents are: the file it wrote them to, or themselves when it could
not write one (a full or missing spool), or None when it made none."""


def _chunk(root: str, items: list[Item], max_bytes: int,
           spool: str | None) -> tuple[Payload, list[tuple[str, tuple[int, int] | str | None]]]:
    """Parse `items` in a worker: their index documents, msgpack encoded one after the
    other into one payload, and for each item its document's (start, end) there, or why
    it could not be read, or None when it is gone.

    The payload goes to a file in `spool`, whose name is all that is sent back: 400 MB of
    documents at seed scale sent through the pool's pipe are pickled, copied through it
    and unpickled in the daemon, 0.6 CPU-s more than writing and mapping the files."""
    out: list[tuple[str, tuple[int, int] | str | None]] = []
    buf = bytearray()
    for rel, mtime_ns, _, ctime_ns in items:
        got = read(root, rel, max_bytes)
        if isinstance(got, tuple):
            start = len(buf)
            try:
                _encoder.encode_into(fields(*parse_head(rel, *got, max_bytes, mtime_ns, ctime_ns)), buf, -1)
            except MemoryError:  # this file's problem: the chunk's others go on
                del buf[start:]
                got = f"cannot parse {rel}: out of memory"
            else:
                got = (start, len(buf))
        out.append((rel, got))
    if not buf:
        return None, out
    if spool is not None:
        path = None
        try:
            fd, path = tempfile.mkstemp(dir=spool)
            with open(fd, "wb") as f:
                f.write(buf)
            return path, out
        except OSError:  # a full or missing spool: the pipe will do
            if path is not None:
                with contextlib.suppress(OSError):
                    os.unlink(path)
    return bytes(buf), out


def _inline(root: str, items: list[Item], max_bytes: int) -> Iterator[Parsed]:
    for rel, mtime_ns, _, ctime_ns in items:
        got, note = read(root, rel, max_bytes), None
        if isinstance(got, tuple):
            try:
                note, lines = parse_head(rel, *got, max_bytes, mtime_ns, ctime_ns)
                note.body = "\n".join(lines)
            except MemoryError:  # this file's problem: the batch's others go on
                note, got = None, f"cannot parse {rel}: out of memory"
        if isinstance(got, str):
            logger.warning("%s", got)
        yield rel, note, got if note is None else None


PARENT_POLL_S = 1.0
"""Where a worker cannot be told of its daemon's death (no PR_SET_PDEATHSIG), it looks this
often (seconds)."""


def die_with_parent(parent: int) -> None:
    """In a worker (the pool's initializer): end when the daemon `parent` ends, even by
    SIGKILL. Linux's PR_SET_PDEATHSIG where host has it (the thread that started the pool
    holds it until the pool is shut down); elsewhere a thread that looks every PARENT_POLL_S
    whether the worker's parent is still `parent`."""
    if host.has("pdeathsig"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
        else:
            if os.getppid() != parent:  # it died before the signal was asked for
                os._exit(1)
            return
    threading.Thread(target=_watch_parent, args=(parent,), name="vaultd-parent", daemon=True).start()


def _watch_parent(parent: int) -> None:
    """End this process once its parent is no longer `parent` (re-parented: it died)."""
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_S)
    os._exit(1)


def workers_for(setting: int) -> int:
    """`index.workers`: 0 means one per core (processes; 1 means parse in the daemon itself)."""
    return setting if setting > 0 else (os.cpu_count() or 1)


def parse_many(root: str, items: list[Item], max_bytes: int, workers: int) -> Iterator[Parsed]:
    """Each file of `items` read and parsed, in order. At most a few chunks per worker are
    in flight, so parsed bodies never pile up ahead of the index."""
    if workers <= 1 or len(items) < POOL_MIN:
        yield from _inline(root, items, max_bytes)
        return
    chunks = list(_chunks(items))
    done = 0
    spool = _spool()
    try:
        with worker_pool(workers) as pool:
            pending = deque(pool.submit(_chunk, root, c, max_bytes, spool) for c in chunks[: workers * 4])
            queued = len(pending)
            while pending:
                payload, results = pending.popleft().result()
                try:
                    data = _take(payload)
                except OSError as e:  # its file went (someone emptied /dev/shm): parse those again
                    logger.warning("a parsing worker's output is gone (%s); parsing its files again", e)
                    yield from _inline(root, chunks[done], max_bytes)
                else:
                    yield from _documents(data, results)
                done += 1
                if queued < len(chunks):
                    pending.append(pool.submit(_chunk, root, chunks[queued], max_bytes, spool))
                    queued += 1
    except BrokenProcessPool:
        logger.warning("a parsing worker died; parsing the rest in the daemon")
        for c in chunks[done:]:
            yield from _inline(root, c, max_bytes)
    finally:
        if spool is not None:
            shutil.rmtree(spool, ignore_errors=True)


def worker_pool(workers: int) -> ProcessPoolExecutor:
    """The parsing workers: `workers` processes, each ending with this one (die_with_parent).
    Spawned, not forked: the daemon has threads (watcher, server) a fork would copy mid-step."""
    return ProcessPoolExecutor(workers, mp_context=get_context("spawn"), initializer=die_with_parent,
                               initargs=(os.getpid(),))


def _chunks(items: list[Item]) -> Iterator[list[Item]]:
    """`items` in order, CHUNK files or CHUNK_BYTES bytes at a time."""
    chunk: list[Item] = []
    size = 0
    for item in items:
        if chunk and (len(chunk) == CHUNK or size + item[2] > CHUNK_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(item)
        size += item[2]
    if chunk:
        yield chunk


SPOOL_PREFIX = "vaultd-parse-"


def _spool() -> str | None:
    """A folder of this process's own for the workers' payloads, in /dev/shm where host has
    it (RAM: a file lives there a few milliseconds, never reaching a disk), else in the temp
    folder; None when none can be made. Folders left by a daemon that was killed mid-index
    go first."""
    base = spool_base()
    with contextlib.suppress(OSError):
        for name in os.listdir(base):
            pid = name[len(SPOOL_PREFIX) :].split("-", 1)[0]
            if name.startswith(SPOOL_PREFIX) and pid.isdigit() and not _alive(int(pid)):
                shutil.rmtree(os.path.join(base, name), ignore_errors=True)
    try:
        return tempfile.mkdtemp(prefix=f"{SPOOL_PREFIX}{os.getpid()}-", dir=base)
    except OSError:
        return None


def spool_base() -> str:
    """Where the workers' spool folders go: /dev/shm, or the temp folder (see host `shm`)."""
    return "/dev/shm" if host.has("shm") else tempfile.gettempdir()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's
        return True
    return True


def _take(payload: Payload) -> bytes | mmap.mmap:
    """A worker's payload: its file mapped (not read: no copy is made) and unlinked, or the
    bytes it sent."""
    if not isinstance(payload, str):
        return payload or b""
    with open(payload, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    with contextlib.suppress(OSError):
        os.unlink(payload)
    return mm


def _documents(data: bytes | mmap.mmap, results: list[tuple[str, tuple[int, int] | str | None]]) -> Iterator[Parsed]:
    """A worker's chunk as parsed notes and their documents, decoded in place from `data`."""
    try:
        with memoryview(data) as view:
            for rel, where in results:
                if isinstance(where, tuple):
                    doc = _decoder.decode(view[where[0] : where[1]])
                    yield rel, meta_note(doc), doc
                else:
                    if where:  # the worker could not read it: logged here, with the daemon's logging
                        logger.warning("%s", where)
                    yield rel, None, where
    finally:
        if isinstance(data, mmap.mmap):
            data.close()
