from __future__ import annotations

import re

from memoryhub.models import AuditEvent
from tests.conftest import error_of


def test_an_admin_key_reads_its_tenants_audit_log(acme, globex, make_key, client_for):
    admin, admin_raw = make_key(acme, "admin")
    globex_key, _ = make_key(globex, "agent")
    client = client_for(admin_raw)
    client.post("/api/v1/keys", {"kind": "ingest"}, format="json")
    events = client.get("/api/v1/audit").json()["results"]
    assert [e["action"] for e in events][:1] == ["apikey.create"]
    assert events[0]["actor"] == f"key:{admin.public_id}"
    # Only acme's events: each listed row is one of acme's, and none of globex's is listed.
    acme_ids = set(AuditEvent.objects.filter(tenant=acme).values_list("public_id", flat=True))
    globex_ids = set(AuditEvent.objects.filter(tenant=globex).values_list("public_id", flat=True))
    assert globex_ids  # the control: globex has rows that could have leaked (its key's creation)
    listed = [e["id"] for e in events]
    assert set(listed) <= acme_ids
    assert not set(listed) & globex_ids
    assert globex_key.public_id not in {e["object_id"] for e in events}
    assert len(listed) == len(acme_ids) == 2


def test_it_filters_by_action(acme, make_key, client_for):
    key, admin_raw = make_key(acme, "admin")
    client = client_for(admin_raw)
    client.delete(f"/api/v1/keys/{key.public_id}")
    _, admin_raw2 = make_key(acme, "admin")
    events = client_for(admin_raw2).get("/api/v1/audit", {"action": "apikey.revoke"}).json()["results"]
    assert [e["object_id"] for e in events] == [key.public_id]


def test_other_kinds_may_not_read_the_audit_log(acme, make_key, client_for):
    _, raw = make_key(acme, "reviewer")
    response = client_for(raw).get("/api/v1/audit")
    assert response.status_code == 403
    assert error_of(response)["code"] == "PERMISSION_DENIED"


def test_it_refuses_unknown_filters(acme, make_key, client_for):
    _, raw = make_key(acme, "admin")
    response = client_for(raw).get("/api/v1/audit?actor=key:k_0000000000")
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "INVALID_REQUEST"
    assert error["details"]["errors"] == [{"path": "actor", "message": "Unknown query parameter.", "code": "unknown"}]


def test_it_refuses_an_action_that_is_not_an_action_name(acme, make_key, client_for):
    _, raw = make_key(acme, "admin")
    client = client_for(raw)
    for bad in ("APIKEY.CREATE", "apikey..create", "%20", "a" * 65):
        response = client.get(f"/api/v1/audit?action={bad}")
        assert response.status_code == 400, bad
        assert [e["path"] for e in error_of(response)["details"]["errors"]] == ["action"]


def test_it_refuses_a_filter_given_twice(acme, make_key, client_for):
    _, raw = make_key(acme, "admin")
    response = client_for(raw).get("/api/v1/audit?action=apikey.create&action=apikey.revoke")
    assert response.status_code == 400
    assert [e["path"] for e in error_of(response)["details"]["errors"]] == ["action"]


def test_audit_ids_are_opaque_and_count_no_other_tenants_changes(acme, globex, make_key, client_for):
    _, raw = make_key(acme, "admin")
    client = client_for(raw)
    client.post("/api/v1/keys", {"kind": "ingest"}, format="json")
    for _ in range(3):  # another tenant's activity between two of acme's rows
        make_key(globex, "agent")
    client.post("/api/v1/keys", {"kind": "ingest"}, format="json")
    events = client.get("/api/v1/audit").json()["results"]
    rows = {row.public_id: row.pk for row in AuditEvent.objects.filter(tenant=acme)}
    assert {e["id"] for e in events} == set(rows)
    for e in events:
        assert isinstance(e["id"], str) and re.fullmatch(r"ev_[a-z2-7]{20}", e["id"]), e["id"]
        assert e["id"] != str(rows[e["id"]])
