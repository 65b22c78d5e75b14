"""Task round trips: eager in-process (embedded mode) and through a real worker process."""

from __future__ import annotations

import pytest
from django.db import transaction

from memoryhub.celery import app as celery_app
from memoryhub.models import WorkerHeartbeat
from memoryhub.tasks import heartbeat
from tests.worker import celery_worker


def test_the_celery_config_is_safe_for_redelivery():
    conf = celery_app.conf
    assert conf.task_acks_late is True
    assert conf.task_reject_on_worker_lost is True
    assert conf.task_serializer == "json" and conf.accept_content == ["json"]
    assert conf.task_time_limit > conf.task_soft_time_limit > 0
    assert conf.worker_prefetch_multiplier == 1


def test_an_eager_task_runs_in_process(db, eager):
    result = heartbeat.delay()
    assert result.get().startswith("eager@")
    assert WorkerHeartbeat.objects.filter(hostname=result.get()).exists()


def test_tasks_enqueued_on_commit_wait_for_the_commit(db, eager, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks, transaction.atomic():
        heartbeat.delay_on_commit()
    assert not WorkerHeartbeat.objects.exists()
    assert len(callbacks) == 1
    callbacks[0]()
    assert WorkerHeartbeat.objects.count() == 1


@pytest.mark.worker
def test_a_real_worker_runs_a_task_and_writes_the_database(transactional_db):
    with celery_worker():
        WorkerHeartbeat.objects.all().delete()
        hostname = heartbeat.delay().get(timeout=30)
        assert hostname.startswith("test-")
        assert WorkerHeartbeat.objects.filter(hostname=hostname).exists()


@pytest.mark.worker
def test_a_real_worker_makes_healthz_report_ok(transactional_db, client, settings):
    with celery_worker():
        response = client.get("/healthz")
        body = response.json()
        assert body["checks"]["worker"]["status"] == "ok", body
        assert body["checks"]["redis"]["status"] == "ok"
        assert response.status_code == 200
