"""Shared fixtures: two tenants (acme, globex), named people and key factories.

People: alice is acme's admin, bob acme's reviewer, carol acme's viewer; dave belongs
to globex only; erin is a reviewer of both (for the tenant switcher).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from django.contrib.auth.models import User
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from pytest_django.live_server_helper import LiveServer
from rest_framework.test import APIClient

from memoryhub.actors import Actor
from tenants.models import ApiKey, Membership, Role, Tenant
from tenants.services.keys import apikey_create
from tests.live_server import OneAppCallAtATimeServer, SharedConnectionLiveServerThread

# Playwright's sync API runs an event loop in the test thread; the ORM calls made by the
# same test are still synchronous, so Django's async-safety guard is lifted for tests.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

# Hypothesis' per-example deadline (200 ms) and its too-slow health check are timed
# assertions: on a loaded 2-core CI machine they fail property tests for being slow, not wrong.
hypothesis_settings.register_profile("memoryhub", deadline=None, suppress_health_check=[HealthCheck.too_slow])
hypothesis_settings.load_profile("memoryhub")

PASSWORD = "correct horse battery staple"
TEST_ACTOR = Actor.system("tests")


@pytest.fixture(autouse=True, scope="session")
def _close_connections_after_each_request() -> None:
    # The live server answers each request on a thread of its own; with persistent
    # connections those threads would leave sessions open and the test database could not
    # be dropped at the end. Tests therefore close connections after every request.
    from django.db import connections

    for alias in connections:
        connections[alias].settings_dict["CONN_MAX_AGE"] = 0


@pytest.fixture(scope="session")
def live_server(request: pytest.FixtureRequest) -> Iterator[LiveServer]:
    """pytest-django's live server; where the test database is in-memory SQLite, one that
    calls the application from one thread at a time (tests/live_server.py says why)."""
    address = (request.config.getvalue("liveserver") or os.environ.get("DJANGO_LIVE_TEST_SERVER_ADDRESS")
               or "localhost")
    server = LiveServer(address, start=False)
    if server.thread.connections_override:
        threaded = server.thread
        server.thread = SharedConnectionLiveServerThread(threaded.host, threaded.static_handler,
                                                         connections_override=threaded.connections_override,
                                                         port=threaded.port)
        server.thread.daemon = True
    server.start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _live_server_gate(request: pytest.FixtureRequest, _test_settings: None, monkeypatch: pytest.MonkeyPatch
                      ) -> Iterator[None]:
    """Where the live server shares the in-memory SQLite connection, its application is open
    during a live-server test and closed before that test's rows are deleted
    (tests/live_server.py says why). pytest-django sets the database up in a plugin fixture,
    before this one, so this teardown runs before that delete; the settings and monkeypatches
    are set up before this fixture, so the last call inside still runs with them."""
    server = request.getfixturevalue("live_server") if "live_server" in request.fixturenames else None
    httpd = getattr(getattr(server, "thread", None), "httpd", None)
    gate = httpd.gate if isinstance(httpd, OneAppCallAtATimeServer) else None
    if gate is not None:
        gate.open()
    yield
    if gate is not None:
        gate.close()


@pytest.fixture(autouse=True)
def _test_settings(settings: Any) -> None:
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    # No memory files on disk unless a test asks for them (tests of the projection do).
    settings.MEMORYHUB_VOLUME_ROOT = None
    # Lexical recall unless a test configures an embedding provider (tests/atoms/index/).
    settings.ATOMS_EMBEDDING_PROVIDER = None
    settings.ATOMS_VECTOR_INDEX_ROOT = None


# The start of a window of both throttles: a multiple of 60 s (the API's per-key window) and of
# 900 s (the login window's default).
THROTTLE_WINDOW_START = 1_800_000_000.0


@pytest.fixture
def throttle_clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The throttles' clock, stopped one second into a window: `now[0]` is what they read.

    Both throttles count in fixed windows of the wall clock, so a test that sends a few
    requests over a limit would fail if a window ended between them (on a loaded machine
    a request can take a second). Both read the clock in memoryhub/windows.py, and only that
    module's view of `time` is replaced, not the time of the rest of the process, and only in
    this process (a server started as a process of its own still reads the real clock: see
    `wait_for_a_fresh_throttle_window`)."""
    from memoryhub import windows

    now = [THROTTLE_WINDOW_START + 1]
    monkeypatch.setattr(windows, "time", SimpleNamespace(time=lambda: now[0]))
    return now


def wait_for_a_fresh_throttle_window(margin_s: float = 10) -> None:
    """For a server in a process of its own, which `throttle_clock` cannot reach: if the
    current per-key window ends within `margin_s` seconds, sleep into the next one, so that a
    few requests sent now all count in one window."""
    from tenants.throttling import WINDOW_SECONDS

    left = WINDOW_SECONDS - time.time() % WINDOW_SECONDS
    if left < margin_s:
        time.sleep(left + 0.1)


@pytest.fixture
def acme(db: None) -> Tenant:
    return Tenant.objects.create(slug="acme", name="Acme Corp")


@pytest.fixture
def globex(db: None) -> Tenant:
    return Tenant.objects.create(slug="globex", name="Globex")


def _member(username: str, tenant: Tenant, role: str) -> User:
    user, _ = User.objects.get_or_create(username=username)
    user.set_password(PASSWORD)
    user.save()
    Membership.objects.create(tenant=tenant, user=user, role=role)
    return user


@pytest.fixture
def alice(acme: Tenant) -> User:
    return _member("alice", acme, Role.ADMIN)


@pytest.fixture
def bob(acme: Tenant) -> User:
    return _member("bob", acme, Role.REVIEWER)


@pytest.fixture
def carol(acme: Tenant) -> User:
    return _member("carol", acme, Role.VIEWER)


@pytest.fixture
def dave(globex: Tenant) -> User:
    return _member("dave", globex, Role.ADMIN)


@pytest.fixture
def erin(acme: Tenant, globex: Tenant) -> User:
    user = _member("erin", acme, Role.REVIEWER)
    Membership.objects.create(tenant=globex, user=user, role=Role.VIEWER)
    return user


MakeKey = Callable[..., tuple[ApiKey, str]]


@pytest.fixture
def make_key(db: None) -> MakeKey:
    def make(tenant: Tenant, kind: str = "agent", **kwargs: Any) -> tuple[ApiKey, str]:
        return apikey_create(tenant=tenant, kind=kind, actor=TEST_ACTOR, **kwargs)

    return make


ClientFor = Callable[[str | None], APIClient]


@pytest.fixture
def client_for() -> ClientFor:
    """An API client sending `raw` as its bearer key (or no header for None)."""

    def make(raw: str | None) -> APIClient:
        client = APIClient()
        if raw is not None:
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
        return client

    return make


def error_of(response: Any) -> dict[str, Any]:
    """The error object of a response, after checking the one error shape."""
    body = response.json()
    assert set(body) == {"error"}, body
    assert set(body["error"]) == {"code", "message", "details"}, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    assert isinstance(body["error"]["details"], dict)
    return body["error"]


@pytest.fixture
def eager() -> Any:
    """Run Celery tasks in-process for this test, whatever REDIS_URL says."""
    from memoryhub.celery import app as celery_app

    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = previous
