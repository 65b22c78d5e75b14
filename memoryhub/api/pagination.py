"""Cursor pagination with the API's error for a cursor it cannot read."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from rest_framework import pagination
from rest_framework.utils.urls import replace_query_param

from memoryhub.api.errors import ApiError
from memoryhub.keyset import BadCursor, open_cursor, sign_cursor

SALT = "memoryhub.api.cursor"


def _bad_cursor() -> ApiError:
    return ApiError("The cursor is not valid.", code="INVALID_REQUEST")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class CursorPagination(pagination.CursorPagination):
    """DRF's cursor pagination, except that a cursor it cannot read is 400 INVALID_REQUEST,
    as in the key-value resources: DRF answers 404 for a malformed cursor, and a 500 for a
    well-formed one whose position does not fit the ordering field (`p=2026` on a
    timestamp), because that only fails when the position reaches the query.

    Cursors are signed (memoryhub/keyset.py) and bound, through the salt, to the tenant and
    the path of the list that issued them. DRF's own cursors are plain base64, and its
    decoder reads any base64 it cannot make sense of as "the first page", so a cursor of
    another list or tenant, or garbage, silently restarted the walk instead of being refused."""

    _scope = ""

    def paginate_queryset(self, queryset: Any, request: Any, view: Any = None) -> Any:
        tenant = getattr(getattr(request, "auth", None), "tenant_id", "")
        self._scope = f"{SALT}:{tenant}:{request.path}"
        try:
            return super().paginate_queryset(queryset, request, view)
        except (ValidationError, ValueError, TypeError) as exc:
            if request.query_params.get(self.cursor_query_param) is None:
                raise
            raise _bad_cursor() from exc

    def encode_cursor(self, cursor: pagination.Cursor) -> str:
        tokens: dict[str, Any] = {"o": cursor.offset, "r": cursor.reverse, "p": cursor.position}
        signed = sign_cursor(tokens, salt=self._scope)
        return replace_query_param(self.base_url or "", self.cursor_query_param, signed)

    def decode_cursor(self, request: Any) -> pagination.Cursor | None:
        encoded = request.query_params.get(self.cursor_query_param)
        if encoded is None:
            return None
        try:
            tokens = open_cursor(encoded, salt=self._scope)
        except BadCursor as exc:
            raise _bad_cursor() from exc
        offset, reverse, position = (tokens.get(name) if isinstance(tokens, dict) else None for name in "orp")
        if not (isinstance(offset, int) and _is_int(offset) and offset >= 0 and isinstance(reverse, bool)
                and (position is None or isinstance(position, str))):
            raise _bad_cursor()
        # DRF's Cursor types `position` as an int, but its CursorPagination stores the
        # ordering field's value there, a string for our public-id orderings.
        return pagination.Cursor(offset=min(offset, self.offset_cutoff), reverse=reverse,
                                 position=position)  # type: ignore[arg-type]
