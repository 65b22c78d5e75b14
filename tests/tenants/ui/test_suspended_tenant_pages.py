"""The web UI of a suspended tenant (docs/operations.md "Suspending a tenant"): members still
log in and read, under a banner; every write answers 403 with a page, or for htmx the banner
with the refusal; another tenant is untouched and lifting the suspension restores writes."""

from __future__ import annotations

import datetime

import pytest

from memoryhub.models import AuditEvent
from tenants.models import Membership, MemoryVolume, Role, Tenant
from tenants.services.suspension import tenant_suspend, tenant_unsuspend
from tests.conftest import TEST_ACTOR

HX = {"HX-Request": "true"}
BANNER = "This tenant is suspended since"
SINCE = datetime.datetime(2026, 11, 30, 8, 0, tzinfo=datetime.UTC)


@pytest.fixture
def suspended(acme: Tenant) -> Tenant:
    tenant_suspend(tenant=acme, actor=TEST_ACTOR, reason="unpaid invoice 4711")
    Tenant.objects.filter(pk=acme.pk).update(suspended_at=SINCE)
    acme.refresh_from_db()
    return acme


@pytest.mark.parametrize("who", ["alice", "bob", "carol"])
def test_every_member_reads_the_pages_under_a_banner_with_the_date(request, client, suspended, who) -> None:
    client.force_login(request.getfixturevalue(who))
    for page in ["/t/acme/", "/t/acme/memory/", "/t/acme/agents/", "/t/acme/atoms/", "/t/acme/audit/"]:
        response = client.get(page)
        assert response.status_code == 200, page
        html = response.content.decode()
        assert f'{BANNER} <time datetime="{SINCE.isoformat()}">30 Nov 2026</time>' in html, page
        assert "unpaid invoice" not in html  # the note is for staff only


def test_the_audit_page_says_the_tenant_was_suspended(client, alice, suspended) -> None:
    client.force_login(alice)
    assert "suspended the tenant" in client.get("/t/acme/audit/").content.decode()


def test_a_write_answers_403_with_a_page_that_says_why(client, alice, suspended) -> None:
    client.force_login(alice)
    response = client.post("/t/acme/members/", {"username": "alice", "role": "viewer"})
    assert response.status_code == 403
    html = response.content.decode()
    assert 'data-testid="suspended-refusal"' in html and "Acme Corp is suspended" in html
    assert "Your change was not saved" in html  # the banner says so too
    assert not AuditEvent.objects.filter(object_type="membership").exists()


def test_an_htmx_write_gets_the_banner_with_the_refusal_in_place_of_the_pages_banner(client, bob,
                                                                                      suspended) -> None:
    client.force_login(bob)
    response = client.post("/t/acme/memory/user/add", {"content": "Prefers tabs", "version": "0"}, headers=HX)
    assert response.status_code == 403
    assert response["HX-Retarget"] == "#tenant-suspended" and response["HX-Reswap"] == "outerHTML"
    html = response.content.decode()
    assert html.strip().startswith('<div id="tenant-suspended">') and "<html" not in html
    assert 'role="alert"' in html and "Your change was not saved" in html and "30 Nov 2026" in html
    assert MemoryVolume.get_or_create_for(suspended).entries("user") == []


@pytest.mark.parametrize(("who", "path", "data"), [
    ("alice", "/t/acme/keys/", {"kind": "agent", "name": "new key"}),
    ("alice", "/t/acme/settings/", {}),
    ("alice", "/t/acme/memory/settings/secrets", {"secret": "a-secret-value-1234"}),
    ("bob", "/t/acme/memory/memory/add", {"content": "Uses Bun", "version": "0"}),
    ("bob", "/t/acme/memory/pending/approve-all", {}),
])
def test_every_kind_of_write_is_refused(request, client, suspended, who, path, data) -> None:
    client.force_login(request.getfixturevalue(who))
    before = AuditEvent.objects.count()
    assert client.post(path, data).status_code == 403
    assert AuditEvent.objects.count() == before


def test_the_read_playground_still_runs_a_read(client, carol, suspended) -> None:
    client.force_login(carol)
    response = client.post("/t/acme/atoms/playground/", {"query": "tabs", "tokens": "4096", "limit": "24"})
    assert response.status_code == 200


def test_the_role_check_comes_first_and_other_tenants_stay_404(client, carol, dave, suspended) -> None:
    client.force_login(carol)
    assert client.get("/t/acme/members/").status_code == 403  # a viewer's page it never was
    client.force_login(dave)
    assert client.get("/t/acme/").status_code == 404
    assert client.post("/t/acme/members/", {"username": "dave", "role": "admin"}).status_code == 404


def test_another_tenant_keeps_writing_without_a_banner(client, bob, dave, suspended, globex) -> None:
    client.force_login(dave)
    html = client.get("/t/globex/").content.decode()
    assert BANNER not in html
    response = client.post("/t/globex/members/", {"username": "bob", "role": "reviewer"})
    assert response.status_code == 200
    assert Membership.objects.get(user=bob, tenant=globex).role == Role.REVIEWER


def test_lifting_the_suspension_restores_writes_and_drops_the_banner(client, alice, bob, suspended) -> None:
    tenant_unsuspend(tenant=suspended, actor=TEST_ACTOR)
    client.force_login(alice)
    assert BANNER not in client.get("/t/acme/").content.decode()
    response = client.post("/t/acme/members/", {"username": "bob", "role": "admin"})
    assert response.status_code == 200
    assert "bob is already a member" in response.content.decode()
    client.force_login(bob)
    assert client.post("/t/acme/memory/user/add", {"content": "Prefers tabs", "version": "0"}).status_code == 200
    assert MemoryVolume.get_or_create_for(suspended).entries("user") == ["Prefers tabs"]
