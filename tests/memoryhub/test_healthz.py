from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memoryhub.celery import app as celery_app
from memoryhub.health import OUTBOX_MAX_AGE_SECONDS
from memoryhub.models import OutboxTask, WorkerHeartbeat


@pytest.fixture
def with_worker_mode():
    """Run /healthz as if real workers were configured (not eager)."""
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = False
    yield
    celery_app.conf.task_always_eager = previous


@pytest.fixture
def eager_mode():
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = previous


def test_it_is_ok_in_the_embedded_mode(db, client, settings, eager_mode):
    settings.REDIS_URL = ""
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "checks": {
            "database": {"status": "ok", "vendor": response.json()["checks"]["database"]["vendor"]},
            "redis": {"status": "not_configured"},
            "worker": {"status": "eager"},
            "outbox": {"status": "ok", "pending": 0},
        },
    }


def test_it_is_503_when_configured_redis_is_down(db, client, settings, eager_mode):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["status"] == "degraded"
    assert response.json()["checks"]["redis"]["status"] == "down"


def test_it_is_503_without_a_fresh_worker_heartbeat(db, client, settings, with_worker_mode):
    settings.REDIS_URL = ""
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["checks"]["worker"] == {"status": "down", "last_beat": None}
    WorkerHeartbeat.objects.create(hostname="w1", beat_at=timezone.now() - timedelta(minutes=10))
    stale = client.get("/healthz")
    assert stale.status_code == 503
    assert stale.json()["checks"]["worker"]["status"] == "down"


def test_it_is_ok_with_a_fresh_heartbeat(db, client, settings, with_worker_mode):
    settings.REDIS_URL = ""
    WorkerHeartbeat.objects.create(hostname="w1", beat_at=timezone.now())
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json()["checks"]["worker"]["hostname"] == "w1"


def test_it_is_never_cached(db, client):
    assert "no-cache" in client.get("/healthz")["Cache-Control"]


def test_it_counts_outbox_rows_and_is_503_when_the_oldest_is_stale(db, client, settings, eager_mode):
    settings.REDIS_URL = ""
    recent = timezone.now()
    OutboxTask.objects.create(task_name="tenants.memory_files_sync", args=[1], digest="a", requested_at=recent)
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json()["checks"]["outbox"]["pending"] == 1
    # Waiting since long ago, even if a commit asked for it again just now.
    old = OutboxTask.objects.create(task_name="tenants.memory_files_sync", args=[2], digest="b", requested_at=recent)
    OutboxTask.objects.filter(pk=old.pk).update(created_at=recent - timedelta(seconds=OUTBOX_MAX_AGE_SECONDS + 60))
    stale = client.get("/healthz")
    assert stale.status_code == 503
    assert stale.json()["status"] == "degraded"
    assert stale.json()["checks"]["outbox"]["status"] == "stale"
    assert stale.json()["checks"]["outbox"]["pending"] == 2
