"""The graph and closure level statements stay prepared on PostgreSQL (atoms.services.prepared,
docs/operations.md "Prepared statements"): one text whatever the lists' lengths, prepared on
the connection, while Django's own statements are not; IN lists on SQLite."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection

from atoms.services.prepared import member, prepared_cursor, prepares
from tests.atoms.api.helpers import create
from tests.atoms.api.test_read import ok_read

LEVEL_MARK = "s.revision_id, s.position, s.role"


@pytest.fixture
def postgres(db: None) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("prepared statements are PostgreSQL's: this run is on SQLite (set DATABASE_URL)")
    if not prepares():
        pytest.skip("DB_PREPARED_STATEMENTS is off here")


def _prepared() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


def _chain(I: Any, length: int, word: str) -> None:
    """`length` atoms, each requiring the one before it: a closure `length` levels deep."""
    changes = [create(f"{word}0", f"{word} root")]
    for i in range(1, length):
        changes.append(create(f"{word}{i}", f"{word} step {i}", links={"requires": {"local": f"{word}{i - 1}"}}))
    I.ok_write(*changes)


def test_the_level_statements_have_one_text_whatever_the_lists_lengths(postgres, I) -> None:
    _chain(I, 3, "tea")
    _chain(I, 9, "coffee")
    ok_read(I, {"query": "tea"})
    after_one = {s for s in _prepared() if LEVEL_MARK in s}
    ok_read(I, {"query": "coffee"})
    ok_read(I, {"query": "tea coffee"})
    after_three = {s for s in _prepared() if LEVEL_MARK in s}
    assert after_one, "a read prepared no level statement"
    # Reads whose seed lists and closure levels have other lengths add no text: there are
    # three at most (with the linking slots' branch, without it, that branch alone).
    assert after_one <= after_three and len(after_three) <= 3
    assert all("= ANY(" in s and " IN (" not in s for s in after_three)


def test_djangos_own_statements_are_not_prepared(postgres, I) -> None:
    I.ok_write(create("a", "green tea"))
    ok_read(I, {"query": "green tea"})
    assert not [s for s in _prepared() if "atoms_atomstore" in s or "auth_user" in s]


def test_the_cursor_binds_on_the_client_when_statements_are_not_prepared(db: None, monkeypatch) -> None:
    options = dict(connection.settings_dict["OPTIONS"])
    options.pop("prepare_threshold", None)
    monkeypatch.setitem(connection.settings_dict, "OPTIONS", options)
    assert not prepares()
    with prepared_cursor() as cursor:
        assert cursor.cursor.__class__.__name__ != "ServerBindingCursor"
        cursor.execute("SELECT 1")
        assert cursor.fetchone()[0] == 1


def test_a_list_is_one_array_parameter_on_postgresql_and_an_in_list_elsewhere(db: None) -> None:
    sql, params = member("s.revision_id", ["r1", "r2", "r3"])
    if connection.vendor == "postgresql":
        assert (sql, params) == ("s.revision_id = ANY(%s)", [["r1", "r2", "r3"]])
    else:
        assert (sql, params) == ("s.revision_id IN (%s, %s, %s)", ["r1", "r2", "r3"])
