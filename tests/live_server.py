"""The live server of the browser and API conformance tests, for an in-memory SQLite test
database (the `live_server` fixture of tests/conftest.py; README, "`make test`").

Such a database lives in one connection, which pytest-django hands to the live server so
that it sees the test's data. Django's threaded live server answers each request on a thread
of its own, and every one of those threads uses that one connection: a page's parallel
requests (HTMX partials, polling, the favicon) could then run their queries at once, and one
request's transaction could begin or end inside another's. Here the threads still accept and
read requests in parallel (a browser's idle pre-opened connection blocks nobody), but the
application itself is called by one thread at a time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any

from django.core.servers.basehttp import ThreadedWSGIServer
from django.test.testcases import LiveServerThread

WSGIApplication = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def one_call_at_a_time(application: WSGIApplication) -> WSGIApplication:
    """`application`, entered by one thread at a time. A Django response is complete when the
    call returns (its queries have run); only sending the bytes happens outside the lock."""
    lock = threading.Lock()

    def serialized(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        with lock:
            return application(environ, start_response)

    return serialized


class OneAppCallAtATimeServer(ThreadedWSGIServer):
    def set_app(self, application: WSGIApplication) -> None:
        super().set_app(one_call_at_a_time(application))


class SharedConnectionLiveServerThread(LiveServerThread):
    server_class = OneAppCallAtATimeServer
