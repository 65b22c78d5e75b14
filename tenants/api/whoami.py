"""GET /api/v1/whoami: which tenant and key a request authenticates as."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from tenants.api.base import TenantAPIView


class WhoamiTenantOutput(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()


class WhoamiKeyOutput(serializers.Serializer):
    id = serializers.CharField(source="public_id")
    kind = serializers.CharField()
    subject = serializers.CharField(source="effective_subject")
    read_only = serializers.BooleanField()  # type: ignore[assignment]  # a declared field: DRF's metaclass takes it off the class
    agents = serializers.ListField(child=serializers.CharField(), allow_null=True)
    read_policies = serializers.ListField(child=serializers.CharField(), source="effective_read_policies")
    write_policies = serializers.ListField(child=serializers.CharField(), source="effective_write_policies")


class WhoamiOutput(serializers.Serializer):
    tenant = WhoamiTenantOutput()
    key = WhoamiKeyOutput()


WHOAMI_EXAMPLE = OpenApiExample(
    "An agent key",
    value={
        "tenant": {"slug": "demo", "name": "Demo"},
        "key": {
            "id": "k_3f9a2c7d1e", "kind": "agent", "subject": "key:k_3f9a2c7d1e",
            "read_only": False, "agents": None,
            "read_policies": ["default"], "write_policies": ["default"],
        },
    },
    response_only=True,
)


class WhoamiView(TenantAPIView):
    @extend_schema(
        operation_id="whoami",
        summary="The tenant and key this request authenticates as",
        responses={200: WhoamiOutput},
        examples=[WHOAMI_EXAMPLE],
        tags=["tenant"],
    )
    def get(self, request: Request) -> Response:
        return Response(WhoamiOutput({"tenant": self.tenant, "key": self.key}).data)
