"""The Django admin's tenant list and detail show each tenant's usage (members, active keys,
KV entries, memory-file characters, atoms) and link to its dashboard, in a fixed number of
queries whatever the number of tenants."""

from __future__ import annotations

import re

from django.db import connection
from django.test.utils import CaptureQueriesContext

from tenants.models import Tenant
from tenants.services.keys import apikey_revoke
from tests.atoms.ui.review_helpers import write
from tests.conftest import TEST_ACTOR
from tests.tenants.memory.helpers import seed

LIST = "/admin/tenants/tenant/"


def fill(tenant: Tenant, make_key, put, make_agent, atoms: int = 2) -> None:
    """Two active keys and a revoked one (plus the ingest key the atoms are written with),
    three KV entries, both memory files, `atoms` atoms."""
    make_key(tenant)
    make_key(tenant, "reviewer")
    apikey_revoke(key=make_key(tenant)[0], actor=TEST_ACTOR)
    agent = make_agent(tenant, "support")
    for key in ["a", "b", "c"]:
        put(agent, key, 1)
    seed(tenant, "memory", ["first entry", "second"])  # 11 + 3 (separator) + 6 = 20 characters
    seed(tenant, "user", ["likes tea"])
    for i in range(atoms):
        write(tenant, f"atom {i} of {tenant.slug}")


def cells(html: str, slug: str) -> list[str]:
    row = re.search(rf'<tr>.*?>{slug}</a></th>(.*?)</tr>', html, re.S)
    assert row is not None, html[:3000]
    return [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), re.S)]


def test_the_tenant_list_shows_each_tenants_usage_and_links_its_dashboard(
        admin_client, acme, globex, alice, bob, carol, dave, make_key, put, make_agent):
    fill(acme, make_key, put, make_agent)
    html = admin_client.get(LIST).content.decode()
    # name, members, active keys, KV entries, memory chars, atoms, rate, max keys, max policies, created, dashboard
    acme_row = cells(html, "acme")
    assert acme_row[:6] == ["Acme Corp", "3", "3", "3", "20 + 9", "2"]
    assert cells(html, "globex")[:6] == ["Globex", "1", "0", "0", "0 + 0", "0"]
    assert '<a href="/t/acme/">Open dashboard</a>' in html and '<a href="/t/globex/">Open dashboard</a>' in html


def test_the_tenant_list_costs_the_same_queries_for_one_tenant_or_four(admin_client, acme, make_key, put, make_agent):
    fill(acme, make_key, put, make_agent)
    admin_client.get(LIST)  # warm the session and content types
    with CaptureQueriesContext(connection) as one:
        assert admin_client.get(LIST).status_code == 200
    for slug in ["b-corp", "c-corp", "d-corp"]:
        fill(Tenant.objects.create(slug=slug, name=slug), make_key, put, make_agent, atoms=1)
    with CaptureQueriesContext(connection) as four:
        html = admin_client.get(LIST).content.decode()
    assert cells(html, "d-corp")[:6] == ["d-corp", "0", "3", "3", "20 + 9", "1"]
    assert len(four.captured_queries) == len(one.captured_queries)


def test_the_tenant_page_shows_its_usage(admin_client, acme, alice, make_key, put, make_agent):
    fill(acme, make_key, put, make_agent, atoms=1)
    html = admin_client.get(f"{LIST}{acme.pk}/change/").content.decode()
    for label, value in [("Members", "1"), ("Active keys", "3"), ("KV entries", "3"),
                         ("Memory chars (MEMORY.md + USER.md)", "20 + 9"), ("Atoms", "1")]:
        assert re.search(rf"<label>{re.escape(label)}:</label>\s*<div class=\"readonly\">{re.escape(value)}</div>",
                         html), label
    assert '<div class="readonly"><a href="/t/acme/">Open dashboard</a></div>' in html


def test_staff_still_create_tenants_in_the_admin(admin_client, db):
    assert admin_client.get(f"{LIST}add/").status_code == 200
    response = admin_client.post(f"{LIST}add/", {
        "slug": "initech", "name": "Initech", "api_rate_per_minute": "", "max_api_keys": "100",
        "max_read_policies": "100", "memberships-TOTAL_FORMS": "0", "memberships-INITIAL_FORMS": "0",
    })
    assert response.status_code == 302
    assert Tenant.objects.filter(slug="initech").exists()
