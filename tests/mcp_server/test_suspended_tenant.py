"""A suspended tenant's keys over MCP (docs/operations.md "Suspending a tenant"): over HTTP the
door answers 403 TENANT_SUSPENDED in the REST envelope before the SDK sees the request; over
stdio the server refuses to start, and a session already running answers tool errors with the
same code. Another tenant's keys keep working, and lifting the suspension restores the key."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client

from tenants.models import Tenant
from tenants.services.suspension import SUSPENDED_MESSAGE, tenant_suspend, tenant_unsuspend
from tests.conftest import TEST_ACTOR
from tests.mcp_server.conftest import error_of, run
from tests.mcp_server.live import ROOT, in_memory_sqlite, stdio_database, subprocess_env
from tests.mcp_server.test_http import call
from tests.mcp_server.test_stdio import params

pytestmark = pytest.mark.django_db(transaction=True)

HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
KV_SET = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
          "params": {"name": "kv_set", "arguments": {"agent": "bot", "key": "k", "value": 1}}}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}


def test_http_answers_every_request_of_a_suspended_tenants_key_with_403(mcp_url: str, keys: dict[str, str],
                                                                        acme: Tenant) -> None:
    tenant_suspend(tenant=acme, actor=TEST_ACTOR, reason="unpaid invoice 4711")
    for body in (KV_SET, TOOLS_LIST):
        answer = httpx2.post(mcp_url, json=body, headers={**HEADERS, "Authorization": f"Bearer {keys['agent']}"})
        assert answer.status_code == 403
        assert answer.json() == {"error": {"code": "TENANT_SUSPENDED", "message": SUSPENDED_MESSAGE, "details": {}}}
        assert "www-authenticate" not in answer.headers and "unpaid" not in answer.text


def test_http_keeps_serving_other_tenants_and_the_key_again_once_lifted(mcp_url: str, keys: dict[str, str],
                                                                        acme: Tenant) -> None:
    tenant_suspend(tenant=acme, actor=TEST_ACTOR)
    other = call(mcp_url, keys["globex"], "kv_set", {"agent": "bot", "key": "k", "value": 1})
    assert not other.is_error, other
    tenant_unsuspend(tenant=acme, actor=TEST_ACTOR)
    again = call(mcp_url, keys["agent"], "kv_set", {"agent": "bot", "key": "k", "value": 2})
    assert not again.is_error, again


def test_stdio_refuses_to_start_with_a_suspended_tenants_key(keys: dict[str, str], acme: Tenant,
                                                             tmp_path: Path) -> None:
    tenant_suspend(tenant=acme, actor=TEST_ACTOR)
    done = subprocess.run([sys.executable, "manage.py", "mcp", "--key", keys["agent"]], cwd=ROOT,
                          capture_output=True, env=subprocess_env(stdio_database(tmp_path)), timeout=120,
                          check=False, stdin=subprocess.DEVNULL)
    assert done.returncode != 0
    assert SUSPENDED_MESSAGE.encode() in done.stderr and b"Traceback" not in done.stderr and done.stdout == b""


def _suspend_in(database: str, tenant: Tenant) -> None:
    """Suspend `tenant` in the database the stdio server reads (a copy when the tests' is in memory)."""
    if in_memory_sqlite():
        with sqlite3.connect(database.removeprefix("sqlite:///")) as db:
            db.execute("UPDATE tenants_tenant SET suspended_at = '2026-12-01 00:00:00' WHERE id = ?", (tenant.pk,))
    else:
        tenant_suspend(tenant=tenant, actor=TEST_ACTOR)


def test_a_running_stdio_session_answers_tool_errors_once_suspended(keys: dict[str, str], acme: Tenant,
                                                                    tmp_path: Path) -> None:
    database = stdio_database(tmp_path)

    async def go() -> list[Any]:
        async with Client(params(keys["agent"], database)) as client:
            before = await client.call_tool("kv_set", {"agent": "bot", "key": "k", "value": 1})
            _suspend_in(database, acme)
            after = await client.call_tool("kv_set", {"agent": "bot", "key": "k", "value": 2})
            return [before, after]

    before, after = run(go)
    assert not before.is_error
    assert error_of(after) == {"code": "TENANT_SUSPENDED", "message": SUSPENDED_MESSAGE, "details": {},
                               "status": 403}
