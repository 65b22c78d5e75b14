"""On PostgreSQL the hybrid read path's vector statements are prepared and read in the binary
row format, with the answers of the same statements bound on the client in the text format
(memoryhub/prepared.py, docs/atoms.md "Read path costs")."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from atoms.models import AtomStore, IndexEntry
from tests.atoms.api.helpers import AtomsClient, create, prepared_statements, ranked
from tests.atoms.index.helpers import drain


def test_hybrid_search_and_read_prepare_their_vector_statements_with_the_same_answers(
        acme: Any, I: AtomsClient, X: AtomsClient, settings: Any) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only (set DATABASE_URL to a postgres:// URL): SQLite prepares nothing on a server")
    # One semantic candidate per text: the other matching atoms come from the lexical channel
    # alone, whose statement brings their entries with their rows.
    store = AtomStore.get_or_create_for(acme)
    store.config = {"retrieval": {"semanticCandidates": 1}}
    store.save()
    I.ok_write(*[create(f"c{i}", f"coffee beans batch {i} roasted {'dark' if i % 2 else 'light'}")
                 for i in range(6)])
    drain(X)
    assert IndexEntry.objects.count() == 6
    calls = [("search", {"query": "coffee roasted dark"}),
             ("read", {"state": {"query": "coffee beans light"}, "options": {"tokens": 512}})]

    settings.DB_PREPARED_STATEMENTS = False
    before = prepared_statements()
    plain = [X.post(op, body).json() for op, body in calls]
    assert prepared_statements() == before
    assert all(answer["diagnostics"]["index"] == "ready" for answer in plain)  # every candidate had its vectors

    settings.DB_PREPARED_STATEMENTS = True
    for _ in range(3):  # prepared on the second run; the third runs the prepared statements
        prepared = [X.post(op, body).json() for op, body in calls]
        assert [ranked(a) for a in prepared] == [ranked(a) for a in plain]
    assert len(plain[0]["items"]) == 6 and plain[1]["items"]
    statements = prepared_statements() - before
    entry_statements = [s for s in statements if "atoms_indexentry" in s]
    assert any("JOIN" in s for s in entry_statements)  # the semantic channel's eligibility
    assert any("LEFT JOIN" in s and "ROW_NUMBER" in s for s in entry_statements)  # the lexical hits' vectors
    # The indexing path's look-up of entries (no vectors) is not prepared: drains grow the table.
    I.ok_write(create("late", "coffee beans late batch"))
    drain(X)
    drain(X)
    assert not [s for s in prepared_statements() if "atoms_indexentry" in s and "atom_id = ANY" in s and "\"vectors\"" not in s]
