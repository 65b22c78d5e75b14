"""Fault injection: point the Celery broker (and the cache) somewhere else for one test.

Nothing shared is stopped: "Redis down" is a URL at a port where nothing listens.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from memoryhub.celery import app as celery_app


def closed_port() -> int:
    """A loopback port nothing listens on (bound and released, so refused at once)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _reset_producer_pool() -> None:
    # Celery caches the broker connection pool on first use; the next publish must open a
    # connection to the new URL. This is what Celery itself does after a fork.
    celery_app._pool = None
    if "amqp" in celery_app.__dict__:
        celery_app.amqp._producer_pool = None


@contextmanager
def broker_at(url: str, *, queue: str | None = None) -> Iterator[None]:
    """Publish tasks to `url` (not eagerly) until the block ends."""
    conf = celery_app.conf
    previous = (conf.broker_url, conf.task_always_eager, conf.task_default_queue)
    conf.broker_url, conf.task_always_eager = url, False
    if queue is not None:
        conf.task_default_queue = queue
    _reset_producer_pool()
    try:
        yield
    finally:
        conf.broker_url, conf.task_always_eager, conf.task_default_queue = previous
        _reset_producer_pool()


@pytest.fixture
def redis_down_url() -> str:
    return f"redis://127.0.0.1:{closed_port()}/0"


@pytest.fixture
def broker() -> Callable[..., Any]:
    return broker_at
