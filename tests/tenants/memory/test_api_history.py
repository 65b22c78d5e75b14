"""History, undo and tenant settings for memory files (docs/memory-files.md "Using it from an agent")."""

from __future__ import annotations

from tests.conftest import error_of


def test_undo_restores_a_version_as_a_new_human_version(mem, reviewer_mem):
    """undo restores a version as a new human version; undoing to the current state adds none."""
    for text in ["one", "two", "three"]:
        mem.add("memory", text)
    response = reviewer_mem.client.post("/api/v1/memory/memory/undo", {"version": 1}, format="json")
    assert response.json() == {"success": True, "version": 4}
    assert mem.entries("memory") == ["one"]
    history = mem.client.get("/api/v1/memory/memory/history").json()["items"]
    assert [h["number"] for h in history] == [4, 3, 2, 1]
    assert history[0]["origin"] == "human" and history[0]["before"] == ["one", "two", "three"]
    assert history[0]["after"] == ["one"]
    noop = reviewer_mem.client.post("/api/v1/memory/memory/undo", {"version": 1}, format="json")
    assert noop.json() == {"success": True, "version": 4}
    assert reviewer_mem.client.post("/api/v1/memory/memory/undo", {"version": 0}, format="json").json()["version"] == 5
    assert mem.entries("memory") == []
    missing = reviewer_mem.client.post("/api/v1/memory/memory/undo", {"version": 99}, format="json")
    assert missing.status_code == 404 and error_of(missing)["code"] == "VERSION_NOT_FOUND"
    assert mem.client.post("/api/v1/memory/memory/undo", {"version": 1}, format="json").status_code == 403


def test_admins_set_limits_and_approval_through_tenant_settings(acme, make_key, client_for):
    client = client_for(make_key(acme, "admin")[1])
    response = client.patch("/api/v1/tenant", {"memory_limit": 100, "user_limit": 50, "approval": "off"}, format="json")
    assert response.status_code == 200
    body = client.get("/api/v1/memory").json()
    assert (body["memory"]["limit"], body["user"]["limit"], body["approval"]) == (100, 50, "off")
    bad = client.patch("/api/v1/tenant", {"memory_limit": 0, "approval": "sometimes"}, format="json")
    assert {e["path"] for e in error_of(bad)["details"]["errors"]} == {"memory_limit", "approval"}


def test_the_tool_schema_describes_the_tool(mem):
    schema = mem.client.get("/api/v1/tools/memory/schema").json()
    assert schema["name"] == "memory"
    assert schema["parameters"]["properties"]["target"]["enum"] == ["memory", "user"]
    assert "next chat" in schema["description"]


# Strictness (docs/api.md "Conventions").

def test_undo_refuses_a_string_version_and_unknown_fields(mem, reviewer_mem):
    from tenants.models import MemoryVersion

    mem.add("memory", "A")
    for body, path in [({"version": "0"}, "version"), ({"version": 0.0}, "version"), ({"version": True}, "version"),
                       ({"version": 0, "force": True}, "force"), ({"version": 0, "reason": None}, "reason")]:
        response = reviewer_mem.client.post("/api/v1/memory/memory/undo", body, format="json")
        assert response.status_code == 400, body
        error = error_of(response)
        assert error["code"] == "INVALID_REQUEST"
        assert [e["path"] for e in error["details"]["errors"]] == [path], body
    assert MemoryVersion.objects.count() == 1


def test_history_refuses_unknown_query_parameters(mem):
    response = mem.client.get("/api/v1/memory/memory/history?origin=human")
    assert response.status_code == 400
    assert [e["path"] for e in error_of(response)["details"]["errors"]] == ["origin"]


def test_an_undo_reason_is_stored_redacted(mem, reviewer_mem):
    mem.add("memory", "one")
    mem.add("memory", "two")
    reason = "rolled back, the leaked key sk_live_abcdefghijklmnopqrstuvwx is revoked"
    assert reviewer_mem.client.post("/api/v1/memory/memory/undo", {"version": 1, "reason": reason},
                                    format="json").status_code == 200
    [latest, *_] = mem.client.get("/api/v1/memory/memory/history").json()["items"]
    assert latest["reason"] == "rolled back, the leaked key ***REDACTED*** is revoked"
