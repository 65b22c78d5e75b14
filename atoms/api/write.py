"""POST /api/v1/atoms/write."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from atoms.api.base import WRITE_BODY_LIMIT, AtomsAPIView
from atoms.api.schemas_write import AtomsWrite
from atoms.services.write import atoms_write
from memoryhub.api.schema import errors

WriteOutcome = inline_serializer("AtomsWriteOutcome", {
    "operationId": serializers.CharField(), "repeated": serializers.BooleanField(),
    "indexing": serializers.ChoiceField(choices=["pending", "ready"]),
    "changes": serializers.DictField(), "review": serializers.DictField(child=serializers.CharField()),
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
        return Response(atoms_write(caller=self.principal, body=self.body()))
