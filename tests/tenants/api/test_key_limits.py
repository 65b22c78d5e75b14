"""Tenant limits on keys (docs/api.md "Tenant settings"): `max_api_keys` and
`max_read_policies`, shown and changed through GET/PATCH /api/v1/tenant and enforced on
every key creation (API, web UI, createapikey) with 409 TENANT_LIMIT_REACHED."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from memoryhub.models import AuditEvent
from tenants.models import ApiKey
from tests.conftest import error_of


def _limits(client, **values: int) -> dict[str, object]:
    response = client.patch("/api/v1/tenant", values, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def test_the_limits_are_tenant_settings_with_defaults(acme, make_key, client_for):
    _, raw = make_key(acme, "agent", read_only=True)
    body = client_for(raw).get("/api/v1/tenant").json()
    assert (body["max_api_keys"], body["max_read_policies"]) == (100, 100)
    _, admin = make_key(acme, "admin")
    assert _limits(client_for(admin), max_api_keys=5, max_read_policies=3)["max_api_keys"] == 5
    acme.refresh_from_db()
    assert (acme.max_api_keys, acme.max_read_policies) == (5, 3)
    refused = client_for(admin).patch("/api/v1/tenant", {"max_api_keys": 0, "max_read_policies": 1001}, format="json")
    assert refused.status_code == 400
    assert {e["path"] for e in error_of(refused)["details"]["errors"]} == {"max_api_keys", "max_read_policies"}


def test_a_key_past_max_api_keys_is_refused_and_nothing_is_stored(acme, make_key, client_for):
    admin_key, admin = make_key(acme, "admin")
    client = client_for(admin)
    _limits(client, max_api_keys=2)
    assert client.post("/api/v1/keys", {"kind": "agent"}, format="json").status_code == 201
    audit_rows = AuditEvent.objects.count()
    response = client.post("/api/v1/keys", {"kind": "agent"}, format="json")
    assert response.status_code == 409
    error = error_of(response)
    assert error["code"] == "TENANT_LIMIT_REACHED"
    assert error["details"] == {"limit": "max_api_keys", "max": 2, "actual": 3}
    assert ApiKey.objects.filter(tenant=acme).count() == 2 and AuditEvent.objects.count() == audit_rows
    # A revoked key holds no place.
    other = ApiKey.objects.exclude(pk=admin_key.pk).get(tenant=acme)
    assert client.delete(f"/api/v1/keys/{other.public_id}").status_code == 200
    assert client.post("/api/v1/keys", {"kind": "agent"}, format="json").status_code == 201


def test_a_key_adding_policies_past_max_read_policies_is_refused(acme, make_key, client_for):
    _, admin = make_key(acme, "admin")  # reads "default"
    client = client_for(admin)
    _limits(client, max_read_policies=3)
    made = client.post("/api/v1/keys", {"kind": "host", "read_policies": ["a", "b"]}, format="json")
    assert made.status_code == 201
    response = client.post("/api/v1/keys", {"kind": "host", "read_policies": ["a", "c"]}, format="json")
    assert response.status_code == 409
    assert error_of(response)["details"] == {"limit": "max_read_policies", "max": 3, "actual": 4}
    # Policies already in use cost nothing, even when a lowered limit is already passed.
    _limits(client, max_read_policies=1)
    again = client.post("/api/v1/keys", {"kind": "agent", "read_policies": ["b", "default"]}, format="json")
    assert again.status_code == 201
    assert ApiKey.objects.filter(tenant=acme, revoked_at__isnull=True).count() == 3


def test_limits_of_one_tenant_do_not_count_another_tenants_keys(acme, globex, make_key, client_for):
    for _ in range(3):
        make_key(globex, "agent", read_policies=["x", "y"])
    _, admin = make_key(acme, "admin")
    client = client_for(admin)
    _limits(client, max_api_keys=2, max_read_policies=2)
    assert client.post("/api/v1/keys", {"kind": "agent", "read_policies": ["x"]}, format="json").status_code == 201


def test_the_keys_page_and_createapikey_answer_the_limit(acme, alice, client, make_key):
    make_key(acme, "admin")
    acme.max_api_keys = 1
    acme.save(update_fields=["max_api_keys"])
    client.force_login(alice)
    page = client.get("/t/acme/keys/").content.decode()
    assert "1 of 1 active keys" in page
    response = client.post("/t/acme/keys/", {"kind": "agent"})
    assert response.status_code == 200
    assert "at most 1 active API keys" in response.content.decode()
    with pytest.raises(CommandError, match="at most 1 active API keys"):
        call_command("createapikey", "--tenant", "acme", "--kind", "agent")
    assert ApiKey.objects.filter(tenant=acme).count() == 1
