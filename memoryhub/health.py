"""GET /healthz: database, Redis, worker heartbeat, the task outbox and what this process
loads at its start (the embedding encoder); 503 when a configured part is down."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import redis
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from memoryhub import process_start
from memoryhub.celery import app as celery_app
from memoryhub.models import OutboxTask, WorkerHeartbeat

# Outbox rows older than this mean the sweeper is not draining them (beat or broker down).
OUTBOX_MAX_AGE_SECONDS = 300


def check_database() -> dict[str, Any]:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as exc:  # noqa: BLE001 - any failure is "down"
        return {"status": "down", "error": type(exc).__name__}
    return {"status": "ok", "vendor": connection.vendor}


def check_redis() -> dict[str, Any]:
    if not settings.REDIS_URL:
        return {"status": "not_configured"}
    try:
        client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1, socket_timeout=1)
        client.ping()
    except Exception as exc:  # noqa: BLE001
        return {"status": "down", "error": type(exc).__name__}
    return {"status": "ok"}


def check_worker() -> dict[str, Any]:
    if celery_app.conf.task_always_eager:
        return {"status": "eager"}
    try:
        latest = WorkerHeartbeat.objects.order_by("-beat_at").first()
    except Exception as exc:  # noqa: BLE001
        return {"status": "unknown", "error": type(exc).__name__}
    if latest is None:
        return {"status": "down", "last_beat": None}
    age = timezone.now() - latest.beat_at
    fresh = age <= timedelta(seconds=settings.WORKER_HEARTBEAT_MAX_AGE)
    return {
        "status": "ok" if fresh else "down",
        "last_beat": latest.beat_at.isoformat(),
        "age_seconds": round(age.total_seconds(), 1),
        "hostname": latest.hostname,
    }


def check_outbox() -> dict[str, Any]:
    """Tasks the broker refused, waiting for the sweeper (memoryhub/enqueue.py)."""
    try:
        oldest = OutboxTask.objects.order_by("created_at").values_list("created_at", flat=True).first()
        pending = OutboxTask.objects.count() if oldest is not None else 0
    except Exception as exc:  # noqa: BLE001
        return {"status": "unknown", "error": type(exc).__name__}
    if oldest is None:
        return {"status": "ok", "pending": 0}
    age = (timezone.now() - oldest).total_seconds()
    # A backlog younger than the limit is normal right after Redis comes back.
    status = "stale" if age > OUTBOX_MAX_AGE_SECONDS else "ok"
    return {"status": status, "pending": pending, "oldest_age_seconds": round(age, 1)}


def health_report() -> tuple[int, dict[str, Any]]:
    checks = {"database": check_database(), "redis": check_redis(), "worker": check_worker(),
              "outbox": check_outbox()}
    # What this process loads at its start (the embedding encoder, registered by atoms):
    # only reads state, a probe never loads a model.
    preloads = process_start.statuses()
    if checks["database"]["status"] != "ok":
        overall = "down"
    elif any(c["status"] in {"down", "unknown", "stale", "failed"} for c in checks.values()):
        overall = "degraded"
    elif any(c["status"] == "failed" for c in preloads.values()):
        # The node still serves everything, recall lexically: a load balancer must keep it
        # (docs/operations.md "/healthz"); the body says what is wrong.
        overall = "warning"
    else:
        overall = "ok"
    checks.update(preloads)
    return (200 if overall in {"ok", "warning"} else 503), {"status": overall, "checks": checks}


@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    status, body = health_report()
    return JsonResponse(body, status=status)
