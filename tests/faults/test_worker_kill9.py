"""A worker killed outright (kill -9 of the parent and its pool child): nobody is left to
requeue the task, and the Redis broker delivers it again once the visibility timeout has
passed (docs/operations.md "Processes"). The test shortens the timeout to seconds through
CELERY_VISIBILITY_TIMEOUT; with Celery's default of an hour it would time out."""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from memoryhub.celery import app as celery_app
from tests.faults.test_worker_killed import runs, wait_for
from tests.worker import celery_worker

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

VISIBILITY = 8
# The visibility timeout must exceed the task time limit (settings refuse otherwise).
WORKER_ENV = {"CELERY_VISIBILITY_TIMEOUT": str(VISIBILITY), "CELERY_TASK_TIME_LIMIT": "6",
              "CELERY_TASK_SOFT_TIME_LIMIT": "5"}
WORKER_ARGS = ["--concurrency=1", "-I", "tests.faults.blocking_task"]


@pytest.fixture(autouse=True)
def _shared_database() -> None:
    if not settings.REDIS_URL:
        pytest.skip("REDIS_URL is not set: this test needs the Redis broker and real worker processes")
    if connection.vendor != "postgresql":
        pytest.skip("a worker process needs a database it can share: set DATABASE_URL to a postgres:// URL")


@pytest.fixture
def fault_dir(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("MH_FAULT_DIR", str(tmp_path))  # the worker processes inherit the environment
    return tmp_path


def test_a_task_whose_worker_is_killed_outright_runs_again_on_the_next_worker(fault_dir):
    queue = f"test-kill9-{uuid.uuid4().hex[:8]}"
    with celery_worker(concurrency_pool="prefork", queue=queue, extra_args=WORKER_ARGS, env=WORKER_ENV) as first:
        celery_app.send_task("tests.faults.block_once", queue=queue)
        wait_for(lambda: runs(fault_dir, "start"), "the task to start")
        started = time.monotonic()
        child = runs(fault_dir, "start")[0]
        assert child != first.pid  # it runs in a pool child
        # The parent first: a parent that outlived its child would requeue the task itself.
        os.kill(first.pid, signal.SIGKILL)
        os.kill(child, signal.SIGKILL)
        first.wait(timeout=10)
    with celery_worker(concurrency_pool="prefork", queue=queue, extra_args=WORKER_ARGS, env=WORKER_ENV):
        # Redelivered once the message is VISIBILITY s old, at the next sweep (every 10 s).
        wait_for(lambda: runs(fault_dir, "done"), "the task to be delivered again", timeout=VISIBILITY + 10 + 30)
    again = time.monotonic() - started
    starts = runs(fault_dir, "start")
    assert len(starts) == 2 and starts[1] != child, starts
    assert again >= VISIBILITY - 1, f"redelivered after {again:.1f} s, before the visibility timeout"
