"""`manage.py mcp --key ...`: the same tools over stdio, for one local agent process,
driven by the official client (it starts the command as a subprocess)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from tenants.models import KvEntry
from tests.mcp_server.conftest import error_of, run
from tests.mcp_server.live import ROOT, in_memory_sqlite, stdio_database, subprocess_env
from tests.mcp_server.test_http import ALL_TOOLS, READ_TOOLS

pytestmark = pytest.mark.django_db(transaction=True)


def params(raw_key: str, database: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["manage.py", "mcp", "--key", raw_key],
                                 env=subprocess_env(database), cwd=str(ROOT))


def test_it_serves_the_tools_of_its_key(keys: dict[str, str], tmp_path: Path) -> None:
    async def go() -> list[Any]:
        async with Client(params(keys["agent"], stdio_database(tmp_path))) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            stored = await client.call_tool("kv_set", {"agent": "bot", "key": "k", "value": {"a": [1, 2]}})
            got = await client.call_tool("kv_get", {"agent": "bot", "key": "k"})
            listed = await client.call_tool("memory", {"action": "list"})
            user = await client.read_resource("memoryhub://memory/USER.md")
            return [names, stored, got, listed, user]

    names, stored, got, listed, user = run(go)
    assert names == ALL_TOOLS
    assert not stored.is_error
    assert got.content[0].text == '{"result":{"a":[1,2]},"namespace":"default","version":1}'
    assert listed.structured_content["success"] is True and listed.structured_content["entries"] == []
    assert user.contents[0].text == ""  # type: ignore[union-attr]


def test_a_read_only_key_gets_the_read_tools_and_its_writes_change_nothing(keys: dict[str, str],
                                                                           tmp_path: Path) -> None:
    async def go() -> list[Any]:
        async with Client(params(keys["readonly"], stdio_database(tmp_path))) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            refused = await client.call_tool("kv_set", {"agent": "bot", "key": "k", "value": 1})
            after = await client.call_tool("kv_get", {"agent": "bot", "key": "k"})
            return [names, refused, after]

    names, refused, after = run(go)
    assert names == READ_TOOLS
    assert error_of(refused)["code"] == "PERMISSION_DENIED"
    assert error_of(after)["code"] == "AGENT_NOT_FOUND"  # a read-only key never creates its agent
    if not in_memory_sqlite():
        assert not KvEntry.objects.exists()


def test_it_refuses_to_start_with_an_unknown_key(db: None, tmp_path: Path) -> None:
    unknown = "mh_aaaaaaaaaa_" + "b" * 40
    done = subprocess.run([sys.executable, "manage.py", "mcp", "--key", unknown], cwd=ROOT, capture_output=True,
                          env=subprocess_env(stdio_database(tmp_path)), timeout=120, check=False, stdin=subprocess.DEVNULL)
    assert done.returncode != 0
    assert b"Unknown API key." in done.stderr and done.stdout == b""
