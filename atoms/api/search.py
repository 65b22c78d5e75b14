"""POST /api/v1/atoms/search: the body parsed into a `SearchCommand`, the `SearchResult`
rendered as JSON (docs/architecture.md "Typed services")."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from atoms.api.base import AtomsAPIView
from atoms.api.schemas_recall import AtomsSearch
from atoms.api.schemas_results import AtomsReceipt, AtomsScoredView, AtomsUsage
from atoms.clock import now_ms
from atoms.core.text import is_blank
from atoms.errors import invalid
from atoms.principal import Principal, resolve_binding
from atoms.services.barrier import open_store
from atoms.services.budget import check_deadline
from atoms.services.receipts import receipt_response
from atoms.services.search import SearchCommand, SearchResult, atoms_search, parse_options
from memoryhub.api.schema import errors

BODY_KEYS = {"binding", "query", "options"}


def parse_search(caller: Principal, body: dict[str, Any]) -> SearchCommand:
    """The command a search body asks for; INVALID_INPUT, INVALID_SCHEMA, BUDGET_EXHAUSTED (a
    deadline already past) or ACCESS_DENIED (a binding the caller may not use) in the order
    of the body's parts."""
    if set(body) - BODY_KEYS:
        raise invalid("The body keys are binding, query and options.")
    binding = resolve_binding(caller, body.get("binding"))
    options = parse_options(body.get("options"))
    query = body.get("query")
    if not isinstance(query, str) or is_blank(query):
        # A deadline already past is reported before the query. A valid command's deadline is
        # checked once, by the service, right before its work.
        check_deadline(options.budget, now_ms())
        raise invalid("query must be a non-blank string.", path="query")
    return SearchCommand(binding=binding, query=query, options=options, sent_options=body.get("options") or {})


def search_json(result: SearchResult) -> dict[str, Any]:
    """The SearchResult of docs/atoms.md "Recall"."""
    body: dict[str, Any] = {
        "items": result.items, "stale": result.stale, "receipt": receipt_response(result.receipt),
        "diagnostics": result.diagnostics, "usage": result.usage,
    }
    if result.cursor is not None:
        body["cursor"] = result.cursor
    return body


SearchResultSchema = inline_serializer("AtomsSearchResult", {
    "items": AtomsScoredView(many=True, help_text="A page of the ranking: atoms with scores, best first."),
    "stale": serializers.ListField(child=serializers.CharField(),
                                   help_text="Refs of matched generated atoms whose sources changed since, "
                                             "set aside from `items`."),
    "receipt": AtomsReceipt(),
    "cursor": serializers.CharField(required=False, help_text="Present when more ranked atoms are left."),
    "diagnostics": serializers.DictField(help_text="How the ranking was computed (docs/atoms.md \"Recall\")."),
    "usage": AtomsUsage(),
})


class SearchView(AtomsAPIView):
    @extend_schema(
        operation_id="atoms_search", summary="Atoms ranked by graph activation for one query", tags=["atoms"],
        description=(
            "Scores active heads by lexical match, spreads activation over links and boosts accepted uses, then "
            "pages the frozen ranking (`limit` default 10, `depth` default the tenant's 2). Stale generated atoms "
            "are listed in `stale` instead of `items`. No closure is computed. A search records a receipt that "
            "observe can present and watch; it never changes use state."
        ),
        request=AtomsSearch,
        responses={200: SearchResultSchema, **errors({409: ["STATE_INVALIDATED"], 410: ["CURSOR_EXPIRED"],
                                                422: ["BUDGET_EXHAUSTED"]})},
        examples=[
            OpenApiExample("a query", request_only=True, value={"query": "coffee brew temperature",
                                                                "options": {"limit": 2, "depth": 2}}),
            OpenApiExample("result", response_only=True, value={
                "items": [{"ref": "ref:2b0e…", "text": "Brewing temperature for coffee: 93 C.",
                           "links": [{"role": "detail", "at": "logical", "required": False, "orderKey": "0",
                                      "ref": "ref:91ad…"}],
                           "sources": [], "provenance": {"origin": "source", "producer": "user:rita"},
                           "state": "active", "score": 0.457516}],
                "stale": [],
                "receipt": {"id": "receipt:5d2c…", "state": "seq:42", "signalDigest": "9f86d0…"},
                "cursor": "eyJrIjoi…",
                "diagnostics": {"method": "graph-activation", "traversal": "bounded-bfs", "approximate": False,
                                "scanned": 3, "index": "ready", "derived": "ready", "stop": "page-limit",
                                "evaluatedAt": 1767830400000, "evaluationConverged": True,
                                "numericErrorL1Upper": 8.5e-07,
                                "acquisition": {"partial": False, "scanned": 3, "index": "ready"},
                                "evaluation": {"converged": True, "numericErrorL1Upper": 8.5e-07,
                                               "scope": "acquired-graph", "work": 138},
                                "coverageCertified": False},
                "usage": {"maxAtoms": 1, "maxCandidates": 3, "maxBytes": 37, "maxContextTokens": 0,
                          "maxEvaluationWork": 138, "maxPackingWork": 0}}),
        ],
    )
    def post(self, request: Request) -> Response:
        body = self.body()
        return Response(search_json(atoms_search(parse_search(self.principal, body), store=self.store)))


def answer_search(caller: Principal, body: dict[str, Any]) -> dict[str, Any]:
    """A search body answered as POST /api/v1/atoms/search answers it, without HTTP: the purge
    barrier, the parsing, the service, the JSON (the MCP tool, the benchmarks and tests call this)."""
    store = open_store(caller.tenant)
    return search_json(atoms_search(parse_search(caller, body), store=store))
