"""The isolation matrix, generated from the URL conf: every API endpoint and every tenant
page, aimed at tenant A's objects, sent as every key kind and every role of tenant B.

The routes come from Django's resolver; how to fill each one is in tests/security/matrix.py.
A new URL without an entry there fails `test_every_url_has_a_matrix_entry` (and its own
matrix test) with a message saying where to add it.
"""

from __future__ import annotations

import pytest
from django.test import Client

from tenants.models import Membership, Role
from tests.security.matrix import API, EXEMPT, NOT_FOUND, PARAMS, UI, ApiCase, UiCase, exempt
from tests.security.probe import SAFE, Probe, send
from tests.security.routes import Route, all_routes

ROUTES = {route.template: route for route in all_routes()}
API_ROUTES = sorted(t for t in ROUTES if t.startswith("api/v1/") and not exempt(t))
UI_ROUTES = sorted(t for t in ROUTES if t.startswith("t/") and not exempt(t))
HOW_TO_ADD = "add an entry to tests/security/matrix.py (API, UI or EXEMPT; see its docstring)"
ROLE_ORDER = [Role.VIEWER, Role.REVIEWER, Role.ADMIN]


def test_every_url_has_a_matrix_entry() -> None:
    missing = [t for t in ROUTES if not exempt(t) and t not in API and t not in UI]
    assert not missing, f"URLs without an isolation matrix entry: {missing}; {HOW_TO_ADD}"
    stale = [t for t in [*API, *UI, *EXEMPT] if t not in ROUTES]
    assert not stale, f"matrix entries for URLs that no longer exist: {stale}"
    unfilled = sorted({p for t in [*API, *UI] for p in ROUTES[t].params if p not in PARAMS})
    assert not unfilled, f"URL parameters with no filler in matrix.PARAMS: {unfilled}"


def test_the_matrix_covers_tenant_pages_and_api_routes() -> None:
    # The generator must see the real URL conf, not an empty or partial one.
    assert "api/v1/keys/<str:key_id>" in API_ROUTES and "t/<slug:slug>/memory/pending/" in UI_ROUTES
    assert len(API_ROUTES) >= 40 and len(UI_ROUTES) >= 30


def _values(route: Route, world, **override: str) -> dict[str, str]:
    missing = [p for p in route.params if p not in PARAMS]
    assert not missing, f"{route.template}: no filler for parameters {missing} in matrix.PARAMS"
    return {p: PARAMS[p](world) for p in route.params} | override


def _api_expected(case: ApiCase, method: str, kind: str, read_only: bool) -> frozenset[object]:
    if kind not in case.method_kinds.get(method, case.kinds):
        return frozenset({403})
    refuses = case.refuses_read_only if case.refuses_read_only is not None else method not in SAFE
    if read_only and refuses:
        return frozenset({403})
    return case.expect


@pytest.mark.parametrize("template", API_ROUTES)
def test_tenant_b_keys_never_reach_tenant_a_through_the_api(template, world, globex, b_keys) -> None:
    case = API.get(template)
    assert case is not None, f"{template} has no isolation matrix entry; {HOW_TO_ADD}"
    route = ROUTES[template]
    path = route.path(_values(route, world))
    query = case.query(world) if case.query else None
    probe = Probe(world, globex)
    for method in route.api_methods():
        for body in [None] if method in SAFE else case.bodies(world):
            for principal in b_keys:
                response, sent = send(principal.client, method, path, body=body, query=query)
                expected = _api_expected(case, method, principal.kind, principal.read_only)
                probe.check(f"{principal.label} {method} {path} {body}", response, sent, expected)
            probe.check_state(f"{method} {path} {body}")
    probe.assert_clean()
    if case.expect == NOT_FOUND and template != "api/v1/(?P<path>.*)":
        # The control: A's own key reaches the same object, so B's 404 is the tenant boundary.
        for method in route.api_methods():
            allowed = case.method_kinds.get(method, case.kinds)
            kind = "admin" if "admin" in allowed else sorted(allowed)[0]
            for body in [None] if method in SAFE else case.bodies(world):
                response, _ = send(world.client(kind), method, path, body=body, query=query)
                assert response.status_code < 400, (method, path, response.content)


def _ui_expected(case: UiCase, method: str, role: str) -> frozenset[object]:
    if ROLE_ORDER.index(role) < ROLE_ORDER.index(case.methods[method]):
        return frozenset({403})
    return case.expect


@pytest.mark.parametrize("template", UI_ROUTES)
def test_tenant_b_members_never_reach_tenant_a_through_the_ui(template, world, globex, b_members, alice) -> None:
    case = UI.get(template)
    assert case is not None, f"{template} has no isolation matrix entry; {HOW_TO_ADD}"
    route = ROUTES[template]
    query = case.query(world) if case.query else None
    form = case.data(world) if case.data else {}
    a_path = route.path(_values(route, world))
    b_path = route.path(_values(route, world, slug=globex.slug))
    probe = Probe(world, globex)
    for role, user in b_members.items():
        client = Client()
        client.force_login(user)
        for method in case.methods:
            data = None if method in SAFE else form
            # A's slug: B's members are not members of A, whatever their role.
            response, sent = send(client, method, a_path, query=query, form=data)
            probe.check(f"{role} {method} {a_path}", response, sent, NOT_FOUND)
            # B's own slug with A's object ids.
            response, sent = send(client, method, b_path, query=query, form=data)
            probe.check(f"{role} {method} {b_path}", response, sent, _ui_expected(case, method, role))
        probe.check_state(f"{role} on {template}")
    probe.assert_clean()
    assert Membership.objects.filter(tenant=world.tenant, user__in=b_members.values()).count() == 0
    if case.expect == NOT_FOUND:
        client = Client()
        client.force_login(alice)  # acme's admin: the same URL is a real page for A
        for method in case.methods:
            response, _ = send(client, method, a_path, query=query, form=None if method in SAFE else form)
            assert response.status_code != 404, (method, a_path)
