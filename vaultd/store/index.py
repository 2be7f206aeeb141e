"""The Tantivy index: a versioned schema, batched upserts and deletes, one commit per batch.

One document per note. Text is indexed twice where the language needs it: an
English-stemmed field, and a bigram field fed the Hangul/Han/Kana runs the other does
not get (see LIBRARY-NOTES: the default tokenizer misses `가치관이` -> `가치관`); those runs
are also kept whole, as words (WORDS), for a query's stems to meet. Bodies are
not stored: snippets are cut from the file itself, so line and column always
match what an editor opens. Each document stores the note's metadata (title,
tags, headings, links, file facts) as msgpack, so the daemon's in-memory table
and the link graph are rebuilt from the index at start.
"""

from __future__ import annotations

import errno
import fcntl
import functools
import hashlib
import json
import logging
import mmap
import os
import re
import shutil
import struct
import tempfile
import threading
import uuid
import weakref
import zlib
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from contextlib import contextmanager
from pathlib import Path

import msgspec
import tantivy

from ..errors import IndexLocked, VaultdError, VaultError
from ..note import Note, NoteHead, NoteTable, StoredNote, compact, first_h1

logger = logging.getLogger("vaultd.index")

SCHEMA_VERSION = 16  # 16: the `words_ko` field (WORDS: Hangul/Han/Kana words whole)
"""Bump when the schema or what goes into a field changes: older indexes are rebuilt."""

from ..render import CJK as _CJK  # noqa: E402  (one definition: the token estimate counts the same characters)
# Written [C][C]*, not [C]+: a search skips to a pattern's start at C speed only when the
# pattern starts with a plain set of characters (sre's charset prefix), 2x faster over
# Latin text; split_cjk over 30 MB of seed notes went from 375 to 185 ms.
CJK_RUN = re.compile(f"[{_CJK}][{_CJK}]*")
_CJK_SPANS = re.compile(f"([{_CJK}][{_CJK}]*(?: [{_CJK}][{_CJK}]*)*)")  # runs and the single spaces between them

_meta_encoder = msgspec.msgpack.Encoder()
_meta_decoder = msgspec.msgpack.Decoder(StoredNote)
_head_decoder = msgspec.msgpack.Decoder(NoteHead)


_DATE = re.compile(r"(\d{4})-?(\d{2})-?(\d{2})(?:[T ]?(\d{2}):?(\d{2})(?::?(\d{2}))?)?")


@functools.lru_cache(maxsize=65536)
def parse_date(text: str | None) -> float | None:
    """Epoch seconds (UTC) of the first date in `text`: ISO dates, Org `[2025-10-16 Thu 08:02]`,
    Denote identifiers `20251016T080208`."""
    m = _DATE.search(text or "")
    if not m:
        return None
    y, mo, d, h, mi, s = (int(g) if g else 0 for g in m.groups())
    try:
        return datetime(y, mo, d, h, mi, s, tzinfo=timezone.utc).timestamp()
    except ValueError:
        return None


def note_epoch(note: Note) -> int:
    """When a note is dated: its own date (front matter, #+date, Denote identifier), else mtime."""
    t = parse_date(note.date)
    return int(t if t is not None else note.mtime_ns // 1_000_000_000)


def path_key(path: str) -> int:
    """A note's 64-bit key in the index's `key` fast field."""
    return int.from_bytes(hashlib.blake2b(path.encode(), digest_size=8).digest(), "little", signed=True)


_HOLDER = "\u00ff"
"""What a stemmed field gets for each Hangul/Han/Kana run: a letter, so the tokenizer cuts
the same words as from the text itself (positions, field lengths and so phrases and BM25
stay as they were, but for words over 40 bytes, which it dropped and now counts). A
Latin-1 one (ÿ), so that a body with no other character past U+00FF is stored one byte a
character, not two (with 一, every note of English with Korean words was): at seed scale
a worker's batch costs 6% less CPU and the daemon's decoding of it 40% less. Queries
never send it (they send these scripts to the bigram fields only); a query word with a
ÿ in it, hardly ever typed, is all that could meet it."""


def split_cjk(text: str) -> tuple[str, str]:
    """(`text` for a stemmed field, each Hangul/Han/Kana run replaced by _HOLDER; those runs,
    space separated, for its bigram twin). Korean words are only ever searched by bigrams,
    and indexed as words too, every word with its particle a term of its own, they cost
    Tantivy a third of its time at seed scale. One split serves both, and it is faster
    than finding the runs: the regex engine crosses each gap in one step. It splits at
    spans of runs with single spaces between them (Korean words in a sentence), 7x fewer
    than the runs: 16% faster, and the same two texts. Most of its time is the regex
    crossing Latin text (see CJK_RUN)."""
    return split_cjk_lines([text])


def split_cjk_lines(lines: list[str]) -> tuple[str, str]:
    """split_cjk("\n".join(lines)), made from the lines themselves: only lines with a
    character past ASCII are searched (a quarter of the text of a seed-scale note), and
    the stemmed text is joined from lines without Hangul, one byte a character, never
    from a text of two (a seed-scale index takes 0.7 CPU-s less than joining first). The
    same two texts: a span never crosses a line end."""
    spans: list[str] = []
    out = lines
    for i, line in enumerate(lines):
        if not line.isascii():
            parts = _CJK_SPANS.split(line)
            if len(parts) > 1:
                if out is lines:
                    out = lines.copy()
                found = parts[1::2]
                spans += found
                parts[1::2] = [(_HOLDER + " ") * span.count(" ") + _HOLDER for span in found]
                out[i] = "".join(parts)
    return "\n".join(out), " ".join(spans)


TEXT_FIELDS = ("title", "headings", "folders", "body")
"""The fields a note's words are searched in: each English-stemmed, and as `<name>_ko` by
Hangul/Han/Kana bigrams."""

SYMBOL = r"\w+(?:(?:[-_./]|::)\w+)+"
"""A code-like token: words joined by -, _, ., / or :: (denote-link-description, foo_bar,
os.path.join, org/roam, std::vec::Vec). The stemmed fields hold only its parts, as
`denote link description` in prose would be; the `symbols` field holds it whole,
lower-cased, from the title, aliases, headings and body, and the file's name (`bell-labs`
of bell-labs.md), so that a query for it can tell the notes that hold it from those that
only hold its parts (query/ranking). Indexed where its words are ASCII letters and digits
(see _SYMBOLS)."""
_SYMBOLS = re.compile(r"(?<![0-9A-Za-z_])[0-9A-Za-z]++(?:(?:[-_./]|::)[0-9A-Za-z]++)+")
"""SYMBOL as a note's text is searched for it: ASCII words, each taken whole at once (`++`:
a word not followed by a separator costs one step, not one a letter), in a text where
_SYMBOL_SPOT finds a separator between letters (200 MB/s: most notes of prose hold none).
Unicode words (\\w) cost 40% more, and Tantivy's regex tokenizer, fed every text, took
12-25 MB/s: +34% of a 10,000-note vault's index CPU."""
_SYMBOL_SPOT = re.compile(r"[-_./:](?<=[0-9A-Za-z][-_./]|::)(?=[0-9A-Za-z])")  # a separator first: found at C speed


def symbols_in(text: str) -> list[str]:
    """The symbols (SYMBOL, ASCII words) of a text, in order, repeats kept."""
    return _SYMBOLS.findall(text) if _SYMBOL_SPOT.search(text) else []


WORDS = "words_ko"
"""The field holding a note's Hangul/Han/Kana words whole (eojeol: `미루는`, `최대공약수를`;
those scripts have no case to fold, and a run over 40 bytes, Japanese without spaces, is
left out), from its title, aliases, headings and body: one term a word, no places or
counts (the bigram fields weigh the text). A query's Korean word, analysed into its stem
or noun (query/korean.py: `미룬다` gives `미루`), finds the notes holding a word that
starts with it (`미루는`, `미루기`; not `최대공약수` for `최대한`), which bigrams alone
cannot tell (`최대한` holds `최대`). Fed the text of the bigram fields (the runs split_cjk
finds), tokenized at the spaces, in the daemon (`document`): on junghan-garden-ko (27 MB,
7.4 M Hangul characters) index CPU +17% (5.5 -> 6.4 s, best of 7; wall +16% best, +24%
median, on a loaded machine), the index +27% (16.4 -> 20.9 MB) (bench/index_time.py).
Analysing the notes instead (Kiwi, about 60 KB of Hangul a second) would take 7-8 CPU-minutes there."""


_WORDS_FROM = frozenset(f"{f}_ko" for f in ("title", "headings", "body"))
"""The bigram fields whose text WORDS is fed too, where the document is made (`document`):
the text crosses from the worker once, not twice."""


def _schema() -> tantivy.Schema:
    b = tantivy.SchemaBuilder()
    b.add_text_field("path", stored=True, tokenizer_name="raw")
    b.add_text_field("id", stored=False, tokenizer_name="raw")
    b.add_text_field("uuid", stored=False, tokenizer_name="raw")
    b.add_text_field("tags", stored=False, tokenizer_name="tag")
    for name in TEXT_FIELDS:
        b.add_text_field(name, stored=False, tokenizer_name="en_stem")
        b.add_text_field(f"{name}_ko", stored=False, tokenizer_name="bigram", index_option="freq")
    b.add_text_field("dirs", stored=False, tokenizer_name="raw", index_option="basic")
    b.add_text_field("symbols", stored=False, tokenizer_name="symbol", index_option="basic")
    b.add_text_field(WORDS, stored=False, tokenizer_name="word", index_option="basic")
    b.add_integer_field("mtime", stored=False, indexed=True, fast=True)
    b.add_integer_field("date", stored=False, indexed=True, fast=True)
    b.add_integer_field("key", stored=False, indexed=False, fast=True)  # path_key: a hit's note without a doc fetch
    b.add_bytes_field("meta", stored=True)
    return b.build()


def _register(idx: tantivy.Index) -> None:
    # Registration is not persisted: it must follow every open (LIBRARY-NOTES 1).
    T, F = tantivy.Tokenizer, tantivy.Filter
    idx.register_tokenizer("bigram", tantivy.TextAnalyzerBuilder(T.ngram(2, 2)).filter(F.lowercase()).build())
    idx.register_tokenizer("tag", tantivy.TextAnalyzerBuilder(T.raw()).filter(F.lowercase()).build())
    idx.register_tokenizer("word", tantivy.TextAnalyzerBuilder(T.whitespace()).filter(F.remove_long(40)).build())
    idx.register_tokenizer("symbol", tantivy.TextAnalyzerBuilder(T.whitespace()).filter(F.remove_long(100))
                           .filter(F.lowercase()).build())


def fields(note: Note, body: list[str] | None = None) -> dict[str, list]:
    """A note's index document as plain values: worker processes build it (its bigram text
    and metadata cost more than the rest), the index only hands it to Tantivy. `body`:
    the note's body as lines, when parse_lines gave it so."""
    out: dict[str, list] = {"path": [note.path]}
    if note.id:
        out["id"] = [note.id]
    if note.uuids:
        out["uuid"] = list(note.uuids)
    if note.tags:
        out["tags"] = list(note.tags)
    h1 = first_h1(note)
    title = " ".join([note.title, *note.aliases, *([h1] if h1 else [])])
    heads = "\n".join(h.text for h in note.headings)
    parts = note.path.split("/")[:-1]
    for field, text in (("title", title), ("headings", heads), ("folders", " ".join(parts)), ("body", body or note.body)):
        if text:
            latin, ko = split_cjk_lines([text] if isinstance(text, str) else text)
            if latin:
                out[field] = [latin]
            if ko:
                out[f"{field}_ko"] = [ko]
    found = [w for f in ("title", "headings", "body") if f in out for w in symbols_in(out[f][0])]
    found += symbols_in(file_stem(note.path))
    if found:  # symbols whole (SYMBOL), space separated
        out["symbols"] = [" ".join(dict.fromkeys(found))]
    if parts:
        out["dirs"] = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    out["mtime"] = [note.mtime_ns // 1_000_000_000]
    out["date"] = [note_epoch(note)]
    out["key"] = [path_key(note.path)]
    out["meta"] = [_meta_encoder.encode(msgspec.structs.replace(note, body=""))]
    return out


def file_stem(path: str) -> str:
    """A note's file name less its extension (`bell-labs` of wiki/bell-labs.md)."""
    name = path.rpartition("/")[2]
    return name.rpartition(".")[0] or name


def document(fields: dict[str, list]) -> tantivy.Document:
    """A `fields` dict as a Tantivy document, value by value (each added as what it is; the
    Hangul/Han/Kana text of title, headings and body to WORDS too):
    Document.from_dict, which converts through the schema, takes 0.2 ms for a 130 KB
    note, this 0.03 ms."""
    doc = tantivy.Document()
    for name, values in fields.items():
        for v in values:
            (doc.add_text if isinstance(v, str) else doc.add_integer if isinstance(v, int) else doc.add_bytes)(name, v)
            if name in _WORDS_FROM:
                doc.add_text(WORDS, v)
    return doc


def meta_note(fields: dict[str, list]) -> StoredNote:
    """The note a `fields` document was made from (without its body)."""
    return _meta_decoder.decode(fields["meta"][0])


COVERAGE_UNITS = 20
"""Query words past this many do not count towards coverage (one float holds the mask)."""


HELD_BITS = 23
"""Queries NoteIndex.held tells apart in one search: a float32 holds 2^24 exactly."""

CHECKED = 200
"""The best hits a phrase that is not scored is checked in (see NoteIndex.search)."""


def _within(s: tantivy.Searcher, schema: tantivy.Schema, paths: Iterable[str], q: tantivy.Query) -> set[tuple[int, int]]:
    """Which of the notes at `paths` `q` finds, as (segment, doc): unscored (ordered by a fast
    field, Tantivy reads postings without weighing them), each note found by its path."""
    Q, O = tantivy.Query, tantivy.Occur
    among = [(O.Should, Q.term_query(schema, "path", p)) for p in paths]  # 4x faster than a term set
    if not among:
        return set()
    found = s.search(Q.boolean_query([(O.Must, Q.boolean_query(among)), (O.Must, q)]), limit=len(among), count=False,
                     order_by_field="mtime")
    return {(a.segment_ord, a.doc) for _, a in found.hits}


def _holding(s: tantivy.Searcher, schema: tantivy.Schema, hits: list[tuple[tantivy.DocAddress, str]],
             checks: list[list[tantivy.Query]]) -> set[tuple[int, int]]:
    """The hits (address, path) holding every phrase of `checks` (each as its query for each
    field, the body's last: in any of them), as (segment, doc): one search per phrase and
    field (see _within), among the hits that may still hold it, the body's first (most notes
    that hold a phrase hold it there). One query of the fields together (a union) read the
    positions of every note near each hit."""
    left = {(a.segment_ord, a.doc): p for a, p in hits}
    for fields in checks:
        found: set[tuple[int, int]] = set()
        for q in reversed(fields):
            if len(found) == len(left):
                break
            found |= _within(s, schema, (p for k, p in left.items() if k not in found), q)
        left = {k: p for k, p in left.items() if k in found}
    return set(left)


def _coverage(s: tantivy.Searcher, schema: tantivy.Schema, hits: list[tuple[tantivy.DocAddress, str]],
              units: list[tantivy.Query]) -> dict[str, float]:
    """Each hit's (address, path) share of `units` (one query per word): one search per unit
    among the hits (see _within). One scored search of them all, each unit a bit of the
    score, took twice as long: where the words are in most notes, each hit made it read and
    score every posting near it."""
    path = {(a.segment_ord, a.doc): p for a, p in hits}
    held = dict.fromkeys(path.values(), 0)
    for u in units:
        for k in _within(s, schema, path.values(), u):
            if (p := path.get(k)) is not None:
                held[p] += 1
    return {p: n / len(units) for p, n in held.items()}


class _Batch:
    def __init__(self, writer):
        self._w = writer
        self.changes = 0

    def add(self, note: Note, doc: dict[str, list] | None = None, new: bool = False) -> None:
        """Index `note` (its `fields`, when already made); `new`: no older version to delete."""
        if not new:
            self._w.delete_documents_by_term("path", note.path)
        self._w.add_document(document(doc or fields(note)))
        self.changes += 1

    def delete(self, path: str) -> None:
        self._w.delete_documents_by_term("path", path)
        self.changes += 1


class IndexDamaged(VaultError):
    """Tantivy failed reading the index (a Rust panic, or an error where only damage can
    cause one): its files are not as it wrote them. Each start checks them and rebuilds."""


_PARTS = ("idx", "pos", "term", "store", "fast", "fieldnorm")
"""The files Tantivy writes for every segment, besides `<opstamp>.del` when it has deletes."""

_FOOTER_MAGIC = 1337
"""Tantivy ends every segment file with a JSON footer holding the CRC32 of what precedes
it, the footer's length (u32) and this (u32), little-endian (tantivy directory/footer.rs)."""

_INSTANCE = "INSTANCE"
"""A random name given to an index when it is created (and so again after a wipe): what is
saved beside it (the link graph) names the index it was saved from by it and the commit."""

_LOCK = ".vaultd.lock"
"""Held (flock) by the process that has the index open; kept when the index is wiped."""

_PASS = (KeyboardInterrupt, SystemExit, GeneratorExit, MemoryError)
"""What a check of the index never takes for damage."""

_OS_TROUBLE = tuple(os.strerror(e) for e in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT))
"""Tantivy passes OS errors on as ValueError text: these say the trouble is the folder
(permissions, a read-only or full disk), not the index, and wiping would not help."""


def from_panic(e: BaseException | None) -> bool:
    """Whether `e` is, or came from, an exception that is not an Exception (nor a generator's
    close): pyo3 raises a Rust panic as PanicException, a BaseException."""
    for _ in range(8):
        if e is None:
            return False
        if not isinstance(e, (Exception, GeneratorExit)):
            return True
        e = e.__cause__ or e.__context__
    return False


def damage(folder: Path) -> str | None:
    """Why the index in `folder` cannot be used as it is, or None (also when there is none yet).

    Opening, Tantivy checks only that each segment file is there and ends in a footer: a
    flipped byte or a lost positions file surfaced later, as an error or a Rust panic on
    every search or every start, for good. So every file of every segment meta.json lists
    is read here and checked against the CRC32 in its footer, as Tantivy's own
    validate_checksum does (tantivy-py does not expose it). It costs a start on 10,000
    notes (25 MB of index) 15-40 ms, 35-90 ms uncached; on 100,000 (126 MB) 60-130 ms,
    150-250 ms uncached: a tenth of reading the notes back, which follows. An OSError
    other than a missing file is raised: the folder's trouble, not damage."""
    meta = folder / "meta.json"
    if not meta.exists():
        return "meta.json is missing" if any(p.suffix[1:] in _PARTS for p in folder.iterdir()) else None
    stamp = folder / "VERSION"
    version = stamp.read_text().strip() if stamp.exists() else None
    if version != str(SCHEMA_VERSION):
        return f"its schema version is {version}, not {SCHEMA_VERSION}" if version else "its VERSION stamp is missing"
    try:
        names = []
        for seg in json.loads(meta.read_bytes())["segments"]:
            sid = seg["segment_id"].replace("-", "")
            names += [f"{sid}.{ext}" for ext in _PARTS]
            if seg["deletes"]:
                names.append(f"{sid}.{seg['deletes']['opstamp']}.del")
    except (ValueError, LookupError, TypeError, AttributeError) as e:
        return f"meta.json cannot be read ({type(e).__name__}: {e})"
    for name in names:
        if why := _file_damage(folder / name):
            return f"segment file {name} {why}"
    return None


def _file_damage(path: Path) -> str | None:
    """Why a segment file is not as Tantivy wrote it (missing, cut short, changed), or None."""
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        return "is missing"
    with f:
        size = os.fstat(f.fileno()).st_size
        if size < 8:
            return f"is cut short ({size} bytes)"
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            n, magic = struct.unpack("<II", m[-8:])
            if magic != _FOOTER_MAGIC or n + 8 > size:
                return "is cut short or overwritten (no Tantivy footer at its end)"
            try:
                crc = json.loads(m[size - 8 - n:size - 8])["crc"]
            except (ValueError, LookupError, TypeError):
                return "has a garbled footer"
            with memoryview(m) as whole, whole[:size - 8 - n] as body:
                if zlib.crc32(body) != crc:
                    return "does not match its checksum (bytes in it changed)"
    return None


def _flock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def _claim(folder: Path) -> int:
    """Take the index folder for this process: an fd holding an exclusive flock on _LOCK,
    kept while the index is open. Raises IndexLocked when another vaultd has it, or another
    process holds Tantivy's writer lock (an older vaultd): nothing is judged, let alone
    wiped, while another process may be writing. An OSError goes up: a folder this process
    cannot write in (EACCES, EROFS) is reported, never taken for damage."""
    folder.mkdir(parents=True, exist_ok=True)
    try:
        with tempfile.TemporaryFile(dir=folder):  # a real write, for the reason os.access does not give
            pass
    except OSError as e:
        e.filename = str(folder)  # not the temporary file's name
        raise
    fd = os.open(folder / _LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    if _flock(fd):
        probe = os.open(folder / ".tantivy-writer.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            if _flock(probe):
                return fd
        finally:
            os.close(probe)  # and with it the probe's lock
    os.close(fd)
    raise IndexLocked(f"the index at {folder} is in use by another process (is vaultd running?)")


READ_AHEAD = ("term", "fast", "fieldnorm", "idx", "pos")
"""The kinds of Tantivy's segment files read ahead at a start, in the order queries need them."""


class NoteIndex:
    """Owns the Tantivy index in `directory`; the only writer of it."""

    def __init__(self, directory: str | Path, heap_mb: int = 64):
        """Open the index, after checking its files: a damaged one (a file missing, cut
        short or changed, meta.json garbled, another schema version) is wiped and started
        anew, and the caller, finding it empty, reindexes the vault. A folder this process
        cannot use (permissions, a read-only disk) raises VaultError, and one another
        process holds raises IndexLocked: neither touches a file."""
        self.dir = Path(directory)
        self.schema = _schema()
        self.heap_mb = heap_mb
        self.rebuilt = False
        self.instance = ""
        """A random name this index got when it was created (see _INSTANCE)."""
        self.rebuilt_why: str | None = None
        """Why the index was wiped at open (for status and `vaultd check`), or None."""
        self._lock = threading.Lock()  # writer use is serialised; searches never wait on it
        self.index = self.writer = None
        try:
            self._release = weakref.finalize(self, os.close, _claim(self.dir))
            try:
                self._start()
            except BaseException:
                self.index = self.writer = None
                self._release()
                raise
        except OSError as e:
            raise VaultError(f"the index at {self.dir} cannot be used, and is left as it is: {e}") from None

    def _start(self) -> None:
        if why := damage(self.dir):
            self._wipe(why)
        try:
            self._open()
        except BaseException as e:
            if isinstance(e, _PASS + (VaultdError, OSError)):  # OSError: our own file operations
                raise
            if any(t in str(e) for t in _OS_TROUBLE):
                raise VaultError(f"the index at {self.dir} cannot be used, and is left as it is: {e}") from None
            self.index = self.writer = None  # and the writer's lock with it
            self._wipe(f"Tantivy cannot open it ({type(e).__name__}: {e})")
            self._open()

    def _open(self) -> None:
        self.index = tantivy.Index(self.schema, path=str(self.dir), reuse=True)
        _register(self.index)
        (self.dir / "VERSION").write_text(f"{SCHEMA_VERSION}\n")
        instance = self.dir / _INSTANCE
        try:
            self.instance = instance.read_text().strip()
        except FileNotFoundError:
            self.instance = ""
        if not self.instance:
            self.instance = uuid.uuid4().hex
            instance.write_text(self.instance + "\n")
        try:
            self.writer = self.index.writer(heap_size=self.heap_mb << 20, num_threads=max(1, min(2, self.heap_mb // 15)))
        except ValueError as e:
            if "LockBusy" in str(e) or "lock" in str(e).lower():
                raise IndexLocked(f"the index at {self.dir} is in use by another process (is vaultd running?)") from None
            raise
        self.writer.garbage_collect_files()  # orphans a killed commit left behind
        self.index.reload()
        # Each segment's last document and key: the checksums cannot see a meta.json that
        # parses but says a segment holds more documents than it does (every start failed).
        s = self.index.searcher()
        sizes = [seg["max_doc"] for seg in json.loads((self.dir / "meta.json").read_bytes())["segments"]]
        last = [tantivy.DocAddress(i, n - 1) for i, n in enumerate(sizes) if n]
        if last:
            for addr in last:
                s.doc(addr)
            s.fast_field_values("key", last)

    def _wipe(self, why: str) -> None:
        logger.warning("index at %s: %s: rebuilding it from the vault", self.dir, why)
        for p in self.dir.iterdir():
            if p.name != _LOCK:
                shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()
        self.rebuilt, self.rebuilt_why = True, why

    def close(self) -> None:
        with self._lock:
            if self.writer is not None:
                self.writer.wait_merging_threads()
                self.writer = None
        self._release()

    @contextmanager
    def _reading(self, what: str, errors: type[BaseException] | tuple = ()):
        """A Tantivy panic met while doing `what`, or one of `errors`, as IndexDamaged. pyo3
        raises a Rust panic as PanicException, a BaseException that no `except Exception`
        stops: one damaged file killed the thread that met it (a client's, the indexer)."""
        try:
            yield
        except BaseException as e:
            if isinstance(e, _PASS + (VaultdError,)) or (isinstance(e, Exception) and not isinstance(e, errors)):
                raise
            raise IndexDamaged(f"the index at {self.dir} is damaged: {what} failed ({type(e).__name__}: {e}); "
                               "restart vaultd to check and rebuild it") from e

    # -- reading ----------------------------------------------------------------

    def commit_stamp(self) -> tuple[str, int]:
        """(this index's instance, the opstamp of its last commit): what names the index as it
        is now. A merge rewrites meta.json but keeps the opstamp; every commit raises it."""
        return self.instance, int(json.loads((self.dir / "meta.json").read_bytes())["opstamp"])

    def searcher(self) -> tantivy.Searcher:
        return self.index.searcher()

    def load_notes(self) -> dict[str, Note]:
        """Every indexed note's metadata (no body), by path."""
        with self._reading("reading every stored note", Exception):  # no query in it: any error is damage
            s = self.index.searcher()
            n = s.num_docs
            if not n:
                return NoteTable()
            out = NoteTable()
            for _, addr in s.search(tantivy.Query.all_query(), limit=n, count=False).hits:
                note = compact(_meta_decoder.decode(s.doc(addr).get_first("meta")))
                out[note.path] = note
            return out

    def held(self, paths: list[str], queries: list[tantivy.Query], by_key: dict[int, Note] | None = None) -> dict[str, int]:
        """Which of `queries` (at most HELD_BITS) find each note at `paths`, as a bit mask: one
        search among them, each query a power of two of the score (exact in a float32)."""
        Q, O = tantivy.Query, tantivy.Occur
        among = Q.const_score_query(Q.boolean_query([(O.Should, Q.term_query(self.schema, "path", p)) for p in paths]), 0.0)
        bits = [(O.Should, Q.const_score_query(q, float(1 << i))) for i, q in enumerate(queries[:HELD_BITS])]
        s = self.index.searcher()
        with self._reading("a search"):
            hits = s.search(Q.boolean_query([(O.Must, among), *bits]), limit=max(1, len(paths)), count=False).hits
            return {n.path: round(score) for score, n in self._notes(s, hits, by_key)}

    def bigram(self, gram: str) -> tantivy.Query:
        """A Hangul/Han/Kana bigram in any field."""
        return tantivy.Query.boolean_query([(tantivy.Occur.Should, tantivy.Query.term_query(self.schema, f"{f}_ko", gram))
                                            for f in TEXT_FIELDS])

    def read_ahead(self) -> int:
        """Ask the kernel to read the index's files into its page cache now, in the
        background (posix_fadvise WILLNEED): term dictionaries, fast fields and norms first,
        then postings and positions; the stored documents, which searches seldom read,
        not. The first queries after a start then find them in memory rather than each
        waiting on the disk for its pages. Nothing is mapped into the daemon by it (its
        RSS is unchanged). Returns the bytes asked for; 0 where the call does not exist."""
        if not hasattr(os, "posix_fadvise"):
            return 0
        asked = 0
        for ext in READ_AHEAD:
            for f in sorted(self.dir.glob(f"*.{ext}")):
                try:
                    fd = os.open(f, os.O_RDONLY)
                except OSError:  # merged away meanwhile
                    continue
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
                    asked += os.fstat(fd).st_size
                except OSError:
                    pass
                finally:
                    os.close(fd)
        return asked

    def search(self, query: tantivy.Query, limit: int, by_key: dict[int, Note] | None = None, units: list[tantivy.Query] = (),
               checks: list[list[tantivy.Query]] = (), strict: Callable[[], tantivy.Query] | None = None
               ) -> tuple[int, bool, list[tuple[float, Note | NoteHead]], Callable[[list[int]], dict[str, float]] | None]:
        """(total hits, whether that total is estimated, the top `limit` as (score, note), and
        `cover`), from one searcher snapshot. Notes come from `by_key` (path_key -> note) when
        there: a stored document of a big note holds hundreds of links, and fetching fifty
        of them costs milliseconds. `cover(picked)`: the share of `units` (see
        ranking.QueryPlan.units) each picked hit (by its place in the list) holds, by path; None
        when there are fewer than two units. Asked for as the caller needs them.

        `checks` (see ranking.QueryPlan.checks): phrases `query` finds by their words only, checked
        in its best CHECKED hits, the best first, until `limit` of them hold them: those are
        the best with the phrases too (a note past them scores no more). Then the total is
        estimated, from the share of the hits checked that do, unless they were all the hits:
        the best hold a phrase more often than the rest, so it leans high, and it is never
        more than the notes holding the words. Else `strict()`, the query with its phrases,
        is run instead."""
        s = self.index.searcher()
        estimated = False
        with self._reading("a search"):  # a ValueError may be the query's: passed on as it is
            res = s.search(query, limit=max(limit, CHECKED) if checks else limit, count=True)
        hits, total = res.hits, res.count
        out = self._notes(s, hits, by_key)
        if checks and out:
            # the best first, a quarter more than wanted: most often they are enough (the best
            # by the words mostly hold the phrase); all at once when every hit is counted
            best, done = [], 0
            step = len(hits) if total == len(hits) else limit + limit // 4
            while done < len(hits) and len(best) < limit:
                part = range(done, min(done + step, len(hits)))
                with self._reading("a search"):
                    held = _holding(s, self.schema, [(hits[i][1], out[i][1].path) for i in part], checks)
                best += [i for i in part if (hits[i][1].segment_ord, hits[i][1].doc) in held]
                done, step = part.stop, len(hits)
            if len(best) >= limit or total == len(hits) or strict is None:
                estimated, total = total > len(hits), len(best) if total == len(hits) else round(total * len(best) / done)
                hits, out = [hits[i] for i in best[:limit]], [out[i] for i in best[:limit]]
            else:
                with self._reading("a search"):
                    res = s.search(strict(), limit=limit, count=True)
                hits, total = res.hits, res.count
                out = self._notes(s, hits, by_key)
        if len(units) < 2 or not out:
            return total, estimated, out, None
        addrs = [addr for _, addr in hits]

        def cover(picked: list[int]) -> dict[str, float]:
            if not picked:
                return {}
            with self._reading("a search"):
                return _coverage(s, self.schema, [(addrs[i], out[i][1].path) for i in picked], units[:COVERAGE_UNITS])

        return total, estimated, out, cover

    def _notes(self, s: tantivy.Searcher, hits: list[tuple[float, tantivy.DocAddress]],
               by_key: dict[int, Note] | None) -> list[tuple[float, Note | NoteHead]]:
        """(score, note) of each hit: from `by_key` by its key, else from its stored document."""
        with self._reading("reading the hits", Exception):
            addrs = [addr for _, addr in hits]
            keys = s.fast_field_values("key", addrs) if by_key and addrs else [None] * len(addrs)
            out = []
            for (score, addr), key in zip(hits, keys):
                note = by_key.get(key) if by_key else None
                out.append((score, note if note is not None else _head_decoder.decode(s.doc(addr).get_first("meta"))))
            return out

    # -- writing ----------------------------------------------------------------

    @contextmanager
    def batch(self):
        """A write batch: `add(note)` and `delete(path)` queue changes; leaving the block
        commits them in one commit (readers see all of it or none), or rolls them back if
        the block raised. Bodies are handed to Tantivy as they come, never held."""
        with self._lock:
            b = _Batch(self.writer)
            with self._reading("a write"):
                try:
                    yield b
                except BaseException:
                    self.writer.rollback()
                    raise
                if not b.changes:
                    return
                try:
                    self.writer.commit()
                except BaseException:
                    self.writer.rollback()
                    raise
        with self._reading("reloading after a commit"):
            self.index.reload()
