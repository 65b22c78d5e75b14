"""Redis down: writes still succeed, their follow-up work waits in the outbox, and the
sweeper queues it exactly once when the broker is back."""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path

import pytest
import redis
from django.conf import settings as django_settings
from django.utils import timezone

from memoryhub import enqueue
from memoryhub.enqueue import enqueue_now, outbox_sweep
from memoryhub.models import OutboxTask
from memoryhub.tasks import outbox_sweep as outbox_sweep_task
from tenants.models import MemoryVolume
from tenants.tasks import memory_files_sync, memory_rescan_due, memory_rescan_volume
from tests.faults.conftest import broker_at
from tests.tenants.memory.helpers import Mem, set_volume


@pytest.fixture
def mem(acme, make_key, client_for) -> Mem:
    set_volume(acme, approval="off")
    return Mem(client_for(make_key(acme, "agent")[1]))


@pytest.fixture
def root(settings, tmp_path: Path) -> Path:
    settings.MEMORYHUB_VOLUME_ROOT = tmp_path / "volumes"
    return settings.MEMORYHUB_VOLUME_ROOT


@pytest.fixture
def redis_down(settings, redis_down_url):
    """Broker, cache and the health check all pointed at a port where nothing listens."""
    settings.REDIS_URL = redis_down_url
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": redis_down_url,
                                   "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1}}}
    with broker_at(redis_down_url):
        yield redis_down_url


def volume_pk(tenant) -> int:
    return MemoryVolume.get_or_create_for(tenant).pk


def test_a_memory_write_succeeds_and_its_file_sync_waits_in_the_outbox(acme, mem, root, redis_down,
                                                                       django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = mem.add("memory", "Project uses Bun and Nx")
    assert response.status_code == 200, response.content
    assert mem.entries("memory") == ["Project uses Bun and Nx"]
    row = OutboxTask.objects.get()
    assert (row.task_name, row.args, row.kwargs) == ("tenants.memory_files_sync", [volume_pk(acme)], {})
    assert "OperationalError" in row.last_error
    assert not (root / "acme").exists()  # nothing ran: the task is waiting, not lost


def test_healthz_reports_degraded_while_redis_is_down(db, client, redis_down):
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "degraded"
    assert body["checks"]["redis"]["status"] == "down"


def test_repeated_failures_of_one_call_share_one_row(acme, mem, root, redis_down, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        mem.add("memory", "first")
    first = OutboxTask.objects.get()
    with django_capture_on_commit_callbacks(execute=True):
        mem.add("memory", "second")
    again = OutboxTask.objects.get()
    assert again.pk == first.pk
    assert again.requested_at > first.requested_at


def test_a_sweep_while_the_broker_is_still_down_keeps_the_rows(db, redis_down):
    assert enqueue_now(memory_rescan_volume, 7) is False
    assert enqueue_now(memory_rescan_volume, 8) is False
    result = outbox_sweep()
    assert (result.sent, result.failed, result.remaining) == (0, 1, 2)
    first, second = OutboxTask.objects.order_by("id")
    assert first.attempts == 1 and "OperationalError" in first.last_error
    assert second.attempts == 0  # the sweep stops at the first refusal


def test_the_daily_rescan_keeps_due_volumes_in_the_outbox(acme, globex, redis_down, monkeypatch):
    monkeypatch.setattr("tenants.tasks.due_volume_ids", lambda: [volume_pk(acme), volume_pk(globex)])
    assert memory_rescan_due() == 2
    assert sorted(OutboxTask.objects.values_list("args", flat=True)) == sorted([[volume_pk(acme)],
                                                                                [volume_pk(globex)]])


def test_in_the_embedded_mode_the_task_runs_in_process_and_nothing_is_kept(acme, eager, monkeypatch):
    calls: list[int] = []
    monkeypatch.setattr("tenants.tasks.rescan_volume", lambda volume_id: calls.append(volume_id))
    assert enqueue_now(memory_rescan_volume, volume_pk(acme)) is True
    assert calls == [volume_pk(acme)]
    assert not OutboxTask.objects.exists()


def test_a_row_requested_again_during_its_sweep_stays_for_the_next_sweep(db, monkeypatch):
    enqueue.outbox_record(task_name=memory_files_sync.name, args=[3], kwargs={}, error="down")
    sent: list[list[int]] = []

    def send_while_a_commit_asks_again(row: OutboxTask) -> None:
        sent.append(row.args)
        OutboxTask.objects.filter(pk=row.pk).update(requested_at=timezone.now())

    monkeypatch.setattr(enqueue, "_send", send_while_a_commit_asks_again)
    assert outbox_sweep().sent == 1
    assert OutboxTask.objects.count() == 1  # the task just sent may have read the older state
    monkeypatch.setattr(enqueue, "_send", lambda row: sent.append(row.args))
    assert outbox_sweep().remaining == 0
    assert sent == [[3], [3]]


def test_the_sweeper_runs_every_30_seconds_from_beat():
    entries = [e for e in django_settings.CELERY_BEAT_SCHEDULE.values() if e["task"] == outbox_sweep_task.name]
    assert [e["schedule"] for e in entries] == [30.0]


def queued(client: redis.Redis, queue: str) -> list[dict]:
    """The task messages waiting in a Redis-transport queue (kombu's JSON envelope)."""
    messages = [json.loads(raw) for raw in client.lrange(queue, 0, -1)]
    return [{"task": m["headers"]["task"], "args": json.loads(base64.b64decode(m["body"]))[0]} for m in messages]


@pytest.mark.worker
def test_once_redis_is_back_the_sweeper_queues_the_task_exactly_once(acme, mem, root, settings, redis_down_url,
                                                                      django_capture_on_commit_callbacks):
    redis_url = django_settings.REDIS_URL
    if not redis_url:
        pytest.skip("REDIS_URL is not set: the broker-back half needs a real Redis")
    with broker_at(redis_down_url), django_capture_on_commit_callbacks(execute=True):
        assert mem.add("memory", "Project uses Bun and Nx").status_code == 200
        assert mem.add("user", "Prefers short answers").status_code == 200
    assert OutboxTask.objects.count() == 1  # both writes asked for the same volume's sync

    queue = f"test-outbox-{uuid.uuid4().hex[:10]}"
    client = redis.Redis.from_url(redis_url)
    try:
        with broker_at(redis_url, queue=queue):
            result = outbox_sweep()
            assert (result.sent, result.failed, result.remaining) == (1, 0, 0)
            assert outbox_sweep().sent == 0  # a second sweep finds nothing to send again
        assert queued(client, queue) == [{"task": "tenants.memory_files_sync", "args": [volume_pk(acme)]}]
        assert not OutboxTask.objects.exists()
    finally:
        client.delete(queue, f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
        client.close()
