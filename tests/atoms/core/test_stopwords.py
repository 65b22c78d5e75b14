"""Query stopwords of lexical relevance (docs/atoms.md "Lexical relevance"): the query terms of
a signal text leave the list's words out, for the lexical channel and bm25 alike (both take
their terms from `query_terms`); a text made only of stopwords keeps its terms."""

from __future__ import annotations

from typing import Any

import pytest

from atoms.core import bm25
from atoms.core.bm25 import Statistics, lexical, query_terms
from atoms.core.stopwords import GLASGOW, LISTS, LUCENE
from atoms.core.text import index_terms


@pytest.mark.parametrize("words", [GLASGOW, LUCENE], ids=["glasgow", "lucene"])
def test_every_stopword_is_one_term_in_the_form_terms_take(words: frozenset[str]) -> None:
    # A word that the tokenizer would split or fold could never equal a query term.
    for word in words:
        assert index_terms(word) == [word]


def test_list_sizes_match_their_sources() -> None:
    assert len(GLASGOW) == 318  # scikit-learn ENGLISH_STOP_WORDS
    assert len(LUCENE) == 33  # Lucene EnglishAnalyzer.ENGLISH_STOP_WORDS_SET
    assert LUCENE <= GLASGOW | {"such", "will", "no", "not"}
    assert LISTS["none"] == frozenset()


def test_query_terms_leave_stopwords_out(monkeypatch: Any) -> None:
    monkeypatch.setattr(bm25, "STOPWORDS", LUCENE)
    assert query_terms("When did Melanie run a charity race in the park?") == [
        "when",
        "did",
        "melanie",
        "run",
        "charity",
        "race",
        "park",
    ]


def test_a_text_made_only_of_stopwords_keeps_its_terms(monkeypatch: Any) -> None:
    monkeypatch.setattr(bm25, "STOPWORDS", LUCENE)
    assert query_terms("To be or not to be") == ["to", "be", "or", "not"]
    stats = Statistics(docs=2, length=8, df={"to": 1, "be": 1})
    assert lexical(query_terms("to be"), stats, {"to": 1, "be": 1}, 4) > 0


def test_without_stopwords_every_term_is_kept(monkeypatch: Any) -> None:
    monkeypatch.setattr(bm25, "STOPWORDS", frozenset())
    assert query_terms("the park") == ["the", "park"]


def test_stopwords_change_the_score_not_the_document_terms(monkeypatch: Any) -> None:
    # A body without "the" no longer loses the share of "the": lexical is the share of the
    # content terms' weight alone, while |x| still counts every word of the body.
    stats = Statistics(docs=4, length=16, df={"the": 3, "park": 1})
    counts, length = bm25.keyed_counts("walked in a park")
    monkeypatch.setattr(bm25, "STOPWORDS", frozenset())
    with_the = lexical(query_terms("the park"), stats, counts, length)
    monkeypatch.setattr(bm25, "STOPWORDS", LUCENE)
    without = lexical(query_terms("the park"), stats, counts, length)
    assert (counts, length) == ({"walked": 1, "in": 1, "a": 1, "park": 1}, 4)
    assert without > with_the
