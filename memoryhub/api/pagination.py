"""Cursor pagination with the API's error for a cursor it cannot read."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from rest_framework import pagination
from rest_framework.exceptions import NotFound

from memoryhub.api.errors import ApiError


def _bad_cursor() -> ApiError:
    return ApiError("The cursor is not valid.", code="INVALID_REQUEST")


class CursorPagination(pagination.CursorPagination):
    """DRF's cursor pagination, except that a cursor it cannot read is 400 INVALID_REQUEST,
    as in the key-value resources: DRF answers 404 for a malformed cursor, and a 500 for a
    well-formed one whose position does not fit the ordering field (`p=2026` on a
    timestamp), because that only fails when the position reaches the query."""

    def decode_cursor(self, request: Any) -> Any:
        try:
            return super().decode_cursor(request)
        except NotFound as exc:
            raise _bad_cursor() from exc

    def paginate_queryset(self, queryset: Any, request: Any, view: Any = None) -> Any:
        try:
            return super().paginate_queryset(queryset, request, view)
        except (ValidationError, ValueError, TypeError) as exc:
            if request.query_params.get(self.cursor_query_param) is None:
                raise
            raise _bad_cursor() from exc
