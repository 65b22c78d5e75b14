"""Tenancy and key rights for KV: other tenants' agents, agent lists, read-only keys and key kinds (docs/kv.md
"Endpoints"; docs/api.md "Tenant isolation")."""

from __future__ import annotations

import pytest

from tenants.models import Agent
from tests.conftest import error_of
from tests.tenants.kv.helpers import Kv


def test_another_tenants_agent_is_never_visible(acme, globex, make_key, client_for):
    """Another tenant's agent of the same slug is never visible: a writable key gets its own empty store, a
    read-only key a 404."""
    _, a_raw = make_key(acme, "agent")
    Kv(client_for(a_raw), "shared").set("secret", "acme only")
    _, b_raw = make_key(globex, "agent")
    b = Kv(client_for(b_raw), "shared")
    assert b.get("secret") is None  # B's own, implicitly created, empty store
    assert b.list() == []
    assert Agent.objects.filter(slug="shared").count() == 2
    _, b_ro = make_key(globex, "agent", read_only=True)
    ro = Kv(client_for(b_ro), "only-in-acme")
    Kv(client_for(a_raw), "only-in-acme").set("k", 1)
    for response in [ro.call({"action": "get", "key": "k"}), ro.client.get(ro.url("namespaces")),
                     ro.client.get(ro.url("namespaces/default/keys/k")), ro.client.get(ro.url("runs"))]:
        assert response.status_code == 404
        assert error_of(response)["code"] == "AGENT_NOT_FOUND"


def test_agent_lists_read_only_keys_and_foreign_runs(acme, make_key, client_for):
    """A key limited to some agents gets AGENT_NOT_FOUND for others; a read-only key may read but every write is
    403 PERMISSION_DENIED."""
    _, limited_raw = make_key(acme, "agent", agents=["allowed"])
    limited = Kv(client_for(limited_raw), "other")
    assert error_of(limited.call({"action": "get", "key": "k"}))["code"] == "AGENT_NOT_FOUND"
    assert Kv(client_for(limited_raw), "allowed").set("k", 1) is None
    _, ro_raw = make_key(acme, "agent", read_only=True)
    ro = Kv(client_for(ro_raw), "allowed")
    assert ro.get("k") == 1
    for response in [ro.call({"action": "set", "key": "k", "value": 2}), ro.call({"action": "clear"}),
                     ro.call({"action": "delete", "key": "k"}),
                     ro.client.put(ro.url("namespaces/default/keys/k"), {"value": 2}, format="json"),
                     ro.client.delete(ro.url("namespaces/default")), ro.client.post(ro.url("runs"))]:
        assert response.status_code == 403
        assert error_of(response)["code"] == "PERMISSION_DENIED"
    _, writer_raw = make_key(acme, "agent")
    run = Kv(client_for(writer_raw), "other").client.post("/api/v1/agents/other/runs").json()["run_id"]
    foreign = Kv(client_for(writer_raw), "allowed").call({"action": "get", "key": "k", "run_id": run, "seq": 1})
    assert error_of(foreign)["code"] == "RUN_NOT_FOUND"
    assert Kv(client_for(writer_raw), "allowed").client.get(f"/api/v1/agents/allowed/runs/{run}").status_code == 404


def test_read_only_keys_may_not_write_even_as_replays(acme, make_key, client_for):
    _, raw = make_key(acme, "agent")
    writer = Kv(client_for(raw))
    run = writer.client.post(writer.url("runs")).json()["run_id"]
    writer.call({"action": "set", "key": "k", "value": 1, "run_id": run, "seq": 1})
    _, ro_raw = make_key(acme, "agent", read_only=True)
    replay = Kv(client_for(ro_raw)).call({"action": "set", "key": "k", "value": 1, "run_id": run, "seq": 1})
    assert replay.status_code == 403


def test_ingest_keys_may_not_use_kv(acme, make_key, client_for):
    _, raw = make_key(acme, "ingest")
    response = Kv(client_for(raw)).call({"action": "get", "key": "k"})
    assert response.status_code == 403 and error_of(response)["code"] == "PERMISSION_DENIED"


@pytest.mark.parametrize("kind", ["agent", "host", "reviewer", "admin"])
def test_every_kv_kind_reads_and_writes(acme, make_key, client_for, kind):
    _, raw = make_key(acme, kind)
    kv = Kv(client_for(raw))
    kv.set("k", kind)
    assert kv.get("k") == kind


def test_a_reviewer_keys_writes_record_its_holder(acme, alice, client_for):
    from memoryhub.actors import Actor
    from tenants.services.keys import apikey_create

    _, raw = apikey_create(tenant=acme, kind="reviewer", actor=Actor.for_user(alice), created_by=alice)
    kv = Kv(client_for(raw))
    kv.set("k", 1)
    assert kv.client.get(kv.url("namespaces/default/keys/k")).json()["updated_by"] == "alice"


def test_bad_agent_slugs_are_400(kv):
    kv.agent = "Bad_Slug"
    assert error_of(kv.call({"action": "get", "key": "k"}))["code"] == "INVALID_AGENT"


def test_kv_writes_are_audited_without_keys_or_values(kv):
    from memoryhub.models import AuditEvent

    kv.set("very-secret-key", "very secret value")
    event = AuditEvent.objects.get(action="kv.set")
    text = " ".join(str(v) for v in AuditEvent.objects.filter(pk=event.pk).values()[0].values())
    assert "secret" not in text
    # The namespace is named by digest too (docs/operations.md "Audit log").
    assert event.object_id.startswith("bot/ns:") and "default" not in event.object_id
