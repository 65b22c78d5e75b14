"""One snapshot for a recall (docs/atoms.md "Candidates"): statistics, channel hits and the
re-read of candidates must agree with each other.

SQLite gives that with one transaction (a write lock held by another connection waits, a
reader sees one state). PostgreSQL's default READ COMMITTED takes a new snapshot per
statement, so the outermost transaction of a read or search is made REPEATABLE READ. Such a
transaction may fail with a serialization error when a concurrent request inserts the same
refs; the request holds no state of its own outside the transaction, so it is simply run
again (at most ATTEMPTS times).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

from django.db import OperationalError, connection, transaction

ATTEMPTS = 3
SERIALIZATION_FAILURE = "40001"

P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def read_snapshot() -> Iterator[None]:
    """transaction.atomic(), REPEATABLE READ on PostgreSQL when it is the outermost block."""
    outermost = not connection.in_atomic_block
    with transaction.atomic():
        if outermost and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        yield


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
