"""Korean words as a query means them. A word of the query (an eojeol: `미룬다`,
`비밀번호를`) is analysed into what it is made from (`미루`, `비밀번호`), which then finds
the notes holding a word that starts with it (the index's `words_ko` field,
store/index.WORDS: `미루는`, `미루기`). Bigrams (query/analysis) stay the fallback: they
find what no word starts with (`일일노트` in `일일 노트`), and what the analyser reads wrong.

The analyser is Kiwi (kiwipiepy, the `korean` extra), in a process of its own (`Analyser`),
started ahead by the daemon's warm-up when the index holds Hangul words (or by the first
Hangul query) and ended after two minutes without one: its 240 MB are never the daemon's,
and are given back when Korean queries stop. No query waits for it to load (0.4-1 s): a
word asked meanwhile is stripped of its particle by rule, as without Kiwi. Loaded, 0.1-0.3
ms a word, each word's analysis kept (4,096 words). Notes are never analysed
(about 60 KB of Hangul a second: hours at seed scale). Without Kiwi, a word is only
stripped of a particle by rule (`가치관이` gives `가치관`; `미룬다` stays as it is), which
measured nearly as well on the dev sets' nouns (Korean anchors MRR +0.032 against +0.033)
but finds no verb by its stem; the log says once how to install it.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import math
import re
import subprocess
import sys
import threading
import time

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

WORD_WEIGHT = 5.0
IDF_CAP = 1.5
"""A form held as a word start scores WORD_WEIGHT x its idf, the idf counted up to IDF_CAP
(a form in fewer than about a fifth of the notes scores WORD_WEIGHT x IDF_CAP), beside the
bigrams the word's notes hold anyway. The word start says that a note holds the word itself;
how rare the word is, its bigrams' BM25 says already: an uncapped idf let one rare word a
note merely mentions outweigh the rest of a paraphrase (`점프` of `프록시 점프` over the note
on `디렉터리 이동` tools). Measured on Korean anchors (obsidian-help/ko, 376) and the Korean
dev queries (23) against no word starts (0.710, 0.842): uncapped at 2.0, 0.740 and 0.824;
capped at 2 x 3.5, 0.748 and 0.842; at 1.5 x 5, 0.750 and 0.849; at 1 x 8, 0.751 and 0.849."""

PART_WEIGHT = 0.5
"""A part of a word of several content morphemes (`다크`, `모드` of `다크모드로`) weighs this
times a whole form: a note may write them apart (`다크 모드`)."""

KIWI_IDLE_S = 120.0
"""Seconds without a word to analyse after which the analyser's process exits, giving its
memory back (about 240 MB); the next Hangul query starts it again (about 1 s)."""


class Analyser:
    """Kiwi in a process of its own (`python -m vaultd.query.korean`): the daemon never holds
    Kiwi's 240 MB, and a daemon asked no Korean query for KIWI_IDLE_S holds none of it.
    Started ahead (`start`: the daemon's warm-up, when the index holds Hangul words) or by
    the first word to analyse; no query waits for it: until it has loaded (0.4-1 s; 3 s on
    a busy machine), `tokenize` answers None at once and the word is matched less its
    particle by rule (see forms). One word a line in, its morphemes as a JSON line out.
    None for every word where kiwipiepy is not installed (then the log says so, once) or
    the process fails."""

    def __init__(self):
        self.lock = threading.Lock()
        self.proc: subprocess.Popen | None = None
        self.loaded: subprocess.Popen | None = None  # the process once it said it has loaded Kiwi
        self.last = 0.0  # when a word last asked (time.monotonic)
        self.missing = importlib.util.find_spec("kiwipiepy") is None
        self.said = False

    def start(self) -> None:
        """Start the process unless it runs (or Kiwi is not installed); returns at once."""
        if self.missing:
            return
        with self.lock:
            self._start()

    def _start(self) -> None:
        self.last = time.monotonic()
        if self.proc is not None and self.proc.poll() is None:
            return
        try:
            proc = subprocess.Popen([sys.executable, "-P", "-m", "vaultd.query.korean"], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, encoding="utf-8")
        except OSError as e:
            logger.warning("the Korean analyser (Kiwi) could not start (%s): words are matched less their "
                           "particles only", e)
            return
        self.proc = proc
        threading.Thread(target=self._tend, args=(proc,), name="kiwi", daemon=True).start()

    def _tend(self, proc: subprocess.Popen) -> None:
        """Wait for `proc` to say it has loaded Kiwi, then end it once no word asked for
        KIWI_IDLE_S."""
        ok = proc.stdout.readline().strip() == READY
        with self.lock:
            if proc is not self.proc:
                return
            if not ok:
                logger.warning("the Korean analyser (Kiwi) ended while loading: words are matched less their "
                               "particles only")
                self._end()
                return
            self.loaded = proc
        while True:
            with self.lock:
                if proc is not self.proc:
                    return
                idle = time.monotonic() - self.last
                if idle >= KIWI_IDLE_S:
                    self._end()
                    return
            time.sleep(min(KIWI_IDLE_S - idle, 1.0) + 0.01)  # the idle clock, not a wait for work

    @property
    def ready(self) -> bool:
        """Whether the process has loaded Kiwi and answers."""
        return self.loaded is not None and self.loaded is self.proc and self.proc.poll() is None

    def tokenize(self, word: str) -> list[tuple[str, str, int]] | None:
        if self.missing:
            if not self.said:  # once, at the first Hangul word: an English vault never hears of it
                self.said = True
                logger.info("Korean words are matched less their particles only: install the korean extra "
                            "(pip install 'vaultd[korean]') to match them by their stems too (미룬다: 미루는)")
            return None
        with self.lock:
            self._start()
            if not self.ready:
                return None  # loading: this word by rule, now
            try:
                self.proc.stdin.write(json.dumps(word) + "\n")
                self.proc.stdin.flush()
                line = self.proc.stdout.readline()
            except OSError:
                line = ""
            if not line:
                logger.warning("the Korean analyser (Kiwi) ended: %r is matched less its particles only", word)
                self._end()
                return None
            return [tuple(t) for t in json.loads(line)]

    def stop(self) -> None:
        """End the analyser's process (it is started again when a word needs it)."""
        with self.lock:
            self._end()

    def _end(self) -> None:
        proc, self.proc, self.loaded = self.proc, None, None
        if proc is not None:
            try:
                proc.stdin.close()  # its end of input: it exits
            except OSError:
                pass
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            proc.stdout.close()

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


READY = '"ready"'
"""The analyser process's first line, once Kiwi has loaded."""


ANALYSER = Analyser()


def serve() -> None:
    """The analyser's process: Kiwi loaded (its default dictionary and typo tables left out:
    +310 MB with them, the same analyses here) and its first word analysed, at a lower
    priority, then one word a line from stdin, its morphemes (form, tag, start) a JSON line
    on stdout, until stdin ends."""
    import os
    import warnings

    if hasattr(os, "nice"):
        # below the daemon and its clients: loading Kiwi and its model (1.2 s of a core) beside
        # the first searches of a start had tripled their p95 on a 2-core machine; a word asked
        # later is 0.2 ms of work, done while the daemon waits for it
        os.nice(10)
    warnings.simplefilter("ignore")
    from kiwipiepy import Kiwi

    kiwi = Kiwi(num_workers=-1, load_default_dict=False, load_typo_dict=False, load_multi_dict=False)
    kiwi.tokenize("가치관을")  # Kiwi builds its model on the first word (0.46 s): before ready, not in a query
    sys.stdout.write(READY + "\n")
    sys.stdout.flush()
    for line in sys.stdin:
        tokens = kiwi.tokenize(json.loads(line))
        sys.stdout.write(json.dumps([(t.form, t.tag, t.start) for t in tokens], ensure_ascii=False) + "\n")
        sys.stdout.flush()


_KNOWN: dict[str, tuple[tuple[str, str, int], ...]] = {}
KNOWN_MAX = 4096
"""Words analysed, kept (the first KNOWN_MAX; then the table starts again)."""


def _morphemes(word: str) -> tuple[tuple[str, str, int], ...] | None:
    """A word's morphemes as Kiwi reads it: (form, tag less its `-R`/`-I`, where it starts);
    None without Kiwi, or while it loads (not kept: the next query asks again)."""
    if (known := _KNOWN.get(word)) is not None:
        return known
    tokens = ANALYSER.tokenize(word)
    if tokens is None:
        return None
    if len(_KNOWN) >= KNOWN_MAX:
        _KNOWN.clear()
    known = _KNOWN[word] = tuple((form, tag.split("-")[0], start) for form, tag, start in tokens)
    return known


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
    """The notes holding a word that starts with one of `word`'s forms or their other
    spellings the vault holds (see spellings), each form scored WORD_WEIGHT (its parts
    PART_WEIGHT of that) x its idf, from the notes holding such words (their counts summed in
    the index's term dictionary); None when no note holds one."""
    clauses = []
    n = max(1, searcher.num_docs)
    for i, form in enumerate(forms(word)):
        written = spellings(searcher, form)
        df = min(n, sum(c for w in written for _, c in searcher.terms_with_prefix(WORDS, w)))
        if df:
            idf = min(IDF_CAP, math.log(1 + (n - df + 0.5) / (df + 0.5)))
            weight = WORD_WEIGHT * (PART_WEIGHT if i else 1.0) * idf
            prefix = tantivy.Query.boolean_query([(tantivy.Occur.Should, tantivy.Query.fuzzy_term_query(
                schema, WORDS, w, 0, True, True)) for w in written])
            clauses.append((tantivy.Occur.Should, tantivy.Query.const_score_query(prefix, weight)))
    return tantivy.Query.boolean_query(clauses) if clauses else None


VOWELS = ((4, 8), (1, 5), (5, 20), (1, 4), (4, 6), (8, 12), (13, 17), (0, 2), (18, 20))
"""Pairs of medial jamo (indices in Unicode's order: ㅏ 0, ㅐ 1, ㅑ 2, ㅓ 4, ㅔ 5, ㅕ 6, ㅗ 8,
ㅛ 12, ㅜ 13, ㅠ 17, ㅡ 18, ㅣ 20) a loanword is written with either of (외래어 표기): ㅓ/ㅗ
(디렉터리, 디렉토리; 콘텐츠, 컨텐츠), ㅐ/ㅔ (내비게이션, 네비게이션; 템플릿, 탬플릿), ㅔ/ㅣ
(메시지, 메세지; 리포지토리, 레포지토리), ㅐ/ㅓ (애플리케이션, 어플리케이션), a glide or not
(ㅓ/ㅕ, ㅗ/ㅛ, ㅜ/ㅠ, ㅏ/ㅑ: 스케줄, 스케쥴), ㅡ/ㅣ (비즈니스, 비지니스)."""

INITIALS = ((0, 1), (3, 4), (7, 8), (9, 10), (12, 13))
"""Initial jamo plain or tense (ㄱ/ㄲ, ㄷ/ㄸ, ㅂ/ㅃ, ㅅ/ㅆ, ㅈ/ㅉ: 서버, 써버)."""

FINALS = ((0, 19),)
"""A final ㅅ or none (세팅, 셋팅)."""

SPELLING_MIN = 3
"""The fewest syllables of a form searched by its other spellings too: two-syllable words one
vowel apart are often different words (고기, 거기)."""


def _syllable_spellings(ch: str) -> list[str]:
    """The syllables `ch` may be written as in a loanword: one jamo swapped by VOWELS,
    INITIALS or FINALS."""
    k = ord(ch) - 0xAC00
    if not 0 <= k < 11172:
        return []
    lead, vowel, tail = k // 588, k % 588 // 28, k % 28
    out = []
    for pairs, part in ((INITIALS, 0), (VOWELS, 1), (FINALS, 2)):
        jamo = (lead, vowel, tail)[part]
        for a, b in pairs:
            if jamo in (a, b):
                alt = [lead, vowel, tail]
                alt[part] = b if jamo == a else a
                out.append(chr(0xAC00 + (alt[0] * 21 + alt[1]) * 28 + alt[2]))
    return out


def other_spellings(form: str) -> list[str]:
    """`form` written otherwise as a loanword may be: one syllable, or two of a form of four
    or more, with a jamo swapped (see _syllable_spellings); none for a form of fewer than
    SPELLING_MIN syllables."""
    if len(form) < SPELLING_MIN or not _HANGUL.search(form):
        return []
    alts = [_syllable_spellings(ch) for ch in form]
    out = [form[:i] + a + form[i + 1 :] for i in range(len(form)) for a in alts[i]]
    if len(form) >= 4:
        out += [form[:i] + a + form[i + 1 : j] + b + form[j + 1 :]
                for i in range(len(form)) for j in range(i + 1, len(form)) for a in alts[i] for b in alts[j]]
    return list(dict.fromkeys(out))


def spellings(searcher: tantivy.Searcher, form: str) -> list[str]:
    """`form` and its other spellings (other_spellings) some note holds as a word start, as
    the vault writes them (`디렉토리` gives `디렉토리`, `디렉터리`): an equivalence, as case is
    in Latin words, found in the index's term dictionary (microseconds a look-up)."""
    others = [w for w in other_spellings(form) if searcher.terms_with_prefix(WORDS, w, limit=1)]
    return [form, *others]


def holds_hangul(searcher: tantivy.Searcher) -> bool:
    """Whether any note holds a Hangul word (the index's word-start field has a term)."""
    return bool(searcher.terms_with_prefix(WORDS, "", limit=1))


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


if __name__ == "__main__":
    serve()
