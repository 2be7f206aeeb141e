"""Search: a query planned (ranking.plan), run against the index, blended with recency,
tiers and link anchors, and each hit given its best lines. The Vault's search job (see
vault.py)."""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import re
import threading
import time
from typing import TYPE_CHECKING

import msgspec

from ..note import Note, PerTable, first_h1, heading_texts, held, headings_of
from ..parse import decode
from ..parse.conflicts import copies as conflict_copies
from ..parse.markdown import split_front_matter
from ..paths import cut, open_note
from ..store import graph_file
from ..store.index import CJK_RUN, HELD_BITS, file_stem, note_epoch
from . import korean, stopwords_ko
from . import signals
from .ranking import HANGUL_UTF8, QueryPlan, Vocabulary, bigrams, covered, plan
from .snippets import READ_FIRST, Matcher, best_lines, tagged_lines
from .tiers import cold_test

if TYPE_CHECKING:
    from ..store.vault_state import VaultState
    from .embedder import Embedder


def _give_way() -> None:
    """A pause of background work (the warm-up's, a vocabulary's rebuild) that lets a search
    waiting for the interpreter run: a bare release of it is most often taken back at once."""
    time.sleep(GIVE_WAY_S)


GIVE_WAY_S = 0.0005

QUIET_S = 0.5
"""Work the warm-up can leave for later (the Hangul words of the headings) waits until no
search has been asked for this long: counted beside the 60 searches of a start at seed
scale (3,142 notes of 130 KB, 527,000 headings) it raised their p95 from 9 to 16 ms."""


COVER_MARGIN = 10
"""Candidates whose share of the words is asked for at first, past the `limit` wanted."""


class Searcher:
    """The Vault's search: `rank` (the best notes for a query) and `search` (their hits)."""

    def __init__(self, core: VaultState, semantic: Embedder | None = None):
        self.core = core
        self.semantic = semantic
        """Semantic recall's section vectors, when `[semantic]` is on (see query/embedder.py)."""
        self._vocab: tuple = (lambda: None, None, 0.0)  # (of these notes (see note.held), titles' words, when)
        self._vocab_lock = threading.Lock()  # held while it is built
        self._hangul_vault = False  # the index held Hangul words at the warm-up: a background build counts them
        self._asked = 0.0  # when a search was last asked (time.monotonic)
        self._sized = PerTable(lambda notes: sum(n.size for n in notes.values()))  # see _text_bytes

    def vocabulary(self) -> Vocabulary:
        """The words of the notes' titles (a first H1 that stands for one included: see
        first_h1), aliases and tags, and the Hangul words of their headings, to correct
        typos into (0.4 s to build at 100,000 notes). Built ahead by the warm-up (`warm`),
        else by the first search that needs it; when the notes changed, built again at most
        once a minute, in the background. A search waits only for the first build (the same
        answers from the first second: a search run during it waited for it, at most 0.4 s at
        100,000 notes, where the warm-up had not done it yet); never for a rebuild: a word the
        vocabulary lacks meanwhile is only not corrected."""
        notes, (built, vocab, at) = self.core.notes, self._vocab
        if vocab is None:
            with self._vocab_lock:  # the first: built once (the warm-up's, at a start, most often done)
                if self._vocab[1] is None:
                    self._build_vocabulary()
                return self._vocab[1]
        if built() is not notes and time.monotonic() - at > 60 and self._vocab_lock.acquire(blocking=False):
            threading.Thread(target=self._rebuild_vocabulary, name="vocabulary", daemon=True).start()
        return vocab

    def _build_vocabulary(self, pause=None) -> Vocabulary:
        notes = self.core.notes  # replaced, never changed in place
        vocab = Vocabulary((t for n in notes.values() for t in (n.title, first_h1(n) or "", *n.aliases, *n.tags)),
                           heading_texts(notes.values(), only=HANGUL_UTF8), pause,
                           graph_file.release_pages)  # the headings read: their mapped pages given back
        self._vocab = (held(notes), vocab, time.monotonic())
        return vocab

    def _count_hangul(self, vocab: Vocabulary | None) -> None:
        """In a vault that holds Hangul, the Hangul words of a vocabulary built in the
        background, counted there too, once searches pause (QUIET_S) and after it is
        published (a search waiting for the vocabulary does not wait for them): else a
        search counts them on the first Hangul word to correct (0.25 s at 100,000 notes)."""
        if vocab is None or not self._hangul_vault:
            return
        while (idle := time.monotonic() - self._asked) < QUIET_S:
            time.sleep(QUIET_S - idle)  # (a search that needs them meanwhile counts them itself)
        vocab.hangul_words()

    def _rebuild_vocabulary(self) -> None:
        """The vocabulary of the notes as they are now, in the background; the lock taken by
        `vocabulary`."""
        try:
            vocab = self._build_vocabulary(_give_way)
        finally:
            self._vocab_lock.release()
        self._count_hangul(vocab)

    def warm(self) -> None:
        """Load ahead what the first searches would otherwise each wait for, in the order
        they use it: the index's files read into the page cache (store.index.read_ahead),
        the notes' total size, the typo vocabulary, and the Korean analyser's process when
        the index holds Hangul words. The daemon runs it in the background once started;
        searches are answered meanwhile, and what is built in Python gives way to them
        every millisecond or so (see _give_way)."""
        index = self.core.index
        index.read_ahead()
        self._text_bytes()
        if korean.holds_hangul(index.searcher()):
            self._hangul_vault = True
            korean.ANALYSER.start()
        vocab = None
        if self._vocab_lock.acquire(blocking=False):  # (unless a search is building it)
            try:
                if self._vocab[1] is None:
                    vocab = self._build_vocabulary(_give_way)
            finally:
                self._vocab_lock.release()
        self._count_hangul(vocab)

    def _text_bytes(self) -> int:
        """The size of every note indexed, summed once per version of the table."""
        return self._sized(self.core.notes)  # a table is replaced, never changed in place

    def rank(self, q: str, limit: int, scope: str = "auto") -> tuple[int, list[tuple[float, Note]], QueryPlan, bool]:
        """The best `limit` notes for `q`: (total matches, [(score, note)], the plan, whether
        COLD notes were searched). scope "auto" leaves COLD out unless WARM finds fewer than
        tiers.min_results; "warm" always leaves it out; "all" searches everything."""
        core = self.core
        cfg = core.config.search
        self._asked = time.monotonic()
        p = plan(core.index.schema, core.index.searcher(), q, cfg, self._text_bytes(), self.vocabulary)
        if p.query is None:
            return 0, [], p, False
        total, p.estimated, found, cover = core.index.search(p.query, max(limit, cfg.candidates), core.by_key,
                                                             p.units if cfg.coverage_weight else (), p.checks, p.strict)
        indexed = len(found)  # the index's candidates; anchor text may add more
        now = time.time()
        tiers = core.config.tiers
        is_cold = cold_test(tiers)
        graph = core.graph
        anchors = graph.anchor_match(p.terms) if graph is not None and p.terms else {}
        if anchors and not p.parsed.constrained:
            # Notes the words do not reach but links to them name that way: found by anchor text alone
            top = max((score for score, _ in found), default=1.0)
            seen = {n.path for _, n in found}
            notes = core.notes
            extra = anchors.best(max(limit, 10), 0.5, lambda t: t in seen or t not in notes)
            found += [(top * 0.5 * m, notes[t]) for m, t in extra]
        exact = cfg.exact_title_weight and _name(" ".join(w for w in (*p.parsed.words, *p.parsed.phrases)
                                                          if ":" not in w))

        # each candidate's score with every word held: the most it can score (a share only lowers it)
        p.candidates = {n.path: signals.Candidate(note_epoch(n), cold=is_cold(n.path), anchor=anchors.get(n.path, 0.0),
                                                  exact=bool(exact) and _named(n, exact), now=now) for _, n in found}
        scores = [signals.blend(score, p.candidates[n.path], cfg) for score, n in found]
        shares: dict[str, float] = {}
        words = " ".join(w for w in p.parsed.words if ":" not in w)  # what semantic recall embeds
        if cover is not None:
            # only the candidates that can still reach the top `want` (kept, where COLD is left
            # out) need their share
            keep = (lambda n: True) if scope == "all" else (lambda n: not is_cold(n.path))
            order = sorted(range(indexed), key=scores.__getitem__, reverse=True)
            done: set[int] = set()

            def settle(want: int) -> None:
                todo = [i for i in order[: want + COVER_MARGIN] if i not in done]
                while todo:
                    shares.update(cover(todo))
                    done.update(todo)
                    for i in todo:
                        scores[i] = covered(scores[i], shares.get(found[i][1].path, 0.0), cfg)
                    settled = sorted((scores[i] for i in range(len(found))
                                      if (i in done or i >= indexed) and keep(found[i][1])), reverse=True)
                    least = settled[want - 1] if len(settled) >= want else -math.inf
                    todo = [i for i in order if i not in done and scores[i] >= least]

            settle(limit)
            # semantic recall re-scores every candidate, each with its share: unless the words
            # rank alone (an English query a candidate holds all of, at matched_weight 0)
            if self.semantic is not None and (CJK_RUN.search(words) or core.config.semantic.matched_weight
                                              or max(shares.values(), default=0.0) < 1.0):
                settle(indexed)
        ranked = sorted(zip(scores, (n for _, n in found)), key=lambda t: (-t[0], t[1].path))
        p.shares = shares
        sem = self.semantic
        if sem is not None and words:
            # the best section's closeness to the words, fused into the top candidates' scores
            # where the words fall short; and when they find few notes, those nearest by their
            # vectors join them
            scfg = core.config.semantic
            # a candidate holds every word (one word found holds it; words not counted, as with
            # coverage_weight 0, are not known to be held)
            matched = bool(ranked) and (max(shares.values()) >= 1.0 if cover is not None else len(p.units) < 2)
            scan = scfg.scan if len(ranked) < scfg.scan and not matched and not p.parsed.constrained else 0
            if CJK_RUN.search(words):  # Hangul/Han/Kana words are not counted: held as context holds them
                held = self._holds_all(words, [n for _, n in ranked[:cfg.limit]], p.units)
                p.weight = scfg.matched_weight if held else scfg.cjk_weight
            else:
                p.weight = scfg.matched_weight if matched else scfg.weight
            if p.weight or scan:  # neither: the words are trusted alone, and the query is not embedded
                before = len(ranked)
                ranked, p.parts = sem.rescore(words, ranked, p.weight, scan, core.notes)
                total += len(ranked) - before  # notes the vector scan added are matches too
        with_cold = scope == "all"
        if not with_cold:
            warm = [t for t in ranked if not is_cold(t[1].path)]
            with_cold = scope == "auto" and len(warm) < tiers.min_results and len(warm) < len(ranked)
            ranked = ranked if with_cold else warm
        ranked, left_out = place_copies(ranked, cfg.conflict_copies)
        return total - left_out, ranked[:limit], p, with_cold

    def _holds_all(self, words: str, notes: list[Note], units: list) -> bool:
        """Whether one of `notes` holds every word of a query with Hangul/Han/Kana: its Latin
        words (`units`: what finds each), and each Hangul/Han/Kana word by at least half its
        bigrams (a particle or an ending alone is one bigram of a word's three), function words
        aside as stop words are (all of them when the query has no other word); a word of one
        character is not counted. One search among them (see NoteIndex.held); a query of more
        words than it tells apart is taken as not held."""
        runs = [r for r in dict.fromkeys(CJK_RUN.findall(words.lower())) if len(r) > 1]
        runs = [set(bigrams(r)) for r in ([r for r in runs if not stopwords_ko.is_stop(r)] or ([] if units else runs))]
        grams = list(dict.fromkeys(g for r in runs for g in sorted(r)))
        if not notes or len(grams) + len(units) > HELD_BITS:
            return False
        if not grams and not units:
            return True
        every_unit = (1 << len(units)) - 1
        index = self.core.index
        for mask in index.held([n.path for n in notes], [*units, *map(index.bigram, grams)], self.core.by_key).values():
            held = {g for i, g in enumerate(grams, len(units)) if mask >> i & 1}
            if mask & every_unit == every_unit and all(2 * len(r & held) >= len(r) for r in runs):
                return True
        return False

    def search(self, q: str, limit: int | None = None, scope: str = "auto", snippets: bool = True,
               explain: bool = False) -> dict:
        """Ranked hits for `q`; each with its best lines unless `snippets` is False (null); with
        `explain`, each with the parts of its score (see _explain)."""
        core = self.core
        t0 = time.perf_counter()
        total, ranked, p, with_cold = self.rank(q, limit or core.config.search.limit, scope)
        matcher = Matcher(p.words, p.stems, p.parsed.phrases) if snippets else None
        tags = set(p.parsed.tags)
        hits = [
            {
                "path": note.path,
                "id": note.id,
                "title": note.title,
                "tags": note.tags,
                "score": round(score, 4),
                "snippets": msgspec.to_builtins(self._snippets(note, matcher, tags)) if matcher is not None else None,
            }
            for score, note in ranked
        ]
        if matcher is not None:
            hits = current_first(hits, core.notes)
        if explain:
            for h in hits:
                h["explain"] = self._explain(p, h["path"], h["score"])
        took = round((time.perf_counter() - t0) * 1000, 3)
        return {"query": q, "vault": core.root_str, "total": total, "total_estimated": p.estimated, "took_ms": took,
                "cold": with_cold,
                "generation": core.generation, "hits": hits}

    def _explain(self, p: QueryPlan, path: str, score: float) -> dict:
        """The parts of a hit's score: `lexical` (BM25 blended with coverage, anchors, recency and
        tier), `coverage` (the share of the query's words it holds, null when not counted) and,
        with semantic recall on, `semantic` (the cosine of the note's best section to the query,
        null when the note has no vectors yet), `section` (that section's first line) and
        `weight` (the cosine's share of the score: [semantic] weight, cjk_weight for a
        Hangul/Han/Kana query, matched_weight when a candidate holds every word; the lexical
        score counts as a share of the best one's). A query whose words all match is not
        embedded (matched_weight 0): `semantic` is null for every hit, `weight` 0. `signals`:
        each ranking signal's factor in `lexical` (query/signals.py), by name; null for a note
        only semantic recall found."""
        coverage = p.shares.get(path)
        c = p.candidates.get(path)
        factors = signals.explain(dataclasses.replace(c, share=coverage), self.core.config.search) if c else None
        if path not in p.parts:
            return {"lexical": score, "coverage": coverage, "semantic": None, "section": None, "weight": 0.0,
                    "signals": factors}
        lexical, cos, line = p.parts[path]
        return {"lexical": round(lexical, 4), "coverage": coverage, "semantic": None if cos is None else round(cos, 4),
                "section": line, "weight": p.weight, "signals": factors}

    def _snippets(self, note: Note, matcher: Matcher, tags: set[str] = frozenset()) -> list:
        """The best lines of `note` for the query; for a `tag:` a heading of it carries (Org
        heading tags), that heading's line and the best lines under it (tagged_lines)."""
        headings = headings_of(note)
        marked = bool(tags) and not tags.isdisjoint(note.tags) and any(not tags.isdisjoint(h.tags) for h in headings)
        if not matcher and not marked:
            return []
        try:  # a bare descriptor: a file object costs as much again as the read
            fd = open_note(self.core.root_str, note.path)
        except OSError:
            return []
        try:  # read(n) allocates n bytes up front: ask for the file's size, capped; a big file's head first
            cap, size = self.core.config.index.max_file_mb << 20, os.fstat(fd).st_size
            over = size > cap
            size = cap if over else size + 1
            data = os.read(fd, min(size, READ_FIRST))

            def rest() -> bytes:  # of a file over the cap, only the lines indexed (see paths.cut)
                more = os.read(fd, size - len(data))
                return cut(data + more, cap)[len(data) :] if over else more

            fm = note.path.endswith(".md") and data.removeprefix(b"\xef\xbb\xbf").startswith(b"---")
            skip = _front_matter_lines(data) if fm else 0
            if marked:  # the tagged heading may be anywhere: the whole file
                whole = data + rest() if len(data) == READ_FIRST < size else data
                return tagged_lines(decode(whole)[0], matcher, tags, headings, skip=skip)
            return best_lines(data, matcher, skip=skip, headings=headings,
                              rest=rest if len(data) == READ_FIRST < size else None)
        except OSError:
            return []
        finally:
            os.close(fd)


SUPERSEDED = "superseded"
"""The tag of a heading whose section a newer one superseded: `remember` gives it to an
entry another entry changed a value of (capture/entry.py)."""


def current_first(hits: list[dict], notes: dict[str, Note]) -> list[dict]:
    """Sections superseded (under a heading tagged SUPERSEDED, sub-headings included) are
    history: a hit's lines there come after its other lines and say so (`superseded`:
    true), and a hit whose lines all are there comes after every hit that has a line
    elsewhere (both in their order)."""
    out = []
    for h in hits:
        note = notes.get(h["path"])
        hs = headings_of(note) if note is not None and h["snippets"] else []
        spans = [(x.line, next((o.line - 1 for o in hs[i + 1 :] if o.level <= x.level), math.inf))
                 for i, x in enumerate(hs) if SUPERSEDED in x.tags]
        if spans:
            for sn in h["snippets"]:
                sn["superseded"] = any(a <= sn["line"] <= b for a, b in spans)
            h["snippets"].sort(key=lambda sn: sn["superseded"])
        out.append((bool(spans) and all(sn["superseded"] for sn in h["snippets"]), h))
    return [h for _, h in sorted(out, key=lambda t: t[0])]


def place_copies(ranked: list[tuple[float, Note]], mode: str) -> tuple[list[tuple[float, Note]], int]:
    """Sync tools' conflict copies among the ranked notes (parse/conflicts.py) placed as
    `[search] conflict_copies` says, and how many were left out. A note and its copies among
    them rank as the best of them: collapse: the note alone (a copy whose note is not among
    them stays: only it holds the words); below: each copy just after its note; hide: no copy."""
    copies = conflict_copies(n.path for _, n in ranked)  # a name that cannot be one: passed over by one search
    if not copies:
        return ranked, 0
    if mode == "hide":
        kept = [t for t in ranked if t[1].path not in copies]
        return kept, len(ranked) - len(kept)
    present = {n.path for _, n in ranked}
    group = {p: c.of for p, c in copies.items() if c.of in present}  # a copy -> its note, both ranked
    best: dict[str, float] = {}
    for score, n in ranked:
        key = group.get(n.path, n.path)
        best[key] = max(best.get(key, score), score)
    placed = [(best[group.get(n.path, n.path)], group.get(n.path, n.path), n.path in group, n) for _, n in ranked
              if not (mode == "collapse" and n.path in group)]
    placed.sort(key=lambda t: (-t[0], t[1], t[2], t[3].path))
    return [(score, n) for score, _, _, n in placed], len(ranked) - len(placed)


def _front_matter_lines(data: bytes) -> int:
    """split_front_matter of a Markdown file's first 16 KB, from its first 2 KB when the
    block ends there: decoding and splitting 16 KB of Korean took 29 us a seed file, this 6."""
    lines = decode(data[:2048])[0].split("\n", 200)
    if len(data) > 2048:
        lines.pop()  # it may be cut short
        if not lines or (lines[0].rstrip() == "---" and not split_front_matter(lines)):
            lines = decode(data[:16384])[0].split("\n", 200)  # the block goes on
    return split_front_matter(lines)


_NOT_A_NAME = re.compile(r"[\W_]+")


@functools.lru_cache(maxsize=1 << 14)  # every candidate's title and aliases, each search
def _name(text: str) -> str:
    """A title, alias or query as compared whole: case, punctuation, `-`, `_` and spaces aside."""
    return _NOT_A_NAME.sub(" ", text.casefold()).strip()


def _named(note: Note, name: str) -> bool:
    """Whether `note`'s title, one of its aliases, its file's name (`bell-labs` of
    bell-labs.md) or one of its tags is `name` (see _name): the note is known by it."""
    return (_name(note.title) == name or any(_name(a) == name for a in note.aliases)
            or _name(file_stem(note.path)) == name or any(_name(t) == name for t in note.tags))
