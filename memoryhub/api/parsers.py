"""The API's JSON parser (REST_FRAMEWORK DEFAULT_PARSER_CLASSES): every JSON body under
/api/v1/ is read by memoryhub/api/strict_json.py (docs/api.md "Input boundary").

Syntax, depth and duplicate-key problems get the view's `parse_error_code`, as DRF's
parse errors do in memoryhub/api/errors.py: `INVALID_JSON`, the Atom API's `INVALID_INPUT`.
U+0000 and lone surrogates are `INVALID_CHARACTER` everywhere, as in URLs
(memoryhub/api/url_input.py).

A view may name top-level body members whose strings may hold U+0000 with
`body_nul_allowed` (a set of names, or True for the whole body): the key-value store
keeps values as escaped JSON text, where U+0000 is harmless and allowed by its contract.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from rest_framework.parsers import BaseParser

from memoryhub.api import strict_json
from memoryhub.api.errors import ApiError


class InvalidCharacter(ApiError):
    code = "INVALID_CHARACTER"


def character_error(message: str, location: str) -> InvalidCharacter:
    return InvalidCharacter(message, details={"location": location})


def nul_allowed_for(parser_context: Mapping[str, Any] | None) -> Collection[str] | bool:
    view = (parser_context or {}).get("view")
    allowed: Collection[str] | bool = getattr(view, "body_nul_allowed", ())
    return allowed


class StrictJSONParser(BaseParser):
    media_type = "application/json"

    def read(self, stream: Any, parser_context: Mapping[str, Any] | None) -> bytes:
        return stream.read() if stream is not None else b""

    def refuse(self, refused: strict_json.JsonRefused, parser_context: Mapping[str, Any] | None) -> Exception:
        if refused.problem in ("nul", "surrogate"):
            return character_error(refused.message, "body")
        view = (parser_context or {}).get("view")
        return ApiError(refused.message, code=getattr(view, "parse_error_code", "INVALID_JSON"))

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None) -> Any:
        data = self.read(stream, parser_context)
        try:
            return strict_json.loads(data, nul_allowed_in=nul_allowed_for(parser_context))
        except strict_json.JsonRefused as refused:
            raise self.refuse(refused, parser_context) from refused
