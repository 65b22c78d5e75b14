"""The live server of the browser and API conformance tests (tests/live_server.py, and the
`live_server` fixture of tests/conftest.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any
from urllib.request import urlopen

from pytest_django.live_server_helper import LiveServer

from tests.live_server import Gate, OneAppCallAtATimeServer


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

    serialized = Gate(application)
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


def test_a_closed_gate_waits_for_the_call_inside_and_answers_later_ones_503_without_the_application() -> None:
    inside, release = threading.Event(), threading.Event()
    calls: list[str] = []

    def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        calls.append(environ["name"])
        inside.set()
        release.wait(timeout=30)
        start_response("200 OK", [])
        return [b"done"]

    gate = Gate(application)
    statuses: dict[str, str] = {}

    def call(name: str) -> None:
        gate({"name": name}, lambda status, headers: statuses.__setitem__(name, status))

    first = threading.Thread(target=call, args=("first",))
    first.start()
    assert inside.wait(timeout=30)
    closing = threading.Thread(target=gate.close)
    closing.start()
    closing.join(timeout=0.5)
    assert closing.is_alive()  # close() waits while a call is inside
    release.set()
    closing.join(timeout=30)
    first.join(timeout=30)
    assert not closing.is_alive() and statuses == {"first": "200 OK"}
    call("late")
    assert statuses["late"].startswith("503") and calls == ["first"]
    gate.open()
    call("next")
    assert statuses["next"] == "200 OK" and calls == ["first", "next"]
