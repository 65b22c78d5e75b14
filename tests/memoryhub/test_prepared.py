"""Statements prepared on the server (memoryhub/prepared.py, docs/operations.md "PostgreSQL")."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from memoryhub.prepared import one_of, prepared_cursor, preparing

SQL_MARK = "memoryhub prepared test"  # a comment that names this test's statements on the server


def _postgresql_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only (set DATABASE_URL to a postgres:// URL): SQLite prepares nothing on a server")


def _server_statements() -> list[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall() if SQL_MARK in row[0]]


def _run_listed(values: list[int]) -> list[int]:
    test, params = one_of(values)
    with prepared_cursor() as cursor:
        cursor.execute(f"SELECT n FROM generate_series(1, 9) n WHERE {test('n')} ORDER BY n /* {SQL_MARK} */"
                       if connection.vendor == "postgresql" else
                       f"WITH s(n) AS (VALUES (1), (2), (3), (4), (5), (6), (7), (8), (9)) "
                       f"SELECT n FROM s WHERE {test('n')} ORDER BY n", params)
        return [row[0] for row in cursor.fetchall()]


@pytest.mark.django_db
def test_one_of_finds_the_listed_values_on_either_database() -> None:
    assert _run_listed([2, 5, 9]) == [2, 5, 9]
    assert _run_listed([4]) == [4]
    assert _run_listed([10, 11]) == []


@pytest.mark.django_db
def test_a_list_of_any_length_is_one_prepared_statement() -> None:
    _postgresql_only()
    assert preparing()
    for values in ([1], [1, 2], [1, 2, 3], [4, 5, 6, 7]):
        _run_listed(values)
    # The driver prepares a text the second time it runs it: one text for every length.
    assert len(_server_statements()) == 1


@pytest.mark.django_db
def test_nothing_is_prepared_when_prepared_statements_are_off(settings: object) -> None:
    _postgresql_only()
    settings.DB_PREPARED_STATEMENTS = False  # type: ignore[attr-defined]
    assert not preparing()
    for values in ([1], [1, 2], [3]):
        assert _run_listed(values) == values  # the array parameter bound on the client
    assert _server_statements() == []


@pytest.mark.django_db
def test_the_query_log_keeps_each_statements_text() -> None:
    with CaptureQueriesContext(connection) as captured:
        for _ in range(3):  # the third run is of a prepared statement on PostgreSQL
            assert _run_listed([3]) == [3]
    assert len(captured.captured_queries) == 3
    assert all("generate_series" in q["sql"] or "VALUES" in q["sql"] for q in captured.captured_queries)


@pytest.mark.django_db
def test_binary_rows_hold_the_values_of_text_rows() -> None:
    _postgresql_only()
    assert preparing()
    sql = (f"SELECT CAST(%s AS jsonb), CAST(%s AS bytea), %s, CAST(%s AS bigint), CAST(%s AS text), "
           f"CAST(NULL AS jsonb), CAST(%s AS integer) /* {SQL_MARK} */")
    params: list[Any] = ['{"b": [1, 2.5, "é"], "a": null}', b"\x00\x01\xff" * 600, True, 2**40, "tëxt", 7]
    with prepared_cursor(binary=True) as cursor:
        cursor.execute(sql, params)
        binary = cursor.fetchone()
        assert cursor.cursor.pgresult.fformat(1) == 1  # the rows came in the binary format
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        text = cursor.fetchone()
    # JSON stays its text, which Django's JSONField parses; bytea its bytes.
    assert binary == text
    assert isinstance(binary[0], str)
    assert bytes(binary[1]) == params[1]
