"""POST /api/v1/atoms/search."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from atoms.api.base import AtomsAPIView
from atoms.api.schemas_recall import AtomsSearch
from atoms.services.search import atoms_search
from memoryhub.api.schema import errors

SearchResult = inline_serializer("AtomsSearchResult", {
    "items": serializers.ListField(child=serializers.DictField()),
    "stale": serializers.ListField(child=serializers.CharField()),
    "receipt": serializers.DictField(),
    "cursor": serializers.CharField(required=False),
    "diagnostics": serializers.DictField(),
    "usage": serializers.DictField(child=serializers.IntegerField()),
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
        responses={200: SearchResult, **errors({409: ["STATE_INVALIDATED"], 410: ["CURSOR_EXPIRED"],
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
        return Response(atoms_search(caller=self.principal, body=self.body()))
