"""The merged lexical lookup (atoms.services.candidates.lexical_channels, one UNION ALL of
the per-text lookups; docs/atoms.md "Candidates") answers, text by text, exactly what one
lookup per text (`lexical_channel`) answers: BM25 lookups and a common-term lookup side by
side, ties by atom id, and the cut at k. Runs on SQLite and on PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest

from atoms.core.bm25 import query_terms
from atoms.models import Revision
from atoms.services import candidates as provider
from tests.atoms.api.helpers import AtomsClient, create

TEXTS = [
    "needle",  # five heads, two exact ties: cut at k
    "kettle needle",  # a BM25 sum over two terms
    "common",  # every term above SKIP_DOCS: the common-term lookup (approximate)
    "common kettle",  # the common term skipped, kettle looked up
    "absent words",  # no term known: no lookup at all
    "needle",  # a repeated text: the same hits twice
]


def test_the_merged_lookup_returns_what_one_lookup_per_text_returns(
    I: AtomsClient, acme: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    I.ok_write(
        create("a", "needle common"), create("b", "needle common"),  # a tie: same tf, same length
        create("c", "needle needle kettle common"), create("d", "kettle kettle common w1 w2"),
        create("e", "needle w1 w2 w3 w4 w5 common"), create("f", "common common"),
        create("g", "needle kettle"),
    )
    monkeypatch.setattr(provider, "SKIP_DOCS", 5)  # "common" (6 heads) is left out of BM25 lookups
    terms = list(dict.fromkeys(term for text in TEXTS for term in query_terms(text)))
    stats = provider.load_statistics(acme.pk, ["default"], terms)
    assert stats.df["common"] > provider.SKIP_DOCS >= stats.df["needle"]
    for k in (2, 3, 50):
        common = {"tenant_id": acme.pk, "stats": stats, "read_policies": ["default"], "require_approval": False,
                  "k": k}
        merged = provider.lexical_channels(texts=TEXTS, **common)
        alone = [provider.lexical_channel(text=text, **common) for text in TEXTS]
        assert merged == alone  # pairs in order, full, skipped, approximate
        assert [sorted(hits.rows) for hits in merged] == [sorted(hits.rows) for hits in alone]
        assert all(set(hits.rows) == {revision for _, revision in hits.pairs} for hits in merged)
        needle, _, only_common, skipped, absent, again = merged
        assert len(needle.pairs) == min(k, 5) and needle.full == (k <= 5) and again == needle
        assert only_common.approximate and only_common.pairs and skipped.skipped and absent.pairs == []
    assert Revision.objects.filter(body="needle common").count() == 2
