"""The live server of the browser and API conformance tests (tests/conftest.py `live_server`)."""

from __future__ import annotations

import socketserver
from urllib.request import urlopen

from pytest_django.live_server_helper import LiveServer


def test_it_answers_one_request_at_a_time_exactly_when_it_shares_an_in_memory_sqlite_connection(
        live_server: LiveServer) -> None:
    shares_a_connection = bool(live_server.thread.connections_override)
    threaded = isinstance(live_server.thread.httpd, socketserver.ThreadingMixIn)
    assert threaded is not shares_a_connection
    with urlopen(f"{live_server.url}/healthz", timeout=30) as response:
        assert response.status == 200
        # A server that is not threaded closes each connection, so a browser never holds it.
        assert (response.headers.get("Connection") == "close") is shares_a_connection
