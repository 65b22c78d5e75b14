"""Concurrent writers in separate processes on PostgreSQL: the row locks and compare-and-set of docs/kv.md
"How it is stored"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from tenants.models import KvConfig, KvEntry
from tests.worker import _test_database_url

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _postgres_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the multi-process scenarios run on PostgreSQL (set DATABASE_URL to a postgres:// URL)")


def run_clients(specs: list[tuple[str, int]], raw_key: str, agent: str = "bot") -> list[dict]:
    env = {**os.environ, "DATABASE_URL": _test_database_url(), "ALLOWED_HOSTS": "testserver"}
    start_at = time.time() + 3  # let every process finish importing Django first
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.tenants.kv.concurrent_client", scenario, raw_key, agent, str(start_at), str(i)],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        for scenario, i in specs
    ]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    connection.close()
    return results


@pytest.fixture
def raw_key(acme, make_key) -> str:
    return make_key(acme, "agent")[1]


def test_eight_processes_setting_200_distinct_keys_each_all_land(raw_key):
    results = run_clients([("distinct", i) for i in range(8)], raw_key)
    assert all(r["failed"] == 0 for r in results), results
    assert KvEntry.objects.count() == 1600
    assert set(KvEntry.objects.values_list("version", flat=True)) == {1}


def test_two_writers_doing_100_compare_and_set_increments_count_exactly(raw_key, client_for):
    client_for(raw_key).put("/api/v1/agents/bot/namespaces/default/keys/counter", {"value": 0}, format="json")
    run_clients([("cas", 0), ("cas", 1)], raw_key)
    entry = KvEntry.objects.get(key="counter")
    assert (entry.value, entry.version) == ("200", 201)


def test_four_writers_setting_one_new_key_50_times_reach_version_200(raw_key):
    results = run_clients([("same-key", i) for i in range(4)], raw_key)
    assert all(r["failed"] == 0 for r in results), results
    assert KvEntry.objects.get(key="shared").version == 200


def test_reads_during_heavy_overwrites_see_only_complete_values(raw_key, client_for):
    client_for(raw_key).post("/api/v1/agents/bot/memory", {"action": "set", "key": "big", "value": "Z" * 100_000}, format="json")
    results = run_clients([("overwrite", 0), ("overwrite", 1), ("read", 2)], raw_key)
    # The writers must really write, or a reader of one unchanging value proves nothing.
    assert [(r["writes"], r["failed"]) for r in results[:2]] == [(60, 0), (60, 0)], results
    assert KvEntry.objects.get(key="big").version == 1 + 2 * 60
    assert (results[2]["torn"], results[2]["failed"]) == (0, 0), results[2]


def test_the_key_limit_holds_exactly_under_concurrent_creates(acme, raw_key):
    KvConfig.objects.update_or_create(tenant=acme, defaults={"keys_per_namespace": 5})
    results = run_clients([("limit", i) for i in range(8)], raw_key)
    statuses = sorted(r["status"] for r in results)
    assert statuses == [200] * 5 + [413] * 3
    assert KvEntry.objects.count() == 5
