"""Tasks of the shared plumbing."""

from __future__ import annotations

import socket

from celery import shared_task
from django.utils import timezone

from memoryhub.enqueue import outbox_sweep as sweep_outbox
from memoryhub.models import WorkerHeartbeat


def heartbeat_record(*, hostname: str) -> None:
    WorkerHeartbeat.objects.update_or_create(hostname=hostname, defaults={"beat_at": timezone.now()})


@shared_task(name="memoryhub.heartbeat")
def heartbeat() -> str:
    """Periodic (beat, every 30 s) and at worker start: proves a worker consumes the queue."""
    request = heartbeat.request
    hostname = f"eager@{socket.gethostname()}" if request.is_eager or not request.hostname else request.hostname
    heartbeat_record(hostname=hostname)
    return hostname


@shared_task(name="memoryhub.outbox_sweep")
def outbox_sweep() -> dict[str, int]:
    """Periodic (beat, every 30 s): send the tasks the broker refused while it was down."""
    result = sweep_outbox()
    return {"sent": result.sent, "failed": result.failed, "remaining": result.remaining}
