"""Errors raised by the pure core.

Each error carries the API code it stands for (docs/api.md "Errors"), so the Django side can map
it to an HTTP response without the core importing any of that machinery.
"""

from __future__ import annotations

from typing import Any, ClassVar


class AtomsCoreError(ValueError):
    """A rule of the contract was broken. `code` is the atoms error code; `details` is safe
    to show to the caller (it never names anything the caller cannot read)."""

    default_code: ClassVar[str] = "INVALID_INPUT"

    def __init__(self, message: str, *, code: str | None = None, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        self.details: dict[str, Any] = dict(details or {})


class IdError(AtomsCoreError):
    """An id, policy name, role or orderKey broke its rule."""

    default_code = "INVALID_SCHEMA"


class SpanError(AtomsCoreError):
    """A UTF-8 byte span is out of range or cuts a character."""

    default_code = "INVALID_SOURCE_SPAN"


class ModelError(AtomsCoreError):
    """An availability model (or its options) misbehaved; never a fallback to 0 (docs/atoms.md "Decisions")."""

    default_code = "INVALID_INPUT"
