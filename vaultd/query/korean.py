"""Korean words as a query means them. A word of the query (an eojeol: `미룬다`,
`비밀번호를`) is analysed into what it is made from (`미루`, `비밀번호`), which then finds
the notes holding a word that starts with it (the index's `words_ko` field,
store/index.WORDS: `미루는`, `미루기`). Bigrams (query/analysis) stay the fallback: they
find what no word starts with (`일일노트` in `일일 노트`), and what the analyser reads wrong.

The analyser is Kiwi (kiwipiepy, the `korean` extra), loaded on the first Hangul query:
0.4-0.8 s and +240 MB of memory (its default dictionary and typo tables left out: +310 MB
with them, the same analyses here), then 0.1-0.3 ms a query. Notes are never analysed
(about 60 KB of Hangul a second: hours at seed scale). Without Kiwi, a word is only
stripped of a particle by rule (`가치관이` gives `가치관`; `미룬다` stays as it is), which
measured nearly as well on the dev sets' nouns (Korean anchors MRR +0.032 against +0.033)
but finds no verb by its stem; the log says once how to install it.
"""

from __future__ import annotations

import functools
import logging
import math
import re
import threading

import tantivy

from ..store.index import WORDS
from . import stopwords_ko

logger = logging.getLogger("vaultd.korean")

_HANGUL = re.compile("[\uac00-\ud7a3]")

CONTENT = frozenset(("NNG", "NNP", "NR", "NP", "VV", "VA", "MAG", "XR", "SH", "SL", "SN", "XPN"))
"""Kiwi's tags of the morphemes a word means (nouns, numerals, pronouns, verb and adjective
stems, adverbs, roots, Han, Latin, digits, a prefix); the rest are particles, endings,
suffixes (`하` of `결제한`) and punctuation. Kiwi marks an irregular stem `VV-I` and a
regular one `VV-R`: the part before `-` is the tag."""

MIN_FORM = 2
"""The fewest syllables a form is searched by: one syllable (`접` of `접었다`, `툴`) starts
too many words."""

WORD_WEIGHT = 2.0
"""A form held as a word start scores this times its idf, beside the bigrams the word's
notes hold anyway. Korean anchors (obsidian-help/ko) MRR +0.016 at 1.0, +0.030 at 2.0,
+0.032 at 3.0, where the Korean dev queries lost two more places."""

PART_WEIGHT = 0.5
"""A part of a word of several content morphemes (`다크`, `모드` of `다크모드로`) weighs this
times a whole form: a note may write them apart (`다크 모드`)."""

_lock = threading.Lock()
_state: dict[str, object] = {}


def _kiwi():
    """The analyser, loaded once (None without kiwipiepy: then the log says so, once)."""
    with _lock:
        if "kiwi" not in _state:
            try:
                from kiwipiepy import Kiwi
            except ImportError:
                logger.info("Korean words are matched less their particles only: install the korean extra "
                            "(pip install 'vaultd[korean]') to match them by their stems too (미룬다: 미루는)")
                _state["kiwi"] = None
            else:
                _state["kiwi"] = Kiwi(num_workers=-1, load_default_dict=False, load_typo_dict=False,
                                      load_multi_dict=False)
        return _state["kiwi"]


@functools.lru_cache(maxsize=4096)
def _morphemes(word: str) -> tuple[tuple[str, str, int], ...] | None:
    """A word's morphemes as Kiwi reads it: (form, tag less its `-R`/`-I`, where it starts);
    None without Kiwi."""
    kiwi = _kiwi()
    if kiwi is None:
        return None
    with _lock:
        tokens = kiwi.tokenize(word)
    return tuple((t.form, t.tag.split("-")[0], t.start) for t in tokens)


def forms(word: str) -> tuple[str, ...]:
    """What a Hangul word of a query is searched by as a word start, whole form first: its
    content morphemes as one (`최대공약수를` gives `최대공약수`; `미룬다`, `미루`; `비밀번호를`,
    `비밀번호`), then, of a word of several, each (`다크모드로` gives `다크모드`, `다크`,
    `모드`); of two syllables or more. None for a function word (`어떻게`)."""
    word = word.lower()
    if not _HANGUL.search(word) or stopwords_ko.is_stop(word):
        return ()
    parts = _morphemes(word)
    if parts is None:
        whole, each = _less_particle(word), []
    else:
        content = [(f, start) for f, tag, start in parts if tag in CONTENT]
        if not content:
            return ()
        whole = word[content[0][1] : content[-1][1]] + content[-1][0]  # as written, then the last one's form:
        each = [f for f, _ in content] if len(content) > 1 else []     # 미룬다 -> 미루 (its surface is 미룬)
    return tuple(f for f in dict.fromkeys([whole, *each]) if len(f) >= MIN_FORM)


def _less_particle(word: str) -> str:
    """A word less the particle it ends with, by rule (stopwords_ko.PARTICLES)."""
    for p in stopwords_ko.PARTICLES:
        if word.endswith(p) and len(word) - len(p) >= MIN_FORM:
            return word[: -len(p)]
    return word


def word_clause(schema: tantivy.Schema, searcher: tantivy.Searcher, word: str) -> tantivy.Query | None:
    """The notes holding a word that starts with one of `word`'s forms, each form scored
    WORD_WEIGHT (its parts PART_WEIGHT of that) x its idf, from the notes holding such words
    (their counts summed in the index's term dictionary); None when no note holds one."""
    clauses = []
    n = max(1, searcher.num_docs)
    for i, form in enumerate(forms(word)):
        df = min(n, sum(c for _, c in searcher.terms_with_prefix(WORDS, form)))
        if df:
            weight = WORD_WEIGHT * (PART_WEIGHT if i else 1.0) * math.log(1 + (n - df + 0.5) / (df + 0.5))
            prefix = tantivy.Query.fuzzy_term_query(schema, WORDS, form, 0, True, True)
            clauses.append((tantivy.Occur.Should, tantivy.Query.const_score_query(prefix, weight)))
    return tantivy.Query.boolean_query(clauses) if clauses else None


def inside_only(searcher: tantivy.Searcher, word: str) -> bool:
    """Whether a query word's bigrams can only find parts of other words: Kiwi reads it as
    one adverb (`최대한`, whose 최대 and 대한 are in `최대공약수` and every `~에 대한`), which
    no note holds as a word. Such a word weighs as a function word does. Nouns are not
    (`공약수` in `최대공약수` is the word itself)."""
    word = word.lower()
    if len(word) < MIN_FORM or not _HANGUL.search(word):
        return False
    parts = _morphemes(word)
    return (parts is not None and len(parts) == 1 and parts[0][1] == "MAG"
            and not searcher.terms_with_prefix(WORDS, word, limit=1))
