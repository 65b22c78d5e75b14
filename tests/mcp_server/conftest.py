"""One live MCP server per test module, and keys of every kind in two tenants."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tenants.models import Tenant
from tests.conftest import MakeKey
from tests.mcp_server.live import http_server

T = TypeVar("T")


@pytest.fixture(scope="module")
def mcp_url(django_db_setup: None, django_db_blocker: Any) -> Iterator[str]:
    # The in-process variant answers from threads of this process, which need the
    # database unblocked for the server's lifetime (as pytest-django's live_server does).
    with django_db_blocker.unblock(), http_server() as url:
        yield url


@asynccontextmanager
async def connect(url: str, raw_key: str, mode: str = "auto") -> AsyncIterator[Client]:
    """The official client over streamable HTTP with a Bearer key. `mode="legacy"` is an
    older client (initialize handshake); "auto" negotiates the 2026-07-28 protocol."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {raw_key}"})
    async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:  # type: ignore[arg-type]
        yield client


def run(coro_fn: Callable[[], Awaitable[T]]) -> T:
    """The coroutine on a loop of its own. The browser tests' sync Playwright API leaves an
    event loop running in the main thread for the rest of the session, and asyncio.run
    refuses to start inside one: then the coroutine runs on a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro_fn())  # type: ignore[arg-type]
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(coro_fn())).result()  # type: ignore[arg-type]


def error_of(result: Any) -> dict[str, Any]:
    """The error envelope of a tool error, checked to be the REST API's shape."""
    assert result.is_error, result
    body = result.structured_content
    assert body == json.loads(result.content[0].text)
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details", "status"}, body
    return body["error"]


@pytest.fixture
def keys(acme: Tenant, globex: Tenant, make_key: MakeKey) -> dict[str, str]:
    """Raw keys by name: acme's kinds, a read-only agent key and globex's agent key."""
    made = {kind: make_key(acme, kind)[1] for kind in ("agent", "ingest", "host", "reviewer", "admin")}
    made["readonly"] = make_key(acme, "agent", read_only=True)[1]
    made["globex"] = make_key(globex, "agent")[1]
    return made
