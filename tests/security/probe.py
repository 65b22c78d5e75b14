"""Sending one matrix request and judging its answer: status, leaks, and A's state."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from django.test import Client

from tenants.models import Tenant
from tests.security.world import CANARY, World, state_of

SAFE = {"GET", "HEAD", "OPTIONS"}


def send(client: Client, method: str, path: str, *, body: Any = None, query: dict[str, str] | None = None,
         form: dict[str, Any] | None = None) -> tuple[Any, str]:
    """Send the request; return the response and the request as text (for echo checks)."""
    url = f"{path}?{urlencode(query)}" if query else path
    if form is not None:
        response = client.generic(method, url, urlencode(form), content_type="application/x-www-form-urlencoded")
        return response, url + urlencode(form)
    data = "" if body is None else json.dumps(body)
    response = client.generic(method, url, data, content_type="application/json")
    return response, url + data


class Probe:
    """Checks every answer against A's world; collects readable failures."""

    def __init__(self, world: World, b_tenant: Tenant) -> None:
        self.world = world
        self.b_tenant = b_tenant
        self.a_state = state_of(world.tenant)
        self.failures: list[str] = []
        self.sent: list[str] = []

    def check(self, what: str, response: Any, request_text: str, expected: frozenset[Any]) -> None:
        """Status and leaks of one answer."""
        status = response.status_code
        text = response.content.decode("utf-8", "replace")
        if status >= 500 and status not in expected:  # 503 INDEX_NOT_READY is a listed answer
            self.failures.append(f"{what}: {status} (server error) {text[:200]}")
        elif "own" not in expected and status not in expected:
            self.failures.append(f"{what}: {status}, expected {sorted(expected)}: {text[:300]}")
        leaks = self.world.leaks(text, request_text)
        if leaks:
            self.failures.append(f"{what}: the answer shows A's {leaks}")
        self.sent.append(request_text)

    def check_state(self, what: str) -> None:
        """After a group of requests (one request sent by every principal): A's rows are
        unchanged. Checked per group rather than per request: it reads every table."""
        after = state_of(self.world.tenant)
        if after != self.a_state:
            self.failures.append(f"{what}: changed tenant A's rows")
            self.a_state = after

    def check_copies(self) -> None:
        """At the end: no canary of A's that no request carried ended up in B's rows."""
        b_state = state_of(self.b_tenant)
        copied = [name for name, value in CANARY.items()
                  if value in b_state and not any(value in sent for sent in self.sent)]
        if copied:
            self.failures.append(f"copied A's {copied} into tenant B")

    def assert_clean(self) -> None:
        self.check_copies()
        assert not self.failures, "\n".join(self.failures)
