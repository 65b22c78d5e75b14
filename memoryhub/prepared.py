"""Statements prepared on the server, for the read path's repeated SQL (docs/operations.md
"PostgreSQL", docs/atoms.md "Read path costs").

PostgreSQL plans a statement each time it runs it. For the few large statements an atom read
or search sends (a graph level, a closure, a lexical lookup), planning cost more than
running: 1.8 ms of a graph level's 5.9 ms at 100k atoms, and parsing its text more again.
A prepared statement is parsed once per connection, and after five runs the server may keep
one generic plan for it.

Django binds parameters on the client and never prepares. `prepared_cursor()` hands out a
Django cursor over psycopg's server-binding cursor on the same connection and transaction:
psycopg then prepares a statement the second time the connection runs its text (the
connection's `prepare_threshold`, set in settings from `DB_PREPARED_STATEMENTS`) and keeps
up to 100 per connection, dropping the least recently used. A statement is only worth
preparing when its text repeats, so the callers put a list of values in one array parameter
(`one_of`) instead of a placeholder per value. On SQLite both are the plain forms (Django's
cursor, a placeholder per value). With prepared statements off, PostgreSQL gets Django's
cursor, which binds the same array parameters on the client.

A generic plan is made from the statistics of its time and kept until the server invalidates
it, which an `ANALYZE` of its tables does (autovacuum's, or a manual one), or until its
connection closes. Web requests and MCP tool calls close a connection older than
`DB_CONN_MAX_AGE` (60 s by default) when they end, and Celery closes it around every task,
so there a plan lives about a minute at most. Where statistics lag
behind a table that grows fast (autovacuum off, or a bulk load between its rounds), a plan
made while the tables were small stays cheap-looking and slow: on a fresh database filled to
6,400 atoms on one connection without an analyze, reads took 97 ms median with plans kept
from the first atoms, against 55 ms planned each time (docs/benchmarks.md "Prepared
statements on PostgreSQL"); hence docs/operations.md "PostgreSQL" on autovacuum.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any, cast

from django.conf import settings
from django.db import connection
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper

if TYPE_CHECKING:
    from psycopg.adapt import Loader


def preparing() -> bool:
    """Whether statements run through `prepared_cursor` are prepared on the server."""
    return connection.vendor == "postgresql" and bool(settings.DB_PREPARED_STATEMENTS)


def prepared_cursor(*, binary: bool = False) -> CursorWrapper:
    """A cursor whose statements the server prepares (module docstring), or Django's own
    cursor where nothing is prepared. Like `connection.cursor()`: use it as a context manager.

    `binary`: PostgreSQL sends the rows in its binary format, where a bytea value travels as
    its bytes rather than as hex text twice its size, which the driver must then decode:
    200 stored vectors of 384 floats came in 2.4 ms instead of 4.5 (docs/atoms.md "Read path
    costs"). Use it only for statements whose columns are text or varchar, integers,
    booleans, bytea or jsonb: for those the values are the text format's, JSON as its text
    included (Django parses it, `_JsonbText`). Timestamps (Django's time zone loader is a
    text one), inet and types without a binary loader would come back otherwise. Where
    nothing is prepared, the rows come in the text format."""
    if not preparing():
        return connection.cursor()
    import psycopg  # only PostgreSQL gets here
    from django.db.backends.postgresql.psycopg_any import register_tzloader
    from psycopg.pq import Format

    # What connection.cursor() does around the driver's cursor: a health check, a
    # connection, the thread check, and (as the backend's create_cursor) the time zone of
    # timestamps when it differs from the connection's. The wrapper is Django's, so
    # execute_wrapper hooks, the query log and the error translation work as for any cursor.
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    connection.validate_thread_sharing()
    driver = connection.connection
    # The stubs type the argument as Django's wrapper; the methods wrap a driver cursor.
    raw = cast(Any, psycopg.Cursor(driver))
    loader = driver.adapters.get_loader(psycopg.adapters.types["timestamptz"].oid, Format.TEXT)
    if connection.timezone != getattr(loader, "timezone", None):
        register_tzloader(connection.timezone, raw)
    if binary:
        raw.format = Format.BINARY
        raw.adapters.register_loader("jsonb", _jsonb_text_loader())
    return _DebugCursor(raw, connection) if connection.queries_logged else connection.make_cursor(raw)


@cache
def _jsonb_text_loader() -> type[Loader]:
    """A loader of binary jsonb values that gives their JSON text, as Django's text loader
    does for the text format (psycopg's own binary loader would parse it, and Django's
    JSONField parses what it gets again)."""
    from psycopg import DataError
    from psycopg.adapt import Loader
    from psycopg.pq import Format

    class _JsonbText(Loader):
        format = Format.BINARY

        def load(self, data: Any) -> str:
            raw = bytes(data)
            if raw[:1] != b"\x01":  # the only version of jsonb's binary format
                raise DataError("unknown jsonb binary format version")
            return raw[1:].decode()

    return _JsonbText


class _DebugCursor(CursorDebugWrapper):
    """Django's query log (DEBUG, tests that count statements) with each statement's text as
    written, placeholders unfilled: after a prepared statement runs, the driver's cursor keeps
    no query text for Django to log."""

    def execute(self, sql: Any, params: Any = None) -> Any:
        with self.debug_sql(sql, params):
            return CursorWrapper.execute(self, sql, params)


def one_of(values: Sequence[Any]) -> tuple[Callable[[str], str], list[Any]]:
    """A test "column is one of `values`" and its parameters: one array parameter on
    PostgreSQL, so that the statement's text does not change with the number of values
    (`= ANY(%s)`: the planner expects a short array and looks the rows up by index), a
    placeholder per value on SQLite, which has no arrays."""
    if connection.vendor == "postgresql":
        return (lambda column: f"{column} = ANY(%s)"), [list(values)]
    marks = ", ".join(["%s"] * len(values))
    return (lambda column: f"{column} IN ({marks})"), list(values)
