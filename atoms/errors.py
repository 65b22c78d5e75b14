"""Atom API errors: the library's codes (docs/api.md "Errors") in the project's error shape."""

from __future__ import annotations

from typing import Any

from atoms.core.errors import AtomsCoreError
from memoryhub.api.errors import ApiError

STATUS: dict[str, int] = {
    "INVALID_INPUT": 400, "INVALID_SCHEMA": 400, "INVALID_REF": 400, "INVALID_SOURCE_SPAN": 400,
    "PINNED_INCLUDE_REQUIRED": 400, "INCLUDE_CYCLE": 400, "UNAUTHENTICATED": 401, "ACCESS_DENIED": 403,
    "REFERENCE_UNAVAILABLE": 404, "LIMIT_EXCEEDED": 413, "REVISION_CONFLICT": 409, "IDEMPOTENCY_CONFLICT": 409,
    "STATE_INVALIDATED": 409, "MODEL_SPACE_MISMATCH": 409, "CURSOR_EXPIRED": 410, "BUDGET_EXHAUSTED": 422,
    "INDEX_NOT_READY": 503, "ATOMICITY_UNAVAILABLE": 503, "CONSISTENCY_UNAVAILABLE": 503,
    "GUARD_VALIDATION_UNAVAILABLE": 503, "ABORTED": 503, "INTERNAL": 500,
}


class AtomError(ApiError):
    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message, code=code, status=STATUS[code], details=details)


def from_core(error: AtomsCoreError, **extra: Any) -> AtomError:
    return AtomError(error.code, error.message, {**error.details, **extra})


def invalid(message: str, **details: Any) -> AtomError:
    return AtomError("INVALID_INPUT", message, details)


def denied(message: str, **details: Any) -> AtomError:
    return AtomError("ACCESS_DENIED", message, details)
