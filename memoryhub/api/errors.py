"""One error shape for the whole API: {"error": {"code", "message", "details"}}.

Services raise `ApiError` (or a subclass with a fixed code); DRF and Django exceptions are
translated here. Views may name the codes their API family uses for validation and
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

logger = logging.getLogger("memoryhub.api")


class ApiError(Exception):
    """An error answered to the client as-is."""

    status: int = 400
    code: str = "INVALID_REQUEST"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status
        self.details = details or {}
        self.headers: dict[str, str] = {}


class NotFound(ApiError):
    status = 404
    code = "NOT_FOUND"


class PermissionDenied(ApiError):
    status = 403
    code = "PERMISSION_DENIED"


def error_body(code: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details or {}}}


def error_response(
    status: int, code: str, message: str, details: dict[str, Any] | None = None
) -> Response:
    return Response(error_body(code, message, details), status=status)


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


def translate(exc: Exception, context: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
    """Map any exception to (status, body, extra headers)."""
    headers: dict[str, str] = {}
    if isinstance(exc, ApiError):
        return exc.status, error_body(exc.code, exc.message, exc.details), dict(exc.headers)
    if isinstance(exc, (drf.NotAuthenticated, drf.AuthenticationFailed)):
        headers["WWW-Authenticate"] = 'Bearer realm="memoryhub"'
        message = str(exc.detail) if isinstance(exc, drf.AuthenticationFailed) else (
            "Authentication required: send Authorization: Bearer <api key>."
        )
        return 401, error_body("UNAUTHENTICATED", message), headers
    if isinstance(exc, drf.ParseError):
        code = _view_attr(context, "parse_error_code", "INVALID_JSON")
        return 400, error_body(code, f"The request body is not valid JSON: {exc.detail}"), headers
    if isinstance(exc, drf.ValidationError):
        code = _view_attr(context, "validation_error_code", "INVALID_REQUEST")
        errors = _flatten_validation(exc.detail)
        first = errors[0] if errors else {"path": "", "message": "Invalid request."}
        message = f"{first['path']}: {first['message']}" if first["path"] else first["message"]
        return 400, error_body(code, message, {"errors": errors}), headers
    if isinstance(exc, (drf.PermissionDenied, DjangoPermissionDenied)):
        code = _view_attr(context, "permission_denied_code", "PERMISSION_DENIED")
        detail = getattr(exc, "detail", None) or "You do not have permission to do this."
        return 403, error_body(code, str(detail)), headers
    if isinstance(exc, (drf.NotFound, Http404)):
        return 404, error_body("NOT_FOUND", "Not found."), headers
    if isinstance(exc, drf.MethodNotAllowed):
        return 405, error_body("METHOD_NOT_ALLOWED", str(exc.detail)), headers
    if isinstance(exc, drf.NotAcceptable):
        return 406, error_body("NOT_ACCEPTABLE", str(exc.detail)), headers
    if isinstance(exc, drf.UnsupportedMediaType):
        return 415, error_body("UNSUPPORTED_MEDIA_TYPE", str(exc.detail)), headers
    if isinstance(exc, drf.Throttled):
        wait = int(exc.wait or 1)
        headers["Retry-After"] = str(wait)
        return 429, error_body("THROTTLED", "Too many requests for this key.", {"retry_after": wait}), headers
    if isinstance(exc, RequestDataTooBig):
        return 413, error_body("LIMIT_EXCEEDED", "The request body is too large.", {"limit": "body_bytes"}), headers
    if isinstance(exc, drf.APIException):
        code = str(exc.get_codes()).upper() if isinstance(exc.get_codes(), str) else "INVALID_REQUEST"
        return exc.status_code, error_body(code, str(exc.detail)), headers
    if isinstance(exc, (OperationalError, InterfaceError)):
        logger.exception("database unavailable")
        headers["Retry-After"] = "5"  # a failover or restart is usually over within seconds
        return 503, error_body("SERVICE_UNAVAILABLE", "The database is unavailable; retry later."), headers
    if isinstance(exc, DatabaseError):
        logger.exception("database error")
        return 500, error_body("INTERNAL", "Internal error."), headers
    logger.exception("unhandled API error")
    return 500, error_body("INTERNAL", "Internal error."), headers


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response:
    status, body, headers = translate(exc, context)
    response = Response(body, status=status)
    for name, value in headers.items():
        response[name] = value
    return response
