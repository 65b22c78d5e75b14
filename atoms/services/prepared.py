"""Prepared statements on PostgreSQL for the read path's repeated statements (docs/operations.md
"PostgreSQL", "Prepared statements").

Django's cursors bind parameters on the client, so PostgreSQL parses, analyses and plans each
statement every time it arrives. For the graph and closure level statements (a UNION ALL of
four joins) that took about 2 ms of a 3.5 ms statement at 100k atoms; the rows themselves take
under 1 ms. `prepared_cursor` gives those statements a cursor that binds on the server, on
which psycopg prepares a statement the first time it runs (`prepare_threshold` 0, set by the
settings when DB_PREPARED_STATEMENTS is on) and later runs only send the parameters. Such a
statement must keep the same text whatever its inputs: `member` writes a list as one array
parameter there, never as an IN list whose length changes the text.

SQLite, and PostgreSQL with prepared statements off, get Django's usual cursor and IN lists.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import connection
from django.db.backends.utils import CursorWrapper


def prepares() -> bool:
    """Whether this connection prepares statements (PostgreSQL with DB_PREPARED_STATEMENTS)."""
    return connection.vendor == "postgresql" and connection.settings_dict["OPTIONS"].get("prepare_threshold") is not None


def member(column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
    """`column` is one of `values`: `column = ANY(%s)` with one array parameter on PostgreSQL
    (the same text for any number of values), an IN list elsewhere. `values` must not be empty."""
    if connection.vendor == "postgresql":
        return f"{column} = ANY(%s)", [list(values)]
    return f"{column} IN ({', '.join(['%s'] * len(values))})", list(values)


@contextmanager
def prepared_cursor() -> Iterator[CursorWrapper]:
    """A cursor whose statements PostgreSQL keeps prepared for this connection, wrapped as
    `connection.cursor()` wraps its own (query log, execute wrappers, Django's database
    errors); `connection.cursor()` itself when statements are not prepared."""
    if not prepares():
        with connection.cursor() as cursor:
            yield cursor
        return
    from django.db.backends.postgresql.base import ServerBindingCursor

    # What connection.cursor() does before it makes its cursor (BaseDatabaseWrapper._cursor).
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    with connection.wrap_database_errors:
        inner = ServerBindingCursor(connection.connection)
    with connection._prepare_cursor(inner) as cursor:
        yield cursor
