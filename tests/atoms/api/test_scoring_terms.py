"""seed_matches counts only the query terms of a body when it can (atoms.services.scoring):
every score equals the one computed from the body's full keyed term counts."""

from __future__ import annotations

import pytest

from atoms.core.bm25 import LexicalQuery, Statistics, keyed_counts, query_terms
from atoms.core.text import match
from atoms.models import Revision
from atoms.services import scoring
from atoms.services.scoring import COUNTED_TERMS, Weights, seed_matches

LONG = "x" * 70  # longer than bm25.TERM_BYTES: stored and asked as a digest key
BODIES = [
    "tea tea kettle boils; the kettle sings",
    f"a {LONG} word and tea",
    "日本語のお茶 tea 日本",
    "nothing in common here",
    "",
    " ".join(f"w{i}" for i in range(50)) + " tea w3 w3",
]
STATS = Statistics(docs=40, length=900, df={"tea": 5, "kettle": 2, LONG: 1, "日本": 3, "w3": 4})


def reference(kinds: dict[str, list[str]], body: str) -> float:
    """m(x) from the full keyed counts, the way it was computed before."""
    counts, length = keyed_counts(body)
    return match(kinds, lambda text: LexicalQuery(query_terms(text), STATS).score(counts, length))


@pytest.mark.parametrize("kinds", [
    {"query": ["tea kettle"]},
    {"query": ["tea kettle w3 boils"]},  # past the default COUNTED_TERMS: one Counter
    {"query": ["kettle"], "context": ["日本 tea", "  "], "observations": ["w3 sings", "boils tea"]},
    {"query": [f"{LONG} tea"]},  # a digest key among the asked terms: the full counts
    {"query": [" ".join(f"w{i}" for i in range(COUNTED_TERMS + 5))]},  # too many terms to count one by one
    {"query": ["   "]},
])
@pytest.mark.parametrize("counted", [0, COUNTED_TERMS, 100], ids=["counter", "default", "by-term"])
def test_scores_equal_those_of_the_full_term_counts(kinds: dict[str, list[str]], counted: int,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Every case through both ways of counting: one Counter of the body, and term by term."""
    monkeypatch.setattr(scoring, "COUNTED_TERMS", counted)
    revisions = [Revision(id=f"revision:{i}", body=body) for i, body in enumerate(BODIES)]
    got = seed_matches(kinds, revisions, STATS, lambda revision: lambda text: None, Weights(0.7, 0.3))
    assert got == {revision.id: reference(kinds, revision.body) for revision in revisions}
    assert any(score > 0 for score in got.values()) or all(not text.strip() for texts in kinds.values()
                                                          for text in texts)
