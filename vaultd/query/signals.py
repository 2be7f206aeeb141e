"""The ranking signals, one unit each (as whoosh's weighting models are): what lifts or
lowers a note's BM25 score once the index has found it.

Each unit reads one thing of a candidate (its date, its tier, the labels of links to it, its
title, the share of the query's words it holds), has its weight under `[search]` in the
configuration (config.Search: `key`), and gives its factor and its line in `--explain`. A
note's score is its BM25 times every factor. Coverage is counted last, and only for the
candidates that can still reach the top (see search.Searcher.rank): its factor is applied on
its own (`covered`).

Adding a signal: one unit below (in SIGNALS, or COVERAGE's way if it is counted lazily) and
its weight in config.Search (documented there, so config.example.toml shows it).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from ..config import Search


@dataclass(slots=True)
class Candidate:
    """What the signals read of one note found for a query."""

    epoch: float
    """When the note is dated (store.index.note_epoch)."""
    cold: bool = False
    """In the COLD tier (tiers.py)."""
    anchor: float = 0.0
    """The share of the query that links to the note use as their label (graph.anchor_match)."""
    exact: bool = False
    """Its title or an alias is the query, word for word."""
    share: float | None = None
    """The share of the query's words it holds; None: not counted."""
    now: float | None = None
    """The time of the query (the recency's today); None: now."""


class Signal:
    """One factor of a note's score: `factor` is 1 where the signal has nothing to say."""

    name = ""
    key = ""
    """Its weight's key in [search] (config.Search)."""

    def factor(self, c: Candidate, b: Search) -> float:
        raise NotImplementedError


class Recency(Signal):
    """A note dated today scores up to (1 + recency_weight) times, the lift halving every
    half_life_days."""

    name, key = "recency", "recency_weight"

    def factor(self, c: Candidate, b: Search) -> float:
        age_days = max(0.0, ((c.now or time.time()) - c.epoch) / 86400)
        return 1 + b.recency_weight * math.pow(0.5, age_days / b.half_life_days)


class Anchor(Signal):
    """Links to the note whose labels hold the query's words: (1 + anchor_weight x that share)."""

    name, key = "anchor", "anchor_weight"

    def factor(self, c: Candidate, b: Search) -> float:
        return 1 + b.anchor_weight * c.anchor


class Tier(Signal):
    """A COLD note scores cold_factor times."""

    name, key = "tier", "cold_factor"

    def factor(self, c: Candidate, b: Search) -> float:
        return b.cold_factor if c.cold else 1.0


class Title(Signal):
    """A note whose title or alias is the query word for word: (1 + exact_title_weight)."""

    name, key = "title", "exact_title_weight"

    def factor(self, c: Candidate, b: Search) -> float:
        return 1 + b.exact_title_weight if c.exact else 1.0


class Coverage(Signal):
    """A note holding a share c of the query's words (stop words aside) scores
    (1 - coverage_weight + coverage_weight x c) times (Lucene's classic coordination,
    softened): a note with every word outranks one that scores as high on fewer."""

    name, key = "coverage", "coverage_weight"

    def factor(self, c: Candidate, b: Search) -> float:
        return 1.0 if c.share is None else 1 - b.coverage_weight + b.coverage_weight * c.share


SIGNALS: tuple[Signal, ...] = (Recency(), Anchor(), Tier(), Title())
"""The signals applied to every candidate as it is found, in this order."""

COVERAGE = Coverage()
"""Applied once a candidate's share is counted (see `covered`)."""


def blend(score: float, c: Candidate, b: Search) -> float:
    """`score` times every signal's factor but coverage's (see `covered`)."""
    for s in SIGNALS:
        score *= s.factor(c, b)
    return score


def covered(score: float, share: float | None, b: Search) -> float:
    """`score` lowered by the share of the query's words a note lacks: never raised."""
    return score * COVERAGE.factor(Candidate(0.0, share=share), b)


def explain(c: Candidate, b: Search) -> dict[str, float]:
    """Each signal's factor for a candidate, by name (`--explain`), coverage's too when counted."""
    out = {s.name: round(s.factor(c, b), 4) for s in SIGNALS}
    if c.share is not None:
        out[COVERAGE.name] = round(COVERAGE.factor(c, b), 4)
    return out
