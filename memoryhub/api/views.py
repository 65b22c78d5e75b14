"""API plumbing views."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view, authentication_classes, permission_classes, throttle_classes
from rest_framework.request import Request
from rest_framework.response import Response

from memoryhub.api.errors import NotFound


@extend_schema(exclude=True)
@api_view(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"])
@authentication_classes([])
@permission_classes([])
@throttle_classes([])
def unknown_route(request: Request, path: str = "") -> Response:
    """Every path under /api/v1/ that no route matches: 404 in the error shape."""
    raise NotFound(f"No API route matches {request.path}.", code="NOT_FOUND")
