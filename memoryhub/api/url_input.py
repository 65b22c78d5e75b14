"""The input boundary for URLs under /api/v1/ (docs/api.md "Input boundary"): the path
and every query parameter name and value, percent-decoded, must be UTF-8 text without
U+0000; anything else is 400 INVALID_CHARACTER before routing, authentication or any
database work.

Why bytes and not Django's decoded strings: Django quietly rewrites what is not UTF-8
(invalid bytes in the path stay percent-encoded, in the query string they become U+FFFD),
so `?prefix=%ED%A0%80` (a lone surrogate's encoding) would search for three replacement
characters instead of being refused. U+0000 passes Django untouched and reaches the
database, which cannot hold it in text. Other control characters are ordinary text here
(a key-value key may contain a newline); paths no route matches get the JSON 404.

The path's bytes: Django replaces `PATH_INFO` with its decoded text while it builds the
request, so the bytes the client sent come from the raw request line the server keeps
(gunicorn's `RAW_URI`, the `REQUEST_URI` of other WSGI servers, an ASGI scope's
`raw_path`). Where none is kept (Django's test client, runserver), Django's decoded path is
judged: U+0000 is refused, and bytes that are not UTF-8 stay percent-escapes in it, plain
text that names no real key.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import unquote_to_bytes

from django.http import HttpRequest, HttpResponse, JsonResponse

from memoryhub.api.codes import STATUS
from memoryhub.api.errors import error_body
from memoryhub.api.middleware import API_PREFIX


def _wsgi_bytes(value: str) -> bytes:
    # WSGI passes the path and query string as bytes decoded as ISO-8859-1 (PEP 3333).
    try:
        return value.encode("iso-8859-1")
    except UnicodeEncodeError:  # not from a WSGI server: take the text as it is
        return value.encode("utf-8", "surrogatepass")


def bad_bytes(raw: bytes) -> bool:
    """True if `raw` (decoded bytes) is not UTF-8 text without U+0000."""
    if b"\x00" in raw:
        return True
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def bad_path(path_info: str) -> bool:
    """`path_info` as a WSGI server passes it (raw bytes decoded as ISO-8859-1)."""
    return bad_bytes(_wsgi_bytes(path_info))


def raw_path(request: HttpRequest) -> bytes | None:
    """The path's bytes as the client sent them, percent-escapes decoded, when the server kept
    the raw request line (module docstring)."""
    scope = getattr(request, "scope", None)
    if isinstance(scope, dict) and isinstance(scope.get("raw_path"), bytes):
        return unquote_to_bytes(scope["raw_path"])
    raw = request.META.get("RAW_URI") or request.META.get("REQUEST_URI")
    if not isinstance(raw, str) or not raw:
        return None
    path = _wsgi_bytes(raw).split(b"?", 1)[0]
    if b"://" in path:  # an absolute-form request line: `GET http://host/path`
        path = b"/" + path.split(b"://", 1)[1].partition(b"/")[2]
    return unquote_to_bytes(path)


def refused_path(request: HttpRequest) -> bool:
    if "\x00" in request.path_info:
        return True
    raw = raw_path(request)
    return raw is not None and bad_bytes(raw)


def bad_query(query_string: str) -> bool:
    """Each `name=value` piece, with `+` as a space and percent-escapes decoded, as Django's
    QueryDict reads it."""
    for piece in _wsgi_bytes(query_string).split(b"&"):
        for part in piece.split(b"=", 1):
            if bad_bytes(unquote_to_bytes(part.replace(b"+", b" "))):
                return True
    return False


def refusal(location: str) -> JsonResponse:
    message = (f"The request {'path' if location == 'path' else 'query string'} contains U+0000 or bytes "
               "that are not UTF-8 text (such as an encoded lone surrogate).")
    return JsonResponse(error_body("INVALID_CHARACTER", message, {"location": location}),
                        status=STATUS["INVALID_CHARACTER"])


class UrlInputMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith(API_PREFIX):
            if refused_path(request):
                return refusal("path")
            if bad_query(request.META.get("QUERY_STRING", "")):
                return refusal("query")
        return self.get_response(request)
