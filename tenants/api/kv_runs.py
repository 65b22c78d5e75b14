"""Runs of an agent: create, list, show, close, and the JSONL journal (docs/kv.md "Endpoints")."""

from __future__ import annotations

from typing import Any

from django.http import StreamingHttpResponse
from django.http.response import HttpResponseBase
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, OpenApiTypes, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from memoryhub.api.pagination import CursorPagination
from memoryhub.api.schema import errors
from memoryhub.api.strict import PageQuery, StrictBooleanField, StrictChoiceField, StrictSerializer
from tenants.api.kv_base import KvAPIView
from tenants.kv.rules import KvError
from tenants.kv.runs import journal_jsonl, run_close, run_create
from tenants.models import Agent, KvRun, RunMode


class RunOutput(serializers.Serializer):
    run_id = serializers.CharField()
    agent = serializers.CharField(source="agent.slug")
    mode = serializers.CharField()
    lax = serializers.BooleanField()
    status = serializers.CharField()
    frontier = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    closed_at = serializers.DateTimeField(allow_null=True)


class RunInput(StrictSerializer):
    mode = StrictChoiceField(choices=RunMode.choices, default=RunMode.RECORD)
    lax = StrictBooleanField(default=False)


class RunPage(serializers.Serializer):
    items = RunOutput(many=True)
    next_cursor = serializers.CharField(allow_null=True)


class RunCursor(CursorPagination):
    ordering = ("-created_at", "-id")
    page_size = 50


RUN_EXAMPLE = {"run_id": "9b2f6c1e-5d4a-4a57-8f0e-0c1d2e3f4a5b", "agent": "release-notes", "mode": "record",
               "lax": False, "status": "open", "frontier": 2, "created_at": "2026-11-30T10:00:00Z", "closed_at": None}


def _run(agent: Agent, run_id: str) -> KvRun:
    run = KvRun.objects.filter(agent=agent, run_id=run_id).select_related("agent").first()
    if run is None:
        raise KvError("RUN_NOT_FOUND", "No such run for this agent.")
    return run


class RunsView(KvAPIView):
    validation_error_code = "INVALID_REQUEST"

    @extend_schema(
        operation_id="kv_runs_create", summary="Start a run (record or verify)", tags=["kv runs"],
        request=RunInput, responses={201: RunOutput},
        examples=[OpenApiExample("record", value={"mode": "record", "lax": False}, request_only=True),
                  OpenApiExample("run", value=RUN_EXAMPLE, response_only=True)],
    )
    def post(self, request: Request, agent: str) -> Response:
        agent_obj = self.resolve_agent(agent)
        data: Any = request.data
        if not isinstance(data, dict):  # an empty body is {}; `null` or a list is refused
            raise KvError("INVALID_REQUEST", "The body must be a JSON object.")
        spec = RunInput(data=data)
        spec.is_valid(raise_exception=True)
        run = run_create(agent=agent_obj, actor=self.actor, **spec.validated_data)
        return Response(RunOutput(run).data, status=201)

    @extend_schema(
        operation_id="kv_runs_list", summary="Runs, newest first", tags=["kv runs"],
        parameters=[PageQuery], responses={200: RunPage},
        examples=[OpenApiExample("page", value={"items": [RUN_EXAMPLE], "next_cursor": None}, response_only=True)],
    )
    def get(self, request: Request, agent: str) -> Response:
        agent_obj = self.resolve_agent(agent)
        PageQuery.parse(request)
        pager = RunCursor()
        page = pager.paginate_queryset(KvRun.objects.filter(agent=agent_obj).select_related("agent"), request, view=self)
        next_link = pager.get_next_link()
        cursor = None
        if next_link:
            from urllib.parse import parse_qs, urlparse

            cursor = parse_qs(urlparse(next_link).query).get("cursor", [None])[0]
        return Response({"items": RunOutput(page or [], many=True).data, "next_cursor": cursor})


class RunDetailView(KvAPIView):
    @extend_schema(operation_id="kv_runs_get", summary="One run", tags=["kv runs"],
                   responses={200: RunOutput, **errors({404: ["RUN_NOT_FOUND", "AGENT_NOT_FOUND"]})},
                   examples=[OpenApiExample("run", value=RUN_EXAMPLE, response_only=True)])
    def get(self, request: Request, agent: str, run_id: str) -> Response:
        return Response(RunOutput(_run(self.resolve_agent(agent), run_id)).data)


class RunCloseView(KvAPIView):
    @extend_schema(operation_id="kv_runs_close", summary="Close a run (idempotent)", tags=["kv runs"], request=None,
                   responses={200: RunOutput, **errors({404: ["RUN_NOT_FOUND", "AGENT_NOT_FOUND"]})},
                   examples=[OpenApiExample("closed", value={**RUN_EXAMPLE, "status": "closed",
                                                             "closed_at": "2026-11-30T11:00:00Z"}, response_only=True)])
    def post(self, request: Request, agent: str, run_id: str) -> Response:
        run = run_close(run=_run(self.resolve_agent(agent), run_id), actor=self.actor)
        return Response(RunOutput(run).data)


class RunJournalView(KvAPIView):
    @extend_schema(
        operation_id="kv_runs_journal", summary="The run's journal as JSONL, seq order", tags=["kv runs"],
        responses={(200, "application/x-ndjson"): OpenApiResponse(OpenApiTypes.STR, examples=[OpenApiExample(
            "journal", value='{"seq":1,"function":"memory","args":{"action":"get","key":"k","namespace":"default",'
                             '"prefix":"","value":null},"result":"v1","duration_ms":0,"timestamp":"2026-11-30T10:02:03.123456Z"}\n')]),
            **errors({404: ["RUN_NOT_FOUND", "AGENT_NOT_FOUND"]})},
    )
    def get(self, request: Request, agent: str, run_id: str) -> HttpResponseBase:
        run = _run(self.resolve_agent(agent), run_id)
        response = StreamingHttpResponse((line.encode("utf-8") for line in journal_jsonl(run)),
                                         content_type="application/x-ndjson")
        response["Content-Disposition"] = f'inline; filename="{run.run_id}.jsonl"'
        return response
