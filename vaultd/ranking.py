"""From what a person typed to a Tantivy query, and the terms snippets highlight.

Nothing the user types can make this raise: the query text is split into words
here and turned into term queries directly, never handed to Tantivy's parser
(where `TODO: fix` or `C++` break it; LIBRARY-NOTES pitfall 5).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import tantivy

from .config import Search
from .index import CJK_RUN

_T, _F, _Q, _O = tantivy.Tokenizer, tantivy.Filter, tantivy.Query, tantivy.Occur
_EN = (
    tantivy.TextAnalyzerBuilder(_T.simple())
    .filter(_F.remove_long(40))
    .filter(_F.lowercase())
    .filter(_F.stemmer("english"))
    .build()
)
_WORD = re.compile(r"\w+")


@dataclass
class Plan:
    """A parsed query: the Tantivy query, and what snippets should look for."""

    query: tantivy.Query | None
    words: list[str] = field(default_factory=list)
    """Lower-cased query words (Latin words and CJK runs), for highlighting."""
    stems: list[str] = field(default_factory=list)


def bigrams(run: str) -> list[str]:
    return [run[i : i + 2] for i in range(len(run) - 1)] or [run]


def plan(schema: tantivy.Schema, text: str, boosts: Search) -> Plan:
    cjk = [w.lower() for w in CJK_RUN.findall(text)]
    latin = CJK_RUN.sub(" ", text)
    words = [w.lower() for w in _WORD.findall(latin)]
    stems = list(dict.fromkeys(_EN.analyze(latin)))
    clauses = []

    def term(fieldname: str, value: str, boost: float) -> tantivy.Query:
        q = _Q.term_query(schema, fieldname, value)
        return _Q.boost_query(q, boost) if boost != 1.0 else q

    b = boosts
    for s in stems:
        clauses.append(
            _Q.disjunction_max_query(
                [
                    term("title", s, b.title_boost),
                    term("headings", s, b.heading_boost),
                    term("folders", s, b.path_boost),
                    term("body", s, b.body_boost),
                ],
                0.1,
            )
        )
    for w in dict.fromkeys(words):
        clauses.append(term("tags", w, b.tag_boost))
    for run in dict.fromkeys(cjk):
        grams = [
            _Q.disjunction_max_query(
                [term("title_ko", g, b.title_boost), term("headings_ko", g, b.heading_boost), term("body_ko", g, b.body_boost)],
                0.1,
            )
            for g in dict.fromkeys(bigrams(run))
            if len(g) == 2
        ]
        if grams:
            clauses.append(_Q.boolean_query([(_O.Should, g) for g in grams]))
        clauses.append(term("tags", run, b.tag_boost))
    query = _Q.boolean_query([(_O.Should, c) for c in clauses]) if clauses else None
    return Plan(query=query, words=list(dict.fromkeys(words + cjk)), stems=stems)
