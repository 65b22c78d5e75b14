"""POST /api/v1/atoms/inspect: the body parsed into an `InspectCommand`, the `InspectResult`
rendered as JSON (docs/architecture.md "Typed services")."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from atoms.api.base import AtomsAPIView
from atoms.api.schemas_recall import AtomsInspect
from atoms.api.schemas_results import AtomsReceipt, AtomsUsage, AtomsView
from atoms.clock import now_ms
from atoms.errors import invalid
from atoms.models import ReviewStatus
from atoms.principal import Principal, resolve_binding
from atoms.services.barrier import open_store
from atoms.services.budget import check_deadline
from atoms.services.inspect import MEDIA_TYPE, InspectCommand, InspectResult, atoms_inspect, parse_options
from atoms.services.receipts import receipt_response
from memoryhub.api.schema import errors

BODY_KEYS = {"binding", "ref", "options"}


def parse_inspect(caller: Principal, body: dict[str, Any]) -> InspectCommand:
    """The command an inspect body asks for; INVALID_INPUT, INVALID_SCHEMA, BUDGET_EXHAUSTED
    (a deadline already past) or ACCESS_DENIED (a binding the caller may not use) in the
    order of the body's parts."""
    if set(body) - BODY_KEYS:
        raise invalid("The body keys are binding, ref and options.")
    binding = resolve_binding(caller, body.get("binding"))
    options = parse_options(body.get("options"))
    ref = body.get("ref")
    if not isinstance(ref, str):
        # A deadline already past is reported before the ref. A valid command's deadline is
        # checked once, by the service, right before its work.
        check_deadline(options.budget, now_ms())
        raise invalid("ref must be a string.", path="ref")
    return InspectCommand(binding=binding, ref=ref, options=options, sent_options=body.get("options"),
                          from_body=True)


def inspect_json(result: InspectResult) -> dict[str, Any]:
    """The InspectResult of docs/atoms.md "Decisions"."""
    body: dict[str, Any] = {
        "atom": result.atom,
        "neighbors": [{"atom": n.view, "via": n.via} for n in result.neighbours],
        "readEligibility": result.read_eligibility,
        "stale": result.stale,
        "receipt": receipt_response(result.receipt),
        "diagnostics": {"stop": result.stop},
        "usage": result.usage,
        "review": result.review,
    }
    if result.cursor is not None:
        body["cursor"] = result.cursor
    window = result.range
    if window is not None:
        body["range"] = {"start": window.start, "end": window.end, "totalBytes": window.total_bytes,
                         "mediaType": MEDIA_TYPE, "text": window.text}
    return body


class AtomsInspectRoot(AtomsView):
    text = serializers.CharField(required=False, help_text="The revision's text; left out when `range` is asked for.")


class AtomsInspectVia(serializers.Serializer):
    direction = serializers.CharField(help_text="outgoing: the root links to it; incoming: it links to the root.")
    role = serializers.CharField(help_text="The link's role.")
    at = serializers.ChoiceField(choices=["logical", "observed"],
                                 help_text="logical: the target's head; observed: the revision linked to.")
    required = serializers.BooleanField(help_text="Whether the link is required.")  # type: ignore[assignment]  # a declared field: DRF's metaclass takes it off the class
    orderKey = serializers.CharField(help_text="The link's position among the linking atom's links.")


class AtomsInspectNeighbour(serializers.Serializer):
    atom = AtomsView(help_text="The neighbouring atom.")
    via = AtomsInspectVia(many=True, help_text="Every link between the root and this atom.")


class AtomsInspectRange(serializers.Serializer):
    start = serializers.IntegerField(help_text="Byte offset of the window in the atom's text.")
    end = serializers.IntegerField(help_text="Byte offset just past the window (trimmed to a character boundary).")
    totalBytes = serializers.IntegerField(help_text="UTF-8 bytes of the whole text.")
    mediaType = serializers.CharField(help_text=f"`{MEDIA_TYPE}`.")
    text = serializers.CharField(help_text="The window's text.")


InspectResultSchema = inline_serializer("AtomsInspectResult", {
    "atom": AtomsInspectRoot(help_text="The root atom, the revision `version` asks for."),
    "neighbors": AtomsInspectNeighbour(many=True, help_text="A page of neighbours, outgoing first."),
    "readEligibility": serializers.ChoiceField(
        choices=["blocked", "unchecked"],
        help_text="blocked: a required link of the root is unavailable, so read would not show it."),
    "stale": serializers.ListField(child=serializers.CharField(),
                                   help_text="Refs of the shown derived atoms whose sources changed since."),
    "receipt": AtomsReceipt(),
    "cursor": serializers.CharField(required=False, help_text="Present when more neighbours are left."),
    "diagnostics": serializers.DictField(help_text="`stop`: completed, page-limit or budget."),
    "usage": AtomsUsage(),
    "range": AtomsInspectRange(required=False, help_text="The byte window of the root's text, when asked for."),
    "review": serializers.ChoiceField(choices=ReviewStatus.values, help_text="The root's review status."),
})


class InspectView(AtomsAPIView):
    @extend_schema(
        operation_id="atoms_inspect", summary="One atom with its neighbours, a page at a time", tags=["atoms"],
        request=AtomsInspect,
        responses={200: InspectResultSchema, **errors({410: ["CURSOR_EXPIRED"], 422: ["BUDGET_EXHAUSTED"]})},
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
        return Response(inspect_json(atoms_inspect(parse_inspect(self.principal, self.body()))))


def answer_inspect(caller: Principal, body: dict[str, Any]) -> dict[str, Any]:
    """An inspect body answered as POST /api/v1/atoms/inspect answers it, without HTTP: the
    purge barrier, the parsing, the service, the JSON (the MCP tool and tests call this)."""
    open_store(caller.tenant)
    return inspect_json(atoms_inspect(parse_inspect(caller, body)))
