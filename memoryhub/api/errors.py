"""One error shape for the whole API: {"error": {"code", "message", "details"}}.

Services raise a `DomainError` (memoryhub/errors.py) and views an `ApiError`; its status
comes from the one table of codes (memoryhub/api/codes.py). DRF and Django exceptions are
translated here too. Views may name the codes their API family uses for validation and
permission failures (the Atom API keeps its library's `INVALID_INPUT` / `ACCESS_DENIED`).
"""

from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import Http404
from rest_framework import exceptions as drf
from rest_framework.response import Response

from memoryhub.api.codes import STATUS, status_for
from memoryhub.errors import DomainError

logger = logging.getLogger("memoryhub.api")


class ApiError(DomainError):
    """An error raised by the API layer. Its status is its code's row in the table; `status`
    is for the rare answer that must differ (a replayed key-value error keeps the status it
    was recorded with), and `headers` are sent with the answer."""

    status: int | None = None

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(code, message, details)
        if status is not None:
            self.status = status
        self.headers: dict[str, str] = {}


class NotFound(ApiError):
    code = "NOT_FOUND"


class PermissionDenied(ApiError):
    code = "PERMISSION_DENIED"


def error_body(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details or {}}}


def _view_attr(context: dict[str, Any], name: str, default: str) -> str:
    view = context.get("view")
    return getattr(view, name, default) if view is not None else default


def _flatten_validation(detail: Any, path: str = "") -> list[dict[str, str]]:
    """Turn DRF's nested error dict into a flat list of {path, message, code}."""
    if isinstance(detail, dict):
        out: list[dict[str, str]] = []
        for key, value in detail.items():
            if isinstance(key, int):  # ListField errors are keyed by position
                sub = f"{path}[{key}]"
            elif key == "non_field_errors":
                sub = path
            else:
                sub = f"{path}.{key}" if path else str(key)
            out.extend(_flatten_validation(value, sub))
        return out
    if isinstance(detail, list):
        out = []
        for index, value in enumerate(detail):
            if isinstance(value, (dict, list)):
                out.extend(_flatten_validation(value, f"{path}[{index}]"))
            else:
                out.extend(_flatten_validation(value, path))
        return out
    code = getattr(detail, "code", "invalid")
    return [{"path": path, "message": str(detail), "code": str(code)}]


def _answer(code: str, message: str, details: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
    return STATUS[code], error_body(code, message, details)


def translate(exc: Exception, context: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
    """Map any exception to (status, body, extra headers); statuses come from the codes' table."""
    headers: dict[str, str] = {}
    if isinstance(exc, DomainError):
        return status_for(exc), error_body(exc.code, exc.message, exc.details), dict(getattr(exc, "headers", {}))
    if isinstance(exc, (drf.NotAuthenticated, drf.AuthenticationFailed)):
        headers["WWW-Authenticate"] = 'Bearer realm="memoryhub"'
        message = str(exc.detail) if isinstance(exc, drf.AuthenticationFailed) else (
            "Authentication required: send Authorization: Bearer <api key>."
        )
        return *_answer("UNAUTHENTICATED", message), headers
    if isinstance(exc, drf.ParseError):
        code = _view_attr(context, "parse_error_code", "INVALID_JSON")
        return *_answer(code, f"The request body is not valid JSON: {exc.detail}"), headers
    if isinstance(exc, drf.ValidationError):
        code = _view_attr(context, "validation_error_code", "INVALID_REQUEST")
        errors = _flatten_validation(exc.detail)
        first = errors[0] if errors else {"path": "", "message": "Invalid request."}
        message = f"{first['path']}: {first['message']}" if first["path"] else first["message"]
        return *_answer(code, message, {"errors": errors}), headers
    if isinstance(exc, (drf.PermissionDenied, DjangoPermissionDenied)):
        code = _view_attr(context, "permission_denied_code", "PERMISSION_DENIED")
        detail = getattr(exc, "detail", None) or "You do not have permission to do this."
        return *_answer(code, str(detail)), headers
    if isinstance(exc, (drf.NotFound, Http404)):
        return *_answer("NOT_FOUND", "Not found."), headers
    if isinstance(exc, drf.MethodNotAllowed):
        return *_answer("METHOD_NOT_ALLOWED", str(exc.detail)), headers
    if isinstance(exc, drf.NotAcceptable):
        return *_answer("NOT_ACCEPTABLE", str(exc.detail)), headers
    if isinstance(exc, drf.UnsupportedMediaType):
        return *_answer("UNSUPPORTED_MEDIA_TYPE", str(exc.detail)), headers
    if isinstance(exc, drf.Throttled):
        wait = int(getattr(exc, "wait", None) or 1)  # the DRF stubs do not declare `wait`
        headers["Retry-After"] = str(wait)
        return *_answer("THROTTLED", "Too many requests for this key.", {"retry_after": wait}), headers
    if isinstance(exc, RequestDataTooBig):
        return *_answer("LIMIT_EXCEEDED", "The request body is too large.", {"limit": "body_bytes"}), headers
    if isinstance(exc, drf.APIException):
        # Any other DRF error keeps DRF's own status (docs/api.md "Errors").
        code = str(exc.get_codes()).upper() if isinstance(exc.get_codes(), str) else "INVALID_REQUEST"
        return exc.status_code, error_body(code, str(exc.detail)), headers
    if isinstance(exc, (OperationalError, InterfaceError)):
        logger.exception("database unavailable")
        headers["Retry-After"] = "5"  # a failover or restart is usually over within seconds
        return *_answer("SERVICE_UNAVAILABLE", "The database is unavailable; retry later."), headers
    if isinstance(exc, DatabaseError):
        logger.exception("database error")
        return *_answer("INTERNAL", "Internal error."), headers
    logger.exception("unhandled API error")
    return *_answer("INTERNAL", "Internal error."), headers


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    status, body, headers = translate(exc, context)
    response = Response(body, status=status)
    for name, value in headers.items():
        response[name] = value
    return response
