"""Key management for admin keys: list, create (secret shown once), show, revoke."""

from __future__ import annotations

import re
from typing import Any

from django.core.validators import RegexValidator
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from memoryhub.api.errors import NotFound
from memoryhub.api.pagination import CursorPagination
from memoryhub.api.schema import errors
from memoryhub.api.strict import (
    PageQuery,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictSerializer,
    distinct_names,
)
from tenants.api.base import TenantAPIView
from tenants.models import ApiKey, KeyKind
from tenants.models.keys import AGENT_SLUG_RE, POLICY_RE
from tenants.services.keys import apikey_create, apikey_revoke

ADMIN_ONLY = frozenset({KeyKind.ADMIN.value})


class KeySpecSerializer(StrictSerializer):
    """What a new key may be. Shared by the API and `manage.py createapikey`."""

    kind = StrictChoiceField(choices=KeyKind.choices)
    name = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
    subject = StrictCharField(max_length=200, required=False, allow_blank=True, default="")
    read_only = StrictBooleanField(required=False, default=False)  # type: ignore[assignment]  # a declared field: DRF's metaclass takes it off the class
    agents = serializers.ListField(
        child=StrictCharField(validators=[RegexValidator(AGENT_SLUG_RE, "Agent slugs are 1-64 characters of [a-z0-9-].")]),
        required=False, allow_null=True, default=None, allow_empty=False, max_length=1000,
        validators=[distinct_names],
    )
    read_policies = serializers.ListField(
        child=StrictCharField(validators=[RegexValidator(POLICY_RE, "Policy names match [A-Za-z0-9:._-]{1,128}.")]),
        required=False, allow_empty=False, max_length=100, validators=[distinct_names],
    )
    write_policies = serializers.ListField(
        child=StrictCharField(validators=[RegexValidator(POLICY_RE, "Policy names match [A-Za-z0-9:._-]{1,128}.")]),
        required=False, allow_empty=False, max_length=100, validators=[distinct_names],
    )


class KeyOutput(serializers.Serializer):
    id = serializers.CharField(source="public_id")
    name = serializers.CharField()
    kind = serializers.CharField()
    subject = serializers.CharField(source="effective_subject")
    read_only = serializers.BooleanField()  # type: ignore[assignment]  # a declared field: DRF's metaclass takes it off the class
    agents = serializers.ListField(child=serializers.CharField(), allow_null=True)
    read_policies = serializers.ListField(child=serializers.CharField(), source="effective_read_policies")
    write_policies = serializers.ListField(child=serializers.CharField(), source="effective_write_policies")
    generation = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    last_used_at = serializers.DateTimeField(allow_null=True)
    revoked_at = serializers.DateTimeField(allow_null=True)


class CreatedKeyOutput(serializers.Serializer):
    key = KeyOutput()
    secret = serializers.CharField(help_text="The API key itself. Shown only in this response.")


class KeyPage(serializers.Serializer):
    results = KeyOutput(many=True)
    next = serializers.CharField(allow_null=True)


class KeyCursor(CursorPagination):
    ordering = ("-created_at", "-id")
    page_size = 50


KEY_ID_RE = r"^k_[a-z0-9]{10}$"
KEY_ID_PARAM = OpenApiParameter("key_id", str, OpenApiParameter.PATH, pattern=KEY_ID_RE,
                                description="The key's `id`, `k_<prefix>`.")

KEY_EXAMPLE = {
    "id": "k_3f9a2c7d1e", "name": "support bot", "kind": "agent", "subject": "key:k_3f9a2c7d1e",
    "read_only": False, "agents": ["support"], "read_policies": ["default"],
    "write_policies": ["default"], "generation": 1, "created_at": "2026-11-30T10:00:00Z",
    "last_used_at": None, "revoked_at": None,
}


def cursor_page(view: TenantAPIView, request: Request, queryset: Any, output: type[serializers.Serializer], pager: CursorPagination) -> Response:
    page = pager.paginate_queryset(queryset, request, view=view) or []
    return Response({"results": output(page, many=True).data, "next": pager.get_next_link()})


class KeyListView(TenantAPIView):
    allowed_kinds = ADMIN_ONLY

    @extend_schema(
        operation_id="keys_list", summary="The tenant's API keys, newest first", tags=["keys"],
        parameters=[PageQuery], responses={200: KeyPage},
        examples=[OpenApiExample("A page", value={"results": [KEY_EXAMPLE], "next": None}, response_only=True)],
    )
    def get(self, request: Request) -> Response:
        PageQuery.parse(request)
        queryset = ApiKey.objects.for_tenant(self.tenant)
        return cursor_page(self, request, queryset, KeyOutput, KeyCursor())

    @extend_schema(
        operation_id="keys_create", summary="Create a key; its secret is shown once", tags=["keys"],
        request=KeySpecSerializer, responses={201: CreatedKeyOutput, **errors({409: ["TENANT_LIMIT_REACHED"]})},
        examples=[
            OpenApiExample("An agent key", value={"kind": "agent", "name": "support bot", "agents": ["support"]}, request_only=True),
            OpenApiExample("Created", value={"key": KEY_EXAMPLE, "secret": "mh_3f9a2c7d1e_" + "x" * 40}, response_only=True),
        ],
    )
    def post(self, request: Request) -> Response:
        spec = KeySpecSerializer(data=request.data)
        spec.is_valid(raise_exception=True)
        key, raw = apikey_create(tenant=self.tenant, actor=self.actor, **spec.validated_data)
        return Response(CreatedKeyOutput({"key": key, "secret": raw}).data, status=201)


class KeyDetailView(TenantAPIView):
    allowed_kinds = ADMIN_ONLY

    def _key(self, key_id: str) -> ApiKey:
        # Only the documented `k_<prefix>` form names a key; a bare prefix is no id.
        if not re.fullmatch(KEY_ID_RE, key_id):
            raise NotFound("No such key.", code="KEY_NOT_FOUND")
        return self.tenant_object_or_404(ApiKey.objects.all(), "No such key.", "KEY_NOT_FOUND", prefix=key_id[2:])

    @extend_schema(
        operation_id="keys_get", summary="One key", tags=["keys"], parameters=[KEY_ID_PARAM],
        responses={200: KeyOutput, **errors({404: ["KEY_NOT_FOUND"]})},
        examples=[OpenApiExample("A key", value=KEY_EXAMPLE, response_only=True)],
    )
    def get(self, request: Request, key_id: str) -> Response:
        return Response(KeyOutput(self._key(key_id)).data)

    @extend_schema(
        operation_id="keys_revoke", summary="Revoke a key at once", tags=["keys"], parameters=[KEY_ID_PARAM],
        responses={200: KeyOutput, **errors({404: ["KEY_NOT_FOUND"]})},
        examples=[OpenApiExample("Revoked", value={**KEY_EXAMPLE, "generation": 2, "revoked_at": "2026-11-30T11:00:00Z"}, response_only=True)],
    )
    def delete(self, request: Request, key_id: str) -> Response:
        key = apikey_revoke(key=self._key(key_id), actor=self.actor)
        return Response(KeyOutput(key).data)
