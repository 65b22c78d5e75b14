"""Enqueue Celery work after a commit without losing it when the broker is down.

A change that has committed must neither fail nor lose its follow-up work (file projection,
rescans, indexing) because Redis is unreachable. `enqueue_on_commit` sends the task once the
transaction commits; if the broker refuses it, an `OutboxTask` row keeps it, and the beat task
`memoryhub.outbox_sweep` sends it when the broker is back.

Delivery is at least once: a sweep that dies between sending and deleting a row sends it again
on the next run. Every task is idempotent (it takes ids and reads the newest state), so that is
safe, and it is why equal calls may share one outbox row.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from celery import Task
from django.db import connection, transaction
from django.utils import timezone

from memoryhub.celery import app as celery_app
from memoryhub.digests import digest_of
from memoryhub.models import OutboxTask

logger = logging.getLogger("memoryhub.outbox")

# Rows one sweep sends at most; the next sweep (30 s later) takes the rest.
SWEEP_BATCH = 500


def task_named(name: str) -> Task:
    """The registered task called `name`. Services enqueue tasks by name so that a service
    module never imports the tasks module that imports it back (docs/architecture.md
    "Layers"); a process that has not imported the apps' `tasks` modules yet (a web
    process) imports them here, as a worker does at its start."""
    task = celery_app.tasks.get(name)
    if task is None:
        celery_app.loader.import_default_modules()
        task = celery_app.tasks[name]
    return task


def enqueue_on_commit(task: Task | str, /, *args: Any, **kwargs: Any) -> None:
    """Send `task(*args, **kwargs)` after the current transaction commits (at once outside one).
    `task` is a task or its registered name.

    Arguments must be JSON-able (ids, not objects). Never raises into the caller: a broker
    failure becomes an outbox row, and anything else is logged by Django's robust hook.
    """

    def send() -> None:
        enqueue_now(task_named(task) if isinstance(task, str) else task, *args, **kwargs)

    transaction.on_commit(send, robust=True)


def enqueue_now(task: Task, /, *args: Any, **kwargs: Any) -> bool:
    """Send the task now. True if the broker took it; False if it went to the outbox."""
    if task.app.conf.task_always_eager:
        # Embedded mode: there is no broker, the task runs right here and its own errors
        # are its own (the robust on-commit hook logs them).
        task.apply_async(args=args, kwargs=kwargs, ignore_result=True)
        return True
    try:
        task.apply_async(args=args, kwargs=kwargs, ignore_result=True)
    except Exception as exc:  # noqa: BLE001 - kombu, redis and socket errors all mean "not queued"
        error = f"{type(exc).__name__}: {exc}"
        logger.warning("broker unavailable; %s%r kept in the outbox (%s)", task.name, tuple(args), error)
        outbox_record(task_name=task.name, args=list(args), kwargs=dict(kwargs), error=error)
        return False
    return True


def outbox_record(*, task_name: str, args: list[Any], kwargs: dict[str, Any], error: str) -> None:
    """Keep one row per distinct call. A later failure of the same call moves its
    `requested_at` forward (see `outbox_sweep` for why)."""
    digest = digest_of({"task": task_name, "args": args, "kwargs": kwargs})
    row = OutboxTask(task_name=task_name, args=args, kwargs=kwargs, digest=digest, requested_at=timezone.now(),
                     last_error=error[:500])
    OutboxTask.objects.bulk_create([row], update_conflicts=True, unique_fields=["digest"],
                                   update_fields=["requested_at", "last_error"])


def _send(row: OutboxTask) -> None:
    task = celery_app.tasks.get(row.task_name)
    if task is not None:  # keeps the options the task was declared with (queue, routing)
        task.apply_async(args=row.args, kwargs=row.kwargs, ignore_result=True)
    else:
        celery_app.send_task(row.task_name, args=row.args, kwargs=row.kwargs, ignore_result=True)


@dataclass(frozen=True)
class SweepResult:
    sent: int
    failed: int  # 1 when the broker refused; the sweep stops at the first refusal
    remaining: int


def outbox_sweep(*, limit: int = SWEEP_BATCH) -> SweepResult:
    """Send the oldest outbox rows, deleting each row the broker took.

    Rows are locked while they are sent (skipping rows another sweep holds), so two sweeps
    never send the same row. A row is deleted only if no commit asked for the same call
    again after the sweep read it; otherwise it stays for the next sweep, because the task
    just sent may have read the state from before that commit.
    """
    sent = failed = 0
    with transaction.atomic():
        rows = OutboxTask.objects.order_by("id")
        if connection.features.has_select_for_update_skip_locked:
            rows = rows.select_for_update(skip_locked=True)
        for row in rows[:limit]:
            try:
                _send(row)
            except Exception as exc:  # noqa: BLE001 - the broker is still down: keep the rest for later
                failed = 1
                error = f"{type(exc).__name__}: {exc}"[:500]
                OutboxTask.objects.filter(pk=row.pk).update(attempts=row.attempts + 1, last_error=error)
                logger.warning("outbox sweep: broker unavailable (%s); %s rows wait", error, OutboxTask.objects.count())
                break
            OutboxTask.objects.filter(pk=row.pk, requested_at=row.requested_at).delete()
            sent += 1
    remaining = OutboxTask.objects.count()
    if sent:
        logger.info("outbox sweep: sent %s queued tasks, %s remain", sent, remaining)
    return SweepResult(sent=sent, failed=failed, remaining=remaining)
