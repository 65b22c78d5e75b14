"""BM25 lexical relevance, normalized to [0, 1) (docs/atoms.md "Lexical relevance").

Pure arithmetic over integers the storage layer hands in, so the same candidate gets the
bit-identical score on SQLite and PostgreSQL: statistics are summed as integers over the
reader's policies, terms are visited in first-seen order, and nothing here depends on
which other candidates were found.

    bm25(s, x)    = Σ_t idf(t) · tf(t,x)·(k1+1) / (tf(t,x) + k1·(1 - b + b·|x|/avgdl))
    idf(t)        = ln(1 + (N - n_t + 0.5) / (n_t + 0.5))
    lexical(s, x) = bm25(s, x) / Σ_t idf(t)·(k1+1)          (0 when that sum is 0)

over the distinct terms t of the signal text s; N, n_t and avgdl = L / N come from the
per-(tenant, policy) statistics summed over the read policies.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from atoms.core.text import distinct_terms, term_counts

K1: Final = 1.2
B: Final = 0.75


@dataclass(frozen=True)
class Statistics:
    """Corpus statistics over the reader's policies: `docs` = ΣN active heads, `length` = ΣL
    their term counts, `df[t]` = Σn_t heads containing t (absent: 0)."""

    docs: int
    length: int
    df: Mapping[str, int] = field(default_factory=dict)

    @property
    def avgdl(self) -> float:
        return self.length / self.docs if self.docs else 0.0

    def idf(self, term: str) -> float:
        n = self.df.get(term, 0)
        return math.log(1.0 + (self.docs - n + 0.5) / (n + 0.5))


class LexicalQuery:
    """lexical(s, ·) for one signal text: the idf of each term and Σ idf·(k1+1) depend only on
    s and the statistics, so they are computed once for all the candidates it scores (the
    same operations in the same order as `lexical`, hence the same floats)."""

    __slots__ = ("avgdl", "ceiling", "idfs", "terms")

    def __init__(self, terms: Sequence[str], stats: Statistics) -> None:
        self.terms = list(terms)
        self.idfs = [stats.idf(term) for term in self.terms]
        self.avgdl = stats.avgdl
        ceiling = 0.0
        for idf in self.idfs:
            ceiling += idf * (K1 + 1.0)
        self.ceiling = ceiling

    def score(self, counts: Mapping[str, int], length: int) -> float:
        """lexical(s, x) for x's term `counts` and `length`."""
        if not self.terms:
            return 0.0
        avgdl = self.avgdl
        # |x| / avgdl when the statistics know nothing (an empty corpus): treat x as average.
        ratio = length / avgdl if avgdl > 0 else 1.0
        norm = K1 * (1.0 - B + B * ratio)
        score = 0.0
        for term, idf in zip(self.terms, self.idfs, strict=True):
            tf = counts.get(term, 0)
            if tf:
                score += idf * tf * (K1 + 1.0) / (tf + norm)
        if self.ceiling <= 0.0:
            return 0.0
        return score / self.ceiling


def lexical(terms: Sequence[str], stats: Statistics, counts: Mapping[str, int], length: int) -> float:
    """lexical(s, x) for the distinct query `terms` of s and x's term `counts` and `length`."""
    return LexicalQuery(terms, stats).score(counts, length)


# Terms longer than this many UTF-8 bytes are stored as a digest: every key then fits one
# b-tree column on both databases, and equal terms still give equal keys.
TERM_BYTES: Final = 60
SHORT_TERM: Final = TERM_BYTES // 4


def term_key(term: str) -> str:
    """The stored form of a term: itself, or `#` + 40 hex digits of its SHA-1 when long
    (a term never starts with `#`, a word token has no punctuation)."""
    raw = term.encode()
    if len(raw) <= TERM_BYTES:
        return term
    return "#" + hashlib.sha1(raw, usedforsecurity=False).hexdigest()


def keyed_counts(text: str) -> tuple[dict[str, int], int]:
    """(term key → tf, |x|) of a body: what the index stores for it and BM25 reads."""
    counts, length = term_counts(text)
    # A term of at most SHORT_TERM characters is at most TERM_BYTES bytes (4 per character):
    # its key is itself, so most bodies need no encoding at all.
    if all(len(term) <= SHORT_TERM for term in counts):
        return counts, length
    keyed: dict[str, int] = {}
    for term, count in counts.items():
        key = term_key(term)
        keyed[key] = keyed.get(key, 0) + count
    return keyed, length


# Query terms left out of lexical relevance, for the lexical channel and bm25 alike
# (docs/atoms.md "Lexical relevance"). Document terms, the stored index and the statistics
# keep every word: only the terms a signal text asks for are filtered. Empty: no stopwords.
STOPWORDS: frozenset[str] = frozenset()


def query_terms(text: str) -> list[str]:
    """The distinct term keys of a signal text, first seen first, less the STOPWORDS; a text
    made only of stopwords keeps them all (it still matches what it names)."""
    terms = list(dict.fromkeys(term_key(term) for term in distinct_terms(text)))
    stopwords = STOPWORDS
    if not stopwords:
        return terms
    kept = [term for term in terms if term not in stopwords]
    return kept or terms
