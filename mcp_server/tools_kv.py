"""`kv_get`, `kv_set`, `kv_delete`, `kv_list`: the key-value RPC over MCP (docs/kv.md).

Each tool is one RPC action: the same agent resolution and call (tenants/kv/calls.py),
validation (tenants/kv/rules.py `validate_call`), limits and audit as
`POST /api/v1/agents/{agent}/memory`. The result is the RPC body
`{"result", "namespace"}` with the stored value spliced in byte-exact, plus `version`
where the REST answer carries it in the ETag (get of a present key, set).
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings

from mcp_server.registry import Call, ToolResult, ToolSpec
from memoryhub.api.errors import PermissionDenied
from tenants.api.kv_base import KV_KINDS
from tenants.kv.calls import agent_for_key, perform
from tenants.kv.rules import KvError, json_str, validate_call
from tenants.kv.store import limits_for
from tenants.models import ApiKey

AGENT = {"type": "string", "pattern": "^[a-z0-9-]{1,64}$",
         "description": "The agent whose memory this is (its slug). A writable key creates the agent on first use."}
KEY = {"type": "string", "description": "The key within the namespace (any string; case-sensitive)."}
NAMESPACE = {"type": "string", "default": "default",
             "description": "Namespace; characters outside [A-Za-z0-9_-] become '_'. Omit for 'default'."}
EXPECTED = {"type": "integer", "minimum": 0,
            "description": "Compare-and-set: the version the key must have now (0: the key must not exist)."}


def _refusal(write: bool) -> Any:
    def refusal(key: ApiKey) -> Exception | None:
        if key.kind not in KV_KINDS:
            return PermissionDenied(f"A {key.kind} key may not use this endpoint.")
        if write and key.read_only:
            return PermissionDenied("This API key is read-only.")
        return None

    return refusal


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": {"agent": AGENT, **properties}, "required": ["agent", *required],
            "additionalProperties": False}


def _schema_for(base: dict[str, Any]) -> Any:
    """A key limited to some agents sees them as the choices of `agent`."""
    def schema_for(key: ApiKey) -> dict[str, Any]:
        if key.agents is None:
            return base
        return {**base, "properties": {**base["properties"], "agent": {**AGENT, "enum": list(key.agents)}}}

    return schema_for


def _run(action: str, names: frozenset[str]) -> Any:
    def run(call: Call) -> ToolResult:
        args = dict(call.arguments)
        agent = args.pop("agent", None)
        for name in sorted(args):
            if name not in names:
                raise KvError("INVALID_REQUEST", f"Unknown argument '{name}'.")
        if not isinstance(agent, str):
            raise KvError("INVALID_AGENT", "Agent slugs are 1-64 characters of [a-z0-9-].")
        agent_obj = agent_for_key(key=call.key, slug=agent, actor=call.actor)
        limits = limits_for(call.key.tenant)
        kv_call = validate_call({"action": action, **args}, limits)
        outcome = perform(call=kv_call, agent=agent_obj, limits=limits, actor=call.actor, run_id=None)
        text = f'{{"result":{outcome.result},"namespace":{json_str(outcome.namespace)}'
        if outcome.etag is not None:
            text += f',"version":{outcome.etag}'
        text += "}"
        return ToolResult(json.loads(text), text)

    return run


def _tool(action: str, title: str, description: str, properties: dict[str, Any], required: list[str]) -> ToolSpec:
    write = action in ("set", "delete")
    schema = _schema(properties, required)
    return ToolSpec(
        name=f"kv_{action}", title=title, description=description, input_schema=schema, schema_for=_schema_for(schema),
        refusal=_refusal(write), run=_run(action, frozenset(properties)), read_only_hint=not write,
        body_limit=settings.MEMORYHUB_KV_MAX_BODY_BYTES, nul_allowed=frozenset({"key", "value", "namespace"}),
    )


TOOLS = [
    _tool("get", "Read a stored value",
          "Read one value from an agent's key-value memory. Answers {result, namespace, version}: result is the "
          "stored JSON value, or null when the key does not exist (absence is not an error).",
          {"key": KEY, "namespace": NAMESPACE}, ["key"]),
    _tool("set", "Store a value",
          "Store a JSON value (not null) under a key of an agent's key-value memory, replacing any previous value. "
          "Pass expected_version to write only if nobody changed the key since you read it (VERSION_CONFLICT "
          "otherwise). Answers {result: null, namespace, version}.",
          {"key": KEY, "value": {"description": "Any JSON value except null."}, "namespace": NAMESPACE,
           "expected_version": EXPECTED}, ["key", "value"]),
    _tool("delete", "Delete a key",
          "Delete one key of an agent's key-value memory. Answers {result: true} if it existed, {result: false} "
          "if it did not.",
          {"key": KEY, "namespace": NAMESPACE, "expected_version": EXPECTED}, ["key"]),
    _tool("list", "List keys and values",
          "List the keys and values of one namespace of an agent's key-value memory, in key order, optionally "
          "only the keys starting with prefix. Answers {result: [{key, value}, ...], namespace}.",
          {"namespace": NAMESPACE, "prefix": {"type": "string", "description": "Only keys starting with this."}}, []),
]
