"""POST /api/v1/agents/{agent}/memory: the original's call, one to one; the only journaled endpoint."""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiTypes, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request

from memoryhub.api.errors import PermissionDenied
from memoryhub.api.schema import errors
from tenants.api.kv_base import KvAPIView, raw_json
from tenants.kv.calls import perform
from tenants.kv.rules import WRITE_ACTIONS, KvError, journal_args, json_str, validate_call
from tenants.kv.runs import CallOutcome, journaled_call
from tenants.kv.store import limits_for

RpcRequest = inline_serializer("KvMemoryCall", {
    "action": serializers.ChoiceField(choices=["set", "get", "delete", "list", "clear"]),
    "key": serializers.CharField(required=False),
    "value": serializers.JSONField(required=False),
    "namespace": serializers.CharField(required=False, allow_null=True),
    "prefix": serializers.CharField(required=False, allow_null=True),
    "expected_version": serializers.IntegerField(required=False, min_value=0),
    "run_id": serializers.CharField(required=False),
    "seq": serializers.IntegerField(required=False, min_value=1),
})
RpcResponse = inline_serializer("KvMemoryResult", {
    "result": serializers.JSONField(allow_null=True),
    "namespace": serializers.CharField(),
    "warnings": serializers.ListField(child=serializers.CharField(), required=False),
})


def _journal_target(request: Request, body: dict[str, Any]) -> tuple[str, int] | None:
    """(run_id, seq) from the body or the headers; both or neither, and never disagreeing."""
    head_run, head_seq = request.headers.get("X-Memoryhub-Run"), request.headers.get("X-Memoryhub-Seq")
    body_run, body_seq = body.get("run_id"), body.get("seq")
    if head_seq is not None:
        try:
            head_seq_value: Any = int(head_seq)
        except ValueError as exc:
            raise KvError("INVALID_REQUEST", "X-Memoryhub-Seq must be an integer >= 1.") from exc
    else:
        head_seq_value = None
    run = body_run if body_run is not None else head_run
    seq = body_seq if body_seq is not None else head_seq_value
    if (body_run is not None and head_run is not None and body_run != head_run) or (
        body_seq is not None and head_seq_value is not None and body_seq != head_seq_value
    ):
        raise KvError("INVALID_REQUEST", "The run or seq in the body and in the headers disagree.")
    if run is None and seq is None:
        return None
    if run is None or seq is None:
        raise KvError("INVALID_REQUEST", "A journaled call needs both run_id and seq.")
    if not isinstance(run, str) or not run:
        raise KvError("INVALID_REQUEST", "run_id must be a non-empty string.")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
        raise KvError("INVALID_REQUEST", "seq must be an integer >= 1.")
    return run, seq


def outcome_response(outcome: CallOutcome) -> HttpResponse:
    text = f'{{"result":{outcome.result},"namespace":{json_str(outcome.namespace)}'
    if outcome.warnings:
        text += f',"warnings":{json.dumps(outcome.warnings)}'
    headers: dict[str, str] = {}
    if outcome.etag is not None and not outcome.replayed:
        headers["ETag"] = f'"{outcome.etag}"'
    if outcome.replayed:
        headers["X_Memoryhub_Replayed"] = "true"
    return raw_json(text + "}", 200, **headers)


class KvMemoryView(KvAPIView):
    read_only_checked_by_view = True
    # Values may hold U+0000 (stored as escaped JSON text), a key with it is KEY_INVALID
    # and a namespace resolves it to "_" (docs/kv.md); anywhere else it is refused.
    body_nul_allowed = frozenset({"key", "value", "namespace"})

    @extend_schema(
        operation_id="kv_memory", summary="set / get / delete / list / clear, optionally journaled in a run",
        tags=["kv"], request=RpcRequest,
        responses={200: RpcResponse, **errors({
            404: ["AGENT_NOT_FOUND", "RUN_NOT_FOUND"],
            409: ["VERSION_CONFLICT", "REPLAY_DIVERGED", "SEQ_GAP", "VERIFY_LIVE_CALL", "RUN_CLOSED"],
            413: ["LIMIT_EXCEEDED"],
        })},
        parameters=[
            OpenApiParameter("X-Memoryhub-Run", OpenApiTypes.STR, OpenApiParameter.HEADER, description="run id (or body run_id)"),
            OpenApiParameter("X-Memoryhub-Seq", OpenApiTypes.INT, OpenApiParameter.HEADER, description="seq >= 1 (or body seq)"),
            OpenApiParameter("X-Memoryhub-Mode", OpenApiTypes.STR, OpenApiParameter.HEADER, enum=["verify"]),
        ],
        examples=[
            OpenApiExample("set", value={"action": "set", "key": "house-style", "value": "Lead with impact"}, request_only=True),
            OpenApiExample("get in a run", value={"action": "get", "key": "house-style", "run_id": "9b2…", "seq": 1}, request_only=True),
            OpenApiExample("get result", value={"result": "Lead with impact", "namespace": "default"}, response_only=True),
        ],
    )
    def post(self, request: Request, agent: str) -> HttpResponse:
        body = self.body_object()
        target = _journal_target(request, body)
        agent_obj = self.resolve_agent(agent)
        action = body.get("action")
        if isinstance(action, str) and action in WRITE_ACTIONS and self.key.read_only:
            raise PermissionDenied("This API key is read-only.")
        limits = limits_for(self.tenant)

        def execute(run_id: str | None) -> CallOutcome:
            return perform(call=validate_call(body, limits), agent=agent_obj, limits=limits, actor=self.actor, run_id=run_id)

        if target is None:
            return outcome_response(execute(None))
        run_id, seq = target
        outcome = journaled_call(
            agent=agent_obj, run_id=run_id, seq=seq,
            verify_header=request.headers.get("X-Memoryhub-Mode", "").lower() == "verify",
            args=journal_args(body), execute=execute,
        )
        return outcome_response(outcome)
