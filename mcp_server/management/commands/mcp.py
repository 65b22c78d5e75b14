"""manage.py mcp --key <api key>: the MCP server over stdio, for one local agent process.

The same tools and resources as `/mcp` (mcp_server/server.py). The key is checked at
start and again on every request (a revoked key stops working at once, as over HTTP);
stdout carries only the protocol, so nothing else may print there.
"""

from __future__ import annotations

import os
from typing import Any

import anyio
from django.core.management.base import BaseCommand, CommandError, CommandParser
from rest_framework.exceptions import AuthenticationFailed

from mcp_server.server import build_server
from tenants.auth import TenantSuspended, key_for_authorization
from tenants.models import ApiKey


class SecretKey:
    def __init__(self, raw: str) -> None:
        self.header = f"Bearer {raw}"

    def key_for(self, request: Any | None) -> ApiKey:
        key = key_for_authorization(self.header)
        assert key is not None  # the header is never empty
        return key


class Command(BaseCommand):
    help = "Serve the MCP tools and resources over stdio with one API key."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--key", default=os.environ.get("MEMORYHUB_API_KEY", ""),
                            help="The API key (mh_<prefix>_<secret>); default: $MEMORYHUB_API_KEY. Prefer the "
                                 "variable: a command line is visible to other users of the machine.")

    def handle(self, *args: Any, **options: Any) -> None:
        source = SecretKey(options["key"].strip())
        try:
            source.key_for(None)
        except AuthenticationFailed as exc:
            raise CommandError(str(exc.detail)) from exc
        except TenantSuspended as exc:
            raise CommandError(exc.message) from exc
        server = build_server(source)

        async def serve() -> None:
            from mcp.server.stdio import stdio_server

            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())

        anyio.run(serve)
