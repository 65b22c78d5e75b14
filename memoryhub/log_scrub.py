"""Log records never carry stored content or names (docs/operations.md "Logs").

Content reaches log lines through two doors, and this filter closes both on every record
before a handler formats it:

- Request paths. Key-value paths name the agent, namespace and key (docs/kv.md), UI paths
  name agents and namespaces, and `django.request` logs the path of every 4xx and 5xx. A
  path is replaced by its route with the parameters named, not filled in
  (`/api/v1/agents/<agent>/namespaces/<ns>/keys/<key>`), followed by the URL name and the
  tenant and key the request authenticated as.
- Database errors. PostgreSQL's messages carry row values (`DETAIL: Key (key)=(...) already
  exists`, `Failing row contains (...)`), the statement with its inlined parameters
  (`LINE 1: ...`) and CONTEXT lines; psycopg, Django's wrappers and Celery's failure lines
  repeat them. Their message is replaced by the class, SQLSTATE and schema names, in the
  message, the arguments and the traceback text.

Handlers see a record in the order they were added and this filter changes the record
itself, so it sits on the first handler (settings.LOGGING's console handler; in Celery
workers on every handler Celery installs, see memoryhub/celery.py). gunicorn's access log
goes through memoryhub/gunicorn_log.py.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import traceback
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote, urlsplit

from django.db import Error as DjangoDatabaseError
from django.http import HttpRequest
from django.template.base import VariableDoesNotExist
from django.urls import Resolver404, resolve

try:
    import psycopg
except ImportError:  # SQLite-only installs
    psycopg = None  # type: ignore[assignment]  # the module or None: checked before use

DATABASE_ERRORS: tuple[type[BaseException], ...] = (DjangoDatabaseError, sqlite3.Error) + (
    (psycopg.Error,) if psycopg is not None else ()
)
# Other exceptions whose message embeds data: a failed template lookup prints the whole
# template context, stored values included (django.template logs it at DEBUG).
DATA_BEARING_ERRORS: tuple[type[BaseException], ...] = (*DATABASE_ERRORS, VariableDoesNotExist)
WITHHELD = "[withheld]"
# The detail lines libpq appends to a server message, wherever such text turns up without
# its exception (a message built from str(exc), a traceback already rendered to text).
_PG_DETAIL_LINES = re.compile(r"\n(?:DETAIL|CONTEXT|HINT|LINE \d+|QUERY):[^\n]*(?:\n {2,}[^\n]*)*")
_NAMED_GROUP = re.compile(r"\(\?P<(\w+)>[^)]*\)")
_CONVERTER = re.compile(r"<(?:\w+:)?(\w+)>")
# Record attributes every LogRecord has; anything else came in through `extra=`.
_STANDARD = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "request", "status_code"}


# --- request paths -----------------------------------------------------------------------

def route_of(path: str) -> str:
    """The route `path` matches with its parameters named, never their values; an
    unmatched path says only that. Static files keep their path: it names no content."""
    from django.conf import settings

    static = "/" + str(settings.STATIC_URL).lstrip("/")
    if path.startswith(static):
        return path
    try:
        match = resolve(path)
    except (Resolver404, ValueError, TypeError):  # a path no route takes, NUL bytes included
        return "/api/v1/[unmatched]" if path.startswith("/api/v1/") else "/[unmatched]"
    shape = _CONVERTER.sub(r"<\1>", _NAMED_GROUP.sub(r"<\1>", match.route)).replace("^", "").replace("$", "")
    return f"/{shape} [{match.url_name}]" if match.url_name else f"/{shape}"


def describe_request(request: HttpRequest) -> str:
    """What an operator may see of a request: its route, URL name, tenant and key id."""
    match = getattr(request, "resolver_match", None)
    shape = route_of(request.path_info)
    parts = [shape]
    key = getattr(request, "auth", None)
    tenant_slug = match.kwargs.get("slug") if match is not None else None
    if key is not None and hasattr(key, "public_id"):
        # select_related in tenants/auth.py caches the tenant; never query from a log filter.
        cached = key._state.fields_cache.get("tenant")
        parts.append(f"tenant={cached.slug}" if cached is not None else f"tenant_id={key.tenant_id}")
        parts.append(f"key={key.public_id}")
    elif isinstance(tenant_slug, str):
        parts.append(f"tenant={tenant_slug}")
    return " ".join(parts)


def _request_replacements(request: HttpRequest) -> list[tuple[str, str]]:
    shown = describe_request(request)
    raw = {request.path, request.path_info, request.get_full_path()}
    # django.utils.log.log_response escapes its arguments with unicode_escape.
    raw |= {text.encode("unicode_escape").decode("ascii") for text in raw}
    # "/" names nothing, and replacing it would rewrite every file path in a traceback.
    return [(text, shown) for text in raw if len(text) > 1]


def _request_line(line: str) -> str:
    """`GET /api/v1/agents/bot/... HTTP/1.1` with the path replaced by its route."""
    method, _, rest = line.partition(" ")
    target, _, protocol = rest.rpartition(" ")
    if not target:
        return line
    return f"{method} {route_of(unquote(urlsplit(target).path))} {protocol}"


# --- database errors ---------------------------------------------------------------------

def database_error_summary(exc: BaseException) -> str:
    """Class, SQLSTATE and the schema names of a database error; no message, no values.
    A connection failure reported by the client library (no SQLSTATE: refused, timed out,
    authentication) keeps its message, which names a host, never stored data."""
    parts = [f"{type(exc).__name__}:"]
    source = exc if _is_driver_error(exc) else exc.__cause__
    diag = getattr(source, "diag", None)
    sqlstate = getattr(diag, "sqlstate", None) if diag is not None else None
    if sqlstate:
        parts.append(f"sqlstate={sqlstate}")
        for field in ("constraint_name", "table_name", "column_name", "datatype_name"):
            value = getattr(diag, field, None)
            if value:
                parts.append(f"{field.removesuffix('_name')}={value}")
    errorname = getattr(source, "sqlite_errorname", None)
    if errorname:
        parts.append(f"sqlite={errorname}")
    connection_level = psycopg is not None and isinstance(source, (psycopg.OperationalError, psycopg.InterfaceError))
    if connection_level and not sqlstate:
        parts.append(str(source).splitlines()[0] if str(source) else "")
    else:
        parts.append("message withheld")
    return " ".join(part for part in parts if part)


def _is_driver_error(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.Error) or (psycopg is not None and isinstance(exc, psycopg.Error))


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    """Every exception a traceback of `exc` shows: causes, contexts and group members."""
    seen: set[int] = set()
    stack = [exc]
    while stack:
        current = stack.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        stack.extend([current.__cause__, current.__context__])
        stack.extend(getattr(current, "exceptions", ()) or ())


def error_summary(exc: BaseException) -> str:
    """`Class: what may be shown` for an exception of DATA_BEARING_ERRORS."""
    if isinstance(exc, DATABASE_ERRORS):
        return database_error_summary(exc)
    return f"{type(exc).__name__}: message withheld"


def _error_replacements(exceptions: list[BaseException]) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for exc in exceptions:
        if not isinstance(exc, DATA_BEARING_ERRORS):
            continue
        summary = error_summary(exc).split(":", 1)[1].strip()
        for text in {str(exc), *(str(arg) for arg in exc.args if isinstance(arg, str))}:
            if text:
                # As rendered by str(), by repr() (Celery's failure line) and by unicode_escape.
                pairs += [(text, summary), (repr(text)[1:-1], summary),
                          (text.encode("unicode_escape").decode("ascii"), summary)]
    return pairs


# --- the filter --------------------------------------------------------------------------

class _Replacer:
    """Replaces every `old` of `pairs` in one pass, longest first, so that a replacement
    (a route, which may contain a shorter path) is never itself rewritten."""

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        self.new = dict(pairs)
        olds = sorted(self.new, key=len, reverse=True)
        self.pattern = re.compile("|".join(map(re.escape, olds))) if olds else None

    def __call__(self, text: str) -> str:
        if self.pattern is not None:
            text = self.pattern.sub(lambda match: self.new[match.group(0)], text)
        return _PG_DETAIL_LINES.sub("", text)


def _clean(value: Any, replace: _Replacer) -> Any:
    if isinstance(value, DATA_BEARING_ERRORS):
        return error_summary(value)
    if isinstance(value, str):
        return replace(value)
    if isinstance(value, tuple):
        return tuple(_clean(item, replace) for item in value)
    if isinstance(value, list):
        return [_clean(item, replace) for item in value]
    if isinstance(value, dict):
        return {key: _clean(item, replace) for key, item in value.items()}
    if isinstance(value, BaseException):
        return replace(repr(value))
    return value


def scrub(record: logging.LogRecord) -> None:
    """Rewrite `record` in place (see the module docstring), once: a record may pass more
    than one handler with the filter."""
    if getattr(record, "scrubbed", False):
        return
    record.scrubbed = True
    pairs: list[tuple[str, str]] = []
    request = getattr(record, "request", None)
    if isinstance(request, HttpRequest):
        pairs += _request_replacements(request)
    exc = record.exc_info[1] if record.exc_info else None
    found = list(_chain(exc))
    for arg in (record.args.values() if isinstance(record.args, dict) else record.args or ()):
        if isinstance(arg, BaseException):
            found += list(_chain(arg))
    if isinstance(record.msg, BaseException):
        found += list(_chain(record.msg))
    pairs += _error_replacements(found)
    replace = _Replacer(pairs)

    if record.name == "django.server" and isinstance(record.args, tuple) and record.args:
        first = record.args[0]
        if isinstance(first, str) and " " in first:  # runserver's "%s" %s %s with the request line
            record.args = (_request_line(first), *record.args[1:])
    if record.name == "uvicorn.access" and isinstance(record.args, tuple) and len(record.args) == 5:
        # '%s - "%s %s HTTP/%s" %d': client, method, path with its query string, version, status.
        target = record.args[2]
        if isinstance(target, str):
            record.args = (*record.args[:2], route_of(unquote(urlsplit(target).path)), *record.args[3:])
    if record.name == "django.db.backends" and isinstance(record.args, tuple) and len(record.args) == 4:
        # "(%.3f) %s; args=%s; alias=%s": the statement has its parameters inlined.
        record.args = (record.args[0], "[statement withheld]", WITHHELD, record.args[3])
        record.sql = record.params = WITHHELD
    record.msg = _clean(record.msg, replace)
    if record.args:
        record.args = _clean(record.args, replace)
    if exc is not None and any(isinstance(e, DATA_BEARING_ERRORS) for e in found):
        # The record keeps the traceback as text (frames, classes, summaries) and drops the
        # exception object, so no handler can render the message again.
        record.exc_text = replace("".join(traceback.format_exception(exc)).rstrip("\n"))
        record.exc_info = None
    elif record.exc_text:
        record.exc_text = replace(record.exc_text)
    for name, value in list(record.__dict__.items()):
        if name not in _STANDARD and isinstance(value, (str, tuple, list, dict)):
            setattr(record, name, _clean(value, replace))


class ScrubFilter(logging.Filter):
    """settings.LOGGING's `scrub` filter: every record passes, rewritten by `scrub`."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            scrub(record)
        except Exception as exc:  # noqa: BLE001 - a log line is never lost, only its text
            record.msg, record.args = "log record withheld: scrubbing failed (%s)", (type(exc).__name__,)
            record.exc_info, record.exc_text = None, None
        return True


def install_on_servers() -> None:
    """ASGI servers log through loggers of their own that do not reach the root logger
    (uvicorn's access and error logs, also under gunicorn's uvicorn worker): the filter goes on
    those loggers themselves, so it sees every record whichever handlers they get."""
    for name in ("uvicorn.access", "uvicorn.error"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, ScrubFilter) for f in logger.filters):
            logger.addFilter(ScrubFilter())


def install(logger: logging.Logger) -> None:
    """Put the filter on each handler of `logger` that lacks it (Celery's own handlers)."""
    for handler in logger.handlers:
        if not any(isinstance(f, ScrubFilter) for f in handler.filters):
            handler.addFilter(ScrubFilter())
