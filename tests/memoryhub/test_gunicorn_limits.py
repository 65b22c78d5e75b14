"""gunicorn's request limits are the explicit ones of gunicorn.conf.py (docs/operations.md
"Limits"): a request line up to 8,190 characters reaches the app, which answers in the JSON
error shape; past the limits gunicorn itself answers with its HTML pages. A real
`gunicorn memoryhub.wsgi` from the checkout, one worker, lexical recall: a few seconds."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def raw_request(port: int, request_line: str, headers: list[str] | None = None) -> tuple[int, str, bytes]:
    """(status, content type, body) of one raw HTTP/1.1 request."""
    lines = [request_line, "Host: 127.0.0.1", "Connection: close", *(headers or []), "", ""]
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall("\r\n".join(lines).encode("latin-1"))
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    content_type = next((line.split(b":", 1)[1].strip().decode() for line in head.split(b"\r\n")[1:]
                         if line.lower().startswith(b"content-type:")), "")
    return status, content_type, body


@pytest.fixture(scope="module")
def port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    assert find_spec("gunicorn") is not None, "gunicorn is pinned in requirements.txt but not installed"
    tmp = tmp_path_factory.mktemp("gunicorn-limits")
    env = {name: value for name, value in os.environ.items()
           if name not in {"DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "MEMORYHUB_ENV", "SERVER_SOFTWARE"}
           and not name.startswith("MEMORYHUB_LIMIT_REQUEST")}
    env.update(DATABASE_URL=f"sqlite:///{tmp / 'db.sqlite3'}", MEMORYHUB_VAR_DIR=str(tmp), ATOMS_EMBEDDING="none",
               MEMORYHUB_VOLUME_ROOT="", DJANGO_SETTINGS_MODULE="memoryhub.settings")
    number, log = free_port(), tmp / "gunicorn.log"
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "gunicorn", "memoryhub.wsgi", "-w", "1",
                                    "-b", f"127.0.0.1:{number}", "--timeout", "60"],
                                   cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log.read_text(errors="replace")
            try:
                raw_request(number, "GET /healthz HTTP/1.1")
                break
            except OSError:
                assert time.monotonic() < deadline, log.read_text(errors="replace")
                time.sleep(0.2)
        yield number
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # its own session: the master and its worker
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def line_of(length: int) -> str:
    """A request line of exactly `length` characters for an unknown API path."""
    fixed = len("GET /api/v1/ HTTP/1.1")
    return f"GET /api/v1/{'a' * (length - fixed)} HTTP/1.1"


def test_a_request_line_of_8190_characters_reaches_the_app(port: int) -> None:
    # gunicorn's own default (4,094) would refuse this with its HTML 414.
    status, content_type, body = raw_request(port, line_of(8190))
    assert (status, content_type) == (404, "application/json"), body[:300]
    assert b'"code": "NOT_FOUND"' in body or b'"code":"NOT_FOUND"' in body


def test_a_longer_request_line_is_gunicorn_s_html_414(port: int) -> None:
    status, content_type, _ = raw_request(port, line_of(8191))
    assert (status, content_type) == (414, "text/html")


def test_too_many_header_fields_are_gunicorn_s_html_431(port: int) -> None:
    status, content_type, _ = raw_request(port, "GET /api/v1/whoami HTTP/1.1", [f"X-N{i}: 1" for i in range(100)])
    assert (status, content_type) == (431, "text/html")
