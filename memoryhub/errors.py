"""The one domain error: what went wrong in the words of the public contract, without HTTP.

Services of every store raise a `DomainError` (the Atom, key-value and memory-file stores
have their own subclasses, `AtomError`, `KvError` and `MemoryRuleError`). Only the API
decides how it is answered: memoryhub/api/codes.py maps each code to its HTTP status, and
the one exception handler (memoryhub/api/errors.py) renders the envelope
(docs/api.md "Errors"). The codes are the public contract clients program against, so a
service never invents one without a row in that table (tests/memoryhub/test_error_codes.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class DomainError(Exception):
    """A refusal with a stable upper-snake-case `code`, a `message` for people and `details`."""

    code: str = "INVALID_REQUEST"

    def __init__(self, code: str | None, message: str, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.details: dict[str, Any] = dict(details or {})
