"""The request body cap for the API, enforced before anything reads the body.

DRF's parsers read the request stream directly, which bypasses Django's own
DATA_UPLOAD_MAX_MEMORY_SIZE check (that one guards `request.body` and form parsing only).
So every /api/v1/ request whose declared Content-Length exceeds the setting is answered
413 LIMIT_EXCEEDED here, before authentication, parsing or any database work. A request
without Content-Length has no body as far as WSGI is concerned (Django reads nothing),
so the declared length is the whole story. Endpoints keep their own smaller caps (KV
8 MiB, Atoms 2 MiB except write).
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

from memoryhub.api.codes import STATUS
from memoryhub.api.errors import error_body
from memoryhub.api.middleware import API_PREFIX


def declared_length(request: HttpRequest) -> int:
    try:
        return max(int(request.META.get("CONTENT_LENGTH") or 0), 0)
    except ValueError:
        return 0  # Django treats an unreadable length as no body


class ApiBodyLimitMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        if limit is not None and request.path.startswith(API_PREFIX):
            length = declared_length(request)
            if length > limit:
                body = error_body("LIMIT_EXCEEDED", f"The request body exceeds {limit} bytes.",
                                  {"limit": "body_bytes", "max": limit, "actual": length})
                return JsonResponse(body, status=STATUS["LIMIT_EXCEEDED"])
        return self.get_response(request)
