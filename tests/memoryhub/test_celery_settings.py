"""The Redis visibility timeout outlasts every task run and every retry countdown, so a
message is delivered twice only when its worker is gone (docs/operations.md "Processes")."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings

import atoms.tasks
import memoryhub.tasks
import tenants.tasks
from memoryhub.celery import app

TASK_MODULES = (atoms.tasks, memoryhub.tasks, tenants.tasks)  # imported: their tasks are registered

ROOT = Path(__file__).resolve().parents[2]
PRINT = "from django.conf import settings; print(settings.CELERY_BROKER_TRANSPORT_OPTIONS['visibility_timeout'])"


def _settings(**env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CELERY_") and k != "REDIS_URL"}
    return subprocess.run([sys.executable, "manage.py", "shell", "-v", "0", "-c", PRINT], cwd=ROOT,
                          env={**clean, **env}, capture_output=True, text=True, timeout=120, check=False)


def test_the_default_visibility_timeout_is_twice_the_time_limit_plus_the_longest_countdown():
    assert _settings().stdout.strip() == "900"
    assert _settings(CELERY_TASK_TIME_LIMIT="100", CELERY_TASK_SOFT_TIME_LIMIT="90").stdout.strip() == "500"
    assert _settings(CELERY_VISIBILITY_TIMEOUT="1200").stdout.strip() == "1200"


def test_a_visibility_timeout_within_the_task_time_limit_is_refused():
    result = _settings(CELERY_VISIBILITY_TIMEOUT="300")
    assert result.returncode != 0
    assert "CELERY_VISIBILITY_TIMEOUT must be longer than CELERY_TASK_TIME_LIMIT" in result.stderr


def ours() -> list:
    return [task for name, task in app.tasks.items() if name.split(".")[0] in {"memoryhub", "tenants", "atoms"}]


def test_tasks_take_ids_only():
    """Celery logs a task's arguments (received, succeeded, failed): they must never be
    content or key-value names (docs/operations.md "Logs"). A new parameter needs a look."""
    allowed = {"self", "tenant_id", "volume_id", "atom_id", "policy", "config", "full", "wait", "username"}
    for task in ours():
        assert set(inspect.signature(task.run).parameters) <= allowed, task.name


def test_no_task_waits_longer_for_a_retry_than_the_visibility_timeout_allows():
    """A retry is a new message held unacknowledged by a worker until its countdown ends,
    then run: countdown plus time limit must stay within the timeout. The default leaves
    300 s for countdowns; a task that could wait longer must raise it."""
    budget = settings.CELERY_VISIBILITY_TIMEOUT - settings.CELERY_TASK_TIME_LIMIT
    assert budget >= 300
    assert len(ours()) >= 8
    for task in ours():
        if not getattr(task, "autoretry_for", ()):
            continue
        # celery/app/autoretry.py: min(retry_backoff_max, retry_backoff * 2 ** retries).
        backoff, backoff_max = int(getattr(task, "retry_backoff", 0)), int(getattr(task, "retry_backoff_max", 600))
        longest = min(backoff_max, backoff * 2 ** (task.max_retries - 1)) if backoff else task.default_retry_delay
        assert longest <= 300, (task.name, longest)
