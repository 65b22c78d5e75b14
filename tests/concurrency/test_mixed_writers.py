"""KV, memory-file and Atom writers of two tenants in several processes at once, on
PostgreSQL: nothing is lost, and no deadlock or serialization failure reaches a client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from atoms.models import Atom, Revision
from tenants.models import KvEntry, MemoryVersion, MemoryVolume, Tenant
from tests.tenants.memory.helpers import set_volume
from tests.worker import _test_database_url

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.django_db(transaction=True)

PER_TENANT = 3  # writer processes per tenant
COUNT = 20  # iterations per process


@pytest.fixture(autouse=True)
def _postgres_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the multi-process scenarios run on PostgreSQL (set DATABASE_URL to a postgres:// URL)")


def start_writers(keys: list[tuple[str, str]]) -> list[subprocess.Popen[str]]:
    env = {**os.environ, "DATABASE_URL": _test_database_url(), "ALLOWED_HOSTS": "testserver"}
    env.pop("REDIS_URL", None)  # tasks run in-process; this test is about the database
    env["ATOMS_EMBEDDING"] = "fake"  # so no process spends its time loading and running a model
    start_at = str(time.time() + 4)  # let every process finish importing Django first
    return [subprocess.Popen([sys.executable, "-m", "tests.concurrency.mixed_client", agent, ingest, start_at, str(i),
                              str(COUNT)], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for i, (agent, ingest) in enumerate(keys)]


def test_mixed_writers_of_two_tenants_lose_nothing_and_see_no_server_errors(acme, globex, make_key):
    keys = []
    for tenant in (acme, globex):
        # The volume exists with room for every fact; the KV agent and the Atom store do
        # not, so the writers also race to create them.
        set_volume(tenant, approval="off", memory_limit=100_000)
        keys += [(make_key(tenant, "agent")[1], make_key(tenant, "ingest")[1])] * PER_TENANT
    procs = start_writers(keys)
    results = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=600)
            assert proc.returncode == 0, err[-3000:]
            results.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for proc in procs:  # a failed or stuck run must not leave writers on the test database
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    connection.close()

    for result in results:
        assert result["failures"] == [], result
        for op, statuses in result["statuses"].items():
            assert statuses == {"200": COUNT}, (op, statuses)

    per_tenant = PER_TENANT * COUNT
    for tenant in Tenant.objects.filter(slug__in=["acme", "globex"]):
        assert KvEntry.objects.filter(agent__tenant=tenant).count() == per_tenant
        volume = MemoryVolume.objects.get(tenant=tenant)
        assert len(volume.memory_entries) == per_tenant and volume.memory_version == per_tenant
        numbers = sorted(MemoryVersion.objects.filter(volume=volume, target="memory").values_list("number", flat=True))
        assert numbers == list(range(1, per_tenant + 1))
        atoms = Atom.objects.filter(tenant=tenant)
        assert atoms.count() == per_tenant
        heads = Revision.objects.filter(atom__in=atoms, is_head=True)
        assert heads.count() == per_tenant and not heads.filter(body__endswith="draft").exists()
        seqs = list(Revision.objects.filter(tenant=tenant).values_list("seq", flat=True))
        assert sorted(seqs) == list(range(1, 2 * per_tenant + 1))  # one commit number per write: gap-free, none reused
