"""GET (any key) and PATCH (admin key) /api/v1/tenant."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from memoryhub.api.errors import ApiError, PermissionDenied, _flatten_validation
from tenants import tenant_settings
from tenants.api.base import TenantAPIView
from tenants.models import KeyKind

EXAMPLE = OpenApiExample(
    "Settings", value={"slug": "demo", "name": "Demo", "api_rate_per_minute": None}, response_only=True
)
PATCH_EXAMPLE = OpenApiExample("Raise the rate", value={"api_rate_per_minute": 12000}, request_only=True)


class TenantSettingsView(TenantAPIView):
    @extend_schema(
        operation_id="tenant_get", summary="The tenant's limits and policies",
        responses={200: tenant_settings.combined_serializer()}, examples=[EXAMPLE], tags=["tenant"],
    )
    def get(self, request: Request) -> Response:
        return Response(tenant_settings.settings_read(self.tenant))

    @extend_schema(
        operation_id="tenant_update", summary="Change limits and policies (admin key)",
        request=tenant_settings.combined_serializer(), responses={200: tenant_settings.combined_serializer()},
        examples=[EXAMPLE, PATCH_EXAMPLE], tags=["tenant"],
    )
    def patch(self, request: Request) -> Response:
        if self.key.kind != KeyKind.ADMIN:
            raise PermissionDenied("Only an admin key may change tenant settings.")
        try:
            bound = tenant_settings.settings_validate(self.tenant, request.data)
        except ValidationError as exc:
            # The Atom engine's settings keep its library's code for a bad config.
            if isinstance(exc.detail, dict) and any(str(k).startswith("atoms_") for k in exc.detail):
                raise ApiError("Invalid Atom settings.", code="INVALID_INPUT",
                               details={"errors": _flatten_validation(exc.detail)}) from exc
            raise
        return Response(tenant_settings.settings_update(tenant=self.tenant, bound=bound, actor=self.actor))
