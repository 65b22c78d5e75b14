"""Rows 50-51: writers of one tenant queue on the volume row; tenants never wait for each other."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.db import connection, connections, transaction

from tenants.models import MemoryVersion, MemoryVolume
from tests.tenants.memory.helpers import Mem, set_volume
from tests.worker import _test_database_url

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _postgres_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the multi-process scenarios run on PostgreSQL (set DATABASE_URL to a postgres:// URL)")


def test_thirty_two_concurrent_adds_from_four_processes_all_land(acme, make_key):
    """Thirty-two concurrent adds from four processes all land, one version each."""
    set_volume(acme, approval="off")
    _, raw = make_key(acme, "agent")
    env = {**os.environ, "DATABASE_URL": _test_database_url(), "ALLOWED_HOSTS": "testserver"}
    start_at = str(time.time() + 3)
    procs = [subprocess.Popen([sys.executable, "-m", "tests.tenants.memory.concurrent_client", raw, start_at, str(i), "8"],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(4)]
    for proc in procs:
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err[-2000:]
        assert json.loads(out.strip().splitlines()[-1])["statuses"] == [200] * 8
    volume = MemoryVolume.objects.get(tenant=acme)
    assert len(volume.memory_entries) == 32 and volume.memory_version == 32
    assert sorted(MemoryVersion.objects.filter(volume=volume).values_list("number", flat=True)) == list(range(1, 33))


def test_a_locked_tenant_does_not_block_another(acme, globex, make_key, client_for):
    """One tenant's lock never blocks another tenant's writes."""
    set_volume(acme, approval="off")
    set_volume(globex, approval="off")
    b = Mem(client_for(make_key(globex, "agent")[1]))
    locked = threading.Event()
    release = threading.Event()

    def hold_a() -> None:
        with transaction.atomic():
            MemoryVolume.objects.select_for_update().get(tenant=acme)
            locked.set()
            release.wait(timeout=30)
        connections.close_all()

    holder = threading.Thread(target=hold_a)
    holder.start()
    try:
        assert locked.wait(timeout=10)
        assert b.add("memory", "globex fact").status_code == 200
        # Had B waited for A's lock it would only return after the holder gave up (30 s)
        # and ended; the holder still holding proves B never waited.
        assert holder.is_alive() and not release.is_set()
    finally:
        release.set()
        holder.join()
    assert MemoryVolume.objects.get(tenant=globex).memory_entries == ["globex fact"]
    assert MemoryVolume.objects.get(tenant=acme).memory_entries == []
