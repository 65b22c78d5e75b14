"""Atom API errors: the library's codes (docs/api.md "Errors") as domain errors.

Their HTTP statuses are rows of the API's one table (memoryhub/api/codes.py), not known here.
"""

from __future__ import annotations

from typing import Any

from atoms.core.errors import AtomsCoreError
from memoryhub.errors import DomainError


class AtomError(DomainError):
    def __init__(self, code: str, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(code, message, details)


def from_core(error: AtomsCoreError, **extra: Any) -> AtomError:
    return AtomError(error.code, error.message, {**error.details, **extra})


def invalid(message: str, **details: Any) -> AtomError:
    return AtomError("INVALID_INPUT", message, details)


def denied(message: str, **details: Any) -> AtomError:
    return AtomError("ACCESS_DENIED", message, details)
