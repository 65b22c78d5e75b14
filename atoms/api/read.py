"""POST /api/v1/atoms/read: the body parsed into a `ReadCommand`, the `ReadResult` rendered as
JSON (docs/architecture.md "Typed services")."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from atoms.api.base import AtomsAPIView
from atoms.api.schemas_recall import AtomsRead
from atoms.api.schemas_results import AtomsReceipt, AtomsScoredView, AtomsSourceView, AtomsUsage
from atoms.core.render import FORMAT_VERSION
from atoms.errors import invalid
from atoms.principal import Principal, resolve_binding
from atoms.services.barrier import open_store
from atoms.services.read import ReadCommand, ReadResult, atoms_read
from atoms.services.read_options import parse_options, parse_state
from atoms.services.receipts import receipt_response
from memoryhub.api.schema import errors

BODY_KEYS = {"binding", "state", "options"}


def parse_read(caller: Principal, body: dict[str, Any]) -> ReadCommand:
    """The command a read body asks for; INVALID_INPUT, INVALID_SCHEMA, LIMIT_EXCEEDED or
    ACCESS_DENIED (a binding the caller may not use) in the order of the body's parts."""
    if set(body) - BODY_KEYS:
        raise invalid("The body keys are binding, state and options.")
    binding = resolve_binding(caller, body.get("binding"))
    state = parse_state(body.get("state"))
    options = parse_options(body.get("options"))
    return ReadCommand(binding=binding, state=state, options=options, sent_options=body.get("options") or {})


def read_json(result: ReadResult) -> dict[str, Any]:
    """The RecallResult of docs/atoms.md "Recall"."""
    body: dict[str, Any] = {
        "items": result.items, "text": result.text, "formatVersion": FORMAT_VERSION, "refs": result.refs,
        "sources": result.sources, "tokenCount": result.token_count, "stale": result.stale,
        "receipt": receipt_response(result.receipt), "usage": result.usage, "diagnostics": result.diagnostics,
    }
    if result.cursor is not None:
        body["cursor"] = result.cursor
    return body

RecallResult = inline_serializer("AtomsRecallResult", {
    "items": AtomsScoredView(many=True, help_text="The selected atoms with scores, in render order."),
    "text": serializers.CharField(help_text="The canonical format-2 render to put in a prompt."),
    "formatVersion": serializers.IntegerField(help_text="2."),
    "refs": serializers.ListField(child=serializers.CharField(), help_text="The refs of `items`."),
    "sources": AtomsSourceView(many=True, help_text="The sources the render quotes."),
    "tokenCount": serializers.IntegerField(help_text="UTF-8 bytes of `text`."),
    "stale": serializers.ListField(child=serializers.CharField(),
                                   help_text="Refs of derived atoms whose sources changed since."),
    "receipt": AtomsReceipt(),
    "cursor": serializers.CharField(required=False, help_text="Present when more ranked atoms are left."),
    "usage": AtomsUsage(),
    "diagnostics": serializers.DictField(help_text="How the answer was computed (docs/atoms.md \"Recall\")."),
})


class ReadView(AtomsAPIView):
    @extend_schema(
        operation_id="atoms_read", summary="A budgeted, rendered set of memory for an agent's state", tags=["atoms"],
        description=(
            "Ranks active heads by graph activation over the state's texts (`query`, `context`, `thought`, "
            "`observations`, `signal`), then packs whole required closures by bounded marginal gain within "
            "`tokens` (UTF-8 bytes of the render, default 4096) and `limit` (default 24). An atom is never shown "
            "without the targets of its required links; a root whose closure holds a retired, stale, purged, "
            "unreadable or unapproved member is blocked. `text` is the canonical format-2 render; `items` are the "
            "same atoms as AtomViews with scores. A cursor pages through the frozen ranking. read records a "
            "receipt that observe can present and watch; it never changes use state."
        ),
        request=AtomsRead,
        responses={200: RecallResult, **errors({409: ["STATE_INVALIDATED"], 410: ["CURSOR_EXPIRED"],
                                                422: ["BUDGET_EXHAUSTED"]})},
        examples=[
            OpenApiExample("a state", request_only=True,
                           value={"state": {"query": "coffee brew temperature"}, "options": {"tokens": 1100}}),
            OpenApiExample("result", response_only=True, value={
                "items": [{"ref": "ref:2b0e…", "text": "Brewing temperature for coffee: 93 C.", "links": [],
                           "sources": [], "provenance": {"origin": "source", "producer": "user:rita"},
                           "state": "active", "score": 0.457516}],
                "text": "{\"evidence\":[],\"formatVersion\":2,\"memory\":[…]}", "formatVersion": 2,
                "refs": ["ref:2b0e…"], "sources": [], "tokenCount": 228, "stale": [],
                "receipt": {"id": "receipt:5d2c…", "state": "seq:42", "signalDigest": "9f86d0…"},
                "usage": {"maxAtoms": 1, "maxCandidates": 3, "maxBytes": 37, "maxContextTokens": 228,
                          "maxEvaluationWork": 138, "maxPackingWork": 30},
                "diagnostics": {"method": "graph-activation", "traversal": "bounded-bfs", "approximate": False,
                                "scanned": 3, "index": "ready", "derived": "ready", "stop": "completed",
                                "evaluatedAt": 1767830400000, "evaluationConverged": True,
                                "numericErrorL1Upper": 8.5e-07,
                                "acquisition": {"partial": False, "scanned": 3, "index": "ready"},
                                "validation": {"stale": 0, "blocked": 0},
                                "evaluation": {"converged": True, "numericErrorL1Upper": 8.5e-07,
                                               "scope": "acquired-graph", "work": 138},
                                "selection": {"method": "bounded-marginal-gain", "complete": True,
                                              "baselineComplete": True, "utility": 1.555556,
                                              "baselineUtility": 1.555556, "work": 30},
                                "coverageCertified": False}}),
        ],
    )
    def post(self, request: Request) -> Response:
        body = self.body()
        return Response(read_json(atoms_read(parse_read(self.principal, body), store=self.store)))


def answer_read(caller: Principal, body: dict[str, Any]) -> dict[str, Any]:
    """A read body answered as POST /api/v1/atoms/read answers it, without HTTP: the purge
    barrier, the parsing, the service, the JSON (the MCP tool and the benchmarks call this)."""
    store = open_store(caller.tenant)
    return read_json(atoms_read(parse_read(caller, body), store=store))
