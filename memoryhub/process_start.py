"""Work a process does when it starts (loading a model, say), registered by the app that
owns it, so that the plumbing that starts processes (wsgi, asgi, Celery, gunicorn.conf.py)
and /healthz never import an app (docs/architecture.md "Layers").

An app registers a `Preload` from its AppConfig.ready(); the server entry points call
`load_in_background()` or `load_now()`, a Celery worker calls `enter_worker()` first, and
/healthz reports `statuses()` under each preload's name.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Preload:
    name: str  # the /healthz check it reports as
    load: Callable[[], object]  # blocks until loaded; never raises
    load_in_background: Callable[[], threading.Thread | None]  # None: nothing to load
    status: Callable[[], dict[str, Any]]  # reads state only, never loads
    enter_worker: Callable[[], None] = lambda: None  # this process runs tasks


_preloads: dict[str, Preload] = {}


def register(preload: Preload) -> None:
    """Idempotent by name: AppConfig.ready() may run again in tests."""
    _preloads[preload.name] = preload


def _registered() -> list[Preload]:
    # A process may start before Django's apps are loaded (Celery's signals); the
    # registrations happen in AppConfig.ready().
    from django.apps import apps

    if not apps.ready:
        import django

        django.setup()
    return list(_preloads.values())


def load_now() -> None:
    for preload in _registered():
        preload.load()


def load_in_background() -> list[threading.Thread]:
    threads = [preload.load_in_background() for preload in _registered()]
    return [thread for thread in threads if thread is not None]


def enter_worker() -> None:
    for preload in _registered():
        preload.enter_worker()


def statuses() -> dict[str, dict[str, Any]]:
    """Each preload's state; a status callable that fails reports `failed` with the
    exception's class name only (its message could hold a configured value)."""
    report: dict[str, dict[str, Any]] = {}
    for preload in _registered():
        try:
            report[preload.name] = preload.status()
        except Exception as exc:  # noqa: BLE001 - e.g. a provider spec that is not a dict
            report[preload.name] = {"status": "failed", "configured": True, "loaded": False,
                                    "error": type(exc).__name__}
    return report


def freeze_heap() -> None:
    """Move every object alive now (Django, the apps, a loaded model) into the collector's
    permanent generation, once a server process has started (docs/operations.md "The start-up heap").
    A full collection otherwise walks these half a million long-lived objects, which took
    about 300 ms in the middle of a read on the project's machine; frozen, it walks only what
    requests made since. The price: a start-up object that later becomes garbage in a
    reference cycle is never freed. Call it after the preloads are done, in the process that
    serves."""
    gc.collect()
    gc.freeze()
