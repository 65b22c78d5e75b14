"""A suspended tenant's API keys (docs/operations.md "Suspending a tenant"): every store's
endpoints answer 403 TENANT_SUSPENDED, change nothing and do not mark the key used; another
tenant's keys are unaffected; lifting the suspension restores every key."""

from __future__ import annotations

from typing import Any

import pytest

from memoryhub.models import AuditEvent
from tenants.models import ApiKey, KvEntry, MemoryVolume, Tenant
from tenants.services.suspension import tenant_suspend, tenant_unsuspend
from tests.conftest import TEST_ACTOR, ClientFor, MakeKey, error_of

MESSAGE = "This tenant is suspended; contact the operator of this memoryhub service."

# One request per store and surface: (method, path, body)
CALLS: list[tuple[str, str, dict[str, Any] | None]] = [
    ("get", "/api/v1/whoami", None),
    ("put", "/api/v1/agents/bot/namespaces/default/keys/colour", {"value": "blue"}),
    ("get", "/api/v1/agents/bot/namespaces/default/keys", None),
    ("post", "/api/v1/agents/bot/memory", {"action": "set", "key": "colour", "value": "red"}),
    ("post", "/api/v1/tools/memory", {"action": "add", "target": "user", "content": "Prefers tabs"}),
    ("get", "/api/v1/memory/user", None),
    ("post", "/api/v1/atoms/read", {"policy": "default", "query": "colour"}),
    ("post", "/api/v1/atoms/write", {"changes": [{"id": "a", "op": "create", "kind": "note",
                                                  "content": {"text": "colour is blue", "links": []}, "sources": []}]}),
]


def _send(client: Any, method: str, path: str, body: dict[str, Any] | None) -> Any:
    return getattr(client, method)(path, body, format="json") if body is not None else getattr(client, method)(path)


@pytest.fixture
def suspended(acme: Tenant) -> Tenant:
    tenant_suspend(tenant=acme, actor=TEST_ACTOR, reason="unpaid invoice 4711")
    return acme


@pytest.mark.parametrize(("method", "path", "body"), CALLS, ids=[f"{m} {p}" for m, p, _ in CALLS])
def test_it_refuses_every_store_with_tenant_suspended(method, path, body, suspended, make_key, client_for) -> None:
    key, raw = make_key(suspended, "host")
    response = _send(client_for(raw), method, path, body)
    assert response.status_code == 403, response.content
    error = error_of(response)
    assert error == {"code": "TENANT_SUSPENDED", "message": MESSAGE, "details": {}}
    assert "unpaid" not in response.content.decode()  # the staff note never reaches clients
    assert "WWW-Authenticate" not in response  # the key is valid: no new credentials would help
    key.refresh_from_db()
    assert key.last_used_at is None
    assert not KvEntry.objects.exists()
    assert MemoryVolume.get_or_create_for(suspended).entries("user") == []


def test_read_only_and_every_kind_of_key_are_refused_alike(suspended, make_key, client_for) -> None:
    for kind in ("agent", "ingest", "host", "reviewer", "admin"):
        for read_only in (False, True):
            _, raw = make_key(suspended, kind, read_only=read_only)
            response = client_for(raw).get("/api/v1/whoami")
            assert (response.status_code, error_of(response)["code"]) == (403, "TENANT_SUSPENDED"), (kind, read_only)


def test_a_revoked_or_unknown_key_still_answers_401(suspended, make_key, client_for) -> None:
    key, raw = make_key(suspended)
    ApiKey.objects.filter(pk=key.pk).update(revoked_at="2026-12-01T00:00:00Z")
    assert client_for(raw).get("/api/v1/whoami").status_code == 401
    assert client_for("mh_aaaaaaaaaa_" + "b" * 40).get("/api/v1/whoami").status_code == 401


def test_it_leaves_other_tenants_keys_alone(suspended, globex, make_key, client_for) -> None:
    _, raw = make_key(globex, "host")
    client = client_for(raw)
    assert client.get("/api/v1/whoami").status_code == 200
    stored = client.put("/api/v1/agents/bot/namespaces/default/keys/colour", {"value": "blue"}, format="json")
    assert stored.status_code in (200, 201), stored.content


def test_lifting_the_suspension_restores_every_key_and_its_data(acme, make_key: MakeKey,
                                                                client_for: ClientFor) -> None:
    _, raw = make_key(acme, "host")
    client = client_for(raw)
    assert client.put("/api/v1/agents/bot/namespaces/default/keys/colour", {"value": "blue"},
                      format="json").status_code in (200, 201)
    tenant_suspend(tenant=acme, actor=TEST_ACTOR)
    assert client.get("/api/v1/agents/bot/namespaces/default/keys/colour").status_code == 403
    tenant_unsuspend(tenant=acme, actor=TEST_ACTOR)
    got = client.get("/api/v1/agents/bot/namespaces/default/keys/colour")
    assert got.status_code == 200 and got.json()["value"] == "blue"
    assert [e.action for e in AuditEvent.objects.filter(action__startswith="tenant.").order_by("pk")] == [
        "tenant.suspend", "tenant.unsuspend"]
