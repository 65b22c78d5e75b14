"""The merged lexical lookup (atoms.services.candidates.lexical_channels, one UNION ALL of
the per-text lookups; docs/atoms.md "Candidates") answers, text by text, exactly what one
lookup per text (`lexical_channel`) answers: BM25 lookups and a common-term lookup side by
side, ties by atom id, and the cut at k. Runs on SQLite and on PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

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


def test_on_postgresql_the_array_weights_score_as_the_case_form_does(
    I: AtomsClient, acme: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL takes each term's BM25 weight from an array by the term's position, so that
    the statement's text does not change with the number of terms (memoryhub/prepared.py);
    SQLite uses a CASE. Both forms give every hit the same score."""
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only (set DATABASE_URL to a postgres:// URL): SQLite has only the CASE form")
    I.ok_write(create("a", "needle kettle kettle"), create("b", "kettle needle needle w1"),
               create("c", "pin needle kettle w1 w2"), create("d", "pin pin"), create("e", "kettle"))
    texts = ["needle kettle pin", "pin kettle", "kettle"]
    stats = provider.load_statistics(acme.pk, ["default"], [t for text in texts for t in query_terms(text)])

    def scored() -> list[list[tuple[str, float]]]:
        out = []
        for text in texts:
            lookup = provider._lookup(tenant_id=acme.pk, text=text, stats=stats, read_policies=["default"],
                                      require_approval=False, k=10)
            assert isinstance(lookup, provider._Lookup)
            with connection.cursor() as cursor:
                cursor.execute(f"SELECT x.id, x.o FROM ({lookup.sql}) x ORDER BY x.o DESC, x.id", lookup.params)
                out.append([(revision_id, round(score, 12)) for revision_id, score in cursor.fetchall()])
        return out

    arrays = scored()
    monkeypatch.setattr(provider, "_weights", provider.case_weights)
    assert scored() == arrays
    assert [len(hits) for hits in arrays] == [5, 5, 4]
    assert len({score for _, score in arrays[0]}) > 2  # the weights differ by term: the test can tell them apart
