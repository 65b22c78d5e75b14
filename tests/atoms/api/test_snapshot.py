"""read and search take one snapshot (docs/atoms.md "Candidates"): REPEATABLE READ on
PostgreSQL when theirs is the outermost transaction, and a serialization failure reruns them."""

from __future__ import annotations

import pytest
from django.db import OperationalError, connection

from atoms.services.snapshot import read_snapshot, retried


@pytest.mark.django_db(transaction=True)
def test_the_outermost_read_transaction_is_repeatable_read_on_postgresql():
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL only: one SQLite transaction is one snapshot already")
    with read_snapshot(), connection.cursor() as cursor:
        cursor.execute("SHOW transaction_isolation")
        assert cursor.fetchone()[0] == "repeatable read"


class _Failure(Exception):
    sqlstate = "40001"


def _serialization_failure() -> OperationalError:
    error = OperationalError("could not serialize access")
    error.__cause__ = _Failure()
    return error


@pytest.mark.django_db(transaction=True)
def test_a_serialization_failure_runs_the_request_again_a_bounded_number_of_times():
    calls: list[int] = []

    @retried
    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise _serialization_failure()
        return "done"

    assert flaky() == "done" and len(calls) == 3

    @retried
    def always() -> str:
        calls.append(1)
        raise _serialization_failure()

    calls.clear()
    with pytest.raises(OperationalError):
        always()
    assert len(calls) == 3


@pytest.mark.django_db(transaction=True)
def test_other_errors_are_not_retried():
    calls: list[int] = []

    @retried
    def broken() -> None:
        calls.append(1)
        raise OperationalError("disk full")

    with pytest.raises(OperationalError):
        broken()
    assert calls == [1]
