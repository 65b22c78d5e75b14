"""Sessions (frozen snapshots) and the tool-call-shaped endpoint."""

from __future__ import annotations

import uuid

from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from memoryhub.api.errors import ApiError
from memoryhub.api.schema import errors
from tenants.api.memory_base import MemoryAPIView, body_object, tool_result
from tenants.memory import rules
from tenants.memory.rules import MemoryRuleError
from tenants.memory.service import WriteOutcome, memory_write, pending_count, store_state, volume_for
from tenants.memory.sessions import session_body, session_create
from tenants.memory.tool_schema import TOOL_SCHEMA
from tenants.models import MemorySession

SESSION_EXAMPLE = {"id": "0f8c1d7e-4a52-4c1b-9a3e-7d2b5f6e8a91", "chat_id": "c1", "created_at": "2026-11-30T10:00:00Z",
                   "snapshot": "══…══\nMEMORY (your personal notes) [0% — 5/2,200 chars]\n══…══\nA\n§\nB",
                   "snapshot_digest": "sha256:926c653d…", "versions": {"memory": 2, "user": 0}}
Session = inline_serializer("MemorySession", {
    "id": serializers.UUIDField(), "chat_id": serializers.CharField(allow_null=True),
    "created_at": serializers.DateTimeField(), "snapshot": serializers.CharField(),
    "snapshot_digest": serializers.CharField(), "versions": serializers.DictField(child=serializers.IntegerField()),
})


class SessionsView(MemoryAPIView):
    @extend_schema(
        operation_id="sessions_create", summary="Start a chat session with a frozen memory snapshot",
        tags=["memory files"], request=inline_serializer("SessionCreate", {"chat_id": serializers.CharField(required=False)}),
        responses={201: Session, 200: Session},
        examples=[OpenApiExample("create", value={"chat_id": "c1"}, request_only=True),
                  OpenApiExample("session", value=SESSION_EXAMPLE, response_only=True)],
    )
    def post(self, request: Request) -> Response:
        data = body_object(request.data)
        chat_id = data.get("chat_id")
        if chat_id is not None and (not isinstance(chat_id, str) or not 0 < len(chat_id) <= 200):
            raise ApiError("Request not understood: chat_id must be a string of 1-200 characters.",
                           code="INVALID_REQUEST", status=400)
        session, created = session_create(tenant=self.tenant, chat_id=chat_id, actor=self.actor)
        return Response(session_body(session), status=201 if created else 200)


class SessionDetailView(MemoryAPIView):
    @extend_schema(operation_id="sessions_get", summary="One session", tags=["memory files"],
                   responses={200: Session, **errors({404: ["SESSION_NOT_FOUND"]})},
                   examples=[OpenApiExample("session", value=SESSION_EXAMPLE, response_only=True)])
    def get(self, request: Request, session_id: str) -> Response:
        try:
            key = uuid.UUID(session_id)
        except ValueError:
            key = None
        session = MemorySession.objects.filter(volume__tenant=self.tenant, pk=key).first() if key else None
        if session is None:
            raise ApiError("No such session.", code="SESSION_NOT_FOUND", status=404)
        return Response(session_body(session))


class MemoryToolView(MemoryAPIView):
    @extend_schema(
        operation_id="tools_memory", summary="The memory tool, called with its exact arguments (always 200)",
        tags=["memory files"],
        request=inline_serializer("MemoryToolCall", {
            "action": serializers.CharField(required=False), "target": serializers.CharField(required=False, allow_null=True),
            "content": serializers.CharField(required=False), "old_text": serializers.CharField(required=False),
            "operations": serializers.ListField(child=serializers.DictField(), required=False)}),
        responses={200: inline_serializer("MemoryToolResult", {"success": serializers.BooleanField()})},
        examples=[OpenApiExample("call", value={"action": "add", "target": "user", "content": "Prefers tabs"}, request_only=True),
                  OpenApiExample("refused", value={"success": False, "code": "NO_MATCH", "error": "No memory entry "
                             "contains 'Bun'. …", "current_entries": [], "usage": "0% — 0/2,200 chars"}, response_only=True)],
    )
    def post(self, request: Request) -> Response:
        self.require_agent_scope()
        volume = volume_for(self.tenant)
        data = request.data
        target = "memory"
        try:
            if not isinstance(data, dict):
                raise rules.invalid("the arguments must be a JSON object")
            target = rules.parse_target(data.get("target"), tool_form=True)
            args = {k: v for k, v in data.items() if k != "target"}
            parsed = rules.parse_request(args, target)
        except MemoryRuleError as exc:
            outcome = self.count_outcome(WriteOutcome({}, exc.status, exc), volume, target)
            return Response(tool_result(outcome, volume, target))
        if parsed.action == "list":
            return Response({"success": True, **store_state(volume, target), "pending_count": pending_count(volume, target)})
        outcome = memory_write(tenant=self.tenant, request=parsed, origin=self.write_origin(), actor=self.actor,
                               session=self.write_session(volume))
        volume.refresh_from_db()
        return Response(tool_result(self.count_outcome(outcome, volume, target), volume, target))


class MemoryToolSchemaView(MemoryAPIView):
    @extend_schema(operation_id="tools_memory_schema", summary="The memory tool's JSON-schema definition",
                   tags=["memory files"], responses={200: inline_serializer("ToolSchema", {"name": serializers.CharField()})},
                   examples=[OpenApiExample("schema", value={"name": "memory", "description": "…"}, response_only=True)])
    def get(self, request: Request) -> Response:
        return Response(TOOL_SCHEMA)
