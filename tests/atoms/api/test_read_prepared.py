"""On PostgreSQL a read's and a search's large statements are prepared on the server, and the
answers are those of the same statements bound on the client (memoryhub/prepared.py,
docs/atoms.md "Read path costs")."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from atoms.api.read import answer_read
from atoms.api.search import answer_search
from atoms.principal import Principal
from tests.atoms.api import query_corpus
from tests.atoms.api.helpers import AtomsClient, prepared_statements, ranked


def test_a_repeated_read_and_search_run_prepared_statements_with_the_same_answers(
        I: AtomsClient, W: AtomsClient, X: AtomsClient, settings: Any) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only (set DATABASE_URL to a postgres:// URL): SQLite prepares nothing on a server")
    query_corpus.build(I.key, W.key, X.key, 4)
    caller = Principal.for_key(W.key)
    word = query_corpus.word(2)
    read_body = {"state": {"query": f"needle root {word}", "context": f"shared middle {word}"}}
    search_body = {"query": f"needle root {word}"}

    before = prepared_statements()  # building the corpus issued refs
    settings.DB_PREPARED_STATEMENTS = False
    plain = [ranked(answer_read(caller, read_body)), ranked(answer_search(caller, search_body))]
    assert prepared_statements() == before

    settings.DB_PREPARED_STATEMENTS = True
    for _ in range(3):  # prepared on the second run; the third runs the prepared statements
        prepared = [ranked(answer_read(caller, read_body)), ranked(answer_search(caller, search_body))]
        assert prepared == plain
    statements = prepared_statements() - before
    assert any('"atoms_slot"' in s for s in statements)  # a graph level
    assert any("atoms_lexicalposting" in s for s in statements)  # the lexical lookup
    assert any("atoms_lexicalterm" in s for s in statements)  # the statistics
    assert plain[0] and plain[1]
