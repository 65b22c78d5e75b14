"""Keeps the error shape for failures that happen outside DRF's views under /api/v1/, and
answers a lost database with 503 everywhere (never a traceback, never a 500 page)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string

from memoryhub.api.errors import translate

API_PREFIX = "/api/v1/"
logger = logging.getLogger("memoryhub.api")


class ApiErrorMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        if not request.path.startswith(API_PREFIX):
            return unavailable_page(exc)
        status, body, headers = translate(exc, {})
        response = JsonResponse(body, status=status)
        for name, value in headers.items():
            response[name] = value
        return response


def unavailable_page(exc: Exception) -> HttpResponse | None:
    """A UI page whose database went away: 503 with a page that needs no database (base.html's
    context processors query it). Other exceptions keep Django's own handling."""
    if not isinstance(exc, (OperationalError, InterfaceError)):
        return None
    logger.exception("database unavailable")
    return HttpResponse(render_to_string("503.html"), status=503, headers={"Retry-After": "5"})
