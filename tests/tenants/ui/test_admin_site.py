from __future__ import annotations

import re

from tenants.models import ApiKey


def test_creating_a_key_in_the_admin_shows_it_once(admin_client, acme, client_for):
    response = admin_client.post(
        "/admin/tenants/apikey/add/",
        {"tenant": acme.pk, "name": "ops", "kind": "reviewer", "subject": "", "agents": "null",
         "read_policies": '["default"]', "write_policies": '["default"]'},
        follow=True,
    )
    assert response.status_code == 200
    raw = re.search(rb"mh_[a-z0-9]{10}_[A-Za-z0-9]{40}", response.content).group().decode()
    assert client_for(raw).get("/api/v1/whoami").json()["key"]["kind"] == "reviewer"
    key = ApiKey.objects.get()
    assert raw.encode() not in admin_client.get(f"/admin/tenants/apikey/{key.pk}/change/").content


def test_the_admin_validates_keys_like_the_api(admin_client, acme):
    response = admin_client.post(
        "/admin/tenants/apikey/add/",
        {"tenant": acme.pk, "name": "ops", "kind": "agent", "subject": "", "agents": '["Bad Slug"]',
         "read_policies": '["default"]', "write_policies": '["default"]'},
    )
    assert response.status_code == 200
    assert b"errorlist" in response.content
    assert not ApiKey.objects.exists()


def test_the_admin_revokes_keys_and_never_deletes_them(admin_client, acme, make_key):
    key, _ = make_key(acme)
    admin_client.post("/admin/tenants/apikey/", {"action": "revoke", "_selected_action": [key.pk]})
    key.refresh_from_db()
    assert key.revoked_at is not None
    assert admin_client.get(f"/admin/tenants/apikey/{key.pk}/delete/").status_code == 403


def test_admin_edits_of_tenants_are_audited(admin_client, acme):
    from memoryhub.models import AuditEvent

    response = admin_client.post(f"/admin/tenants/tenant/{acme.pk}/change/", {
        "slug": "acme", "name": "Acme Renamed", "api_rate_per_minute": "", "max_api_keys": "100", "max_read_policies": "100",
        "memberships-TOTAL_FORMS": "0", "memberships-INITIAL_FORMS": "0",
    })
    assert response.status_code == 302, response.content[:2000]
    event = AuditEvent.objects.get(action="tenant.update")
    assert event.actor_label.startswith("user:") and event.tenant == acme


def test_agents_are_created_in_the_admin_with_an_audit_row(admin_client, acme):
    from memoryhub.models import AuditEvent
    from tenants.models import Agent

    response = admin_client.post("/admin/tenants/agent/add/", {"tenant": acme.pk, "slug": "helper", "name": "Helper"})
    assert response.status_code == 302
    assert Agent.objects.get().slug == "helper"
    assert AuditEvent.objects.filter(action="agent.create", tenant=acme).exists()
