"""The MCP server over streamable HTTP (mcp_server/), with the official client against a
live server: tools per key kind, each tool's happy path, refusals, tenant isolation, error
codes, throttling, resources, and an older client that opens the session handshake."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from atoms.models import Atom
from memoryhub.models import AuditEvent
from tenants.models import Agent, ApiKey, KvEntry, MemoryVolume, PendingWrite, Tenant
from tests.conftest import ClientFor, MakeKey, wait_for_a_fresh_throttle_window
from tests.mcp_server.conftest import connect, error_of, run
from tests.mcp_server.live import in_memory_sqlite

pytestmark = pytest.mark.django_db(transaction=True)

ALL_TOOLS = ["memory", "kv_get", "kv_set", "kv_delete", "kv_list", "atoms_read", "atoms_search", "atoms_inspect",
             "atoms_write"]
READ_TOOLS = ["kv_get", "kv_list", "atoms_read", "atoms_search", "atoms_inspect"]
ATOM_TOOLS = ["atoms_read", "atoms_search", "atoms_inspect", "atoms_write"]


def approval_off(tenant: Tenant) -> None:
    volume = MemoryVolume.get_or_create_for(tenant)
    volume.approval = "off"
    volume.save(update_fields=["approval"])


def call(url: str, key: str, name: str, arguments: dict[str, Any], mode: str = "auto") -> Any:
    async def go() -> Any:
        async with connect(url, key, mode) as client:
            return await client.call_tool(name, arguments)

    return run(go)


def tool_names(url: str, key: str, mode: str = "auto") -> list[str]:
    async def go() -> list[str]:
        async with connect(url, key, mode) as client:
            listed = await client.list_tools()
            for tool in listed.tools:
                assert tool.description and tool.input_schema["type"] == "object"
            return [tool.name for tool in listed.tools]

    return run(go)


def test_it_lists_only_the_tools_each_key_kind_may_use(mcp_url: str, keys: dict[str, str]) -> None:
    assert tool_names(mcp_url, keys["agent"]) == ALL_TOOLS
    assert tool_names(mcp_url, keys["host"]) == ALL_TOOLS
    assert tool_names(mcp_url, keys["reviewer"]) == ALL_TOOLS
    assert tool_names(mcp_url, keys["readonly"]) == READ_TOOLS
    assert tool_names(mcp_url, keys["ingest"]) == ATOM_TOOLS


def test_a_key_limited_to_agents_sees_them_as_choices_and_no_other(mcp_url: str, acme: Tenant,
                                                                     make_key: MakeKey) -> None:
    _key, raw = make_key(acme, "agent", agents=["support", "triage"])

    async def go() -> tuple[dict[str, Any], Any]:
        async with connect(mcp_url, raw) as client:
            schemas = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
            return schemas, await client.call_tool("kv_set", {"agent": "billing", "key": "k", "value": 1})

    schemas, refused = run(go)
    assert schemas["kv_get"]["properties"]["agent"]["enum"] == ["support", "triage"]
    assert schemas["kv_set"]["required"] == ["agent", "key", "value"]
    assert error_of(refused)["code"] == "AGENT_NOT_FOUND" and not Agent.objects.exists()


def test_it_answers_a_missing_or_revoked_key_with_the_rest_401_and_a_foreign_host_with_400(mcp_url: str, keys: dict[str, str]) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
    missing = httpx2.post(mcp_url, json=body, headers=headers)
    assert missing.status_code == 401 and missing.headers["WWW-Authenticate"] == 'Bearer realm="memoryhub"'
    assert missing.json()["error"]["code"] == "UNAUTHENTICATED"
    ApiKey.objects.filter(prefix=keys["agent"].split("_")[1]).update(revoked_at="2026-12-01T00:00:00Z")
    revoked = httpx2.post(mcp_url, json=body, headers={**headers, "Authorization": f"Bearer {keys['agent']}"})
    assert revoked.status_code == 401
    assert revoked.json()["error"]["message"] == "This API key has been revoked."
    foreign = httpx2.post(mcp_url, json=body, headers={**headers, "Host": "evil.example"})
    assert foreign.status_code == 400  # Django's ALLOWED_HOSTS rule, before the key is even read


def test_the_memory_tool_answers_as_the_rest_tool_does(mcp_url: str, keys: dict[str, str], acme: Tenant,
                                                       client_for: ClientFor) -> None:
    approval_off(acme)
    saved = call(mcp_url, keys["agent"], "memory", {"action": "add", "target": "user", "content": "Prefers tabs"})
    assert not saved.is_error and saved.structured_content["success"] is True
    assert MemoryVolume.get_or_create_for(acme).entries("user") == ["Prefers tabs"]
    listed = call(mcp_url, keys["agent"], "memory", {"action": "list", "target": "user"})
    rest = client_for(keys["agent"]).post("/api/v1/tools/memory", {"action": "list", "target": "user"}, format="json")
    assert listed.structured_content == rest.json()
    assert json.loads(listed.content[0].text) == rest.json()
    refused = call(mcp_url, keys["agent"], "memory", {"action": "remove", "target": "user", "old_text": "spaces"})
    rest = client_for(keys["agent"]).post("/api/v1/tools/memory", {"action": "remove", "target": "user",
                                                                   "old_text": "spaces"}, format="json")
    assert refused.is_error and refused.structured_content == rest.json()
    assert refused.structured_content["code"] == "NO_MATCH"


def test_agent_memory_writes_are_staged_for_review_when_the_tenant_asks(mcp_url: str, keys: dict[str, str],
                                                                        acme: Tenant) -> None:
    staged = call(mcp_url, keys["agent"], "memory", {"action": "add", "content": "Uses Bun"})
    assert staged.structured_content["staged"] is True
    assert PendingWrite.objects.filter(volume__tenant=acme, status="pending").count() == 1
    assert MemoryVolume.get_or_create_for(acme).entries("memory") == []


def test_the_kv_tools_set_get_list_and_delete_with_audit(mcp_url: str, keys: dict[str, str], acme: Tenant) -> None:
    async def go() -> list[Any]:
        async with connect(mcp_url, keys["agent"]) as client:
            return [
                await client.call_tool("kv_set", {"agent": "bot", "key": "style", "value": {"tone": "dry", "n": 3.0}}),
                await client.call_tool("kv_get", {"agent": "bot", "key": "style"}),
                await client.call_tool("kv_set", {"agent": "bot", "key": "style", "value": 1, "expected_version": 7}),
                await client.call_tool("kv_list", {"agent": "bot", "prefix": "st"}),
                await client.call_tool("kv_delete", {"agent": "bot", "key": "style"}),
                await client.call_tool("kv_get", {"agent": "bot", "key": "style"}),
            ]

    stored, got, conflict, listed, deleted, gone = run(go)
    assert stored.content[0].text == '{"result":null,"namespace":"default","version":1}'
    # The stored text is spliced in as it is: 3.0 keeps its spelling.
    assert got.content[0].text == '{"result":{"n":3.0,"tone":"dry"},"namespace":"default","version":1}'
    assert error_of(conflict)["code"] == "VERSION_CONFLICT"
    assert listed.structured_content["result"] == [{"key": "style", "value": {"n": 3.0, "tone": "dry"}}]
    assert deleted.structured_content["result"] is True and gone.structured_content["result"] is None
    actions = list(AuditEvent.objects.filter(tenant=acme, action__startswith="kv.").values_list("action", flat=True))
    assert sorted(actions) == ["kv.agent.create", "kv.delete", "kv.set"]


def test_a_read_only_key_is_refused_every_write_and_nothing_changes(mcp_url: str, keys: dict[str, str],
                                                                    acme: Tenant) -> None:
    approval_off(acme)
    audit_before = AuditEvent.objects.count()
    memory = call(mcp_url, keys["readonly"], "memory", {"action": "add", "content": "x"})
    kv = call(mcp_url, keys["readonly"], "kv_set", {"agent": "bot", "key": "k", "value": 1})
    atoms = call(mcp_url, keys["readonly"], "atoms_write", {"changes": [
        {"id": "c", "op": "create", "content": {"text": "x", "links": []}, "sources": []}]})
    assert [error_of(r)["code"] for r in (memory, kv, atoms)] == ["PERMISSION_DENIED", "PERMISSION_DENIED",
                                                                  "ACCESS_DENIED"]
    assert error_of(kv)["message"] == "This API key is read-only." and error_of(kv)["status"] == 403
    assert MemoryVolume.get_or_create_for(acme).entries("memory") == []
    assert not Agent.objects.exists() and not KvEntry.objects.exists() and not Atom.objects.exists()
    assert AuditEvent.objects.count() == audit_before


def test_another_tenants_objects_are_never_visible(mcp_url: str, keys: dict[str, str], acme: Tenant,
                                                   client_for: ClientFor) -> None:
    approval_off(acme)
    canary = "canary-acme-7f3"
    call(mcp_url, keys["admin"], "memory", {"action": "add", "target": "user", "content": canary})
    call(mcp_url, keys["agent"], "kv_set", {"agent": "bot", "key": "secret", "value": canary})
    written = call(mcp_url, keys["admin"], "atoms_write", {"changes": [
        {"id": "c", "op": "create", "content": {"text": f"{canary} coffee", "links": []}, "sources": []}]})
    ref = written.structured_content["changes"]["c"]["ref"]
    session = client_for(keys["agent"]).post("/api/v1/sessions", {"chat_id": "c1"}, format="json").json()["id"]

    async def go() -> list[str]:
        answers = []
        async with connect(mcp_url, keys["globex"]) as client:
            for name, args in [("kv_get", {"agent": "bot", "key": "secret"}), ("kv_list", {"agent": "bot"}),
                               ("memory", {"action": "list", "target": "user"}),
                               ("atoms_read", {"query": f"{canary} coffee"}), ("atoms_search", {"query": "coffee"}),
                               ("atoms_inspect", {"ref": ref})]:
                answers.append((await client.call_tool(name, args)).content[0].text)
            answers.append(str((await client.read_resource("memoryhub://memory/USER.md")).contents))
            with pytest.raises(Exception) as refused:
                await client.read_resource(f"memoryhub://sessions/{session}/snapshot")
            answers.append(json.dumps(refused.value.data))  # type: ignore[attr-defined]
        return answers

    answers = run(go)
    assert all(canary not in answer for answer in answers), answers
    assert json.loads(answers[0])["result"] is None
    assert json.loads(answers[5])["error"]["code"] == "INVALID_REF"
    assert json.loads(answers[-1])["error"]["code"] == "SESSION_NOT_FOUND"


def test_bad_arguments_get_a_tool_error_with_our_code_and_store_nothing(mcp_url: str, keys: dict[str, str]) -> None:
    cases = [
        ("kv_get", {"agent": "Not A Slug", "key": "k"}, "INVALID_AGENT"),
        ("kv_set", {"agent": "bot", "key": "k"}, "VALUE_REQUIRED"),
        ("kv_set", {"agent": "bot", "key": "k", "value": 1, "colour": "red"}, "INVALID_REQUEST"),
        ("kv_get", {"agent": "bot\u0000", "key": "k"}, "INVALID_CHARACTER"),
        ("atoms_read", {"query": "coffee", "tokens": 0}, "INVALID_INPUT"),
        ("atoms_read", {"question": "coffee"}, "INVALID_INPUT"),
        ("atoms_write", {"changes": [{"id": "c", "op": "create", "content": {"text": "x", "links": []},
                                      "sources": []}]}, "INVALID_INPUT"),  # an agent's change needs an input token
        ("no_such_tool", {}, "NOT_FOUND"),
    ]

    async def go() -> list[str]:
        async with connect(mcp_url, keys["agent"]) as client:
            return [error_of(await client.call_tool(name, args))["code"] for name, args, _code in cases]

    assert run(go) == [code for _name, _args, code in cases]
    assert not KvEntry.objects.exists() and not Atom.objects.exists()


def test_the_atom_tools_write_read_search_and_inspect(mcp_url: str, keys: dict[str, str]) -> None:
    async def go() -> list[Any]:
        async with connect(mcp_url, keys["ingest"]) as client:
            written = await client.call_tool("atoms_write", {"changes": [
                {"id": "c", "op": "create", "content": {"text": "Alice takes her coffee black.", "links": []},
                 "sources": []}]})
            read = await client.call_tool("atoms_read", {"query": "How does Alice take her coffee?", "tokens": 1024})
            found = await client.call_tool("atoms_search", {"query": "coffee", "limit": 5})
            ref = read.structured_content["refs"][0]
            seen = await client.call_tool("atoms_inspect", {"ref": ref, "direction": "outgoing"})
            return [written, read, found, seen]

    written, read, found, seen = run(go)
    assert not any(r.is_error for r in (written, read, found, seen))
    shown = json.loads(read.content[0].text)
    assert "Alice takes her coffee black." in shown["text"] and shown["refs"]
    assert set(shown) <= {"text", "refs", "tokenCount", "stale", "cursor", "receipt"}
    assert read.structured_content["diagnostics"]["method"] == "graph-activation"
    assert found.structured_content["items"][0]["text"] == "Alice takes her coffee black."
    assert seen.structured_content["atom"]["text"] == "Alice takes her coffee black."


def test_resources_give_live_files_and_the_frozen_session_snapshot(mcp_url: str, keys: dict[str, str], acme: Tenant,
                                                                   client_for: ClientFor) -> None:
    approval_off(acme)
    call(mcp_url, keys["agent"], "memory", {"action": "add", "content": "Project uses Bun"})
    session = client_for(keys["agent"]).post("/api/v1/sessions", {"chat_id": "c1"}, format="json").json()
    call(mcp_url, keys["agent"], "memory", {"action": "add", "content": "CI runs on Fridays"})

    async def go() -> tuple[list[str], str, str]:
        async with connect(mcp_url, keys["readonly"]) as client:
            uris = [str(r.uri) for r in (await client.list_resources()).resources]
            live = (await client.read_resource("memoryhub://memory/MEMORY.md")).contents[0].text  # type: ignore[union-attr]
            frozen = (await client.read_resource(f"memoryhub://sessions/{session['id']}/snapshot")).contents[0]
            return uris, live, frozen.text  # type: ignore[union-attr]

    uris, live, frozen = run(go)
    assert uris == ["memoryhub://memory/MEMORY.md", "memoryhub://memory/USER.md"]
    assert live == "Project uses Bun\n§\nCI runs on Fridays"
    assert frozen == session["snapshot"] and "CI runs on Fridays" not in frozen


def test_tool_calls_count_against_the_keys_rate_like_rest_calls(mcp_url: str, keys: dict[str, str],
                                                                acme: Tenant, throttle_clock: list[float]) -> None:
    acme.api_rate_per_minute = 2
    acme.save(update_fields=["api_rate_per_minute"])
    if not in_memory_sqlite():  # the server is a process of its own, on the real clock
        wait_for_a_fresh_throttle_window()

    async def go() -> list[Any]:
        async with connect(mcp_url, keys["host"]) as client:
            return [await client.call_tool("kv_get", {"agent": "bot", "key": "k"}) for _ in range(3)]

    first, second, third = run(go)
    assert not first.is_error and not second.is_error
    error = error_of(third)
    assert error["code"] == "THROTTLED" and error["status"] == 429 and 0 < error["details"]["retry_after"] <= 60


def test_an_older_client_that_opens_a_session_is_served_too(mcp_url: str, keys: dict[str, str]) -> None:
    assert tool_names(mcp_url, keys["ingest"], mode="legacy") == ATOM_TOOLS
    result = call(mcp_url, keys["agent"], "kv_set", {"agent": "bot", "key": "k", "value": [1]}, mode="legacy")
    assert result.structured_content == {"result": None, "namespace": "default", "version": 1}
    assert KvEntry.objects.get().value == "[1]"
