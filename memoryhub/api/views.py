"""API plumbing views."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView
from rest_framework.decorators import api_view, authentication_classes, permission_classes, throttle_classes
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from memoryhub.api.codes import STATUS
from memoryhub.api.errors import NotFound, error_body
from memoryhub.api.middleware import API_PREFIX


@extend_schema(exclude=True)
@api_view(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"])
@authentication_classes([])
@permission_classes([])
@throttle_classes([])
def unknown_route(request: Request, path: str = "") -> Response:
    """Every path under /api/v1/ that no route matches: 404 in the error shape."""
    raise NotFound(f"No API route matches {request.path}.", code="NOT_FOUND")


# Django's own error pages (handler400/403/404/500 in memoryhub/urls.py): under /api/v1/
# they answer the error shape too, for what fails outside DRF's views, such as a path no
# route pattern matches at all (one with a newline) or a request Django itself refuses.
# Elsewhere Django's pages stay.

def _api_error(request: HttpRequest, code: str, message: str) -> HttpResponse | None:
    if not request.path.startswith(API_PREFIX):
        return None
    return JsonResponse(error_body(code, message), status=STATUS[code])


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    return _api_error(request, "INVALID_REQUEST", "Bad request.") or defaults.bad_request(request, exception)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    return (_api_error(request, "PERMISSION_DENIED", "You do not have permission to do this.")
            or defaults.permission_denied(request, exception))


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    return _api_error(request, "NOT_FOUND", "No API route matches this path.") or defaults.page_not_found(
        request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    return _api_error(request, "INTERNAL", "Internal error.") or defaults.server_error(request)


class JsonErrors:
    """For DRF views whose pages are not JSON (the schema in YAML, Swagger UI and ReDoc in
    HTML): their errors (405, 406, ...) are rendered as the API's JSON error shape, not in
    the page's own format."""

    def handle_exception(self, exc: Exception) -> Response:
        # A mixin: the APIView it is mixed into provides both (mypy sees only `object`).
        response: Response = super().handle_exception(exc)  # type: ignore[misc]
        request = self.request  # type: ignore[attr-defined]
        request.accepted_renderer = JSONRenderer()
        request.accepted_media_type = JSONRenderer.media_type
        return response


class SchemaView(JsonErrors, SpectacularAPIView):
    pass


class SwaggerView(JsonErrors, SpectacularSwaggerSplitView):
    pass


class RedocView(JsonErrors, SpectacularRedocView):
    pass
