"""The seed match m(x) of read and search (docs/atoms.md "Match"; docs/atoms.md "Match").

    part(s, x) = (w_sem·semantic(s, x) + w_lex·lexical(s, x)) / (w_sem + w_lex)

when the tenant has a provider, x has a valid index entry and v_s exists; otherwise
lexical(s, x), the normalized BM25 of atoms.core.bm25. m(x) is the mean over kinds of the
mean part over that kind's non-blank texts (atoms.core.text.match). Everything here is
computed in Python from integers and stored vectors, so a candidate's score does not depend
on the database or on which other candidates were found.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from atoms.core.bm25 import LexicalQuery, Statistics, keyed_counts, query_terms
from atoms.core.text import body_terms, is_blank
from atoms.models import Revision

Cosine = Callable[[str], float | None]


@dataclass(frozen=True)
class Weights:
    semantic: float
    lexical: float

    def part(self, lexical_score: float, cosine: float | None) -> float:
        total = self.semantic + self.lexical
        if cosine is None or total <= 0:
            return lexical_score
        semantic = min(1.0, max(0.0, cosine))
        return (self.semantic * semantic + self.lexical * lexical_score) / total


# Up to this many distinct query terms a body's tf is counted term by term (`tuple.count`, one
# C pass over the body per term); past it one `Counter` of the body (one pass hashing every
# term) is cheaper. Both costs grow with the body's length, so the crossover is a number of
# terms, not a product with the length: bench/scoring_counts.py, CPU time, best of 3,
# alternated, on the 2-core development machine while other test runs shared it, found
# counting by term 2-4x faster at 1-2 terms for bodies of 10 to 12,000 terms, even with
# Counter at 4 (0.9-1.25x), and 1.2-12x slower from 8 terms (32 terms, 100-term body: 39 µs
# against 5 µs; 12,000 terms: 4.8 ms against 0.55 ms).
COUNTED_TERMS = 3


def seed_matches(kinds: Mapping[str, Sequence[str]], revisions: Sequence[Revision], stats: Statistics,
                 cosine_of: Callable[[Revision], Cosine], weights: Weights) -> dict[str, float]:
    """revision id → m(x) for every revision given.

    BM25 reads a body's tf only for the signal's query terms. When none of those is a digest
    key (`bm25.term_key` of a long term, which starts with `#`, never a word character), a
    body term has that key only if it is that very term, so its tf is the number of times it
    occurs among the body's terms: counted for the few terms asked, not for every term of
    the body (the same integers, hence the same floats as `keyed_counts`): term by term for
    up to COUNTED_TERMS terms, else in one Counter of the body's terms."""
    queries: dict[str, LexicalQuery] = {}  # per signal text: its terms and their idf, once
    present: list[list[tuple[str, LexicalQuery]]] = []  # per kind present: its non-blank texts
    for texts in kinds.values():
        pairs = []
        for text in texts:
            if not is_blank(text):
                query = queries.get(text)
                if query is None:
                    query = queries[text] = LexicalQuery(query_terms(text), stats)
                pairs.append((text, query))
        if pairs:
            present.append(pairs)
    asked = list(dict.fromkeys(term for query in queries.values() for term in query.terms))
    plain = not any(term.startswith("#") for term in asked)
    by_term = plain and len(asked) <= COUNTED_TERMS
    part = weights.part
    out: dict[str, float] = {}
    for revision in revisions:
        if not present:
            out[revision.id] = 0.0
            continue
        if by_term:
            terms = body_terms(revision.body)
            counts, length = {term: terms.count(term) for term in asked}, len(terms)
        elif plain:
            terms = body_terms(revision.body)
            counts, length = Counter(terms), len(terms)
        else:
            counts, length = keyed_counts(revision.body)
        cosine = cosine_of(revision)
        # atoms.core.text.match, unrolled over the texts kept above: the same sums in the same order.
        kind_means = []
        for pairs in present:
            parts = [part(query.score(counts, length), cosine(text)) for text, query in pairs]
            kind_means.append(math.fsum(parts) / len(parts))
        out[revision.id] = math.fsum(kind_means) / len(kind_means)
    return out
