"""The `memory` tool: `/api/v1/tools/memory` over MCP (docs/memory-files.md).

Same arguments (tenants/memory/tool_schema.py), same service (memory_tool_call), same
result body: `success` true or false with the code, message, current entries and usage.
A refusal (`success: false`) is also flagged as a tool error, so clients that show
errors differently do; the body is the one the REST tool answers with 200.
"""

from __future__ import annotations

import json

from mcp_server.registry import Call, ToolResult, ToolSpec
from memoryhub.api.errors import PermissionDenied
from tenants.memory.tool_call import memory_tool_call, require_agent_scope
from tenants.memory.tool_schema import DESCRIPTION, TOOL_SCHEMA
from tenants.models import ApiKey


def _refusal(key: ApiKey) -> Exception | None:
    try:
        require_agent_scope(key)
    except PermissionDenied as exc:
        return exc
    return None


def _run(call: Call) -> ToolResult:
    body = memory_tool_call(key=call.key, actor=call.actor, data=call.arguments, context=call.context)
    return ToolResult(body, json.dumps(body, ensure_ascii=False), is_error=body.get("success") is False)


MEMORY = ToolSpec(
    name="memory", title="Memory files (USER.md / MEMORY.md)", description=DESCRIPTION,
    input_schema=TOOL_SCHEMA["parameters"], refusal=_refusal, run=_run, read_only_hint=False,
)
TOOLS = [MEMORY]
