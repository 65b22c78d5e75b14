"""Keeps the error shape for failures that happen outside DRF's views under /api/v1/."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, JsonResponse

from memoryhub.api.errors import translate

API_PREFIX = "/api/v1/"


class ApiErrorMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        if not request.path.startswith(API_PREFIX):
            return None
        status, body, headers = translate(exc, {})
        response = JsonResponse(body, status=status)
        for name, value in headers.items():
            response[name] = value
        return response
