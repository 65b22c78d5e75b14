"""Listing and calling tools for one key: the checks every call goes through, in the REST
order (docs/api.md "Throttling"): the key's kind and read-only flag, then one throttle
count, then the input boundary, then the store's own service. Synchronous: the server
runs it in a worker thread (mcp_server/server.py)."""

from __future__ import annotations

import json
import logging
from typing import Any

from rest_framework.exceptions import Throttled

from mcp_server import tools_atoms, tools_kv, tools_memory
from mcp_server.registry import REST_FAMILY, Call, Family, ToolResult, ToolSpec
from memoryhub.actors import Actor
from memoryhub.api import strict_json
from memoryhub.api.errors import ApiError, translate
from memoryhub.api.parsers import character_error
from tenants.memory.tool_call import WriteContext
from tenants.models import ApiKey
from tenants.throttling import throttle_wait

logger = logging.getLogger("memoryhub.mcp")

TOOLS: list[ToolSpec] = [*tools_memory.TOOLS, *tools_kv.TOOLS, *tools_atoms.TOOLS]
BY_NAME = {tool.name: tool for tool in TOOLS}


def tools_for(key: ApiKey) -> list[ToolSpec]:
    """The tools this key may use; the others are not listed (docs/mcp.md "Tools")."""
    return [tool for tool in TOOLS if tool.allowed(key)]


def error_body(exc: Exception, family: Family = REST_FAMILY) -> dict[str, Any]:
    """The REST error envelope for `exc`, from the API's one exception handler
    (memoryhub/api/errors.py), with the HTTP status the REST API would answer."""
    status, body, _headers = translate(exc, {"view": family})
    body["error"]["status"] = status
    return body


def require_quota(key: ApiKey) -> None:
    wait = throttle_wait(key)
    if wait is not None:
        raise Throttled(wait=wait)


def check_arguments(tool: ToolSpec, arguments: dict[str, Any]) -> None:
    """The REST input boundary on arguments the SDK already parsed: the body caps, nesting
    depth, U+0000 and lone surrogates (memoryhub/api/strict_json.py)."""
    if tool.body_limit is not None:
        size = len(json.dumps(arguments, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        if size > tool.body_limit:
            raise ApiError(f"The arguments exceed {tool.body_limit} bytes.", code="LIMIT_EXCEEDED",
                           details={"limit": "body_bytes", "max": tool.body_limit, "actual": size})
    try:
        strict_json.check_value(arguments, nul_allowed_in=tool.nul_allowed)
    except strict_json.JsonRefused as refused:
        if refused.problem in ("nul", "surrogate"):
            raise character_error(refused.message, "arguments") from refused
        raise ApiError(refused.message, code=tool.family.parse_error_code) from refused


def call_tool(key: ApiKey, name: str, arguments: dict[str, Any], context: WriteContext) -> ToolResult:
    tool = BY_NAME.get(name)
    family = tool.family if tool is not None else REST_FAMILY
    try:
        if tool is None:
            raise ApiError("No such tool.", code="NOT_FOUND")
        refused = tool.refusal(key)
        if refused is not None:
            raise refused
        require_quota(key)
        check_arguments(tool, arguments)
        return tool.run(Call(key=key, actor=Actor.for_key(key), arguments=arguments, context=context))
    except Exception as exc:  # noqa: BLE001 - every failure becomes a tool error in the REST envelope
        body = error_body(exc, family)
        return ToolResult(body, json.dumps(body, ensure_ascii=False), is_error=True)
