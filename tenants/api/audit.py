"""GET /api/v1/audit: the tenant's audit log, newest first (admin keys)."""

from __future__ import annotations

from django.core.validators import RegexValidator
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from memoryhub.api.pagination import CursorPagination
from memoryhub.api.strict import PageQuery, StrictCharField
from memoryhub.models import AuditEvent
from tenants.api.base import TenantAPIView
from tenants.api.keys import ADMIN_ONLY, cursor_page

# Audit actions are dotted lower-case words (`apikey.create`, `kv.agent.delete`).
ACTION_RE = r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$"


class AuditQuery(PageQuery):
    action = StrictCharField(
        required=False, max_length=64, help_text="Only this action, e.g. apikey.create",
        validators=[RegexValidator(ACTION_RE, "Audit actions are dotted lower-case words, e.g. apikey.create.")],
    )


class AuditOutput(serializers.ModelSerializer):
    # The opaque public id: the integer pk is global across tenants (memoryhub/public_ids.py).
    id = serializers.CharField(source="public_id", read_only=True)
    actor = serializers.CharField(source="actor_label")

    class Meta:
        model = AuditEvent
        fields = ["id", "actor", "actor_kind", "action", "object_type", "object_id",
                  "before_digest", "after_digest", "created_at"]


class AuditPage(serializers.Serializer):
    results = AuditOutput(many=True)
    next = serializers.CharField(allow_null=True)


class AuditCursor(CursorPagination):
    ordering = ("-created_at", "-id")
    page_size = 100


class AuditListView(TenantAPIView):
    allowed_kinds = ADMIN_ONLY

    @extend_schema(
        operation_id="audit_list", summary="Audit events, newest first", tags=["audit"],
        parameters=[AuditQuery],
        responses={200: AuditPage},
        examples=[OpenApiExample("A page", value={"results": [{
            "id": "ev_q4m2xk7c3vz5n6bwt2ra", "actor": "key:k_3f9a2c7d1e", "actor_kind": "key", "action": "apikey.revoke",
            "object_type": "apikey", "object_id": "k_9d8c7b6a5f", "before_digest": "3b1f…",
            "after_digest": "9e0a…", "created_at": "2026-11-30T11:00:00Z"}], "next": None}, response_only=True)],
    )
    def get(self, request: Request) -> Response:
        query = AuditQuery.parse(request)
        queryset = AuditEvent.objects.for_tenant(self.tenant)
        action = query.get("action")
        if action:
            queryset = queryset.filter(action=action)
        return cursor_page(self, request, queryset, AuditOutput, AuditCursor())
