"""POST /api/v1/atoms/index/update, index/prioritize and index/status (host and admin keys)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from atoms.api.base import HOSTS, AtomsAPIView
from atoms.api.schemas_host import INDEX_STATUS, AtomsIndexPrioritize, AtomsIndexUpdate
from atoms.services.index_api import atoms_index_prioritize, atoms_index_update
from atoms.services.index_status import status_response
from memoryhub.api.schema import errors

UpdateResult = inline_serializer("AtomsIndexUpdateResult", {
    "indexed": serializers.IntegerField(), "processed": serializers.IntegerField(),
    "pending": serializers.BooleanField(),
})
PrioritizeResult = inline_serializer("AtomsIndexPrioritizeResult", {"indexed": serializers.IntegerField()})
StatusResult = inline_serializer("AtomsIndexStatusResult", {
    "ready": serializers.BooleanField(),
    "encoder": inline_serializer("AtomsIndexEncoder", {"id": serializers.CharField(),
                                                       "dimensions": serializers.IntegerField()}, required=False),
    "config": serializers.CharField(allow_null=True),
    "indexGeneration": serializers.IntegerField(),
    "policies": serializers.ListField(child=inline_serializer("AtomsIndexPolicy", {
        "policy": serializers.CharField(),
        "checkpoint": inline_serializer("AtomsIndexCheckpoint", {"seq": serializers.IntegerField(),
                                                                 "revisionId": serializers.CharField(allow_blank=True)}),
        "headSeq": serializers.IntegerField(), "backlog": serializers.IntegerField(),
        "drained": serializers.BooleanField(),
    })),
})
NOT_READY = {503: ["INDEX_NOT_READY"], 409: ["MODEL_SPACE_MISMATCH", "REVISION_CONFLICT"]}


class IndexUpdateView(AtomsAPIView):
    allowed_kinds = HOSTS
    changes_memory = True

    @extend_schema(
        operation_id="atoms_index_update", summary="Consume the index feed now", tags=["atoms"],
        description=(
            "Host and admin keys, not read-only. Processes up to `limit` (default 32) revision events of the "
            "binding's read policies in name order: each changed atom's head is encoded from its own text if it "
            "is active, not quarantined and has no valid entry. The checkpoint moves by compare-and-set; a "
            "concurrent indexer gives REVISION_CONFLICT. `pending` says more events wait, never that the whole "
            "index is ready: use index/status for that. Workers do this on their own after every commit."
        ),
        request=AtomsIndexUpdate, responses={200: UpdateResult, **errors(NOT_READY)},
        examples=[
            OpenApiExample("drain 64 events", request_only=True, value={"options": {"limit": 64}}),
            OpenApiExample("progress", response_only=True, value={"indexed": 60, "processed": 64, "pending": True}),
        ],
    )
    def post(self, request: Request) -> Response:
        return Response(atoms_index_update(caller=self.principal, body=self.body()))


class IndexPrioritizeView(AtomsAPIView):
    allowed_kinds = HOSTS
    changes_memory = True

    @extend_schema(
        operation_id="atoms_index_prioritize", summary="Encode these atoms now", tags=["atoms"],
        description=(
            "Host and admin keys, not read-only. Encodes the given refs at once if they are active heads without "
            "a valid entry (at most 256); checkpoints do not move. Use it for atoms an agent needs semantically "
            "right away."
        ),
        request=AtomsIndexPrioritize,
        responses={200: PrioritizeResult, **errors({**NOT_READY, 413: ["LIMIT_EXCEEDED"]})},
        examples=[
            OpenApiExample("two refs", request_only=True, value={"refs": ["ref:2b0e…", "ref:91ad…"]}),
            OpenApiExample("encoded", response_only=True, value={"indexed": 2}),
        ],
    )
    def post(self, request: Request) -> Response:
        return Response(atoms_index_prioritize(caller=self.principal, body=self.body()))


class IndexStatusView(AtomsAPIView):
    allowed_kinds = HOSTS

    @extend_schema(
        operation_id="atoms_index_status", summary="Whether the semantic index covers every served policy",
        tags=["atoms"],
        description=(
            "Host and admin keys (read-only too). `ready` is true only when a provider exists and every policy "
            "some active key reads is drained (its checkpoint reached the policy's latest seq). Each policy "
            "reports its checkpoint, latest seq and backlog. Answers during a pending purge."
        ),
        request=INDEX_STATUS, responses={200: StatusResult},
        examples=[OpenApiExample("ready", response_only=True, value={
            "ready": True, "encoder": {"id": "sentence-transformers/all-MiniLM-L6-v2", "dimensions": 384},
            "config": "5f1c…", "indexGeneration": 0,
            "policies": [{"policy": "default", "checkpoint": {"seq": 42, "revisionId": "revision:0f3a…"},
                          "headSeq": 42, "backlog": 0, "drained": True}]})],
    )
    def post(self, request: Request) -> Response:
        self.body()
        return Response(status_response(self.key.tenant))
