"""Text as the index analyzes it, for every part that compares words: English words lower-cased
and stemmed (Snowball), Snowball's English stop words, and Hangul/Han/Kana runs kept apart
(their bigrams). Ranking reads queries with it, the link graph its anchor text; capture
(capture/entry.py) reads an entry's keywords with it, so that both agree with the index."""

from __future__ import annotations

import tantivy

from ..store.index import CJK_RUN

EN = (
    tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
    .filter(tantivy.Filter.remove_long(40))
    .filter(tantivy.Filter.lowercase())
    .filter(tantivy.Filter.stemmer("english"))
    .build()
)
"""The default fields' analyzer: words lower-cased and stemmed, those over 40 bytes dropped."""

STOP = set(EN.analyze(
    "i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her hers "
    "herself it its itself they them their theirs themselves what which who whom this that these those am is are "
    "was were be been being have has had having do does did doing a an the and but if or because as until while "
    "of at by for with about against between into through during before after above below to from up down in out "
    "on off over under again further then once here there when where why how all any both each few more most "
    "other some such no nor not only own same so than too very can will just should now"))
"""Snowball's English stop words: in a query of other words they weigh little, never make a
pair of neighbours (`top of a note` pairs `top` with `note`) and are not needed for a note to
hold all of the query. The index keeps them: `"to be or not to be"` still finds its line."""


def split(text: str) -> tuple[list[str], list[str]]:
    """(English stems, CJK runs) of a piece of query text."""
    cjk = [w.lower() for w in CJK_RUN.findall(text)]
    stems = list(dict.fromkeys(EN.analyze(CJK_RUN.sub(" ", text))))
    return stems, cjk


def bigrams(run: str) -> list[str]:
    """A Hangul/Han/Kana run as the index's bigram fields hold it (`가치관` gives 가치, 치관)."""
    return [run[i : i + 2] for i in range(len(run) - 1)] or [run]


def terms(text: str) -> list[str]:
    """Search terms of a piece of text: English stems and CJK bigrams (for anchor text). The
    link graph is handed this function; its saved file is stale when this module changes
    (store/graph_file.py rules)."""
    stems, cjk = split(text)
    return stems + [g for run in cjk for g in bigrams(run)]
