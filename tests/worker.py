"""Start a real Celery worker process against the test database (needs Redis)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from memoryhub.celery import app as celery_app
from memoryhub.models import WorkerHeartbeat

ROOT = Path(__file__).resolve().parent.parent


def _test_database_url() -> str:
    db = connection.settings_dict
    if db["ENGINE"] == "django.db.backends.sqlite3":
        name = str(db["NAME"])
        if name == ":memory:" or "mode=memory" in name:
            pytest.skip("the test database is in-memory SQLite, which a worker process cannot open")
        return f"sqlite:///{name}"
    user = db.get("USER") or ""
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    return f"postgres://{auth}{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"


@contextmanager
def celery_worker(*, concurrency_pool: str = "solo", ready_timeout: float = 60,
                  extra_args: Sequence[str] = (), env: dict[str, str] | None = None,
                  queue: str | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """A worker consuming a queue of its own, so nothing else steals or leaves its tasks.
    `extra_args` go to `celery worker` as they are (for example `--concurrency=1`). Pass the
    `queue` of an earlier worker to start its successor (each worker has its own node name)."""
    if not settings.REDIS_URL:
        pytest.skip("REDIS_URL is not set: real-worker tests need Redis and a worker process")
    node = f"{queue}-{uuid.uuid4().hex[:6]}@{socket.gethostname()}" if queue else None
    queue = queue or f"test-{uuid.uuid4().hex[:10]}"
    node = node or f"{queue}@{socket.gethostname()}"
    environment = {
        **os.environ,
        "DATABASE_URL": _test_database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "CELERY_TASK_DEFAULT_QUEUE": queue,
        # No model in workers unless a test asks for one (`env={"ATOMS_EMBEDDING": "fake"}`).
        "ATOMS_EMBEDDING": "none",
        **(env or {}),
    }
    log = (ROOT / "var" / f"{queue}.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "memoryhub", "worker", f"--pool={concurrency_pool}",
         "-Q", queue, "-n", node, "--without-gossip", "--without-mingle", "--loglevel=info", *extra_args],
        cwd=ROOT, env=environment, stdout=log, stderr=subprocess.STDOUT,
    )
    previous_queue = celery_app.conf.task_default_queue
    celery_app.conf.task_default_queue = queue
    try:
        deadline = time.monotonic() + ready_timeout
        while not WorkerHeartbeat.objects.filter(hostname=node).exists():
            if proc.poll() is not None:
                raise RuntimeError(f"worker exited with {proc.returncode}; see {log.name}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"worker not ready after {ready_timeout}s; see {log.name}")
            time.sleep(0.2)
        yield proc
    finally:
        celery_app.conf.task_default_queue = previous_queue
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
