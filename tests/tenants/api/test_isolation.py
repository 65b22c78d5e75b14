"""Tenant B's keys never see tenant A's objects: every lookup is a 404, lists exclude them."""

from __future__ import annotations

import pytest

from memoryhub.models import AuditEvent
from tenants.models import KeyKind

KINDS = KeyKind.values


@pytest.mark.parametrize("kind", KINDS)
def test_tenant_b_keys_get_404_for_tenant_a_keys(acme, globex, make_key, client_for, kind):
    a_key, _ = make_key(acme, "agent")
    _, b_raw = make_key(globex, kind)
    client = client_for(b_raw)
    for response in [client.get(f"/api/v1/keys/{a_key.public_id}"), client.delete(f"/api/v1/keys/{a_key.public_id}")]:
        # Non-admin kinds are refused before any lookup; admins look only inside their tenant.
        assert response.status_code == (404 if kind == "admin" else 403)
    a_key.refresh_from_db()
    assert a_key.revoked_at is None


def test_lists_never_include_another_tenants_rows(acme, globex, make_key, client_for):
    a_keys = {make_key(acme, kind)[0].public_id for kind in KINDS}
    _, b_raw = make_key(globex, "admin")
    client = client_for(b_raw)
    listed = {k["id"] for k in client.get("/api/v1/keys").json()["results"]}
    assert listed.isdisjoint(a_keys)
    audit_ids = {e["id"] for e in client.get("/api/v1/audit").json()["results"]}
    assert audit_ids.isdisjoint(set(AuditEvent.objects.filter(tenant=acme).values_list("id", flat=True)))
    assert client.get("/api/v1/tenant").json()["slug"] == "globex"
