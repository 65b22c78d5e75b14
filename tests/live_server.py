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
row. A page can still have a request in flight then (an HX-Trigger refresh fired by the last
click, say), and a row it inserts halfway through that delete fails the delete's foreign-key
check. So the server counts the requests it is handling, and `_live_server_idle_before_flush`
(tests/conftest.py) waits until none is left before the rows go.
"""

from __future__ import annotations

import threading
import time
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
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._handling = 0
        self._changed = threading.Condition()

    def set_app(self, application: WSGIApplication) -> None:
        super().set_app(one_call_at_a_time(application))

    def process_request(self, request: Any, client_address: Any) -> None:
        # Counted here, in the accepting thread, so that no accepted connection is ever
        # uncounted between its accept and its handler thread's start.
        with self._changed:
            self._handling += 1
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self._changed:
                self._handling -= 1
                self._changed.notify_all()

    def wait_until_idle(self, timeout: float, settle: float = 0.05) -> bool:
        """True once no connection is being handled and none arrived for `settle` seconds
        (a request the browser sent just before its context closed may still be waiting to
        be accepted); False if that did not happen within `timeout`."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                remaining = deadline - time.monotonic()
                if self._handling == 0:
                    self._changed.wait(timeout=min(settle, max(remaining, 0)))
                    if self._handling == 0:
                        return True
                if remaining <= 0:
                    return False
                self._changed.wait(timeout=remaining)


class SharedConnectionLiveServerThread(LiveServerThread):
    server_class = OneAppCallAtATimeServer
