"""POST /api/v1/atoms/uses and /api/v1/atoms/uses/reset (host and admin keys).

Both change the subject's use state, so read-only keys get ACCESS_DENIED (docs/atoms.md "Decisions").
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from atoms.api.base import HOSTS, AtomsAPIView
from atoms.api.schemas_host import AtomsUses, AtomsUsesReset
from atoms.services.uses import atoms_uses, atoms_uses_reset
from memoryhub.api.schema import errors

UsesResult = inline_serializer("AtomsUsesResult", {
    "acceptedAt": serializers.IntegerField(), "recorded": serializers.IntegerField(),
    "repeated": serializers.IntegerField(),
})
ResetResult = inline_serializer("AtomsUsesResetResult", {"deleted": serializers.IntegerField()})


class UsesView(AtomsAPIView):
    allowed_kinds = HOSTS
    changes_memory = True

    @extend_schema(
        operation_id="atoms_uses", summary="Record that a model response using these refs succeeded",
        tags=["atoms"],
        description=(
            "Host and admin keys only, not read-only. Call it after the model response succeeded. The binding "
            "names the agent's key; refs are that key's refs. Each distinct revision gets one use, unless this "
            "eventId was already recorded for it (`repeated`). With `input`, every ref must be a unit the token "
            "presented, and the event is appended to the token's `acknowledgement`. A failing availability model "
            "stores nothing (INVALID_INPUT); state written by another model id gives STATE_INVALIDATED until "
            "uses/reset."
        ),
        request=AtomsUses,
        responses={200: UsesResult, **errors({409: ["STATE_INVALIDATED"], 410: ["CURSOR_EXPIRED"]})},
        examples=[
            OpenApiExample("the refs an agent's answer used", request_only=True, value={
                "binding": {"key": "k_agent7"}, "refs": ["ref:2b0e…", "ref:91ad…"], "eventId": "response-1842",
                "input": "input:8c1d…"}),
            OpenApiExample("recorded", response_only=True, value={
                "acceptedAt": 1767225600000, "recorded": 2, "repeated": 0}),
        ],
    )
    def post(self, request: Request) -> Response:
        return Response(atoms_uses(caller=self.principal, body=self.body()))


class UsesResetView(AtomsAPIView):
    allowed_kinds = HOSTS
    changes_memory = True

    @extend_schema(
        operation_id="atoms_uses_reset", summary="Delete a subject's use state", tags=["atoms"],
        description=(
            "Host and admin keys only, not read-only. Deletes the bound key's subject's use state in the "
            "binding's read policies, which clears STATE_INVALIDATED after a model change. Event markers stay, "
            "so an eventId recorded before still counts as repeated."
        ),
        request=AtomsUsesReset, responses={200: ResetResult},
        examples=[
            OpenApiExample("reset an agent's use state", request_only=True,
                           value={"binding": {"key": "k_agent7", "readPolicies": ["default"]}}),
            OpenApiExample("deleted", response_only=True, value={"deleted": 12}),
        ],
    )
    def post(self, request: Request) -> Response:
        return Response(atoms_uses_reset(caller=self.principal, body=self.body()))
