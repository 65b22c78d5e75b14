"""The live server of the browser and API conformance tests (tests/live_server.py, and the
`live_server` fixture of tests/conftest.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any
from urllib.request import urlopen
from wsgiref.simple_server import WSGIRequestHandler

from pytest_django.live_server_helper import LiveServer

from tests.live_server import OneAppCallAtATimeServer, one_call_at_a_time


def test_it_serializes_application_calls_exactly_when_it_shares_an_in_memory_sqlite_connection(
        live_server: LiveServer) -> None:
    shares_a_connection = bool(live_server.thread.connections_override)
    assert isinstance(live_server.thread.httpd, OneAppCallAtATimeServer) is shares_a_connection
    with urlopen(f"{live_server.url}/login/", timeout=30) as response:
        assert response.status == 200


def test_a_second_call_waits_until_the_first_has_returned() -> None:
    inside, release = threading.Semaphore(0), threading.Event()
    entered: list[str] = []

    def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        entered.append(environ["name"])
        inside.release()
        release.wait(timeout=30)
        return [environ["name"].encode()]

    serialized = one_call_at_a_time(application)
    answers: dict[str, Iterable[bytes]] = {}

    def call(name: str) -> None:
        answers[name] = serialized({"name": name}, lambda *args: None)

    first = threading.Thread(target=call, args=("first",))
    first.start()
    assert inside.acquire(timeout=30)
    second = threading.Thread(target=call, args=("second",))
    second.start()
    # Without the lock the second call would be inside at once; with it, it waits.
    assert not inside.acquire(timeout=0.5)
    assert entered == ["first"]
    release.set()
    first.join(timeout=30)
    second.join(timeout=30)
    assert entered == ["first", "second"]
    assert answers == {"first": [b"first"], "second": [b"second"]}


def test_it_is_idle_only_once_every_request_it_accepted_has_been_answered() -> None:
    inside, release = threading.Event(), threading.Event()

    def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        inside.set()
        release.wait(timeout=30)
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"done"]

    server = OneAppCallAtATimeServer(("127.0.0.1", 0), WSGIRequestHandler)
    server.set_app(application)
    serving = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    serving.start()
    try:
        assert server.wait_until_idle(timeout=5)
        answers: list[bytes] = []
        url = f"http://127.0.0.1:{server.server_address[1]}/"
        client = threading.Thread(target=lambda: answers.append(urlopen(url, timeout=30).read()))
        client.start()
        assert inside.wait(timeout=30)
        # The request is inside the application: the server is not idle until it returns.
        assert not server.wait_until_idle(timeout=0.5)
        release.set()
        assert server.wait_until_idle(timeout=30)
        client.join(timeout=30)
        assert answers == [b"done"]
    finally:
        release.set()
        server.shutdown()
        server.server_close()
