"""No log record carries stored content or a name (docs/operations.md "Logs").

Bad input and real failures go through the whole stack (middleware, views, the database,
Celery's tracer) with every logger at DEBUG; then no planted value may appear in any
record's message, arguments, extra attributes or exception text. Runs on SQLite and, with
DATABASE_URL, on PostgreSQL, whose error messages carry row values."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from celery import shared_task
from django.db import IntegrityError, connection

from tenants.models import KvEntry

AGENT = "agent-zq7plant"
NAMESPACE = "ns-zq7plant"
KEY = "key-zq7plant"
VALUE = "value-zq7plant: the launch code is 0000"
QUERY = "query-zq7plant"
MEMORY = "memory-zq7plant: the user lives on Elm Street"
PLANTED = [AGENT, NAMESPACE, KEY, VALUE, QUERY, MEMORY, "zq7plant"]
ENTRY = f"/api/v1/agents/{AGENT}/namespaces/{NAMESPACE}/keys/{KEY}"
ENTRY_ROUTE = "/api/v1/agents/<agent>/namespaces/<ns>/keys/<key> [api-kv-entry]"
_STANDARD = set(logging.makeLogRecord({}).__dict__) | {"message", "asctime"}


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def records() -> Iterator[list[logging.LogRecord]]:
    """Every record of every logger, at DEBUG, as a handler added to the root logger (after
    the configured ones, like any log shipper) receives it."""
    handler = Collect()
    root = logging.getLogger()
    loggers = [root, *(logger for logger in logging.root.manager.loggerDict.values() if isinstance(logger, logging.Logger))]
    levels = [(logger, logger.level, logger.propagate) for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.DEBUG)
        logger.propagate = True
    root.addHandler(handler)
    yield handler.records
    root.removeHandler(handler)
    for logger, level, propagate in levels:
        logger.setLevel(level)
        logger.propagate = propagate


def texts_of(record: logging.LogRecord) -> list[str]:
    texts = [str(record.msg), repr(record.args), record.getMessage(), record.exc_text or ""]
    if record.exc_info:
        texts.append(logging.Formatter().formatException(record.exc_info))
    texts += [repr(value) for name, value in record.__dict__.items() if name not in _STANDARD and name != "request"]
    return texts


def leaks(records: list[logging.LogRecord]) -> list[str]:
    found = []
    for record in records:
        text = "\n".join(texts_of(record))
        found += [f"{record.name} {record.levelname}: {planted!r} in {text[:400]!r}" for planted in PLANTED
                  if planted in text or planted.encode("unicode_escape").decode() in text]
    return found


def plant_unique_index() -> None:
    """A unique index on (key, value) across agents: writing the same key and value under
    a second namespace fails in the database, as a real constraint would. PostgreSQL's
    message then names both (DETAIL: Key (key, value)=(...) already exists). Dropped with
    the test's transaction."""
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE UNIQUE INDEX planted_kv_unique ON {KvEntry._meta.db_table} (key, value)")


@pytest.fixture
def agent_client(acme, make_key, client_for):
    return client_for(make_key(acme, "agent")[1])


def test_a_unique_violation_logs_its_class_and_route_but_no_key_or_value(agent_client, records):
    plant_unique_index()
    assert agent_client.put(ENTRY, {"value": VALUE}, format="json").status_code == 201
    other = ENTRY.replace(NAMESPACE, NAMESPACE + "-2")
    agent_client.raise_request_exception = False
    response = agent_client.put(other, {"value": VALUE}, format="json")
    assert response.status_code == 500  # the failure really happened, in the database
    assert leaks(records) == []
    failure = next(r for r in records if r.name == "memoryhub.api" and r.levelno == logging.ERROR)
    assert "IntegrityError" in failure.exc_text and "message withheld" in failure.exc_text
    if connection.vendor == "postgresql":
        assert "sqlstate=23505" in failure.exc_text and "planted_kv_unique" in failure.exc_text
    request_lines = [r.getMessage() for r in records if r.name == "django.request"]
    assert any(line.startswith("Internal Server Error: " + ENTRY_ROUTE) for line in request_lines), request_lines


def test_a_404_on_a_kv_path_logs_the_route_tenant_and_key_not_the_names(acme, make_key, client_for, records):
    key, raw = make_key(acme, "agent")
    client = client_for(raw)
    assert client.get(ENTRY).status_code == 404
    assert client.get(f"/api/v1/agents/{AGENT}/namespaces/{NAMESPACE}/keys?prefix={KEY}").status_code < 500
    assert client.get(f"/api/v1/agents/{AGENT}/namespaces/{NAMESPACE}/key?key={KEY}").status_code == 404
    assert client.get(f"/api/v1/no-such-route/{AGENT}/{KEY}").status_code == 404
    assert client_for(None).get(ENTRY).status_code == 401
    assert leaks(records) == []
    lines = [r.getMessage() for r in records if r.name == "django.request"]
    assert f"Not Found: {ENTRY_ROUTE} tenant=acme key={key.public_id}" in lines, lines
    assert "Not Found: /api/v1/<path>" in lines, lines
    assert f"Unauthorized: {ENTRY_ROUTE}" in lines, lines


BAD_BODIES: list[tuple[str, bytes]] = [
    ("nul", b'{"value": "' + VALUE.encode() + b'\\u0000"}'),
    ("deep", b'{"value": ' + b"[" * 5000 + b'"' + VALUE.encode() + b'"' + b"]" * 5000 + b"}"),
    ("not json", b'{"value": "' + VALUE.encode() + b'"'),
    ("bad utf-8", b'{"value": "' + VALUE.encode() + b'\xff"}'),
    ("lone surrogate", b'{"value": "' + VALUE.encode() + b'\\ud800"}'),
    ("duplicate key", b'{"value": 1, "value": "' + VALUE.encode() + b'"}'),
    ("wrong type", b'["' + VALUE.encode() + b'"]'),
    ("unknown field", b'{"' + VALUE.encode() + b'": 1}'),
]


@pytest.mark.parametrize(("name", "body"), BAD_BODIES, ids=[name for name, _ in BAD_BODIES])
def test_bad_bodies_on_kv_paths_log_no_names_or_content(agent_client, records, name, body):
    agent_client.raise_request_exception = False
    for path in (ENTRY, f"/api/v1/agents/{AGENT}/memory"):
        for method in ("PUT", "POST"):
            response = agent_client.generic(method, path, body, content_type="application/json")
            assert response.status_code != 200, (name, path, method)
    rpc = agent_client.generic("POST", f"/api/v1/agents/{AGENT}/memory",
                               b'{"action": "set", "namespace": "' + NAMESPACE.encode() + b'", "key": "'
                               + KEY.encode() + b'\\u0000", "value": "x"}', content_type="application/json")
    assert rpc.status_code >= 400
    assert leaks(records) == []


@pytest.mark.parametrize("path", [f"/api/v1/agents/{AGENT}/namespaces/{NAMESPACE}/keys/{KEY}%00",
                                  f"/api/v1/agents/{AGENT}/namespaces/{NAMESPACE}/key?key={KEY}%00",
                                  f"/api/v1/agents/{AGENT}/namespaces/{NAMESPACE}/keys/{KEY}%FF"])
def test_bad_characters_in_kv_paths_log_no_names(agent_client, records, path):
    agent_client.raise_request_exception = False
    assert 400 <= agent_client.get(path).status_code < 500
    assert leaks(records) == []


def test_stored_content_and_search_queries_stay_out_of_the_logs(acme, make_key, client_for, alice, records):
    agent = client_for(make_key(acme, "agent")[1])
    assert agent.post(f"/api/v1/agents/{AGENT}/memory",
                      {"action": "set", "namespace": NAMESPACE, "key": KEY, "value": VALUE}, format="json").status_code == 200
    ingest = client_for(make_key(acme, "ingest")[1])
    write = ingest.post("/api/v1/atoms/write", {"changes": [
        {"id": "a", "op": "create", "content": {"text": f"{VALUE} {QUERY}", "links": []}, "sources": []}]}, format="json")
    assert write.status_code == 200, write.content
    for body in ({"query": QUERY}, {"query": f"{QUERY} \u0000"}, {"query": QUERY * 5000}, {"query": [QUERY]}):
        assert agent.post("/api/v1/atoms/search", body, format="json").status_code < 500
    memory = agent.post("/api/v1/memory/memory", {"action": "add", "content": MEMORY}, format="json")
    assert memory.status_code < 500
    agent.post("/api/v1/memory/memory", {"action": "add", "content": MEMORY}, format="json")  # a duplicate
    # The review pages name the agent and namespace in their paths.
    from django.test import Client

    ui = Client(raise_request_exception=False)
    ui.force_login(alice)
    assert ui.get(f"/t/acme/agents/{AGENT}/ns/{NAMESPACE}/entry", {"key": KEY}).status_code < 500
    assert ui.get(f"/t/acme/agents/{AGENT}-missing/").status_code == 404
    assert ui.get(f"/t/acme/agents/{AGENT}/ns/{NAMESPACE}/entry", {"key": KEY + "-missing"}).status_code == 404
    assert leaks(records) == []
    assert any(r.name == "django.request" and "/t/<slug>/agents/<agent>/ [kv-agent] tenant=acme" in r.getMessage()
               for r in records)


@shared_task(name="tests.log_scrub.write_planted")
def write_planted(agent_id: int) -> None:
    """A task that fails in the database with the planted values in PostgreSQL's message."""
    KvEntry.objects.create(agent_id=agent_id, namespace=NAMESPACE + "-task", key=KEY, value=f'"{VALUE}"',
                           key_bytes=1, value_bytes=1, created_at="2026-01-01T00:00Z",
                           updated_at="2026-01-01T00:00Z", created_by="t", updated_by="t")


def test_a_task_failing_in_the_database_logs_no_content(agent_client, records, eager):
    from tenants.models import Agent

    plant_unique_index()
    assert agent_client.put(ENTRY, {"value": VALUE}, format="json").status_code == 201
    agent = Agent.objects.get(slug=AGENT)
    result = write_planted.apply(args=(agent.pk,), throw=False)  # traced and logged as a worker does
    assert result.failed() and isinstance(result.result, IntegrityError)
    assert leaks(records) == []
    failure = next(r for r in records if r.name == "celery.app.trace" and r.levelno == logging.ERROR)
    assert "IntegrityError" in failure.getMessage()


def test_sql_debug_lines_keep_timing_but_not_statements(agent_client, records, settings):
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection):  # what DEBUG=True does: log every statement
        agent_client.put(ENTRY, {"value": VALUE}, format="json")
    sql = [r for r in records if r.name == "django.db.backends"]
    assert sql and all("[statement withheld]" in r.getMessage() for r in sql)
    assert leaks(records) == []


def test_a_filter_failure_keeps_the_line_without_its_text(records, monkeypatch):
    from memoryhub import log_scrub

    def broken(record: Any) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(log_scrub, "scrub", broken)
    logging.getLogger("memoryhub.tests").warning("about %s", VALUE)
    assert leaks(records) == []
    assert records[-1].getMessage() == "log record withheld: scrubbing failed (RuntimeError)"


def test_a_refused_database_connection_keeps_its_reason(records):
    """The driver's own connection failures name a host, never data: operators need them."""
    import psycopg  # pinned in requirements.txt: a missing driver fails, never skips

    from tests.faults.conftest import closed_port

    with pytest.raises(psycopg.OperationalError) as caught:
        psycopg.connect(f"postgresql://nobody@127.0.0.1:{closed_port()}/none", connect_timeout=2)
    logging.getLogger("memoryhub.api").error("database unavailable", exc_info=caught.value)
    assert "OperationalError: connection failed" in records[-1].exc_text
    assert "message withheld" not in records[-1].exc_text


def test_a_route_without_parameters_is_shown_once_even_through_two_filtered_handlers(client_for, records):
    from memoryhub.log_scrub import ScrubFilter

    second = logging.StreamHandler(io.StringIO())
    second.addFilter(ScrubFilter())
    logging.getLogger().handlers.insert(0, second)
    try:
        assert client_for(None).get("/api/v1/whoami?cursor=zq7plant").status_code == 401
    finally:
        logging.getLogger().removeHandler(second)
    lines = [r.getMessage() for r in records if r.name == "django.request"]
    assert lines == ["Unauthorized: /api/v1/whoami [api-whoami]"]
    assert leaks(records) == []


def test_djangos_own_loggers_reach_the_scrubbed_root_handler() -> None:
    """Django's defaults give `django` and `django.server` handlers of their own, which print
    request lines and paths unscrubbed; settings.LOGGING sends both to the root."""
    import logging as std_logging

    from memoryhub.log_scrub import ScrubFilter

    for name in ("django", "django.server"):
        logger = std_logging.getLogger(name)
        assert logger.handlers == [] and logger.propagate, name
    root = std_logging.getLogger()
    assert any(isinstance(f, ScrubFilter) for handler in root.handlers[:1] for f in handler.filters)


def test_uvicorns_access_lines_show_routes_not_names() -> None:
    """uvicorn (and gunicorn's uvicorn worker) logs '%s - "%s %s HTTP/%s" %d' on its own logger."""
    import logging as std_logging

    from memoryhub.log_scrub import install_on_servers

    install_on_servers()
    path = "/api/v1/agents/bot/namespaces/secretns/keys/secretkey?prefix=planted"
    record = std_logging.LogRecord("uvicorn.access", std_logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
                                   ("127.0.0.1:5000", "GET", path, "1.1", 404), None)
    assert std_logging.getLogger("uvicorn.access").filter(record)
    line = record.getMessage()
    assert "secretns" not in line and "secretkey" not in line and "planted" not in line
    assert "/api/v1/agents/<agent>/namespaces/<ns>/keys/<key>" in line and "404" in line
