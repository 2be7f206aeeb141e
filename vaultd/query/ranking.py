"""From what a person typed to a Tantivy query, the terms snippets highlight, and the
final blend of BM25 with the ranking signals (signals.py).

Nothing the user types can make this raise: the text is split into words and
operators here and turned into term queries directly, never handed to Tantivy's
parser (where `TODO: fix` or `C++` break it; LIBRARY-NOTES pitfall 5).

Syntax: plain words are ranked by BM25 over title, aliases, headings, tags, folder
names and body (notes with more of the words rank first); `"a phrase"`; `+word`
must appear; `-word` and `-"a phrase"` must not; `OR` is accepted (words are
alternatives already); `tag:x`, `title:x`, `path:folder/sub`, `after:2025-01-01`,
`before:2025-02`. An operator with a value it cannot use is read as plain words.
Hangul/Han/Kana runs are matched by their bigrams, so particles never block a match;
Korean function words (어떻게, 다른: stopwords_ko) weigh little beside other words.
A word joined by -, _, ., / or :: (`denote-link-description`, `foo_bar`, `std::vec`) is
a symbol: notes holding it whole (text, file name or tag) rank above those holding its
parts word for word, and those above notes holding only its parts, which still match.
A word that no note contains is matched with typo tolerance; the last word also
matches as a prefix (search-as-you-type), unless the notes hold it as it is. A Hangul
word the notes hardly hold is also searched as the vault's word one jamo away.
"""

from __future__ import annotations

import math
import re
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import tantivy

from ..config import Search
from ..store.index import CJK_RUN, SYMBOL, TEXT_FIELDS
from . import signals, stopwords_ko
from . import korean  # Korean words by their stems and nouns
from .analysis import EN as _EN, STOP as _STOP, bigrams, split as _split, terms  # moved there, used here
from .operators import NAMES, OPERATORS, Operator

_Q, _O = tantivy.Query, tantivy.Occur
_STOP_WEIGHT = 0.25
_WORD = re.compile(r"\w+")
_TOKEN = re.compile(rf'([+-]?)(?:({NAMES}):)?("[^"]*"?|\S+)', re.IGNORECASE)
_FIELDS = TEXT_FIELDS
_SYMBOL = re.compile(SYMBOL)
"""A word joined by -, _, ., / or :: (denote-link-description, foo_bar, a.b.c, org/roam,
std::vec::Vec): a name from code, a config or a path, matched whole before its parts (see
_Builder.symbol)."""


def content_words(words: list[str], stems: list[str]) -> tuple[list[str], list[str]]:
    """A query's words and stems less the stop words, when it holds others (`how do I embed a
    note`: `embed`, `note`); all of them when it holds nothing else (`to be or not to be`)."""
    keep = [w for w in words if (a := _EN.analyze(w)) and a[0] not in _STOP or CJK_RUN.search(w)]
    return (keep, [s for s in stems if s not in _STOP]) if keep else (words, stems)


@dataclass
class Parsed:
    words: list[str] = field(default_factory=list)
    required: list[str] = field(default_factory=list)
    excluded: list[str] = field(default_factory=list)
    phrases: list[str] = field(default_factory=list)
    excluded_phrases: list[str] = field(default_factory=list)
    filters: list[tuple[Operator, object]] = field(default_factory=list)
    """The operators given (operators.py), each with its value as the operator read it."""
    prefix: str | None = None
    """The last word, when the query does not end in a space: also matched as a prefix."""

    def given(self, name: str) -> list:
        """The values of the operator `name` given, in order."""
        return [v for o, v in self.filters if o.name == name]

    @property
    def tags(self) -> list[str]:
        return self.given("tag")

    @property
    def titles(self) -> list[str]:
        return self.given("title")

    def add(self, op: Operator, value) -> None:
        """The operator given with this value (an operator given once replaces its last value)."""
        if not op.many:
            self.filters = [(o, v) for o, v in self.filters if o is not op]
        self.filters.append((op, value))

    @property
    def constrained(self) -> bool:
        """Anything beyond plain words: filters, required or excluded text."""
        return bool(self.required or self.excluded or self.phrases or self.excluded_phrases or self.filters)


MAX_TOKENS = 64
"""Words past this many are ignored: a pasted page must not cost seconds."""


def parse(text: str) -> Parsed:
    p = Parsed()
    for i, m in enumerate(_TOKEN.finditer(text)):
        if i >= MAX_TOKENS:
            break
        sign, op, val = m.group(1), (m.group(2) or "").lower(), m.group(3)
        quoted = val.startswith('"')
        val = val.strip('"')
        if not val:
            continue
        if op and (read := OPERATORS[op].read(val)) is not None:  # else: plain words (`after:lunch`)
            p.add(OPERATORS[op], read)
        elif quoted:
            (p.excluded_phrases if sign == "-" else p.phrases).append(val)
        elif sign == "-":
            p.excluded.append(val)
        elif sign == "+":
            p.required.append(val)
        elif val != "OR":
            p.words.append((op + ":" if op else "") + val)
    if text and not text[-1].isspace() and p.words and _WORD.fullmatch(p.words[-1]) and not CJK_RUN.search(p.words[-1]):
        p.prefix = p.words[-1].lower()
    return p


def stem(word: str) -> str:
    """The term `word` is searched by (itself when the analyzer drops it)."""
    return (_EN.analyze(word) or [word])[0]


@dataclass
class QueryPlan:
    """A parsed query: the Tantivy query, and what snippets should look for."""

    query: tantivy.Query | None
    checks: list[list[tantivy.Query]] = field(default_factory=list)
    """Phrases the query asks for by their words only: each must be checked in the notes it
    finds, as its query for each field (a note holds it in any of them). See _Builder.phrase."""
    strict: Callable[[], tantivy.Query] | None = None
    """The query with those phrases checked in every note it finds."""
    words: list[str] = field(default_factory=list)
    """Lower-cased query words (Latin words and CJK runs), for highlighting."""
    stems: list[str] = field(default_factory=list)
    parsed: Parsed = field(default_factory=Parsed)
    terms: list[str] = field(default_factory=list)
    """Terms of the plain words (stems and bigrams), for anchor text."""
    units: list[tantivy.Query] = field(default_factory=list)
    """What finds each plain word (stop words aside): the share of them a note holds scales
    its score (see blend)."""
    shares: dict[str, float] = field(default_factory=dict)
    """Each candidate's share of the units (see blend), when counted: set by Searcher.rank."""
    weight: float = 0.0
    """The share of the semantic part in the scores (see Searcher.rank), 0 without it."""
    estimated: bool = False
    """Whether the total is estimated: set by Searcher.rank (see NoteIndex.search)."""
    candidates: dict[str, signals.Candidate] = field(default_factory=dict)
    """What the ranking signals read of each note found, by path: set by Searcher.rank, shown by `explain`."""
    parts: dict[str, tuple] = field(default_factory=dict)
    """With semantic recall, each ranked note's (lexical score, best section's cosine or
    None, that section's first line or None): set by Searcher.rank, shown by `explain`."""


PHRASE_SCAN = 64 << 20
"""Text (bytes of the notes that may hold a phrase) a scored phrase may read the positions
of: a few ms. Past it, it is checked in the best notes only (see _Builder.phrase)."""


class _Builder:
    def __init__(self, schema: tantivy.Schema, searcher: tantivy.Searcher, b: Search, text_bytes: int = 0):
        self.schema, self.searcher, self.b = schema, searcher, b
        self.text_bytes = text_bytes

    def term(self, fieldname: str, value: str, boost: float = 1.0) -> tantivy.Query:
        q = _Q.term_query(self.schema, fieldname, value)
        return _Q.boost_query(q, boost) if boost != 1.0 else q

    def stem_terms(self, s: str) -> list[tantivy.Query]:
        """The stem in each field stem_clause weighs, unweighed: the notes it finds, as a plain
        union finds them (for QueryPlan.units: at 100,000 notes, searched among the candidates
        up to 1.7x faster than the weighed clause, whose per-field max reads postings near each)."""
        return [_Q.term_query(self.schema, f, s) for f in _FIELDS]

    def stem_clause(self, s: str) -> tantivy.Query:
        b = self.b
        weights = (b.title_boost, b.heading_boost, b.path_boost, b.body_boost)  # stem_terms' fields
        return _Q.disjunction_max_query(
            [q if w == 1.0 else _Q.boost_query(q, w) for q, w in zip(self.stem_terms(s), weights)], 0.1)

    def cjk_clause(self, run: str, besides: str = "") -> tantivy.Query | None:
        """A Hangul/Han/Kana run's bigrams, each in any field by its boost; those of `besides`
        left out (a correction's bigrams that its typo, searched too, already has)."""
        b = self.b
        had = set(bigrams(besides)) if besides else set()
        grams = [
            _Q.disjunction_max_query([self.term("title_ko", g, b.title_boost), self.term("headings_ko", g, b.heading_boost),
                                      self.term("folders_ko", g, b.path_boost), self.term("body_ko", g, b.body_boost)],
                                     0.1)
            for g in dict.fromkeys(bigrams(run)) if len(g) == 2 and g not in had
        ]
        return _Q.boolean_query([(_O.Should, g) for g in grams]) if grams else None

    def text_clause(self, text: str) -> tantivy.Query | None:
        """All of a piece of text, any field: for +word and -word."""
        stems, cjk = _split(text)
        parts = [self.stem_clause(s) for s in stems] + [c for c in map(self.cjk_clause, cjk) if c is not None]
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else _Q.boolean_query([(_O.Must, q) for q in parts])

    def phrase(self, text: str, scored: bool = True) -> tuple[tantivy.Query, list[tantivy.Query] | None, tantivy.Query] | None:
        """Notes with `text` word for word (stems, in order), in a title, heading or body:
        (the query, None, the query). Scoring a phrase reads every position of its words in every note
        holding them all; where that is more text than PHRASE_SCAN (notes of 130 KB, words
        most of them hold), the query asks for the words only, scored as plain words and the
        phrase in a title or heading are, and the phrase is checked afterwards in the best
        notes only: (that query, the phrase's query for each field, the query that checks it
        in every note, should too few of the best hold it). Checked in all of them, "search
        index" took 28 ms at 100,000 notes; in the best 200, 2 ms."""
        cjk = CJK_RUN.findall(text)
        stems = _EN.analyze(CJK_RUN.sub(" ", text))  # every word, repeated ones too: "one to one"
        if len(stems) < 2 or cjk:  # (Hangul/Han/Kana are indexed by bigrams without their places)
            c = self.text_clause(text)
            return None if c is None else (c, None, c)
        exact = [_Q.phrase_query(self.schema, f, stems) for f in ("title", "headings", "body")]
        s = self.searcher
        holding = min(s.doc_freq("body", w) for w in stems)  # at most this many notes hold them all
        if not scored or holding * self.text_bytes <= PHRASE_SCAN * max(1, s.num_docs):
            q = _Q.disjunction_max_query(exact)
            return q, None, q
        b = self.b
        named = [_Q.boost_query(q, w) for q, w in zip(exact, (b.title_boost, b.heading_boost))]
        # each word a Must clause, which Tantivy scores as well as requires (as a Should
        # beside a constant Must of the same words, each was read twice: 1.4-1.8 ms more)
        rank = [*((_O.Must, self.stem_clause(w)) for w in dict.fromkeys(stems)),
                (_O.Should, _Q.disjunction_max_query(named))]
        found = _Q.disjunction_max_query(exact)
        return (_Q.boolean_query(rank), exact,
                _Q.boolean_query([(_O.Must, _Q.const_score_query(found, 0.0)), *rank]))

    def symbol(self, word: str, parts: list[str]) -> tantivy.Query:
        """Notes holding the symbol `word` (whose stems are `parts`) rank above every note that
        only holds its parts, however often. A note holding its parts word for word
        (`denote link description`, in a title, heading or body) scores a constant C above
        what the parts can score in any field, tag included (BM25 gives a word at most
        (k1 + 1) x its idf, times the field's boost); a note holding it whole (the `symbols`
        field: in a title, heading, body or the file's name; or a tag) 2 C more. So a note
        named `bell-labs.md`, or tagged so, ranks above the notes that mention Bell Labs.
        Not scored by its positions: Tantivy stops at a note's first match."""
        s, b = self.searcher, self.b
        n = max(1, s.num_docs)
        idf = sum(math.log(1 + (n - df + 0.5) / (df + 0.5)) for w in parts
                  for df in [max((s.doc_freq(f, w) for f in ("title", "body")), default=0)])
        most = 2.2 * idf * (max(b.title_boost, b.heading_boost, b.path_boost, b.body_boost) + b.tag_boost)
        worded = _Q.disjunction_max_query([_Q.phrase_query(self.schema, f, parts) for f in ("title", "headings", "body")])
        whole = _Q.boolean_query([(_O.Should, self.term("symbols", word.lower())), (_O.Should, self.term("tags", word.lower()))])
        return _Q.boolean_query([(_O.Should, _Q.const_score_query(worded, most + 1.0)),
                                 (_O.Should, _Q.const_score_query(whole, 2 * (most + 1.0)))])

    def known(self, stem: str) -> bool:
        return any(self.searcher.doc_freq(f, stem) for f in ("body", "title"))

    def df(self, stem: str) -> int:
        return max(self.searcher.doc_freq(f, stem) for f in ("body", "title"))

    def rare_typo(self, word: str, stem: str, vocabulary) -> str | None:
        """The word `word` is a typo of, when it is in a note or two only and that word in
        ten times as many (`zettlekasten`, misspelt once in the vault, for `zettelkasten`);
        else None. Long words only: a short rare word is often a word of its own (`bake`)."""
        seen = self.df(stem)
        if not seen or seen > RARE_TYPO_NOTES:
            return None
        fix = vocabulary().correct(word)
        fs = _EN.analyze(fix) if fix else []
        return fix if fs and self.df(fs[0]) >= max(5, 10 * seen) else None

    def run_df(self, run: str) -> int:
        """How many notes hold the rarest bigram of a Hangul/Han/Kana run (title or body)."""
        s = self.searcher
        return min(max(s.doc_freq("title_ko", g), s.doc_freq("body_ko", g)) for g in set(bigrams(run)))

    def hangul_typo(self, run: str, vocabulary) -> str | None:
        """The vocabulary word a Hangul word is a typo of (Vocabulary.correct_hangul), where it
        finds little: a bigram of it, and of each of its forms less a particle, is in no
        note; or, for a word of three syllables or more, in a note or two only, where the
        correction's are all in ten times as many (as rare_typo). Else None."""
        if not _HANGUL_WORD.fullmatch(run):
            return None
        seen = max(self.run_df(w) for w in hangul_forms(run))
        if seen > RARE_TYPO_NOTES or seen and len(run) < 3:
            return None
        fix = vocabulary().correct_hangul(run)
        return fix if fix and (not seen or self.run_df(fix) >= max(5, 10 * seen)) else None

    def fuzzy(self, word: str) -> tantivy.Query:
        d = 1 if len(word) <= 5 else 2
        return _Q.disjunction_max_query(
            [_Q.boost_query(_Q.fuzzy_term_query(self.schema, f, word, d, True, False), w * 0.5)
             for f, w in (("title", self.b.title_boost), ("headings", self.b.heading_boost), ("body", 1.0))])


HANGUL_FIX_WEIGHT = 0.9
"""A Hangul word's correction weighs this times the word typed right, beside what the typo's
own bigrams find (as a Latin word's correction does)."""

RARE_TYPO_LEN = 7
RARE_TYPO_NOTES = 2
"""A word of at least RARE_TYPO_LEN letters found in at most RARE_TYPO_NOTES notes is
searched as typed and as its correction too, when that is in ten times as many (see
_Builder.rare_typo)."""


VOCABULARY_BATCH = 2000
"""Titles (or words) a Vocabulary works through between two pauses (see Vocabulary)."""


def _batches(items, n: int):
    """`items` in lists of `n`."""
    batch = []
    for x in items:
        batch.append(x)
        if len(batch) == n:
            yield batch
            batch = []
    if batch:
        yield batch


class Vocabulary:
    """The words of the vault's titles, aliases and tags, to correct a typo into: `grpah
    veiw` is searched as `graph view`, scored as typed right (title boost included) and
    highlighted in snippets, where a fuzzy match scores the same in any note it meets.
    Found by symmetric deletes (a word and its one-letter deletions, as keys), checked by
    edit distance with transpositions: 1 for words up to 5 letters, 2 above.

    Hangul words (two syllables or more, each also less a particle: `패턴이란` gives `패턴`
    too) come from `names` (headings) as well: a Latin word no title holds is still met
    fuzzily in every field, a Hangul one only by its bigrams. A typo of one is a word of as
    many syllables with a letter (jamo: see one_jamo_away) changed, added or dropped in one of them
    (`옵져버` for `옵저버`): its neighbours are made letter by letter and looked up."""

    def __init__(self, texts, names=(), pause: Callable[[], None] | None = None,
                 read: Callable[[], None] | None = None):
        """`texts`: the titles, aliases and tags, one string each; `names`: the headings'
        texts, as strings of many lines (note.heading_texts). `pause`, when given, is called
        between batches of the work (about a millisecond each): the warm-up's build lets
        searches run meanwhile (one regex over 100,000 titles held the interpreter for 0.2 s).
        `read`, when given, is called once `names` has been read through."""
        self._pause = pause or (lambda: None)
        counted: Counter[str] = Counter()
        kept: list[str] = []
        for batch in _batches(texts, VOCABULARY_BATCH):
            text = "\n".join(batch)
            kept.append(text)
            counted.update(_WORD.findall(CJK_RUN.sub(" ", text).lower()))
            self._pause()
        self.count = {w: n for w, n in counted.items() if len(w) >= 3 and not w.isdigit()}
        for i, (w, n) in enumerate(list(self.count.items())):  # and their stems: `templete` is one edit from `templat(es)`
            if (st := stem(w)) != w and len(st) >= 3:
                self.count[st] = self.count.get(st, 0) + n
            if i % VOCABULARY_BATCH == 0:
                self._pause()
        self._by_delete: dict[str, list[str]] = {}
        for i, w in enumerate(self.count):
            for k in {w, *_deletes(w)}:
                self._by_delete.setdefault(k, []).append(w)
            if i % VOCABULARY_BATCH == 0:
                self._pause()
        self._hangul_text = (kept, names)  # the titles' text, in its batches
        self._read = read or (lambda: None)
        self._hangul: Counter[str] | None = None
        self._hangul_lock = threading.Lock()  # `names` is read once, by one thread

    def hangul_words(self) -> Counter[str]:
        """The Hangul words and how often each is used: counted on the first Hangul word to
        correct (a vault without Korean typos never pays for it; 0.05 s for 1 MB of headings)."""
        with self._hangul_lock:
            return self._hangul_words()

    def _hangul_words(self) -> Counter[str]:
        if self._hangul is None:
            kept, names = self._hangul_text
            runs: Counter[str] = Counter()
            for text in kept:
                runs.update(_HANGUL_WORD.findall(text))
                self._pause()
            for text in names:
                runs.update(_HANGUL_WORD.findall(text))
                self._pause()
            self._read()
            count: Counter[str] = Counter()
            for run, n in runs.items():
                for w in hangul_forms(run):
                    count[w] += n
            self._hangul, self._hangul_text = count, None
        return self._hangul

    def correct(self, word: str) -> str | None:
        """The vocabulary word `word` most likely is a typo of (nearest, then most used), or None."""
        word = word.lower()
        most = 1 if len(word) <= 5 else 2
        keys = {word, *_deletes(word)}
        if most > 1:
            keys |= {d2 for d in list(keys) for d2 in _deletes(d)}
        near = {c for k in keys for c in self._by_delete.get(k, ())}
        best = [(d, -self.count[c], c) for c in near if c != word and (d := _distance(word, c)) <= most]
        return min(best)[2] if best else None

    def correct_hangul(self, word: str) -> str | None:
        """The Hangul vocabulary word `word` (Hangul syllables) most likely is a typo of (by
        their jamo: nearest, then most used); else that of `word` less a particle (`옵져버를`:
        `옵저버`); None when there is none, or `word` or a form of it is a vocabulary word.
        One letter away only: 65 look-ups a syllable (two letters would be 4,000 a syllable
        squared, 40-140 ms; and one letter wrong in a long word leaves it most of its
        bigrams to be found by)."""
        count = self.hangul_words()
        forms = hangul_forms(word)
        if any(w in count for w in forms):
            return None
        for w in forms:
            near = [c for c in one_jamo_away(w) if c in count]
            if near:
                return min(near, key=lambda c: (-count[c], c))
        return None


_HANGUL_WORD = re.compile("[가-힣][가-힣]+")
"""Two Hangul syllables or more: a word typo correction compares by its jamo."""
HANGUL_UTF8 = rb"[\xea-\xed]"
"""A byte that begins a Hangul syllable in UTF-8 (and a few other characters): headings
stored without one hold no Hangul word, and are not decoded to look for them."""
_SYLLABLES = 11172  # U+AC00..U+D7A3: (19 initials x 21 medials) x 28 finals (the first: none)


_PARTICLE_1 = frozenset(p for p in stopwords_ko.PARTICLES if len(p) == 1)
_PARTICLE_2 = frozenset(p for p in stopwords_ko.PARTICLES if len(p) == 2)


def hangul_forms(word: str) -> list[str]:
    """A Hangul word, then the word less a particle it ends with (stopwords_ko.PARTICLES)
    where that leaves two syllables or more: `옵저버를` -> `옵저버를`, `옵저버`."""
    forms = [word]
    if len(word) >= 4 and word[-2:] in _PARTICLE_2:
        forms.append(word[:-2])
    if len(word) >= 3 and word[-1] in _PARTICLE_1:
        forms.append(word[:-1])
    return forms


def one_jamo_away(word: str) -> list[str]:
    """The Hangul words one letter from `word`: one syllable of it with another initial,
    medial or final jamo (a final added or dropped too); 65 a syllable. A syllable's jamo
    are worked out from its code point (Unicode's arithmetic: U+AC00 + (initial x 21 +
    medial) x 28 + final), so `옵져버` is one from `옵저버` (ㅕ for ㅓ), `패턱` from `패턴`."""
    out = []
    for i, ch in enumerate(word):
        k = ord(ch) - 0xAC00
        if not 0 <= k < _SYLLABLES:
            continue
        first, rest = word[:i], word[i + 1 :]
        lead, vowel, tail = k // 588, k % 588 // 28, k % 28
        for alt in (*((x * 21 + vowel) * 28 + tail for x in range(19) if x != lead),
                    *((lead * 21 + x) * 28 + tail for x in range(21) if x != vowel),
                    *((lead * 21 + vowel) * 28 + x for x in range(28) if x != tail)):
            out.append(first + chr(0xAC00 + alt) + rest)
    return out


def _deletes(w: str) -> list[str]:
    return [w[:i] + w[i + 1 :] for i in range(len(w))] if len(w) > 2 else []


def _distance(a: str, b: str) -> int:
    """Edit distance, a swap of two neighbours counting one (optimal string alignment)."""
    prev2, prev = [], list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            d = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                d = min(d, prev2[j - 2] + 1)
            cur.append(d)
        prev2, prev = prev, cur
    return prev[-1]


def plan(schema: tantivy.Schema, searcher: tantivy.Searcher, text: str, boosts: Search, text_bytes: int = 0,
         vocabulary=None) -> QueryPlan:
    """`text_bytes`: the size of all notes indexed, which bounds what a phrase costs;
    `vocabulary`: a callable giving the Vocabulary typos are corrected into (built on first use)."""
    p = parse(text)
    bld = _Builder(schema, searcher, boosts, text_bytes)

    plain = " ".join(p.words)
    stems, cjk = _split(plain)
    content = [s for s in stems if s not in _STOP]
    should, found_by, corrected, fixed = _word_clauses(bld, p, plain, stems, content, boosts, vocabulary)
    cjk_should, cjk_corrected = _cjk_clauses(bld, cjk, content, boosts, vocabulary)
    should += cjk_should
    corrected += cjk_corrected
    should += _pair_clauses(schema, searcher, plain, content, fixed, boosts)
    should += _prefix_clauses(schema, bld, p)
    # CJK runs are matched by bigrams, which are not words (`폴더로` holds `더로`): counting them
    # measured worse (Korean dev MRR 0.857 against 0.867), so coverage counts Latin words only
    units = [_Q.boolean_query([(_O.Should, q) for q in qs]) for qs in found_by.values()]

    must, must_not, checks, strict = _filter_clauses(schema, bld, p)

    text_required = bool(p.required or p.phrases)
    if not should and not must:
        if not must_not:
            return QueryPlan(query=None, parsed=p)
        must.append(_Q.all_query())
    # Plain words: at least one must match, unless +words or "phrases" already say what must.
    sq = [(_O.Should if text_required else _O.Must, _Q.boolean_query([(_O.Should, q) for q in should]))] if should else []

    def query(must: list[tantivy.Query]) -> tantivy.Query:
        return _Q.boolean_query([(_O.Must, q) for q in must] + [(_O.MustNot, q) for q in must_not] + sq)

    words = [w.lower() for w in _WORD.findall(" ".join(p.words + p.required + p.phrases + p.titles + corrected))]
    return QueryPlan(query=query(must), checks=checks, strict=lambda: query([strict.get(i, q) for i, q in enumerate(must)]),
                words=list(dict.fromkeys(words + cjk)), terms=terms(plain), units=units,
                stems=list(dict.fromkeys(stems + _split(" ".join(p.required + p.phrases + p.titles + corrected))[0])),
                parsed=p)


def _word_clauses(bld: _Builder, p: Parsed, plain: str, stems: list[str], content: list[str], boosts: Search,
                  vocabulary) -> tuple[list[tantivy.Query], dict[str, list[tantivy.Query]], list[str], dict[str, str]]:
    """The clauses for the query's Latin words: symbols, stems (stop words light), tags, and a
    probable typo's correction and fuzzy form. Returns them, what finds each content word's stem
    (unweighed), the corrections made, and each typo's stem -> its correction's."""
    should: list[tantivy.Query] = []
    for w in dict.fromkeys(w for w in p.words if _SYMBOL.fullmatch(w) and not CJK_RUN.search(w)):
        if len(parts := _EN.analyze(w)) >= 2:
            should.append(bld.symbol(w, parts))
    found_by: dict[str, list[tantivy.Query]] = {}  # a content word's stem -> what finds it (unweighed)
    for s in stems:
        c = bld.stem_clause(s)
        should.append(_Q.boost_query(c, _STOP_WEIGHT) if s in _STOP and content else c)
        if s not in _STOP or not content:
            found_by[s] = bld.stem_terms(s)
    corrected: list[str] = []
    fixed: dict[str, str] = {}  # a typo's stem -> its correction's
    for w in dict.fromkeys(w.lower() for w in _WORD.findall(CJK_RUN.sub(" ", plain))):
        should.append(bld.term("tags", w, boosts.tag_boost))
        ws = _EN.analyze(w)
        also = found_by.get(ws[0], []) if ws else []
        also.append(should[-1])
        rare = bld.rare_typo(w, ws[0], vocabulary) if ws and len(w) >= RARE_TYPO_LEN and vocabulary else None
        if rare or len(w) >= 4 and not w.isdigit() and ws and not bld.known(ws[0]):
            # no note has this word (or a note or two, where its correction is in many: the typo
            # itself in a note): probably a typo. Into a title's word, it is searched as that
            # word (BM25, every field, its boosts); and fuzzily, stems meeting stems, for the rest
            fix = rare or (vocabulary().correct(w) if vocabulary is not None else None)
            if fix and (fs := _EN.analyze(fix)):
                corrected.append(fix)
                fixed[ws[0]] = fs[0]
                should.append(_Q.boost_query(bld.stem_clause(fs[0]), 0.9))
                should.append(bld.term("tags", fix, boosts.tag_boost * 0.9))
                also += [*bld.stem_terms(fs[0]), should[-1]]
            should.append(bld.fuzzy(ws[0]))  # not a unit: a word held only fuzzily is not held
    return should, found_by, corrected, fixed


def _cjk_clauses(bld: _Builder, cjk: list[str], content: list[str], boosts: Search,
                 vocabulary) -> tuple[list[tantivy.Query], list[str]]:
    """The clauses for the query's CJK runs (function words light, tags, a probable Hangul
    typo's correction); returns them and the corrections made."""
    should: list[tantivy.Query] = []
    corrected: list[str] = []
    # Korean function words weigh little beside other words, as English stop words do
    light = {r for r in cjk if stopwords_ko.is_stop(r) or korean.inside_only(bld.searcher, r)}
    light = light if content or any(r not in light for r in cjk) else set()
    for run in dict.fromkeys(cjk):
        c = bld.cjk_clause(run)
        if c is not None:
            should.append(_Q.boost_query(c, _STOP_WEIGHT) if run in light else c)
        should.append(bld.term("tags", run, boosts.tag_boost))
        if run not in light and (w := korean.word_clause(bld.schema, bld.searcher, run)) is not None:
            should.append(w)  # its stem or noun held as a word start (미룬다: 미루는), highlighted too
            corrected += korean.forms(run)
        # a Hangul word the notes hardly hold: probably a typo (옵져버 for 옵저버); searched as the
        # vault's word its jamo are nearest to too, as a Latin typo is
        fix = bld.hangul_typo(run, vocabulary) if vocabulary is not None and run not in light else None
        if fix and (c := bld.cjk_clause(fix, besides=run)) is not None:
            corrected.append(fix)
            should.append(_Q.boost_query(c, HANGUL_FIX_WEIGHT))
            should.append(bld.term("tags", fix, boosts.tag_boost * HANGUL_FIX_WEIGHT))
    return should, corrected


def _pair_clauses(schema: tantivy.Schema, searcher: tantivy.Searcher, plain: str, content: list[str],
                  fixed: dict[str, str], boosts: Search) -> list[tantivy.Query]:
    """The clauses that count words next to each other (see below)."""
    should: list[tantivy.Query] = []
    common = max(1, searcher.num_docs // 4)
    # Words next to each other count more, most in a title or heading: content words, corrected
    # (`templete folder` still counts as a pair), the stop words between them allowed for.
    near, gaps, gap = [], [], 0
    for s in _EN.analyze(CJK_RUN.sub(" ", plain)):
        if s in _STOP and content:
            gap += 1
        else:
            near.append(fixed.get(s, s))
            gaps.append(gap)
            gap = 0
    # In a field only where both are in at most a quarter of the notes' field: that words most
    # notes hold stand together says little, and reading where they stand in every such note
    # costs ms (tens in bodies; 2-5 in headings at 100,000 notes).
    for a, b, skipped in dict.fromkeys(zip(near, near[1:], gaps[1:])):
        fields = [(f, w) for f, w in (("title", boosts.title_boost), ("headings", boosts.heading_boost),
                                      ("body", boosts.body_boost))
                  if max(searcher.doc_freq(f, a), searcher.doc_freq(f, b)) <= common]
        if fields:
            should.append(_Q.disjunction_max_query(
                [_Q.boost_query(_Q.phrase_query(schema, f, [a, b], 2 + skipped), w * 0.5) for f, w in fields]))
    return should


def _prefix_clauses(schema: tantivy.Schema, bld: _Builder, p: Parsed) -> list[tantivy.Query]:
    """The clause for a last word still being typed, if any."""
    should: list[tantivy.Query] = []
    last = _EN.analyze(p.prefix) if p.prefix else []
    if p.prefix and len(p.prefix) >= 2 and not (last and bld.known(last[0])):
        # a word still being typed; one the notes hold as it is was typed whole (its longer
        # forms mostly share its stem): expanding it read every term it starts, 2 ms at 100,000 notes
        should.append(_Q.boost_query(_Q.disjunction_max_query(
            [_Q.fuzzy_term_query(schema, f, p.prefix, 0, True, True) for f in ("title", "body")]), 0.3))
    return should


def _filter_clauses(schema: tantivy.Schema, bld: _Builder, p: Parsed) -> tuple[
        list[tantivy.Query], list[tantivy.Query], list[list[tantivy.Query]], dict[int, tantivy.Query]]:
    """What a note must and must not match: +words, "phrases", tag:, title:, path:, after:,
    before:, -words and -"phrases". Returns must, must_not, the phrases to check in the best
    notes (see _Builder.phrase) and must's place -> its phrase checked in every note."""
    must: list[tantivy.Query] = []
    must_not: list[tantivy.Query] = []
    must += [c for c in map(bld.text_clause, p.required) if c is not None]
    checks: list[list[tantivy.Query]] = []  # phrases to check in the best notes (see _Builder.phrase)
    strict: dict[int, tantivy.Query] = {}  # must's place -> its phrase checked in every note
    for c, check, c_strict in filter(None, map(bld.phrase, p.phrases)):
        if check is not None:
            checks.append(check)
            strict[len(must)] = c_strict
        must.append(c)
    must += [c for c in (op.clause(bld, v) for op, v in p.filters) if c is not None]  # operators.py
    must_not += [c for c in map(bld.text_clause, p.excluded) if c is not None]
    must_not += [c for c, _, _ in filter(None, (bld.phrase(t, scored=False) for t in p.excluded_phrases))]

    return must, must_not, checks, strict


covered = signals.covered
