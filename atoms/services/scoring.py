"""The seed match m(x) of read and search (docs/atoms.md "Match"; docs/atoms.md "Match").

    part(s, x) = (w_sem·semantic(s, x) + w_lex·lexical(s, x)) / (w_sem + w_lex)

when the tenant has a provider, x has a valid index entry and v_s exists; otherwise
lexical(s, x), the normalized BM25 of atoms.core.bm25. m(x) is the mean over kinds of the
mean part over that kind's non-blank texts (atoms.core.text.match). Everything here is
computed in Python from integers and stored vectors, so a candidate's score does not depend
on the database or on which other candidates were found.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from atoms.core.bm25 import LexicalQuery, Statistics, keyed_counts, query_terms
from atoms.core.text import match
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


def seed_matches(kinds: Mapping[str, Sequence[str]], revisions: Sequence[Revision], stats: Statistics,
                 cosine_of: Callable[[Revision], Cosine], weights: Weights) -> dict[str, float]:
    """revision id → m(x) for every revision given."""
    queries: dict[str, LexicalQuery] = {}  # per signal text: its terms and their idf, once
    out: dict[str, float] = {}
    for revision in revisions:
        counts, length = keyed_counts(revision.body)
        cosine = cosine_of(revision)

        def part(text: str, counts: dict[str, int] = counts, length: int = length, cosine: Cosine = cosine) -> float:
            query = queries.get(text)
            if query is None:
                query = queries[text] = LexicalQuery(query_terms(text), stats)
            return weights.part(query.score(counts, length), cosine(text))

        out[revision.id] = match(kinds, part)
    return out
