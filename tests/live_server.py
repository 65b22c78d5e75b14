"""The live server of the browser and API conformance tests, for an in-memory SQLite test
database (the `live_server` fixture of tests/conftest.py; README, "`make test`").

Such a database lives in one connection, which pytest-django hands to the live server so
that it sees the test's data. Django's threaded live server answers each request on a thread
of its own, and every one of those threads uses that one connection: a page's parallel
requests (HTMX partials, polling, the favicon) could then run their queries at once, and one
request's transaction could begin or end inside another's. Here the threads still accept and
read requests in parallel (a browser's idle pre-opened connection blocks nobody), but the
application itself is called by one thread at a time.

The test's own thread uses that connection too, and at the end of a test it deletes every
row. A page can still send requests then (an HX-Trigger refresh fired by the last click, a
poll of a page left open by a failed test), and a row one of them inserts halfway through
that delete fails the delete's foreign-key check. So the application sits behind a gate:
`_live_server_gate` (tests/conftest.py) closes it before the rows go, which waits for the
call inside to return, and later calls are answered 503 without reaching the application,
until the next live-server test opens it again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from django.core.servers.basehttp import ThreadedWSGIServer
from django.test.testcases import LiveServerThread

WSGIApplication = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class Gate:
    """`application`, entered by one thread at a time, while open. A Django response is
    complete when the call returns (its queries have run); only sending the bytes happens
    outside the lock."""

    def __init__(self, application: WSGIApplication) -> None:
        self.application = application
        self._lock = threading.Lock()
        self._open = True

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        with self._lock:
            if not self._open:
                start_response("503 Service Unavailable", [("Content-Type", "text/plain")])
                return [b"the test this request belongs to has ended\n"]
            return self.application(environ, start_response)

    def close(self) -> None:
        """Waits for the call inside, if any, to return; no call enters after."""
        with self._lock:
            self._open = False

    def open(self) -> None:
        with self._lock:
            self._open = True


class OneAppCallAtATimeServer(ThreadedWSGIServer):
    gate: Gate

    def set_app(self, application: WSGIApplication) -> None:
        self.gate = Gate(application)
        super().set_app(self.gate)


class SharedConnectionLiveServerThread(LiveServerThread):
    server_class = OneAppCallAtATimeServer
