"""The streamable HTTP transport: the SDK's app behind McpGate, as one ASGI callable.

Stateless (`stateless_http=True`): each POST carries its own Bearer key and any worker
answers it, for 2026-07-28 clients (no sessions at all) and for older clients that send
`initialize` first (the SDK answers without a session id, so they carry none). JSON
responses, no SSE streams: no tool here streams progress.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Receive, Scope, Send

from mcp_server.gate import MCP_PATH, McpGate, ScopeKey
from mcp_server.server import build_server


class McpHttpApp:
    """Lifespan (the SDK's task group) and `/mcp`; `fallback` answers every other path."""

    def __init__(self, fallback: Any | None = None) -> None:
        self.sdk_app = build_server(ScopeKey()).streamable_http_app(
            streamable_http_path=MCP_PATH, stateless_http=True, json_response=True,
            # The Host rule is Django's ALLOWED_HOSTS, applied by McpGate.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
            max_request_body_size=settings.DATA_UPLOAD_MAX_MEMORY_SIZE,
        )
        self.gated = McpGate(self.sdk_app)
        self.fallback = fallback or self.sdk_app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":  # Django has no lifespan; the SDK starts its task group here
            await self.sdk_app(scope, receive, send)
        elif scope["type"] == "http" and scope["path"] == MCP_PATH:
            await self.gated(scope, receive, send)
        else:
            await self.fallback(scope, receive, send)
