"""HTTP helpers of bench/kv.py: a local gunicorn, a kept-alive client, a concurrent load.

Only 127.0.0.1 is contacted; the server runs in its own session and is always stopped.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


class BenchError(Exception):
    """A phase cannot run; the message says why."""


# --- HTTP -------------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Client:
    """One connection to the local server; reopened when the server closes it."""

    def __init__(self, port: int, token: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, bytes]:
        self.conn.request("POST", path, json.dumps(body).encode(), self.headers)
        response = self.conn.getresponse()
        return response.status, response.read()

    def close(self) -> None:
        self.conn.close()


def error_code(body: bytes) -> str:
    try:
        return str(json.loads(body)["error"]["code"])
    except (ValueError, KeyError, TypeError):
        return "(no error body)"


class Server:
    """`gunicorn memoryhub.wsgi -w 2` on a free local port, stopped on exit."""

    def __init__(self, tmp: Path) -> None:
        self.port = free_port()
        self.log = tmp / "gunicorn.log"
        command = [str(Path(sys.executable).parent / "gunicorn"), "memoryhub.wsgi", "-w", "2",
                   "-b", f"127.0.0.1:{self.port}", "--error-logfile", str(self.log), "--log-level", "warning"]
        self.process = subprocess.Popen(command, cwd=ROOT, env=os.environ.copy(),
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

    def wait_ready(self, timeout_s: float = 60) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise BenchError(f"gunicorn exited with status {self.process.returncode}:\n{self.log_tail()}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", "/healthz")
                conn.getresponse().read()
                conn.close()
                return
            except OSError:
                time.sleep(0.2)
        raise BenchError(f"gunicorn did not answer within {timeout_s:.0f} s:\n{self.log_tail()}")

    def log_tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-20:]) if self.log.exists() else ""

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)  # our own session: gunicorn and its workers
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=5)


def check_endpoint(client: Client, path: str) -> None:
    """Fail clearly when the RPC endpoint is missing (404 outside the API's own codes)."""
    status, body = client.post(path, {"action": "get", "key": "probe", "namespace": "probe"})
    if status == 404 and error_code(body) != "AGENT_NOT_FOUND":
        raise BenchError(f"POST {path} answered 404 ({error_code(body)}): this build has no KV RPC endpoint yet, "
                         "so the HTTP figures cannot be measured")
    if status != 200:
        raise BenchError(f"POST {path} answered {status} {error_code(body)}; expected 200")


def throughput(port: int, token: str, path: str, make_body: Callable[[int], dict[str, Any]], *,
               clients: int, total: int, budget_s: float) -> float:
    """Requests per second with `clients` concurrent connections, `total` requests in all."""
    per_client = max(1, total // clients)
    done = [0] * clients
    failures: list[str] = []
    stop_at = time.monotonic() + budget_s

    def work(slot: int) -> None:
        client = Client(port, token)
        try:
            for i in range(per_client):
                status, body = client.post(path, make_body(slot * per_client + i))
                if status != 200:
                    failures.append(f"{status} {error_code(body)}")
                    return
                done[slot] += 1
                if time.monotonic() > stop_at:
                    return
        finally:
            client.close()

    threads = [threading.Thread(target=work, args=(slot,)) for slot in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    if failures:
        raise BenchError(f"a concurrent request failed: {failures[0]}")
    return sum(done) / elapsed
