"""Live MCP servers for the tests, against the test database.

- HTTP: `uvicorn mcp_server.asgi:application` as a subprocess on a free port of
  127.0.0.1 when another process can open the test database (PostgreSQL, or SQLite in a
  file), as tests/worker.py starts workers. The default test database is in-memory SQLite,
  which only this process can open; then uvicorn serves the same app (mcp_server/transport.py)
  from a thread of this process, as pytest-django's live_server does for the browser tests.
- stdio: `manage.py mcp --key ...` as a subprocess. On in-memory SQLite it runs against a
  copy of the test database in a file (SQLite's backup API), made after the test's data.

Either way the official client (`mcp.Client`) talks to it over a real socket or pipe.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.db import connection

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def in_memory_sqlite() -> bool:
    db = connection.settings_dict
    name = str(db["NAME"])
    return db["ENGINE"] == "django.db.backends.sqlite3" and (name == ":memory:" or "mode=memory" in name)


def database_url() -> str:
    """The test database as a DATABASE_URL for another process (not in-memory SQLite)."""
    db = connection.settings_dict
    if db["ENGINE"] == "django.db.backends.sqlite3":
        return f"sqlite:///{db['NAME']}"
    user = db.get("USER") or ""
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    return f"postgres://{auth}{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"


def sqlite_copy(path: Path) -> str:
    """The in-memory test database, as it is now, copied to `path`."""
    connection.ensure_connection()
    target = sqlite3.connect(path)
    try:
        connection.connection.backup(target)
    finally:
        target.close()
    return f"sqlite:///{path}"


def subprocess_env(database: str) -> dict[str, str]:
    env = {**os.environ, "DATABASE_URL": database, "ATOMS_EMBEDDING": "none", "MEMORYHUB_VOLUME_ROOT": "",
           "DB_CONN_MAX_AGE": "0", "DJANGO_SETTINGS_MODULE": "memoryhub.settings"}
    # Tasks run eagerly in the server process; throttle counters live in its own cache.
    env.pop("REDIS_URL", None)
    env.pop("CELERY_BROKER_URL", None)
    return env


def _wait_for_port(port: int, proc: subprocess.Popen[bytes] | None, log: Path | None, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"MCP server exited with {proc.returncode}; see {log}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"MCP server not listening after {timeout}s; see {log}")


@contextmanager
def http_server() -> Iterator[str]:
    """Yields the server's `/mcp` URL."""
    port = free_port()
    if in_memory_sqlite():
        yield from _thread_server(port)
        return
    # Outside the checkout; removed once the server stopped (a failure names it in its message).
    log = Path(tempfile.gettempdir()) / f"memoryhub-mcp-test-{port}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "mcp_server.asgi:application", "--host", "127.0.0.1",
             "--port", str(port), "--log-level", "warning"],
            cwd=ROOT, env=subprocess_env(database_url()), stdout=out, stderr=subprocess.STDOUT,
        )
        try:
            _wait_for_port(port, proc, log)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    log.unlink(missing_ok=True)


def _thread_server(port: int) -> Iterator[str]:
    import uvicorn

    from mcp_server.transport import McpHttpApp

    server = uvicorn.Server(uvicorn.Config(McpHttpApp(), host="127.0.0.1", port=port, log_level="warning",
                                           lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        _wait_for_port(port, None, None)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(timeout=20)


def stdio_database(tmp: Path) -> str:
    return sqlite_copy(tmp / "stdio.sqlite3") if in_memory_sqlite() else database_url()

