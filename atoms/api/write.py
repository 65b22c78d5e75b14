"""POST /api/v1/atoms/write: the body parsed into a `WriteCommand`, the `WriteResult` rendered as
JSON (docs/architecture.md "Typed services")."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from atoms.api.base import WRITE_BODY_LIMIT, AtomsAPIView
from atoms.api.schemas_results import AtomsView
from atoms.api.schemas_write import AtomsWrite
from atoms.errors import denied, invalid
from atoms.models import ReviewStatus
from atoms.principal import Principal, resolve_binding
from atoms.services.barrier import open_store
from atoms.services.write import WriteCommand, WriteResult, atoms_write
from atoms.services.write_plan import plan_write
from memoryhub.api.schema import errors

BODY_KEYS = {"binding", "changes", "options"}


def parse_write(caller: Principal, body: dict[str, Any]) -> WriteCommand:
    """The command a write body asks for, checked in the order of docs/atoms.md "Decisions":
    the body's keys, the binding (ACCESS_DENIED without a write policy), the options and the
    deadline, then the changes (shapes, targets, links, sources)."""
    if set(body) - BODY_KEYS:
        raise invalid("The body keys are binding, changes and options.")
    binding = resolve_binding(caller, body.get("binding"))
    if binding.write_policy is None:
        raise denied("This key has no write policy.")
    return WriteCommand.of(plan_write(body, binding))


def write_json(result: WriteResult) -> dict[str, Any]:
    """The write outcome of docs/atoms.md "Decisions"."""
    return {"operationId": result.operation_id, "repeated": result.repeated, "indexing": result.indexing,
            "changes": result.changes, "review": result.review}


WriteOutcome = inline_serializer("AtomsWriteOutcome", {
    "operationId": serializers.CharField(help_text="`operation:<uuid>`: the commit, the same in a replay."),
    "repeated": serializers.BooleanField(
        help_text="True when this answers an earlier write with the same idempotency key and batch."),
    "indexing": serializers.ChoiceField(
        choices=["pending", "ready"],
        help_text="pending while the tenant's semantic index catches up (whenever it has a provider)."),
    "changes": serializers.DictField(child=AtomsView(), help_text="Each written revision, by change id."),
    "review": serializers.DictField(child=serializers.ChoiceField(choices=ReviewStatus.values),
                                    help_text="Each written revision's review status, by change id."),
})


class WriteView(AtomsAPIView):
    body_limit = WRITE_BODY_LIMIT
    changes_memory = True

    @extend_schema(
        operation_id="atoms_write", summary="Create, revise or retire atoms in one atomic batch", tags=["atoms"],
        request=AtomsWrite,
        responses={200: WriteOutcome, **errors({409: ["REVISION_CONFLICT", "IDEMPOTENCY_CONFLICT"],
                                                410: ["CURSOR_EXPIRED"], 422: ["BUDGET_EXHAUSTED"]})},
        examples=[
            OpenApiExample("create", request_only=True, value={"changes": [{
                "id": "coffee", "op": "create", "sources": [],
                "content": {"text": "Alice takes her coffee black.", "links": []}}],
                "options": {"idempotencyKey": "request-42"}}),
            OpenApiExample("outcome", response_only=True, value={
                "operationId": "operation:6f1c…", "repeated": False, "indexing": "ready",
                "changes": {"coffee": {"ref": "ref:…", "text": "Alice takes her coffee black.", "links": [],
                                       "sources": [], "provenance": {"origin": "source", "producer": "key:k_…"},
                                       "state": "active"}},
                "review": {"coffee": "approved"}}),
        ],
    )
    def post(self, request: Request) -> Response:
        return Response(write_json(atoms_write(parse_write(self.principal, self.body()))))


def answer_write(caller: Principal, body: dict[str, Any]) -> dict[str, Any]:
    """A write body answered as POST /api/v1/atoms/write answers it, without HTTP: the purge
    barrier, the parsing, the service, the JSON (the MCP tool, the benchmarks and tests call this)."""
    open_store(caller.tenant)
    return write_json(atoms_write(parse_write(caller, body)))
