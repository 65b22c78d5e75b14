"""A suspended tenant across the whole URL conf (docs/operations.md "Suspending a tenant"),
generated from the isolation matrix's routes (tests/security/matrix.py): every API route
answers each of the tenant's keys with 403 TENANT_SUSPENDED and changes nothing; every tenant
page still answers its reads and refuses its writes with 403, the read playground excepted."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.test import Client

from tenants.models import KeyKind
from tenants.services.suspension import tenant_suspend
from tests.conftest import TEST_ACTOR
from tests.security.matrix import API, UI
from tests.security.probe import SAFE, send
from tests.security.test_isolation_matrix import API_ROUTES, ROUTES, UI_ROUTES, _values
from tests.security.world import state_of

# Unknown paths under /api/v1/ are 404 for anyone: no key is read there.
CATCH_ALL = "api/v1/(?P<path>.*)"
# Pages whose POST only reads (tenants/ui.py `tenant_view(post_reads=True)`).
POST_READS = {"t/<slug:slug>/atoms/playground/"}


@pytest.mark.parametrize("template", [t for t in API_ROUTES if t != CATCH_ALL])
def test_every_api_route_refuses_a_suspended_tenants_keys(template, world) -> None:
    case = API[template]
    route = ROUTES[template]
    path = route.path(_values(route, world))
    query = case.query(world) if case.query else None
    tenant_suspend(tenant=world.tenant, actor=TEST_ACTOR)
    before = state_of(world.tenant)
    failures = []
    for method in route.api_methods():
        for body in [None] if method in SAFE else case.bodies(world):
            for kind in KeyKind.values:
                response, _ = send(world.client(kind), method, path, body=body, query=query)
                code = response.json().get("error", {}).get("code") if response.content else None
                if (response.status_code, code) != (403, "TENANT_SUSPENDED"):
                    failures.append(f"{kind} {method} {path}: {response.status_code} {code}")
    assert not failures
    assert state_of(world.tenant) == before


@pytest.mark.parametrize("template", UI_ROUTES)
def test_every_tenant_page_reads_and_refuses_writes_while_suspended(template, world, alice) -> None:
    case = UI[template]
    route = ROUTES[template]
    path = route.path(_values(route, world))
    query = case.query(world) if case.query else None
    form = case.data(world) if case.data else {}
    tenant_suspend(tenant=world.tenant, actor=TEST_ACTOR)
    client = Client()
    client.force_login(alice)  # acme's admin: every role the page needs
    url = f"{path}?{urlencode(query)}" if query else path
    for method in case.methods:
        reads = method in SAFE or template in POST_READS
        for headers in ({}, {"HX-Request": "true"}):
            # Reads may leave derived records (an Atom search's receipt); a refused write nothing.
            before = state_of(world.tenant)
            response = client.generic(method, url, "" if method in SAFE else urlencode(form),
                                      content_type="application/x-www-form-urlencoded", headers=headers)
            refused = response.status_code == 403 and b'id="tenant-suspended"' in response.content
            if reads:
                assert not refused and response.status_code < 500, (method, path, response.status_code)
            else:
                assert refused, (method, path, response.status_code)
                assert state_of(world.tenant) == before, (method, path)
