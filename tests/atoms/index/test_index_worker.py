"""Indexing by real Celery workers: checkpoints survive a worker restart, and a task
redelivered after its pool child was killed does not write anything twice."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from django.db import connection

from atoms.models import AtomStore, IndexCheckpoint, IndexEntry, Revision
from atoms.tasks_index import index_sweep, index_update
from tests.atoms.api.helpers import create
from tests.worker import celery_worker

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

PAUSING = "tests.atoms.index.providers.PausingFake"
ATOMS = 40  # more than one step of STEP events
STEP = 32  # the worker's ATOMS_INDEX_TASK_STEP here: the tests need a second step


@pytest.fixture(autouse=True)
def _postgres_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("a worker process needs a database it can share: set DATABASE_URL to a postgres:// URL")


@pytest.fixture
def fault_dir(tmp_path: Path, monkeypatch, settings) -> Path:
    folder = tmp_path / "faults"
    folder.mkdir()
    monkeypatch.setenv("MH_FAULT_DIR", str(folder))
    monkeypatch.setenv("ATOMS_EMBEDDING_EXTRA_PROVIDERS", PAUSING)
    monkeypatch.setenv("ATOMS_VECTOR_INDEX_ROOT", str(tmp_path / "vectors"))
    settings.ATOMS_EMBEDDING_PROVIDERS = [*settings.ATOMS_EMBEDDING_PROVIDERS, PAUSING]
    return folder


def wait_for(condition: Callable[[], object], what: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting for {what}")
        time.sleep(0.1)


def encodes(folder: Path) -> list[tuple[int, int]]:
    """(pid, texts) of each encode call, in order."""
    files = sorted(folder.glob("encode-*"), key=lambda p: int(p.name.split("-")[1]))
    out = []
    for path in files:
        text = path.read_text()
        while not text:  # created, not yet written
            time.sleep(0.01)
            text = path.read_text()
        pid, count = text.split()
        out.append((int(pid), int(count)))
    return out


def corpus(I) -> str:
    """Write ATOMS atoms (lexical only), then switch the tenant to the pausing provider."""
    I.ok_write(*[create(f"a{i}", f"note {i}") for i in range(ATOMS)])
    store = AtomStore.objects.get()
    store.config = {"embedding": {"class": PAUSING, "options": {}}}
    store.save(update_fields=["config"])
    return "default"


def drained() -> bool:
    latest = Revision.objects.order_by("-visible_seq", "-id").first()
    checkpoint = IndexCheckpoint.objects.filter(policy="default").first()
    return checkpoint is not None and (checkpoint.seq, checkpoint.revision_id) == (latest.visible_seq, latest.id)


def test_a_task_killed_after_its_first_step_runs_again_and_writes_nothing_twice(I, fault_dir, monkeypatch):
    monkeypatch.setenv("MH_FAULT_PAUSE", "encode-2")  # step 1 commits, step 2 hangs in the encoder
    monkeypatch.setenv("ATOMS_INDEX_TASK_STEP", str(STEP))  # the worker takes it from its environment
    policy = corpus(I)
    tenant_id = AtomStore.objects.get().tenant_id
    with celery_worker(concurrency_pool="prefork", extra_args=["--concurrency=1"]):
        index_update.delay(tenant_id, policy)
        wait_for(lambda: len(encodes(fault_dir)) >= 2, "the second step to start encoding")
        first_step = dict(IndexEntry.objects.values_list("atom_id", "id"))
        assert len(first_step) == STEP
        os.kill(encodes(fault_dir)[1][0], signal.SIGKILL)
        wait_for(drained, "the redelivered task to drain the feed")
    calls = encodes(fault_dir)
    assert [count for _, count in calls] == [STEP, ATOMS - STEP, ATOMS - STEP]
    assert calls[2][0] != calls[1][0]  # a fresh pool child ran it again
    entries = dict(IndexEntry.objects.values_list("atom_id", "id"))
    assert len(entries) == ATOMS == IndexEntry.objects.count()
    assert all(entries[atom] == entry_id for atom, entry_id in first_step.items())  # not rewritten


def test_checkpoints_survive_a_worker_restart(I, fault_dir, monkeypatch):
    monkeypatch.setenv("MH_FAULT_PAUSE", "encode-2")
    monkeypatch.setenv("ATOMS_INDEX_TASK_STEP", str(STEP))
    policy = corpus(I)
    tenant_id = AtomStore.objects.get().tenant_id
    with celery_worker(concurrency_pool="solo") as worker:
        index_update.delay(tenant_id, policy)
        wait_for(lambda: len(encodes(fault_dir)) >= 2, "the second step to start encoding")
        worker.kill()  # the whole worker dies; its message stays unacknowledged in Redis
        worker.wait()
    checkpoint = IndexCheckpoint.objects.get(policy="default")
    assert checkpoint.seq == 1 and checkpoint.revision_id
    first_step = dict(IndexEntry.objects.values_list("atom_id", "id"))
    monkeypatch.setenv("MH_FAULT_PAUSE", "")
    with celery_worker(concurrency_pool="solo"):
        index_sweep.delay()  # the beat's sweep finds the backlog and queues the feed again
        wait_for(drained, "a new worker to finish from the checkpoint")
    calls = encodes(fault_dir)
    assert [count for _, count in calls] == [STEP, ATOMS - STEP, ATOMS - STEP]
    entries = dict(IndexEntry.objects.values_list("atom_id", "id"))
    assert len(entries) == ATOMS
    assert all(entries[atom] == entry_id for atom, entry_id in first_step.items())
