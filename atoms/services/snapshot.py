"""One snapshot for a recall (docs/atoms.md "Candidates"): statistics, channel hits and the
re-read of candidates must agree with each other.

SQLite gives that with one transaction (a write lock held by another connection waits, a
reader sees one state). PostgreSQL's default READ COMMITTED takes a new snapshot per
statement, so the outermost transaction of a read or search is made REPEATABLE READ: the
driver opens it with `BEGIN ISOLATION LEVEL REPEATABLE READ`, one statement, where a SET
TRANSACTION after the BEGIN was a second round trip (docs/benchmarks.md "PostgreSQL round
trips (2026-12-02)"); the connection's own level is set back as soon as the transaction
has committed, before any on_commit hook runs, or after it rolled back.

That path needs Django's autocommit on and the driver idle. With autocommit off
(`set_autocommit(False)`) the transaction is the caller's and ends when the caller commits:
psycopg cannot change the level before then. There a `SET TRANSACTION ISOLATION LEVEL
REPEATABLE READ` makes the caller's transaction REPEATABLE READ, as its first statement
(PostgreSQL refuses it after a query, and inside the savepoint atomic() opens there), so the
caller's own statements after the read run at that level too; a caller that already ran a
statement in its transaction gets PostgreSQL's error (Django's InternalError) and must roll
back. Inside atomic() the read joins the caller's transaction at the caller's level.

An outermost REPEATABLE READ transaction may fail with a serialization error when a
concurrent request inserts the same refs; the request holds no state of its own outside the
transaction, so it is simply run again (at most ATTEMPTS times). In the caller's transaction
it is not run again: the snapshot would be the same.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, ParamSpec, TypeVar

import psycopg
from django.db import Error, OperationalError, connection, transaction
from psycopg import IsolationLevel
from psycopg.pq import TransactionStatus

ATTEMPTS = 3
SERIALIZATION_FAILURE = "40001"

P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def read_snapshot() -> Iterator[None]:
    """transaction.atomic(), REPEATABLE READ on PostgreSQL when it is the outermost block."""
    if connection.in_atomic_block or connection.vendor != "postgresql":
        with transaction.atomic():
            yield
        return
    connection.ensure_connection()
    driver = connection.connection
    if not connection.get_autocommit():  # the caller's transaction: its first statement names the level
        _set_transaction_repeatable_read()
        with transaction.atomic():
            yield
        return
    if driver.info.transaction_status != TransactionStatus.IDLE:  # atomic() raises Django's error
        with transaction.atomic():
            _set_transaction_repeatable_read()
            yield
        return
    previous = driver.isolation_level
    _set_level(driver, IsolationLevel.REPEATABLE_READ)  # the next BEGIN names it; no statement now
    try:
        with transaction.atomic():
            # Registered first, so it runs first after the commit: a hook opening a
            # transaction of its own gets the connection's level, not this one.
            transaction.on_commit(functools.partial(_set_level, driver, previous))
            yield
    finally:
        try:
            _set_level(driver, previous)  # after a rollback (no hook ran) or a hook's failure
        except Error:  # not idle (a broken connection): no later transaction may inherit the level
            connection.close()


def _set_level(driver: psycopg.Connection[Any], level: IsolationLevel | None) -> None:
    """The level psycopg's next BEGIN names; it raises unless the connection is idle."""
    with connection.wrap_database_errors:
        driver.isolation_level = level


def _set_transaction_repeatable_read() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")


def _serialization_failure(exc: OperationalError) -> bool:
    return getattr(exc.__cause__, "sqlstate", None) == SERIALIZATION_FAILURE


def retried(function: Callable[P, R]) -> Callable[P, R]:
    """Run `function` again after a serialization failure of its own outermost transaction."""

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        for attempt in range(1, ATTEMPTS + 1):
            # The caller's transaction (atomic or autocommit off) keeps its snapshot: no rerun.
            outermost = not connection.in_atomic_block and connection.get_autocommit()
            try:
                return function(*args, **kwargs)
            except OperationalError as exc:
                if not (outermost and _serialization_failure(exc)) or attempt == ATTEMPTS:
                    raise
        raise AssertionError("unreachable")

    return wrapper
