"""Celery tasks of the tenant stores: thin wrappers that take ids and call one service."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from celery import shared_task
from django.db import OperationalError

from memoryhub.enqueue import enqueue_now
from tenants.memory.files import files_sync
from tenants.memory.rescan import due_volume_ids, rescan_volume


@shared_task(name="tenants.memory_files_sync", autoretry_for=(OSError,), max_retries=5, retry_backoff=2,
             retry_backoff_max=300, retry_jitter=True)
def memory_files_sync(volume_id: int) -> dict[str, str]:
    """Write both memory files of a volume (queued on commit of every store change). A full
    disk or a busy network mount is retried; a later change queues another run anyway."""
    return files_sync(volume_id)


@shared_task(name="tenants.memory_rescan_volume", autoretry_for=(OperationalError,), max_retries=3,
             retry_backoff=5, retry_jitter=True)
def memory_rescan_volume(volume_id: int) -> dict[str, Any] | None:
    """Rescan one volume's entries with the current threat patterns; records findings."""
    result = rescan_volume(volume_id)
    return asdict(result) if result else None


@shared_task(name="tenants.memory_rescan_due")
def memory_rescan_due() -> int:
    """Daily (beat): queue a rescan for each volume scanned with an older pattern set."""
    ids = due_volume_ids()
    for volume_id in ids:
        # A broker hiccup part-way keeps the rest in the outbox instead of failing the run.
        enqueue_now(memory_rescan_volume, volume_id)
    return len(ids)
