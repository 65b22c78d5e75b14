"""POST /api/v1/atoms/observe and /api/v1/atoms/manifest (host and admin keys).

Both change no memory, so read-only host and admin keys may call them (docs/atoms.md "Decisions").
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from atoms.api.base import HOSTS, AtomsAPIView
from atoms.api.schemas_host import MANIFEST, AtomsObserve
from atoms.services.manifests import atoms_manifest
from atoms.services.observe import atoms_observe

ObserveResult = inline_serializer("AtomsObserveResult", {
    "input": serializers.CharField(), "expiresAt": serializers.IntegerField(), "receipt": serializers.DictField(),
})
Manifest = inline_serializer("AtomsManifest", {
    "id": serializers.CharField(), "contractVersion": serializers.IntegerField(),
    "kind": serializers.ChoiceField(choices=["read", "search", "inspect", "observe", "input"]),
    "key": serializers.CharField(), "subject": serializers.CharField(),
    "authGeneration": serializers.IntegerField(), "readPolicies": serializers.ListField(child=serializers.CharField()),
    "writePolicy": serializers.CharField(required=False), "actor": serializers.DictField(),
    "scopeDigest": serializers.CharField(), "createdAt": serializers.IntegerField(),
    "expiresAt": serializers.IntegerField(required=False), "acquisition": serializers.DictField(),
    "presentation": serializers.DictField(required=False), "generation": serializers.DictField(required=False),
    "watches": serializers.DictField(), "acknowledgement": serializers.ListField(child=serializers.DictField()),
    "reads": serializers.ListField(child=serializers.DictField()),
    "currentReads": serializers.ListField(child=serializers.DictField()),
    "observations": serializers.ListField(child=serializers.DictField()),
})

PIN = {"kind": "pinned", "atomId": "atom:0b6c…", "revisionId": "revision:5e2a…"}
UNIT = {"ref": "ref:2b0e…", "revision": "revision:5e2a…", "digest": "a3f1…", "metadata": "77c0…", "display": "body"}
TOKEN_MANIFEST = {
    "id": "input:8c1d…", "contractVersion": 2, "kind": "input", "key": "k_agent7", "subject": "key:k_agent7",
    "authGeneration": 1, "readPolicies": ["default"], "writePolicy": "default",
    "actor": {"type": "agent", "generatedOrigin": "derived"}, "scopeDigest": "5be0…",
    "createdAt": 1767225600000, "expiresAt": 1767225900000,
    "acquisition": {"reads": [PIN], "ranges": [], "queries": [], "indexGeneration": 0},
    "generation": {"basis": "current", "presentations": [{"receipt": "receipt:5d2c…", "units": [UNIT]}],
                   "sources": [], "inherit": [], "inheritedOutputs": [], "historicalReads": [],
                   "payloadDigest": "9f86d0…", "outputs": []},
    "watches": {"heads": [PIN], "queries": []}, "acknowledgement": [],
    "reads": [PIN], "currentReads": [PIN], "observations": [],
}


class ObserveView(AtomsAPIView):
    allowed_kinds = HOSTS

    @extend_schema(
        operation_id="atoms_observe", summary="Issue an input token for what an agent was given", tags=["atoms"],
        description=(
            "Host and admin keys only. The binding names the agent's key; the token is bound to that key's "
            "scope and expires after ATOMS_CURSOR_TTL_MS. The agent passes it as `input` on each change."
        ),
        request=AtomsObserve, responses={200: ObserveResult},
        examples=[
            OpenApiExample("the units an agent was shown", request_only=True, value={
                "binding": {"key": "k_agent7"},
                "input": {"presentations": [{"receipt": "receipt:5d2c…", "refs": ["ref:2b0e…"]}],
                          "sources": [{"ref": "ref:91ad…", "start": 0, "end": 8}],
                          "payloadDigest": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}}),
            OpenApiExample("historical, inheriting an earlier token", request_only=True, value={
                "binding": {"key": "k_agent7"},
                "input": {"basis": "historical", "inherit": ["input:8c1d…"],
                          "presentations": [{"receipt": "receipt:5d2c…"}],
                          "payloadDigest": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}}),
            OpenApiExample("token", response_only=True, value={
                "input": "input:8c1d…", "expiresAt": 1767225900000,
                "receipt": {"id": "receipt:77aa…", "state": "seq:42", "signalDigest": "3b4c…"}}),
        ],
    )
    def post(self, request: Request) -> Response:
        return Response(atoms_observe(caller=self.principal, body=self.body()))


class ManifestView(AtomsAPIView):
    allowed_kinds = HOSTS

    @extend_schema(
        operation_id="atoms_manifest", summary="What a receipt or an input token recorded", tags=["atoms"],
        description=(
            "Host and admin keys only. Give exactly one of `receipt` and `input`; the binding must match "
            "the key, subject, generation, policies and actor the manifest was issued under."
        ),
        request=MANIFEST, responses={200: Manifest},
        examples=[
            OpenApiExample("a token's manifest", request_only=True,
                           value={"binding": {"key": "k_agent7"}, "input": "input:8c1d…"}),
            OpenApiExample("a receipt's manifest", request_only=True,
                           value={"binding": {"key": "k_agent7"}, "receipt": "receipt:5d2c…"}),
            OpenApiExample("token manifest", response_only=True, value=TOKEN_MANIFEST),
        ],
    )
    def post(self, request: Request) -> Response:
        return Response(atoms_manifest(caller=self.principal, body=self.body()))
