"""One ASGI application: `/mcp` is the MCP server (mcp_server/transport.py), every other
path is Django (memoryhub/asgi.py). Serve it with uvicorn, or gunicorn's uvicorn worker
(docs/mcp.md "Running it")."""

from __future__ import annotations

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")

# isort: skip_file
# Django is set up (and the embedding model warmed, memoryhub/asgi.py) before our modules load.
from memoryhub.asgi import application as django_application

from mcp_server.transport import McpHttpApp

application = McpHttpApp(fallback=django_application)
