"""Which generated cases the conformance test sends with its key (tests/security/test_schemathesis.py
`auth_headers`, docs/api.md "Conformance test"). Cases come from schemathesis itself, drawn
from a one-operation schema shaped like ours (a bearer key, optional query parameters), so
a change in how schemathesis marks a removed `Authorization` shows here."""

from __future__ import annotations

from typing import Any

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis.core.parameters import ParameterLocation
from schemathesis.generation import GenerationMode
from schemathesis.transport.prepare import get_exclude_headers

from tests.security.test_schemathesis import auth_headers, negates_authorization

SCHEMA: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "pending", "version": "1"},
    "components": {"securitySchemes": {"ApiKey": {"type": "http", "scheme": "bearer"}}},
    "security": [{"ApiKey": []}],
    "paths": {"/pending": {"get": {
        "parameters": [{"in": "query", "name": "status", "schema": {"type": "string", "enum": ["pending", "approved"]}}],
        "responses": {"200": {"description": "ok"}, "401": {"description": "no key"}},
    }}},
}
KEY = {"Authorization": "Bearer secret"}
DRAWS = 200


def _drawn(mode: GenerationMode) -> list[schemathesis.Case]:
    operation = schemathesis.openapi.from_dict(SCHEMA)["/pending"]["GET"]
    cases: list[schemathesis.Case] = []

    @settings(max_examples=DRAWS, database=None, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def draw(data: st.DataObject) -> None:
        cases.append(data.draw(operation.as_strategy(generation_mode=mode)))

    draw()
    return cases


def _removes_authorization(case: schemathesis.Case) -> bool:
    return case.meta is not None and "Authorization" not in (case.headers or {}) \
        and case.meta.is_negative_at(ParameterLocation.HEADER)


def test_it_sends_the_key_with_every_valid_case() -> None:
    cases = _drawn(GenerationMode.POSITIVE)
    assert cases
    assert all(auth_headers(case, "secret") == KEY for case in cases)


def test_it_leaves_the_key_out_of_a_case_that_negates_authorization_with_the_query_too() -> None:
    cases = _drawn(GenerationMode.NEGATIVE)
    both = [case for case in cases if _removes_authorization(case)
            and case.meta is not None and case.meta.is_negative_at(ParameterLocation.QUERY)]
    # The case of the failure: schemathesis itself leaves the header out only when it is the
    # one negated location, so the key must not be added back here.
    assert both, "no drawn case removed Authorization and negated the query"
    assert all(auth_headers(case, "secret") == {} for case in both)
    # Why the helper is needed: for these cases schemathesis would send a key passed to it.
    assert all(get_exclude_headers(case) == [] for case in both)


def test_it_keeps_the_key_on_a_case_that_negates_only_the_query() -> None:
    cases = _drawn(GenerationMode.NEGATIVE)
    query_only = [case for case in cases if case.meta is not None and not negates_authorization(case)]
    assert query_only, "no drawn case left Authorization alone"
    assert all(auth_headers(case, "secret") == KEY for case in query_only)
    assert all(not case.meta.is_negative_at(ParameterLocation.HEADER) for case in query_only if case.meta)
