"""MCP tool calls against the same REST calls, and many MCP clients at once.

    .venv/bin/python bench/mcp_calls.py [--calls 300] [--clients 50] [--per-client 20] [--workers 2]

One server for both: `uvicorn mcp_server.asgi:application --workers N` on a free port of
127.0.0.1 (Django answers /api/v1/, the MCP server /mcp), on a fresh SQLite file in a
temporary folder (or the local PostgreSQL of DATABASE_URL). In one run it times:

- latency pairs, interleaved call by call so that load on the machine hits both sides alike:
  `kv_get` vs `POST /api/v1/agents/{agent}/memory {"action": "get"}`, and the `memory`
  tool's list vs `POST /api/v1/tools/memory {"action": "list"}`. REST goes through an
  httpx2 client with keep-alive, MCP through the official client (`mcp.Client`, protocol
  2026-07-28, one POST per call) over the same kind of connection; client-side work is in
  both figures. It prints p50 / p95 per side and the p95 difference (target: <= 5 ms);
- `--clients` concurrent MCP clients (each its own `mcp.Client` and connection), each
  making `--per-client` calls alternating `kv_set` and `kv_get` on keys of its own: errors
  (target: none), calls/s and p95.

Writes bench/out/mcp.json (the file is not named mcp.py: run as a script, that
name would hide the `mcp` package). Only 127.0.0.1 is contacted; every loop has a count.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out" / "mcp.json"
AGENT = "bench"


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def environment(tmp: Path) -> dict[str, str]:
    url = os.environ.get("DATABASE_URL", "").strip() or f"sqlite:///{tmp / 'bench.sqlite3'}"
    if (urlparse(url).hostname or "") not in {"", "127.0.0.1", "localhost", "::1"}:
        raise SystemExit("DATABASE_URL must point at 127.0.0.1; this benchmark stays local")
    env = {**os.environ, "DATABASE_URL": url, "MEMORYHUB_VAR_DIR": str(tmp / "var"), "ATOMS_EMBEDDING": "none",
           "MEMORYHUB_VOLUME_ROOT": "", "LOG_LEVEL": "WARNING",
           # The default per-key rate (6,000/min) would throttle the benchmark itself.
           "MEMORYHUB_DEFAULT_API_RATE_PER_MINUTE": str(10**9)}
    env.pop("REDIS_URL", None)  # embedded mode: local cache, eager tasks
    return env


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          check=True, timeout=600)
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


def p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def summary(samples: list[float]) -> dict[str, float]:
    return {"n": len(samples), "p50_ms": round(statistics.median(samples) * 1000, 3),
            "p95_ms": round(p95(samples) * 1000, 3)}


async def pair(label: str, rest: Callable[[], Awaitable[None]], tool: Callable[[], Awaitable[None]],
               calls: int) -> dict[str, Any]:
    for _ in range(10):  # untimed: connections, caches, the first queries
        await rest()
        await tool()
    rest_s: list[float] = []
    tool_s: list[float] = []
    for _ in range(calls):
        for run, into in ((rest, rest_s), (tool, tool_s)):
            t0 = time.perf_counter()
            await run()
            into.append(time.perf_counter() - t0)
    result = {"rest": summary(rest_s), "mcp": summary(tool_s)}
    result["p95_difference_ms"] = round(result["mcp"]["p95_ms"] - result["rest"]["p95_ms"], 3)
    result["p50_difference_ms"] = round(result["mcp"]["p50_ms"] - result["rest"]["p50_ms"], 3)
    progress(f"  {label}: REST p50 {result['rest']['p50_ms']} p95 {result['rest']['p95_ms']} ms; MCP p50 "
             f"{result['mcp']['p50_ms']} p95 {result['mcp']['p95_ms']} ms; p95 difference "
             f"{result['p95_difference_ms']} ms")
    return result


async def latency(base: str, key: str, calls: int) -> dict[str, Any]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {"Authorization": f"Bearer {key}"}
    async with httpx2.AsyncClient(base_url=base, headers=headers) as http, \
            Client(streamable_http_client(f"{base}/mcp", http_client=create_mcp_http_client(headers=headers))) as mcp:

        def rest_call(path: str, body: dict[str, Any]) -> Callable[[], Awaitable[None]]:
            async def run() -> None:
                response = await http.post(path, json=body)
                if response.status_code != 200:
                    raise RuntimeError(f"REST {path} answered {response.status_code}")
            return run

        def tool_call(name: str, arguments: dict[str, Any]) -> Callable[[], Awaitable[None]]:
            async def run() -> None:
                result = await mcp.call_tool(name, arguments)
                if result.is_error:
                    raise RuntimeError(f"tool {name} answered an error: {result.content[0].text}")  # type: ignore[union-attr]
            return run

        await rest_call(f"/api/v1/agents/{AGENT}/memory", {"action": "set", "key": "style", "value": {"tone": "dry"}})()
        return {
            "kv_get": await pair("kv_get", rest_call(f"/api/v1/agents/{AGENT}/memory", {"action": "get", "key": "style"}),
                                 tool_call("kv_get", {"agent": AGENT, "key": "style"}), calls),
            "memory_list": await pair("memory list", rest_call("/api/v1/tools/memory", {"action": "list"}),
                                      tool_call("memory", {"action": "list"}), calls),
        }


async def concurrent(base: str, key: str, clients: int, per_client: int) -> dict[str, Any]:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    samples: list[float] = []
    errors: list[str] = []

    async def one(slot: int) -> None:
        try:
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {key}"})
            async with Client(streamable_http_client(f"{base}/mcp", http_client=http)) as client:
                for i in range(per_client):
                    name, args = (("kv_set", {"agent": AGENT, "key": f"c{slot}", "value": i}) if i % 2 == 0
                                  else ("kv_get", {"agent": AGENT, "key": f"c{slot}"}))
                    t0 = time.perf_counter()
                    result = await client.call_tool(name, args)
                    samples.append(time.perf_counter() - t0)
                    if result.is_error:
                        errors.append(result.content[0].text)  # type: ignore[union-attr]
        except Exception as exc:  # noqa: BLE001 - counted and reported, not raised
            errors.append(f"{type(exc).__name__}: {exc}")

    started = time.perf_counter()
    await asyncio.gather(*(one(slot) for slot in range(clients)))
    elapsed = time.perf_counter() - started
    result = {"clients": clients, "calls": len(samples), "errors": len(errors), "first_error": errors[:1],
              "seconds": round(elapsed, 2), "calls_per_s": round(len(samples) / elapsed, 1), **summary(samples)}
    progress(f"  {clients} clients: {result['calls']} calls, {result['errors']} errors, {result['calls_per_s']} "
             f"calls/s, p95 {result['p95_ms']} ms")
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--per-client", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcp-bench-") as folder:
        tmp = Path(folder)
        env = environment(tmp)
        progress("setup: migrate, tenant, key")
        manage(env, "migrate", "-v0")
        tenant = f"bench-{os.getpid()}"
        manage(env, "createtenant", tenant)
        key = manage(env, "createapikey", "--tenant", tenant, "--kind", "agent")
        port = _free_port()
        log = (tmp / "uvicorn.log").open("wb")
        server = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "mcp_server.asgi:application", "--host", "127.0.0.1", "--port", str(port),
             "--workers", str(options.workers), "--log-level", "warning", "--no-access-log"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait(port, server)
            base = f"http://127.0.0.1:{port}"
            progress(f"latency pairs ({options.calls} calls each side, interleaved)")
            pairs = asyncio.run(latency(base, key, options.calls))
            progress("concurrent clients")
            load = asyncio.run(concurrent(base, key, options.clients, options.per_client))
        finally:
            server.terminate()
            server.wait(timeout=30)
            log.close()
    report = {"command": " ".join(sys.argv), "date": datetime.now(UTC).isoformat(timespec="seconds"),
              "machine": platform.platform(), "cpus": os.cpu_count(), "load_average": os.getloadavg(),
              "database": urlparse(env["DATABASE_URL"]).scheme, "workers": options.workers,
              "latency": pairs, "concurrent": load}
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))
    return 0 if load["errors"] == 0 else 1


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait(port: int, server: subprocess.Popen[bytes], timeout: float = 90) -> None:
    import socket

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"uvicorn exited with {server.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.3)
    raise SystemExit("uvicorn did not listen in time")


if __name__ == "__main__":
    sys.exit(main())
