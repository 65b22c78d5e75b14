"""Sessions (frozen snapshots) and the tool-call-shaped endpoint."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from memoryhub.api.schema import errors
from memoryhub.api.strict import StrictCharField, StrictSerializer
from tenants.api.memory_base import MemoryAPIView, body_object
from tenants.memory.sessions import session_body, session_create, session_of
from tenants.memory.tool_call import memory_tool_call
from tenants.memory.tool_schema import TOOL_SCHEMA

SESSION_EXAMPLE = {"id": "0f8c1d7e-4a52-4c1b-9a3e-7d2b5f6e8a91", "chat_id": "c1", "created_at": "2026-11-30T10:00:00Z",
                   "snapshot": "══…══\nMEMORY (your personal notes) [0% — 5/2,200 chars]\n══…══\nA\n\u00a7\nB",
                   "snapshot_digest": "sha256:926c653d…", "versions": {"memory": 2, "user": 0}}
Session = inline_serializer("MemorySession", {
    "id": serializers.UUIDField(), "chat_id": serializers.CharField(allow_null=True),
    "created_at": serializers.DateTimeField(), "snapshot": serializers.CharField(),
    "snapshot_digest": serializers.CharField(), "versions": serializers.DictField(child=serializers.IntegerField()),
})


class SessionCreate(StrictSerializer):
    chat_id = StrictCharField(required=False, min_length=1, max_length=200, trim_whitespace=False,
                              help_text="Your chat's id: the same id returns the same session.")


class SessionsView(MemoryAPIView):
    @extend_schema(
        operation_id="sessions_create", summary="Start a chat session with a frozen memory snapshot",
        tags=["memory files"], request=SessionCreate,
        responses={201: Session, 200: Session},
        examples=[OpenApiExample("create", value={"chat_id": "c1"}, request_only=True),
                  OpenApiExample("session", value=SESSION_EXAMPLE, response_only=True)],
    )
    def post(self, request: Request) -> Response:
        data = SessionCreate(data=body_object(request.data))
        data.is_valid(raise_exception=True)
        chat_id = data.validated_data.get("chat_id")
        session, created = session_create(tenant=self.tenant, chat_id=chat_id, actor=self.actor)
        return Response(session_body(session), status=201 if created else 200)


class SessionDetailView(MemoryAPIView):
    @extend_schema(operation_id="sessions_get", summary="One session", tags=["memory files"],
                   responses={200: Session, **errors({404: ["SESSION_NOT_FOUND"]})},
                   examples=[OpenApiExample("session", value=SESSION_EXAMPLE, response_only=True)])
    def get(self, request: Request, session_id: str) -> Response:
        return Response(session_body(session_of(self.tenant, session_id)))


class MemoryToolView(MemoryAPIView):
    @extend_schema(
        operation_id="tools_memory", summary="The memory tool, called with its exact arguments (always 200)",
        tags=["memory files"],
        request=inline_serializer("MemoryToolCall", {
            "action": serializers.CharField(required=False), "target": serializers.CharField(required=False, allow_null=True),
            # The original tool's arguments: null means absent (docs/memory-files.md).
            "content": serializers.CharField(required=False, allow_null=True),
            "old_text": serializers.CharField(required=False, allow_null=True),
            "operations": serializers.ListField(child=serializers.DictField(), required=False)}),
        responses={200: inline_serializer("MemoryToolResult", {"success": serializers.BooleanField()})},
        examples=[OpenApiExample("call", value={"action": "add", "target": "user", "content": "Prefers tabs"}, request_only=True),
                  OpenApiExample("refused", value={"success": False, "code": "NO_MATCH", "error": "No memory entry "
                             "contains 'Bun'. …", "current_entries": [], "usage": "0% — 0/2,200 chars"}, response_only=True)],
    )
    def post(self, request: Request) -> Response:
        return Response(memory_tool_call(key=self.key, actor=self.actor, data=request.data,
                                         context=self.write_context()))


class MemoryToolSchemaView(MemoryAPIView):
    @extend_schema(operation_id="tools_memory_schema", summary="The memory tool's JSON-schema definition",
                   tags=["memory files"], responses={200: inline_serializer("ToolSchema", {"name": serializers.CharField()})},
                   examples=[OpenApiExample("schema", value={"name": "memory", "description": "…"}, response_only=True)])
    def get(self, request: Request) -> Response:
        return Response(TOOL_SCHEMA)
