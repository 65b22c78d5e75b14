"""Signed keyset cursors: a page link or API cursor that names the last row shown (its sort
key), signed so that a hand-edited or forged cursor is refused rather than misread, and
bound to the listing that issued it.

Signed, not encrypted (django.core.signing): anyone can read a cursor, so it carries only
what its holder may know (public ids, never a global pk, memoryhub/public_ids.py).

A cursor is bound to a scope in one of two ways: `scope` fields travel inside the signed
payload and must match when it is opened (the listing's tenant, agent, filters, ...), or
the caller puts the scope into the `salt`, so that a cursor of another scope fails as a
bad signature (memoryhub/api/pagination.py: the tenant and the list's path). Each caller
keeps its own answer to a refused cursor; BadCursor says which check failed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from django.core import signing


class BadCursor(ValueError):
    """Not a cursor to continue: `unsigned` (forged, edited, another salt, or not a cursor
    at all) or `scope` (a genuine cursor of another listing)."""

    def __init__(self, reason: Literal["unsigned", "scope"]) -> None:
        super().__init__(f"bad cursor ({reason})")
        self.reason = reason


def sign_cursor(position: Any, *, salt: str, scope: Mapping[str, Any] | None = None, compress: bool = True) -> str:
    """The cursor for `position` (the last row's sort key, any JSON value; a dict when
    `scope` is given, whose fields are signed along with it)."""
    if scope:
        if not isinstance(position, dict) or scope.keys() & position.keys():
            raise TypeError("A scoped cursor's position is a dict whose names differ from the scope's.")
        position = {**scope, **position}
    return signing.dumps(position, salt=salt, compress=compress)


def open_cursor(cursor: str, *, salt: str, scope: Mapping[str, Any] | None = None) -> Any:
    """The position `cursor` was signed with, after checking the signature and, with
    `scope`, that it was issued for this scope. Raises BadCursor."""
    try:
        payload = signing.loads(cursor, salt=salt)
    except signing.BadSignature as exc:
        raise BadCursor("unsigned") from exc
    if not scope:
        return payload
    if not isinstance(payload, dict):
        raise BadCursor("unsigned")
    if any(payload.get(name) != value for name, value in scope.items()):
        raise BadCursor("scope")
    return {name: value for name, value in payload.items() if name not in scope}
