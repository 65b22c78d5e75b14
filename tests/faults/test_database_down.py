"""Database errors: 503 SERVICE_UNAVAILABLE in the API's error shape (a plain 503 page in the
UI), never a traceback, and nothing half-stored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.db import OperationalError, connection

from tenants.models import KvEntry
from tests.conftest import error_of
from tests.faults.conftest import closed_port

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def unreachable() -> dict[str, Any]:
    """One process whose DATABASE_URL points at a port nothing listens on."""
    env = {**os.environ, "DATABASE_URL": f"postgres://postgres@127.0.0.1:{closed_port()}/memoryhub",
           "ALLOWED_HOSTS": "testserver", "DEBUG": "false"}
    env.pop("REDIS_URL", None)  # this test is about the database alone
    proc = subprocess.run([sys.executable, "-m", "tests.faults.db_down_client"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", ["whoami", "kv_set", "memory_add", "atoms_read"])
def test_api_requests_to_an_unreachable_database_get_503_in_the_error_shape(unreachable, name):
    seen = unreachable[name]
    assert seen["status"] == 503, seen
    assert seen["type"] == "application/json"
    assert seen["retry_after"] == "5"
    body = json.loads(seen["body"])
    assert body == {"error": {"code": "SERVICE_UNAVAILABLE", "message": "The database is unavailable; retry later.",
                              "details": {}}}


def test_a_web_page_gets_a_plain_503_page_without_a_traceback(unreachable):
    seen = unreachable["login"]
    assert seen["status"] == 503, seen
    assert seen["type"].startswith("text/html")
    assert "Temporarily unavailable" in seen["body"]
    assert "Traceback" not in seen["body"] and "OperationalError" not in seen["body"]


def test_healthz_reports_the_database_down(unreachable):
    seen = unreachable["healthz"]
    assert seen["status"] == 503
    body = json.loads(seen["body"])
    assert body["status"] == "down"
    assert body["checks"]["database"]["status"] == "down"


@contextmanager
def failing(statement: Callable[[str], bool], error: type[Exception] = OperationalError) -> Iterator[list[str]]:
    """Raise `error` from the database for every statement the predicate picks."""
    hit: list[str] = []

    def wrapper(execute, sql, params, many, context):
        if statement(sql):
            hit.append(sql)
            raise error("server closed the connection unexpectedly")
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        yield hit


def test_a_connection_lost_mid_write_is_503_and_stores_nothing(acme, make_key, client_for):
    client = client_for(make_key(acme, "agent")[1])
    rpc = "/api/v1/agents/bot/memory"
    assert client.post(rpc, {"action": "set", "key": "before", "value": 1}, format="json").status_code == 200
    with failing(lambda sql: sql.startswith("INSERT") and "kventry" in sql) as hit:
        response = client.post(rpc, {"action": "set", "key": "lost", "value": 2}, format="json")
    assert hit, "the failure was never injected"
    assert response.status_code == 503
    assert error_of(response)["code"] == "SERVICE_UNAVAILABLE"
    assert b"Traceback" not in response.content
    assert list(KvEntry.objects.values_list("key", flat=True)) == ["before"]


def test_a_database_lost_while_checking_the_key_is_503_not_401(acme, make_key, client_for):
    client = client_for(make_key(acme, "agent")[1])
    with failing(lambda sql: "apikey" in sql):
        response = client.get("/api/v1/whoami")
    assert response.status_code == 503
    assert error_of(response)["code"] == "SERVICE_UNAVAILABLE"


def test_other_database_errors_stay_500_internal_without_a_traceback(acme, make_key, client_for):
    from django.db import DataError

    client = client_for(make_key(acme, "agent")[1])
    with failing(lambda sql: sql.startswith("INSERT") and "kventry" in sql, DataError):
        response = client.post("/api/v1/agents/bot/memory", {"action": "set", "key": "k", "value": 1}, format="json")
    assert response.status_code == 500
    assert error_of(response) == {"code": "INTERNAL", "message": "Internal error.", "details": {}}
