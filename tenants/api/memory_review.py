"""Pending writes: list, approve (optionally edited), reject, approve all."""

from __future__ import annotations

from datetime import datetime

from django.http import JsonResponse
from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from memoryhub.api.errors import ApiError
from memoryhub.api.schema import errors
from memoryhub.api.strict import QueryParams, StrictCharField, StrictChoiceField, StrictSerializer
from tenants.api.memory_base import HUMAN_WRITERS, MemoryAPIView, body_object, rest_response
from tenants.memory.approval import pending_approve, pending_approve_all, pending_reject
from tenants.memory.rules import MAX_OPERATIONS, TARGETS
from tenants.memory.service import volume_for
from tenants.models import PendingWrite

PENDING_EXAMPLE = {"id": "pw_k3vq7d2mzr5xw4hn6t2a", "target": "memory", "status": "pending", "origin": "foreground",
                   "summary": "add: Project uses Bun and Nx", "payload": {"action": "add", "content": "Project uses Bun and Nx"},
                   "original_payload": None, "pinned": [None], "created_at": "2026-11-30T10:00:00Z",
                   "created_by": "key:k_3f9a2c7d1e", "last_error": None, "decided_at": None, "decided_by": "", "reason": ""}


def pending_item(p: PendingWrite, *, with_content: bool = True) -> dict[str, object]:
    """One queue item. Without content (another key's item, for an agent key): no payload,
    pinned entries, text summary, error message or reason, only what and when
    (docs/memory-files.md "Redaction")."""
    def iso(value: datetime | None) -> str | None:
        return value.isoformat().replace("+00:00", "Z") if value else None

    if not with_content:
        return {"id": p.public_id, "target": p.target, "status": p.status, "origin": p.origin,
                "summary": p.summary.split(":", 1)[0], "payload": None, "original_payload": None, "pinned": [],
                "created_at": iso(p.created_at), "created_by": p.created_by,
                "last_error": {"code": p.last_error.get("code")} if p.last_error else None,
                "decided_at": iso(p.decided_at), "decided_by": p.decided_by, "reason": "", "content_hidden": True}

    return {"id": p.public_id, "target": p.target, "status": p.status, "origin": p.origin, "summary": p.summary,
            "payload": p.payload, "original_payload": p.original_payload, "pinned": p.pinned,
            "created_at": iso(p.created_at), "created_by": p.created_by, "last_error": p.last_error,
            "decided_at": iso(p.decided_at), "decided_by": p.decided_by, "reason": p.reason}


class PendingQuery(QueryParams):
    target = StrictChoiceField(choices=list(TARGETS), required=False, help_text="Only this store.")
    status = StrictChoiceField(choices=["pending", "approved", "rejected"], required=False,
                               help_text="Items in this state; `pending` when absent.")


class EditedOperation(StrictSerializer):
    # A step of the staged batch sent back: its action must stay, only `content` may change.
    action = StrictChoiceField(choices=["add", "replace", "remove"], required=False)
    content = StrictCharField(required=False, allow_blank=True, trim_whitespace=False)
    old_text = StrictCharField(required=False, allow_blank=True, trim_whitespace=False)


class PendingEdit(StrictSerializer):
    content = StrictCharField(required=False, allow_blank=True, trim_whitespace=False)
    operations = EditedOperation(many=True, required=False, max_length=MAX_OPERATIONS)  # type: ignore[call-arg]  # many=True hands max_length to the ListSerializer; the stubs lack it


class PendingReject(StrictSerializer):
    reason = StrictCharField(required=False, allow_blank=True, trim_whitespace=False)


class ApproveAll(StrictSerializer):
    target = StrictChoiceField(choices=list(TARGETS), required=False, help_text="Only this store; both when absent.")


def validated(serializer_class: type[StrictSerializer], data: object) -> dict[str, object]:
    """Check a body against its strict serializer; return the body as sent (the services
    take the raw values: trimming and defaults are theirs)."""
    body = body_object(data)
    serializer_class(data=body).is_valid(raise_exception=True)
    return body


PENDING_ITEM = inline_serializer("PendingItem", {
    "id": serializers.CharField(), "target": serializers.CharField(), "status": serializers.CharField(),
    "origin": serializers.CharField(), "summary": serializers.CharField(allow_blank=True),
    "payload": serializers.DictField(allow_null=True), "original_payload": serializers.DictField(allow_null=True),
    "pinned": serializers.ListField(child=serializers.CharField(allow_null=True)),
    "created_at": serializers.CharField(), "created_by": serializers.CharField(),
    "last_error": serializers.DictField(allow_null=True), "decided_at": serializers.CharField(allow_null=True),
    "decided_by": serializers.CharField(allow_blank=True), "reason": serializers.CharField(allow_blank=True),
    "content_hidden": serializers.BooleanField(required=False, help_text="Set when the key may not see the content."),
})


class PendingReadView(MemoryAPIView):
    def sees_content_of(self, item: PendingWrite) -> bool:
        # Reviewer and admin keys review the queue; any other key sees only its own writes'
        # content, so one agent cannot read what another staged.
        return self.key.kind in HUMAN_WRITERS or item.created_by_key_id == self.key.pk


class PendingListView(PendingReadView):
    @extend_schema(
        operation_id="pending_list", summary="Staged writes, oldest first", tags=["memory review"],
        parameters=[PendingQuery],
        responses={200: inline_serializer("PendingList", {"count": serializers.IntegerField(),
                                                          "items": serializers.ListField(child=serializers.DictField())})},
        examples=[OpenApiExample("queue", value={"count": 1, "items": [PENDING_EXAMPLE]}, response_only=True)],
    )
    def get(self, request: Request) -> Response:
        query = PendingQuery.parse(request)
        queryset = PendingWrite.objects.filter(volume=volume_for(self.tenant), status=query.get("status", "pending"))
        if target := query.get("target"):
            queryset = queryset.filter(target=target)
        items = [pending_item(p, with_content=self.sees_content_of(p)) for p in queryset.order_by("created_at", "id")[:500]]
        return Response({"count": queryset.count(), "items": items})


class PendingDetailView(PendingReadView):
    @extend_schema(
        operation_id="pending_get", summary="One staged write (its content only for reviewers and its author)",
        tags=["memory review"],
        responses={200: PENDING_ITEM, **errors({404: ["PENDING_NOT_FOUND"]})},
        examples=[OpenApiExample("item", value=PENDING_EXAMPLE, response_only=True)],
    )
    def get(self, request: Request, pending_id: str) -> Response:
        QueryParams.parse(request)  # none are known
        item = PendingWrite.objects.filter(volume=volume_for(self.tenant), public_id=pending_id).first()
        if item is None:
            raise ApiError("No such pending item.", code="PENDING_NOT_FOUND")
        return Response(pending_item(item, with_content=self.sees_content_of(item)))


class PendingApproveView(MemoryAPIView):
    @extend_schema(
        operation_id="pending_approve", summary="Approve, optionally after editing content", tags=["memory review"],
        request=PendingEdit,
        responses={200: inline_serializer("PendingApproved", {"success": serializers.BooleanField(),
                                                              "version": serializers.IntegerField()}),
                   **errors({404: ["PENDING_NOT_FOUND"], 409: ["TARGET_CHANGED", "NOT_PENDING", "NO_MATCH",
                                                              "AMBIGUOUS_MATCH"],
                             422: ["OVER_LIMIT", "ENTRY_TOO_LONG", "THREAT_BLOCKED"]})},
        examples=[OpenApiExample("edit", value={"content": "Project uses Bun"}, request_only=True),
                  OpenApiExample("approved", value={"success": True, "version": 5}, response_only=True)],
    )
    def post(self, request: Request, pending_id: str) -> JsonResponse:
        self.require_reviewer_scope()
        edit = validated(PendingEdit, request.data) or None
        return rest_response(pending_approve(tenant=self.tenant, pending_id=pending_id, reviewer=self.actor, edit=edit))


class PendingRejectView(MemoryAPIView):
    @extend_schema(
        operation_id="pending_reject", summary="Reject with an optional reason", tags=["memory review"],
        request=PendingReject,
        responses={200: inline_serializer("PendingRejected", {"success": serializers.BooleanField()}),
                   **errors({404: ["PENDING_NOT_FOUND"], 409: ["NOT_PENDING"]})},
        examples=[OpenApiExample("reject", value={"reason": "one-off detail"}, request_only=True),
                  OpenApiExample("rejected", value={"success": True}, response_only=True)],
    )
    def post(self, request: Request, pending_id: str) -> JsonResponse:
        self.require_reviewer_scope()
        reason = str(validated(PendingReject, request.data).get("reason", ""))
        return rest_response(pending_reject(tenant=self.tenant, pending_id=pending_id, reviewer=self.actor, reason=reason))


class PendingApproveAllView(MemoryAPIView):
    @extend_schema(
        operation_id="pending_approve_all", summary="Approve oldest first, stopping at the first failure",
        tags=["memory review"], request=ApproveAll,
        responses={200: inline_serializer("ApprovedAll", {"approved": serializers.ListField(child=serializers.CharField()),
                   "failed": serializers.DictField(allow_null=True), "remaining": serializers.IntegerField()})},
        examples=[OpenApiExample("result", value={"approved": ["pw_k3vq7d2mzr5xw4hn6t2a"], "failed": {"id": "pw_b7c2n4xq5w6rty3e2mzk", "code": "OVER_LIMIT",
                  "error": "The result would hold 2,300/2,200 chars. …"}, "remaining": 2}, response_only=True)],
    )
    def post(self, request: Request) -> Response:
        self.require_reviewer_scope()
        body = body_object(request.data)
        target = body.get("target")
        if isinstance(target, str) and target not in TARGETS:
            raise ApiError(f"Target '{target}' is not valid; the targets are 'memory' and 'user'.",
                           code="INVALID_TARGET")
        validated(ApproveAll, body)  # unknown fields, and a target that is null or not a string
        return Response(pending_approve_all(tenant=self.tenant, reviewer=self.actor, target=target))
