"""GET memory, GET/POST memory/{target}, history and undo."""

from __future__ import annotations

import uuid

from django.http import JsonResponse
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiTypes,
    PolymorphicProxySerializer,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from memoryhub.api.pagination import CursorPagination
from memoryhub.api.schema import errors
from memoryhub.api.strict import PageQuery, StrictCharField, StrictChoiceField, StrictIntegerField, StrictSerializer
from tenants.api.memory_base import MemoryAPIView, rest_response
from tenants.memory import rules
from tenants.memory.rules import MemoryRuleError
from tenants.memory.service import memory_undo, memory_write, pending_count, store_state, volume_for
from tenants.memory.tool_call import WriteContext
from tenants.models import MemoryVersion, Origin

TARGET_PARAM = OpenApiParameter("target", OpenApiTypes.STR, OpenApiParameter.PATH, enum=["memory", "user"])
WRITE_HEADERS = [
    OpenApiParameter("X-Memoryhub-Session", OpenApiTypes.UUID, OpenApiParameter.HEADER),
    OpenApiParameter("X-Memoryhub-Turn", OpenApiTypes.STR, OpenApiParameter.HEADER),
    OpenApiParameter("X-Memoryhub-Origin", OpenApiTypes.STR, OpenApiParameter.HEADER, enum=["foreground", "review"]),
]
STORE_EXAMPLE = {"entries": ["Project uses Bun and Nx"], "usage": "1% — 23/2,200 chars", "chars": 23,
                 "limit": 2200, "entry_count": 1, "version": 1}
Store = inline_serializer("MemoryStore", {
    "entries": serializers.ListField(child=serializers.CharField()), "usage": serializers.CharField(),
    "chars": serializers.IntegerField(), "limit": serializers.IntegerField(),
    "entry_count": serializers.IntegerField(), "version": serializers.IntegerField(),
})
Listing = inline_serializer("MemoryListing", {
    "entries": serializers.ListField(child=serializers.CharField()), "usage": serializers.CharField(),
    "chars": serializers.IntegerField(), "limit": serializers.IntegerField(),
    "entry_count": serializers.IntegerField(), "version": serializers.IntegerField(),
    "pending_count": serializers.IntegerField(),
})


class MemoryWriteOperation(StrictSerializer):
    action = StrictChoiceField(choices=["add", "replace", "remove"])
    content = StrictCharField(required=False, allow_blank=True, trim_whitespace=False)
    old_text = StrictCharField(required=False, allow_blank=True, trim_whitespace=False)


class MemoryWrite(StrictSerializer):
    # The schema of the REST write. The values are checked by tenants/memory/rules.py, in
    # the order and with the codes of docs/memory-files.md; strict_write_shape() adds
    # what the schema says beyond that: no unknown fields, no nulls.
    action = StrictChoiceField(choices=["add", "replace", "remove", "list", *rules.ALIASES], required=False)
    content = StrictCharField(required=False, allow_blank=True, trim_whitespace=False)
    old_text = StrictCharField(required=False, allow_blank=True, trim_whitespace=False)
    operations = MemoryWriteOperation(many=True, required=False, max_length=rules.MAX_OPERATIONS,
                                      allow_empty=False)  # type: ignore[call-arg]  # many=True hands max_length to the ListSerializer; the stubs lack it


def strict_write_shape(data: dict[str, object], headers: WriteContext) -> None:
    """Unknown fields, nulls and wrong types in a REST write, and malformed write headers,
    are refused whatever the action and the key (INVALID_REQUEST, counted by the retry cap
    like any other refusal): `list` and reviewer keys ignore what they do not use, but the
    request is still not one the schema allows. The tool form keeps the original tool's
    leniency (docs/memory-files.md)."""
    items: list[tuple[str, dict[str, object], frozenset[str]]] = [("", data, WRITE_FIELDS)]
    operations = data.get("operations")
    if isinstance(operations, list):
        items += [(f"operation {i}: ", op, OPERATION_FIELDS) for i, op in enumerate(operations, 1) if isinstance(op, dict)]
    for where, item, known in items:
        for name, value in item.items():
            if name not in known:
                raise rules.invalid(f"{where}unknown field '{name}'")
            if value is None:
                raise rules.invalid(f"{where}'{name}' must not be null")
            if name != "operations" and not isinstance(value, str):
                raise rules.invalid(f"{where}'{name}' must be a string")
    if headers.origin is not None and headers.origin not in (Origin.FOREGROUND, Origin.REVIEW):
        raise rules.invalid("X-Memoryhub-Origin must be 'foreground' or 'review'")
    if headers.session is not None:
        try:
            uuid.UUID(headers.session)
        except ValueError as exc:
            raise rules.invalid("X-Memoryhub-Session is not a session id") from exc


WRITE_FIELDS = frozenset(MemoryWrite().fields)
OPERATION_FIELDS = frozenset(MemoryWriteOperation().fields)
WriteResult = inline_serializer("MemoryWriteResult", {
    "success": serializers.BooleanField(), "done": serializers.BooleanField(), "target": serializers.CharField(),
    "message": serializers.CharField(), "usage": serializers.CharField(), "entry_count": serializers.IntegerField(),
    "note": serializers.CharField(), "staged": serializers.BooleanField(required=False),
    "pending_id": serializers.CharField(required=False),
})
# `{"action": "list"}` (or its aliases) answers the store, as GET does.
WriteOrList = PolymorphicProxySerializer("MemoryWriteOrListing", serializers=[WriteResult, Listing],
                                         resource_type_field_name=None)


def target_of(raw: str) -> str:
    return rules.parse_target(raw, tool_form=False)  # INVALID_TARGET: rendered by the one handler


class MemoryOverviewView(MemoryAPIView):
    @extend_schema(
        operation_id="memory_get", summary="Both stores, the approval policy and pending and drift state",
        tags=["memory files"],
        responses={200: inline_serializer("MemoryOverview", {"memory": Store, "user": Store,
                   "approval": serializers.CharField(), "pending_count": serializers.IntegerField(),
                   "drift": serializers.DictField()})},
        examples=[OpenApiExample("overview", value={"memory": STORE_EXAMPLE, "user": {**STORE_EXAMPLE, "entries": [],
                  "usage": "0% — 0/1,375 chars", "chars": 0, "limit": 1375, "entry_count": 0, "version": 0},
                  "approval": "all", "pending_count": 0, "drift": {"memory": None, "user": None}}, response_only=True)],
    )
    def get(self, request: Request) -> Response:
        volume = volume_for(self.tenant)
        return Response({
            "memory": store_state(volume, "memory"), "user": store_state(volume, "user"),
            "approval": volume.approval, "pending_count": pending_count(volume),
            "drift": {"memory": volume.memory_drift, "user": volume.user_drift},
        })


class MemoryStoreView(MemoryAPIView):
    @extend_schema(operation_id="memory_list", summary="One store (as the tool's list)", tags=["memory files"],
                   parameters=[TARGET_PARAM], responses={200: Listing},
                   examples=[OpenApiExample("store", value={**STORE_EXAMPLE, "pending_count": 0}, response_only=True)])
    def get(self, request: Request, target: str) -> Response:
        volume = volume_for(self.tenant)
        target = target_of(target)
        return Response({**store_state(volume, target), "pending_count": pending_count(volume, target)})

    @extend_schema(
        operation_id="memory_write", summary="add / replace / remove, or a batch of operations", tags=["memory files"],
        parameters=[TARGET_PARAM, *WRITE_HEADERS], request=MemoryWrite,
        responses={200: WriteOrList, 202: WriteResult, **errors({
            404: ["SESSION_NOT_FOUND"], 409: ["NO_MATCH", "AMBIGUOUS_MATCH"],
            422: ["OVER_LIMIT", "ENTRY_TOO_LONG", "THREAT_BLOCKED"], 429: ["RETRY_LIMIT", "THROTTLED"],
        })},
        examples=[
            OpenApiExample("add", value={"action": "add", "content": "Project uses Bun and Nx"}, request_only=True),
            OpenApiExample("batch", value={"operations": [{"action": "remove", "old_text": "Bun"},
                           {"action": "add", "content": "Project uses pnpm"}]}, request_only=True),
            OpenApiExample("saved", value={"success": True, "done": True, "target": "memory", "message": "Saved a new entry.",
                           "usage": "1% — 23/2,200 chars", "entry_count": 1, "note": rules.DONE_NOTE}, response_only=True),
        ],
    )
    def post(self, request: Request, target: str) -> JsonResponse | Response:
        target = target_of(target)
        volume = volume_for(self.tenant)
        try:
            parsed = rules.parse_request(request.data, target)
            strict_write_shape(request.data, self.write_context())
            if parsed.action == "list":
                return Response({**store_state(volume, target), "pending_count": pending_count(volume, target)})
            self.require_agent_scope()
            origin = self.write_origin()
            session = self.write_session(volume)
            outcome = memory_write(tenant=self.tenant, request=parsed, origin=origin, actor=self.actor,
                                   session=session)
        except MemoryRuleError as exc:
            # Caught only for the retry cap, which counts refused writes.
            raise self.counted_refusal(exc, volume, target) from None
        self.count_success()
        return rest_response(outcome)


class HistoryCursor(CursorPagination):
    ordering = ("-number",)
    page_size = 50


class MemoryHistoryView(MemoryAPIView):
    @extend_schema(
        operation_id="memory_history", summary="Versions of one store, newest first", tags=["memory files"],
        parameters=[TARGET_PARAM, PageQuery],
        responses={200: inline_serializer("MemoryHistory", {"items": serializers.ListField(child=serializers.DictField()),
                                                            "next_cursor": serializers.CharField(allow_null=True)})},
        examples=[OpenApiExample("page", value={"items": [{"number": 2, "created_at": "2026-11-30T10:00:00Z",
                  "origin": "foreground", "actor": "key:k_3f9a2c7d1e", "reason": "", "session_id": None,
                  "pending_id": "pw_k3vq7d2mzr5xw4hn6t2a", "approved_by": "user:bob", "before": ["A"], "after": ["A", "B"]}],
                  "next_cursor": None}, response_only=True)],
    )
    def get(self, request: Request, target: str) -> Response:
        target = target_of(target)
        PageQuery.parse(request)
        volume = volume_for(self.tenant)
        pager = HistoryCursor()
        page = pager.paginate_queryset(MemoryVersion.objects.filter(volume=volume, target=target).select_related("pending"), request, view=self) or []
        numbers = {v.number - 1 for v in page}
        earlier = dict(MemoryVersion.objects.filter(volume=volume, target=target, number__in=numbers)
                       .values_list("number", "entries"))
        items = [{
            "number": v.number, "created_at": v.created_at.isoformat().replace("+00:00", "Z"), "origin": v.origin,
            "actor": v.actor_label, "reason": v.reason, "session_id": str(v.session_id) if v.session_id else None,
            "pending_id": v.pending.public_id if v.pending else None, "approved_by": v.approved_by_label or None,
            "before": earlier.get(v.number - 1, []), "after": v.entries,
        } for v in page]
        next_link = pager.get_next_link()
        cursor = None
        if next_link:
            from urllib.parse import parse_qs, urlparse

            cursor = parse_qs(urlparse(next_link).query).get("cursor", [None])[0]
        return Response({"items": items, "next_cursor": cursor})


class UndoInput(StrictSerializer):
    version = StrictIntegerField(min_value=0)
    reason = StrictCharField(required=False, allow_blank=True, max_length=500, default="")


class MemoryUndoView(MemoryAPIView):
    @extend_schema(
        operation_id="memory_undo", summary="Restore the entries after version N as a new human version",
        tags=["memory files"], parameters=[TARGET_PARAM], request=UndoInput,
        responses={200: inline_serializer("MemoryUndone", {"success": serializers.BooleanField(),
                                                           "version": serializers.IntegerField()}),
                   **errors({404: ["VERSION_NOT_FOUND"], 422: ["OVER_LIMIT", "THREAT_BLOCKED"]})},
        examples=[OpenApiExample("undo", value={"version": 1, "reason": "agent saved a one-off"}, request_only=True),
                  OpenApiExample("done", value={"success": True, "version": 4}, response_only=True)],
    )
    def post(self, request: Request, target: str) -> JsonResponse:
        target = target_of(target)
        self.require_reviewer_scope()
        data = UndoInput(data=request.data)
        data.is_valid(raise_exception=True)
        outcome = memory_undo(tenant=self.tenant, target=target, version=data.validated_data["version"],
                              actor=self.actor, reason=data.validated_data["reason"])
        return rest_response(outcome)
