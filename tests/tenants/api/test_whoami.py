from __future__ import annotations

from tests.conftest import error_of


def test_it_describes_the_key_and_its_tenant(acme, make_key, client_for):
    key, raw = make_key(acme, "agent")
    response = client_for(raw).get("/api/v1/whoami")
    assert response.status_code == 200
    assert response.json() == {
        "tenant": {"slug": "acme", "name": "Acme Corp"},
        "key": {
            "id": key.public_id, "kind": "agent", "subject": f"key:{key.public_id}",
            "read_only": False, "agents": None,
            "read_policies": ["default"], "write_policies": ["default"],
        },
    }


def test_it_reports_limits_and_policies(acme, make_key, client_for):
    _, raw = make_key(
        acme, "host", read_only=True, agents=["support", "triage"],
        read_policies=["default", "user:alice"], write_policies=["user:alice"], subject="svc:runtime",
    )
    key = client_for(raw).get("/api/v1/whoami").json()["key"]
    assert key["kind"] == "host"
    assert key["read_only"] is True
    assert key["agents"] == ["support", "triage"]
    assert key["read_policies"] == ["default", "user:alice"]
    assert key["write_policies"] == ["user:alice"]
    assert key["subject"] == "svc:runtime"


def test_each_tenants_key_sees_its_own_tenant(acme, globex, make_key, client_for):
    _, raw_a = make_key(acme)
    _, raw_b = make_key(globex)
    assert client_for(raw_a).get("/api/v1/whoami").json()["tenant"]["slug"] == "acme"
    assert client_for(raw_b).get("/api/v1/whoami").json()["tenant"]["slug"] == "globex"


def test_it_needs_a_key(db, client_for):
    response = client_for(None).get("/api/v1/whoami")
    assert response.status_code == 401
    assert error_of(response)["code"] == "UNAUTHENTICATED"
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_it_has_no_trailing_slash_twin(acme, make_key, client_for):
    _, raw = make_key(acme)
    response = client_for(raw).get("/api/v1/whoami/")
    assert response.status_code == 404
    assert error_of(response)["code"] == "NOT_FOUND"
