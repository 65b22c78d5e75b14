"""Celery tasks of the Atom engine: thin wrappers that take ids and call one service."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.db import OperationalError

from atoms.services.purge_slices import PurgeStorageError, note_state, purge_in_slices
from memoryhub.enqueue import enqueue_now


@shared_task(bind=True, name="atoms.purge_run", autoretry_for=(PurgeStorageError, OperationalError),
             max_retries=5, retry_backoff=5, retry_backoff_max=300, retry_jitter=True)
def purge_run(self: Any, tenant_id: int, atom_id: str, username: str) -> dict[str, object]:
    """Continue the pending purge of `atom_id` (raised by a person's confirmed request) in
    `maxWork` slices; queues itself again while work is left. Idempotent: a purge that is
    finished, or was never started, makes this a no-op."""
    try:
        run = purge_in_slices(tenant_id=tenant_id, atom_id=atom_id, username=username)
    except (PurgeStorageError, OperationalError):
        if self.request.retries >= self.max_retries:
            note_state(tenant_id, atom_id, "failed", error="storage error; retries used up")
        raise
    if run.state == "continue":
        enqueue_now(purge_run, tenant_id, atom_id, username)
    return {"state": run.state, "calls": run.calls, "erasureId": run.erasure_id}

# The semantic index's tasks live in their own module; importing it here registers them
# with Celery's autodiscovery, which only looks at `<app>.tasks`.
from atoms import tasks_index  # noqa: E402, F401
