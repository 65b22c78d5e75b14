"""POST /api/v1/atoms/purge."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from atoms.api.base import ADMINS, AtomsAPIView
from atoms.api.schemas_write import PURGE
from atoms.services.purge import atoms_purge
from memoryhub.api.schema import errors

PurgeResult = inline_serializer("AtomsPurgeResult", {
    "complete": serializers.BooleanField(), "dryRun": serializers.BooleanField(),
    "affectedAtomIds": serializers.ListField(child=serializers.CharField()),
    "erasedAtomIds": serializers.ListField(child=serializers.CharField()),
    "legacyDependencies": serializers.BooleanField(), "work": serializers.IntegerField(),
    "minimumWork": serializers.IntegerField(required=False),
    "reason": serializers.ChoiceField(choices=["budget", "storage-error"], required=False),
    "physicalStorageReclaimed": serializers.BooleanField(),
    "erasureReceipt": serializers.DictField(required=False),
})

COUNTS = {"atoms": 2, "revisions": 3, "slots": 1, "origins": 1, "indexEntries": 0, "vectors": 0, "useStates": 0,
          "useEvents": 0, "receipts": 1, "inputTokens": 0, "cursors": 0, "replayRecords": 0, "refsReduced": 4,
          "reviewRecords": 0, "auditEntriesRedacted": 3}


class PurgeView(AtomsAPIView):
    allowed_kinds = ADMINS
    changes_memory = True
    checks_barrier = False  # a purge resumes its own erasure behind the barrier

    @extend_schema(
        operation_id="atoms_purge", summary="Erase an atom and everything that depends on it for erasure",
        description=(
            "Admin keys only. The first call that is not a dry run closes the tenant's Atom API "
            "(ACCESS_DENIED, reason erasure-incomplete) until the purge completes; repeat the call "
            "for the same atom to resume after `complete: false`."
        ),
        tags=["atoms"], request=PURGE, responses={200: PurgeResult, **errors({409: ["REVISION_CONFLICT"]})},
        examples=[
            OpenApiExample("dry run", request_only=True,
                           value={"atomId": "atom:0b6c…", "options": {"dryRun": True}}),
            OpenApiExample("purge by ref", request_only=True, value={"ref": "ref:7d41…"}),
            OpenApiExample("preview", response_only=True, value={
                "complete": True, "dryRun": True, "affectedAtomIds": ["atom:0b6c…", "atom:5e2a…"],
                "erasedAtomIds": [], "legacyDependencies": False, "work": 4, "physicalStorageReclaimed": False}),
            OpenApiExample("out of work", response_only=True, value={
                "complete": False, "dryRun": False, "affectedAtomIds": ["atom:0b6c…"], "erasedAtomIds": [],
                "legacyDependencies": False, "work": 0, "minimumWork": 1, "reason": "budget",
                "physicalStorageReclaimed": False}),
            OpenApiExample("erased", response_only=True, value={
                "complete": True, "dryRun": False, "affectedAtomIds": ["atom:0b6c…", "atom:5e2a…"],
                "erasedAtomIds": ["atom:0b6c…", "atom:5e2a…"], "legacyDependencies": False, "work": 19,
                "physicalStorageReclaimed": False,
                "erasureReceipt": {"id": "erasure:91f0…", "atomIds": ["atom:0b6c…", "atom:5e2a…"],
                                   "requestedBy": "key:k_…", "startedAt": 1767225600000,
                                   "completedAt": 1767225600042, "counts": COUNTS, "digest": "3f5a…"}}),
        ],
    )
    def post(self, request: Request) -> Response:
        return Response(atoms_purge(caller=self.principal, body=self.body()))
