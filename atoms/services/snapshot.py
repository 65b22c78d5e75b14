"""One snapshot for a recall (docs/atoms.md "Candidates"): statistics, channel hits and the
re-read of candidates must agree with each other.

SQLite gives that with one transaction (a write lock held by another connection waits, a
reader sees one state). PostgreSQL's default READ COMMITTED takes a new snapshot per
statement, so the outermost transaction of a read or search is made REPEATABLE READ: the
driver opens it with `BEGIN ISOLATION LEVEL REPEATABLE READ`, one statement, where a SET
TRANSACTION after the BEGIN was a second round trip (docs/benchmarks.md "PostgreSQL round
trips (2026-12-02)"); the connection's own level is set back right after. Such a
transaction may fail with a serialization error when a concurrent request inserts the same
refs; the request holds no state of its own outside the transaction, so it is simply run
again (at most ATTEMPTS times).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

import psycopg
from django.db import OperationalError, connection, transaction
from psycopg import IsolationLevel

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
    driver = connection.connection  # psycopg's connection: idle, Django's autocommit is on
    previous = driver.isolation_level
    driver.isolation_level = IsolationLevel.REPEATABLE_READ  # the next BEGIN names it; no statement now
    try:
        with transaction.atomic():
            yield
    finally:
        try:
            driver.isolation_level = previous
        except psycopg.Error:  # not idle (a broken connection): no later transaction may inherit the level
            connection.close()


def _serialization_failure(exc: OperationalError) -> bool:
    return getattr(exc.__cause__, "sqlstate", None) == SERIALIZATION_FAILURE


def retried(function: Callable[P, R]) -> Callable[P, R]:
    """Run `function` again after a serialization failure of its own outermost transaction."""

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        for attempt in range(1, ATTEMPTS + 1):
            outermost = not connection.in_atomic_block
            try:
                return function(*args, **kwargs)
            except OperationalError as exc:
                if not (outermost and _serialization_failure(exc)) or attempt == ATTEMPTS:
                    raise
        raise AssertionError("unreachable")

    return wrapper
