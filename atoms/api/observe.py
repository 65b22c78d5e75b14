"""POST /api/v1/atoms/observe and /api/v1/atoms/manifest (host and admin keys): the bodies parsed
into an `ObserveCommand` and a `ManifestCommand`, the results rendered as JSON
(docs/architecture.md "Typed services").

Both change no memory, so read-only host and admin keys may call them (docs/atoms.md "Decisions").
"""

from __future__ import annotations

from typing import Any, Literal

from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from atoms.api.base import HOSTS, AtomsAPIView
from atoms.api.schemas_host import MANIFEST, AtomsObserve
from atoms.api.schemas_results import AtomsReceipt
from atoms.core.canonical import canonical
from atoms.errors import invalid
from atoms.principal import Principal, resolve_binding
from atoms.services.barrier import open_store
from atoms.services.manifests import ManifestCommand, ManifestResult, atoms_manifest
from atoms.services.observe import ObserveCommand, ObserveResult, atoms_observe, parse_input
from atoms.services.receipts import receipt_response

OBSERVE_KEYS = {"binding", "input"}
MANIFEST_KEYS = {"binding", "receipt", "input"}


def parse_observe(caller: Principal, body: dict[str, Any]) -> ObserveCommand:
    """The command an observe body asks for: INVALID_INPUT, ACCESS_DENIED (a binding the caller
    may not use) or LIMIT_EXCEEDED in the order of the body's parts. The lists' entries are
    checked by `atoms_observe`, against the database."""
    if set(body) - OBSERVE_KEYS:
        raise invalid("The body keys are binding and input.")
    if "binding" not in body or "input" not in body:
        raise invalid("observe needs a binding and an input.")
    binding = resolve_binding(caller, body["binding"], may_name_others=True)
    raw = parse_input(body["input"])
    try:
        canonical(raw)
    except ValueError as exc:  # a number no JSON double can carry
        raise invalid("The input holds a number outside the JSON range.", path="input") from exc
    return ObserveCommand(
        binding=binding, payload_digest=raw["payloadDigest"], basis=raw.get("basis", "current"),
        presentations=tuple(raw.get("presentations", [])), sources=tuple(raw.get("sources", [])),
        inherit=tuple(raw.get("inherit", [])), watches=tuple(raw.get("watches", [])), sent_input=raw,
    )


def observe_json(result: ObserveResult) -> dict[str, Any]:
    """The ObserveResult of docs/atoms.md "Decisions": the token, its expiry, the receipt."""
    return {"input": result.token.id, "expiresAt": result.token.expires_at,
            "receipt": receipt_response(result.receipt)}


def answer_observe(caller: Principal, body: dict[str, Any]) -> dict[str, Any]:
    """An observe body answered as POST /api/v1/atoms/observe answers it, without HTTP: the
    purge barrier, the parsing, the service, the JSON."""
    open_store(caller.tenant)
    return observe_json(atoms_observe(parse_observe(caller, body)))


def parse_manifest(caller: Principal, body: dict[str, Any]) -> ManifestCommand:
    """The command a manifest body asks for: INVALID_INPUT or ACCESS_DENIED (a binding the caller
    may not use) in the order of the body's parts."""
    if set(body) - MANIFEST_KEYS:
        raise invalid("The body keys are binding and one of receipt and input.")
    named = [k for k in ("receipt", "input") if k in body]
    if len(named) != 1:
        raise invalid("Give exactly one of receipt and input.")
    if "binding" not in body:
        raise invalid("manifest needs a binding.", path="binding")
    binding = resolve_binding(caller, body["binding"], may_name_others=True)
    kind: Literal["receipt", "input"] = "receipt" if named[0] == "receipt" else "input"
    wanted = body[kind]
    if not isinstance(wanted, str):
        raise invalid(f"{kind} must be a string.", path=kind)
    return ManifestCommand(binding=binding, kind=kind, id=wanted)


def manifest_json(result: ManifestResult) -> dict[str, Any]:
    """The manifest as issued (docs/atoms.md "Decisions"); a token's with its recorded outputs."""
    return result.manifest


def answer_manifest(caller: Principal, body: dict[str, Any]) -> dict[str, Any]:
    """A manifest body answered as POST /api/v1/atoms/manifest answers it, without HTTP."""
    open_store(caller.tenant)
    return manifest_json(atoms_manifest(parse_manifest(caller, body)))


ObserveResultSchema = inline_serializer("AtomsObserveResult", {
    "input": serializers.CharField(help_text="The input token, `input:<uuid>`, to pass as `input` on each change."),
    "expiresAt": serializers.IntegerField(help_text="When the token expires (ms since the epoch)."),
    "receipt": AtomsReceipt(help_text="The observe receipt; its signal is the input as sent."),
})
Manifest = inline_serializer("AtomsManifest", {
    "id": serializers.CharField(help_text="The receipt or input token the manifest belongs to."),
    "contractVersion": serializers.IntegerField(help_text="The manifest contract version (2)."),
    "kind": serializers.ChoiceField(choices=["read", "search", "inspect", "observe", "input"],
                                    help_text="The call that issued it; `input` for a token."),
    "key": serializers.CharField(help_text="The principal it was issued to (`k_…` or `user:<name>`)."),
    "subject": serializers.CharField(help_text="The subject of that principal."),
    "authGeneration": serializers.IntegerField(help_text="The key's authorization generation at issue."),
    "readPolicies": serializers.ListField(child=serializers.CharField(),
                                         help_text="The binding's read policies, sorted."),
    "writePolicy": serializers.CharField(required=False, help_text="The binding's write policy, when it has one."),
    "actor": serializers.DictField(help_text="The binding's actor (`type`, `generatedOrigin`)."),
    "scopeDigest": serializers.CharField(help_text="Digest of the binding's scope."),
    "createdAt": serializers.IntegerField(help_text="When it was issued (ms since the epoch)."),
    "expiresAt": serializers.IntegerField(required=False, help_text="A token's expiry (ms since the epoch)."),
    "acquisition": serializers.DictField(help_text="What the call read to answer: reads, ranges, queries, "
                                                   "indexGeneration."),
    "presentation": serializers.DictField(required=False,
                                          help_text="A receipt's presented units (none for observe)."),
    "generation": serializers.DictField(required=False, help_text="A token's basis, presentations, sources, "
                                                                  "inherited tokens and outputs."),
    "watches": serializers.DictField(help_text="Watched heads and queries (currency)."),
    "acknowledgement": serializers.ListField(child=serializers.DictField(), help_text="Acknowledged changes."),
    "reads": serializers.ListField(child=serializers.DictField(),
                                   help_text="The erase set: pinned revisions a purge takes this with."),
    "currentReads": serializers.ListField(child=serializers.DictField(), help_text="The watched heads."),
    "observations": serializers.ListField(child=serializers.DictField(), help_text="The watched queries."),
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
        request=AtomsObserve, responses={200: ObserveResultSchema},
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
        return Response(observe_json(atoms_observe(parse_observe(self.principal, self.body()))))


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
        return Response(manifest_json(atoms_manifest(parse_manifest(self.principal, self.body()))))
