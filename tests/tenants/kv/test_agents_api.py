from __future__ import annotations

from tenants.models import Agent, KvEntry
from tests.conftest import error_of
from tests.tenants.kv.helpers import Kv


def test_an_admin_key_creates_lists_and_deletes_agents(acme, make_key, client_for):
    _, raw = make_key(acme, "admin")
    client = client_for(raw)
    created = client.post("/api/v1/agents", {"slug": "release-notes", "name": "Release notes"}, format="json")
    assert created.status_code == 201 and created.json()["slug"] == "release-notes"
    assert client.post("/api/v1/agents", {"slug": "release-notes"}, format="json").status_code == 200
    assert [a["slug"] for a in client.get("/api/v1/agents").json()["items"]] == ["release-notes"]
    Kv(client, "release-notes").set("k", 1)
    assert client.delete("/api/v1/agents/release-notes").status_code == 204
    assert not Agent.objects.exists() and not KvEntry.objects.exists()
    assert error_of(client.delete("/api/v1/agents/release-notes"))["code"] == "AGENT_NOT_FOUND"


def test_only_admin_keys_create_or_delete_agents(acme, make_key, client_for):
    _, raw = make_key(acme, "agent")
    client = client_for(raw)
    assert client.post("/api/v1/agents", {"slug": "x"}, format="json").status_code == 403
    Kv(client, "x").set("k", 1)
    assert client.delete("/api/v1/agents/x").status_code == 403


def test_a_bad_slug_is_invalid_agent(acme, make_key, client_for):
    _, raw = make_key(acme, "admin")
    response = client_for(raw).post("/api/v1/agents", {"slug": "No Good"}, format="json")
    assert error_of(response)["code"] == "INVALID_AGENT"


def test_limited_keys_list_only_their_agents(acme, globex, make_key, client_for):
    _, admin = make_key(acme, "admin")
    for slug in ["a", "b"]:
        client_for(admin).post("/api/v1/agents", {"slug": slug}, format="json")
    _, other_admin = make_key(globex, "admin")
    client_for(other_admin).post("/api/v1/agents", {"slug": "c"}, format="json")
    _, limited = make_key(acme, "agent", agents=["b"])
    assert [a["slug"] for a in client_for(limited).get("/api/v1/agents").json()["items"]] == ["b"]
    assert [a["slug"] for a in client_for(admin).get("/api/v1/agents").json()["items"]] == ["a", "b"]


# Strictness (docs/api.md "Conventions"): no coercion, unknown fields refused.

def test_creating_an_agent_refuses_a_number_as_its_name(acme, admin_kv):
    response = admin_kv.client.post("/api/v1/agents", {"slug": "release-notes", "name": 0}, format="json")
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "INVALID_REQUEST"
    assert [e["path"] for e in error["details"]["errors"]] == ["name"]
    assert not Agent.objects.filter(tenant=acme, slug="release-notes").exists()


def test_creating_an_agent_refuses_unknown_fields_and_null(acme, admin_kv):
    for body, path in [({"slug": "release-notes", "title": "x"}, "title"), ({"slug": "release-notes", "name": None}, "name"),
                       ({"slug": 12}, "slug")]:
        response = admin_kv.client.post("/api/v1/agents", body, format="json")
        assert response.status_code == 400, body
        assert [e["path"] for e in error_of(response)["details"]["errors"]] == [path]
    assert not Agent.objects.filter(tenant=acme).exists()


def test_a_slug_outside_the_pattern_keeps_its_own_code(admin_kv):
    response = admin_kv.client.post("/api/v1/agents", {"slug": "Release Notes"}, format="json")
    assert response.status_code == 400
    assert error_of(response)["code"] == "INVALID_AGENT"
