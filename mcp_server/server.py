"""The MCP server: the official SDK's low-level `Server` with our tools and resources.

Why the low-level server and not `MCPServer` (the SDK's high-level class): MCPServer
derives each tool's schema from a Python signature and lists every registered tool to
every caller. Here the list depends on the caller's key ("Tools a key may not use are not
listed"), the schemas are the REST API's own (the memory tool's is shared with
`/api/v1/tools/memory/schema`), and results carry our error envelope, so the low-level
handlers (`on_list_tools`, `on_call_tool`, ...) are the smaller fit. Both are the same SDK
and the same transports.

Every handler runs its Django work in a worker thread (`in_thread`), framed like a Django
request: connections past `CONN_MAX_AGE` or broken are closed before and after, so a
long-running process neither leaks nor reuses dead connections.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import anyio
import mcp_types as types
from django.db import close_old_connections
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from mcp_server import calls, resources
from mcp_server.registry import ToolSpec
from tenants.memory.tool_call import WriteContext
from tenants.models import ApiKey

T = TypeVar("T")
INSTRUCTIONS = (
    "memoryhub keeps this tenant's long-term memory. Call atoms_read before a step to recall what matters for it; "
    "use the memory tool to save stable preferences and facts (they reach the prompt in the next chat); kv_* tools "
    "keep exact values per agent. Errors carry a stable code in error.code."
)


class KeySource(Protocol):
    """Where a request's API key comes from: the HTTP request (mcp_server/asgi.py puts the
    key it authenticated into the ASGI scope) or the stdio command's key."""

    def key_for(self, request: Any | None) -> ApiKey: ...


def _framed(fn: Callable[..., T], *args: Any) -> T:
    close_old_connections()
    try:
        return fn(*args)
    finally:
        close_old_connections()


async def in_thread(fn: Callable[..., T], *args: Any) -> T:
    return await anyio.to_thread.run_sync(_framed, fn, *args)


def protocol_error(exc: Exception) -> MCPError:
    """A failure outside a tool (listing, resources) as a JSON-RPC error whose `data` is
    our error envelope: 4xx are the caller's (invalid params), 5xx internal."""
    body = calls.error_body(exc)
    status = body["error"]["status"]
    code = types.INVALID_PARAMS if status < 500 else types.INTERNAL_ERROR
    return MCPError(code, body["error"]["message"], data=body)


def mcp_tool(tool: ToolSpec, key: ApiKey) -> types.Tool:
    return types.Tool(
        name=tool.name, title=tool.title, description=tool.description, input_schema=tool.schema(key),
        annotations=types.ToolAnnotations(title=tool.title, read_only_hint=tool.read_only_hint,
                                          destructive_hint=False if tool.read_only_hint else None,
                                          open_world_hint=False),
    )


def write_context(request: Any | None) -> WriteContext:
    """The memory files' write headers, where the transport has headers (HTTP)."""
    if request is None:
        return WriteContext()
    headers = request.headers
    return WriteContext(origin=headers.get("x-memoryhub-origin"), session=headers.get("x-memoryhub-session"),
                        turn=headers.get("x-memoryhub-turn"))


def build_server(source: KeySource) -> Server[Any]:
    def key_of(ctx: ServerRequestContext[Any, Any]) -> ApiKey:
        return source.key_for(ctx.request)

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListToolsResult:
        def listed() -> list[types.Tool]:
            key = key_of(ctx)
            return [mcp_tool(tool, key) for tool in calls.tools_for(key)]

        try:
            return types.ListToolsResult(tools=await in_thread(listed))
        except MCPError:
            raise
        except Exception as exc:
            raise protocol_error(exc) from exc

    async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        context = write_context(ctx.request)

        def called() -> calls.ToolResult:
            try:
                key = key_of(ctx)
            except Exception as exc:  # noqa: BLE001 - a revoked stdio key: a tool error, as any refusal
                body = calls.error_body(exc)
                return calls.ToolResult(body, json.dumps(body, ensure_ascii=False), is_error=True)
            return calls.call_tool(key, params.name, dict(params.arguments or {}), context)

        result = await in_thread(called)
        return types.CallToolResult(content=[types.TextContent(type="text", text=result.text)],
                                    structured_content=result.body, is_error=result.is_error)

    async def list_resources(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListResourcesResult:
        try:
            await in_thread(key_of, ctx)
        except Exception as exc:
            raise protocol_error(exc) from exc
        return types.ListResourcesResult(resources=[
            types.Resource(uri=resources.FILE_URI.format(name=name), name=name, title=name,
                           description=resources.DESCRIPTIONS[name], mime_type="text/markdown")
            for name in resources.FILES
        ])

    async def list_templates(ctx: ServerRequestContext[Any, Any], params: Any) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[types.ResourceTemplate(
            uri_template=resources.SNAPSHOT_TEMPLATE, name="session-snapshot", title="Session snapshot",
            description="The memory block frozen for a chat session (POST /api/v1/sessions): append it to the system "
                        "prompt unchanged for the whole session.", mime_type="text/plain")])

    async def read_resource(ctx: ServerRequestContext[Any, Any],
                            params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        def read() -> resources.Contents:
            key = key_of(ctx)
            calls.require_quota(key)
            return resources.read_resource(key, str(params.uri))

        try:
            contents = await in_thread(read)
        except Exception as exc:
            raise protocol_error(exc) from exc
        return types.ReadResourceResult(contents=[
            types.TextResourceContents(uri=contents.uri, mime_type=contents.mime_type, text=contents.text)])

    return Server(
        "memoryhub", version="1.0.0", title="memoryhub", instructions=INSTRUCTIONS,
        on_list_tools=list_tools, on_call_tool=call_tool, on_list_resources=list_resources,
        on_list_resource_templates=list_templates, on_read_resource=read_resource,
    )
