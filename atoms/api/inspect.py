"""POST /api/v1/atoms/inspect."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from atoms.api.base import AtomsAPIView
from atoms.api.schemas_recall import AtomsInspect
from atoms.models import ReviewStatus
from atoms.services.inspect import atoms_inspect
from memoryhub.api.schema import errors

InspectResult = inline_serializer("AtomsInspectResult", {
    "atom": serializers.DictField(),
    "neighbors": serializers.ListField(child=serializers.DictField()),
    "readEligibility": serializers.ChoiceField(choices=["blocked", "unchecked"]),
    "stale": serializers.ListField(child=serializers.CharField()),
    "receipt": serializers.DictField(),
    "cursor": serializers.CharField(required=False),
    "diagnostics": serializers.DictField(),
    "usage": serializers.DictField(child=serializers.IntegerField()),
    "range": serializers.DictField(required=False),
    "review": serializers.ChoiceField(choices=ReviewStatus.values),
})


class InspectView(AtomsAPIView):
    @extend_schema(
        operation_id="atoms_inspect", summary="One atom with its neighbours, a page at a time", tags=["atoms"],
        request=AtomsInspect,
        responses={200: InspectResult, **errors({410: ["CURSOR_EXPIRED"], 422: ["BUDGET_EXHAUSTED"]})},
        examples=[
            OpenApiExample("outgoing links", request_only=True, value={
                "ref": "ref:2b0e…", "options": {"direction": "outgoing", "limit": 20}}),
            OpenApiExample("a byte range of the latest revision", request_only=True, value={
                "ref": "ref:2b0e…", "options": {"version": "latest", "limit": 0, "range": {"start": 0, "bytes": 8}}}),
            OpenApiExample("result", response_only=True, value={
                "atom": {"ref": "ref:2b0e…", "text": "Coffee preferences", "provenance": {
                    "origin": "source", "producer": "key:k_…"}, "state": "active", "sources": [],
                    "links": [{"role": "member", "at": "logical", "required": False, "orderKey": "0",
                               "ref": "ref:91ad…"}]},
                "neighbors": [{"atom": {"ref": "ref:91ad…", "text": "Alice takes her coffee black.", "links": [],
                                        "sources": [], "provenance": {"origin": "source", "producer": "key:k_…"},
                                        "state": "active"},
                               "via": [{"direction": "outgoing", "role": "member", "at": "logical",
                                        "required": False, "orderKey": "0"}]}],
                "readEligibility": "unchecked", "stale": [],
                "receipt": {"id": "receipt:5d2c…", "state": "seq:42", "signalDigest": "9f86d0…"},
                "diagnostics": {"stop": "completed"},
                "usage": {"maxAtoms": 2, "maxCandidates": 1, "maxBytes": 47, "maxContextTokens": 0,
                          "maxEvaluationWork": 0, "maxPackingWork": 0},
                "review": "approved"}),
        ],
    )
    def post(self, request: Request) -> Response:
        return Response(atoms_inspect(caller=self.principal, body=self.body()))
