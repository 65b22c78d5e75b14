"""The HTTP door of the MCP server: Django's Host rule and the Bearer key, before the SDK."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.http.request import split_domain_port, validate_host
from rest_framework.exceptions import NotAuthenticated
from starlette.datastructures import Headers
from starlette.types import Receive, Scope, Send

from mcp_server.calls import error_body
from mcp_server.server import in_thread
from tenants.auth import key_for_authorization
from tenants.models import ApiKey

SCOPE_KEY = "memoryhub.api_key"
MCP_PATH = "/mcp"
REALM = 'Bearer realm="memoryhub"'


class ScopeKey:
    """The key McpGate authenticated for this HTTP request."""

    def key_for(self, request: Any | None) -> ApiKey:
        key = request.scope.get(SCOPE_KEY) if request is not None else None
        if not isinstance(key, ApiKey):  # never reached through McpGate; refuse rather than guess
            raise RuntimeError("MCP request without an authenticated key")
        return key


async def _answer(send: Send, status: int, body: bytes, content_type: bytes, extra: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", content_type), (b"content-length", str(len(body)).encode()), *extra]})
    await send({"type": "http.response.body", "body": body})


class McpGate:
    """Before the SDK sees a request: Django's `ALLOWED_HOSTS` rule for the Host header (the
    SDK's own DNS-rebinding check is off, this replaces it), then the Bearer key, with the
    REST API's 401 answers (docs/api.md "Authentication"). The key goes into the scope."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = Headers(scope=scope)
        domain, _port = split_domain_port(headers.get("host", ""))
        if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
            await _answer(send, 400, b"Bad Request (invalid Host header)", b"text/plain", [])
            return
        try:
            key = await in_thread(key_for_authorization, headers.get("authorization", ""))
            if key is None:
                raise NotAuthenticated()
        except Exception as exc:  # noqa: BLE001 - translated by the API's one handler
            body = error_body(exc)
            status = body["error"].pop("status")
            extra = [(b"www-authenticate", REALM.encode())] if status == 401 else []
            await _answer(send, status, json.dumps(body).encode(), b"application/json", extra)
            return
        await self.app({**scope, SCOPE_KEY: key}, receive, send)
