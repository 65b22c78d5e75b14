"""The processes that set up logging their own way keep names out of their logs too: a real
gunicorn with its access log on, and a Celery worker's logging set up by Celery itself
(docs/operations.md "Logs"). No database is needed: the requests fail before one is used."""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.memoryhub.test_gunicorn_start import free_port

ROOT = Path(__file__).resolve().parents[2]
AGENT, NAMESPACE, KEY, QUERY = "agent-zq7plant", "ns-zq7plant", "key-zq7plant", "prefix-zq7plant"


def environment(tmp_path: Path) -> dict[str, str]:
    env = {name: value for name, value in os.environ.items()
           if name not in {"DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "MEMORYHUB_ENV", "SERVER_SOFTWARE"}}
    env.update(DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}", MEMORYHUB_VAR_DIR=str(tmp_path),
               ATOMS_EMBEDDING="none", DJANGO_SETTINGS_MODULE="memoryhub.settings", LOG_LEVEL="DEBUG")
    return env


def get(port: int, path: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path, headers={"Referer": f"http://127.0.0.1/t/acme/agents/{AGENT}/"})
        response = conn.getresponse()
        response.read()
        return response.status
    finally:
        conn.close()


def test_gunicorns_access_log_and_djangos_request_log_show_routes_not_names(tmp_path):
    port, log = free_port(), tmp_path / "gunicorn.log"
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "gunicorn", "memoryhub.wsgi", "-w", "1", "-b",
                                    f"127.0.0.1:{port}", "--access-logfile", "-", "--log-level", "debug"],
                                   cwd=ROOT, env=environment(tmp_path), stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    try:
        path = f"/api/v1/agents/{AGENT}/namespaces/{NAMESPACE}/keys?prefix={QUERY}"
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, log.read_text(errors="replace")
            try:
                status = get(port, path)
                break
            except OSError:
                assert time.monotonic() < deadline, log.read_text(errors="replace")
                time.sleep(0.2)
        assert status == 401
        assert get(port, f"/t/acme/agents/{AGENT}/ns/{NAMESPACE}/entry?key={KEY}") == 302  # to the login page
        assert get(port, f"/api/v1/no-such/{AGENT}/{KEY}") == 404
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:  # never leave a gunicorn behind
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
    text = log.read_text(errors="replace")
    assert "GET /api/v1/agents/<agent>/namespaces/<ns>/keys [api-kv-keys] HTTP/1.1" in text, text
    assert "GET /t/<slug>/agents/<agent>/ns/<ns>/entry [kv-entry] HTTP/1.1" in text, text
    assert "Unauthorized: /api/v1/agents/<agent>/namespaces/<ns>/keys [api-kv-keys]" in text, text
    for planted in (AGENT, NAMESPACE, KEY, QUERY):
        assert planted not in text, text


CELERY_LOGGING = """
import logging, sqlite3
from memoryhub.celery import app
app.log.setup(loglevel="DEBUG")  # what `celery worker` and `celery beat` do at start
try:
    raise sqlite3.IntegrityError("UNIQUE constraint failed; the row held key-zq7plant")
except sqlite3.IntegrityError:
    logging.getLogger("celery.app.trace").exception("Task failed")
    logging.getLogger("celery.task").exception("task logger")
"""


def test_celerys_own_logging_setup_keeps_the_filter(tmp_path):
    done = subprocess.run([sys.executable, "-c", CELERY_LOGGING], cwd=ROOT, env=environment(tmp_path),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("sqlite3.IntegrityError: message withheld") == 2, done.stderr
    assert "zq7plant" not in done.stderr


@pytest.mark.parametrize("line", ["GET /api/v1/agents/agent-zq7plant/namespaces/ns/keys/k?x=1 HTTP/1.1"])
def test_runservers_request_lines_show_routes(line):
    import logging

    from memoryhub.log_scrub import scrub

    record = logging.LogRecord("django.server", logging.WARNING, __file__, 1, '"%s" %s %s', (line, 404, 10), None)
    scrub(record)
    assert record.getMessage() == '"GET /api/v1/agents/<agent>/namespaces/<ns>/keys/<key> [api-kv-entry] HTTP/1.1" 404 10'
