from __future__ import annotations

from memoryhub.models import AuditEvent
from tenants.models import ApiKey
from tests.conftest import error_of


def test_an_admin_key_creates_a_key_shown_once(acme, make_key, client_for):
    _, admin_raw = make_key(acme, "admin")
    response = client_for(admin_raw).post(
        "/api/v1/keys", {"kind": "agent", "name": "bot", "agents": ["support"], "read_only": True}, format="json"
    )
    assert response.status_code == 201
    body = response.json()
    secret = body["secret"]
    assert body["key"]["kind"] == "agent" and body["key"]["agents"] == ["support"]
    assert body["key"]["read_only"] is True
    # The new key works, and the secret is not shown again anywhere.
    assert client_for(secret).get("/api/v1/whoami").json()["key"]["id"] == body["key"]["id"]
    listing = client_for(admin_raw).get("/api/v1/keys").content.decode()
    detail = client_for(admin_raw).get(f"/api/v1/keys/{body['key']['id']}").content.decode()
    assert secret not in listing and secret.split("_")[2] not in detail
    assert AuditEvent.objects.filter(action="apikey.create", object_id=body["key"]["id"]).exists()


def test_it_validates_the_key_spec(acme, make_key, client_for):
    _, admin_raw = make_key(acme, "admin")
    before = ApiKey.objects.count()
    for payload, path in [
        ({"kind": "wizard"}, "kind"),
        ({"kind": "agent", "agents": ["Bad Slug"]}, "agents[0]"),
        ({"kind": "agent", "agents": []}, "agents"),
        ({"kind": "agent", "read_policies": ["no spaces allowed"]}, "read_policies[0]"),
        ({"kind": "agent", "write_policies": ["a", "a"]}, "write_policies"),
        ({}, "kind"),
    ]:
        response = client_for(admin_raw).post("/api/v1/keys", payload, format="json")
        assert response.status_code == 400, payload
        error = error_of(response)
        assert error["code"] == "INVALID_REQUEST"
        assert path in {e["path"] for e in error["details"]["errors"]}, (payload, error)
    assert ApiKey.objects.count() == before


def test_only_admin_keys_manage_keys(acme, make_key, client_for):
    target, _ = make_key(acme, "agent")
    for kind in ["agent", "ingest", "host", "reviewer"]:
        _, raw = make_key(acme, kind)
        client = client_for(raw)
        for response in [
            client.get("/api/v1/keys"),
            client.post("/api/v1/keys", {"kind": "agent"}, format="json"),
            client.get(f"/api/v1/keys/{target.public_id}"),
            client.delete(f"/api/v1/keys/{target.public_id}"),
        ]:
            assert response.status_code == 403, kind
            assert error_of(response)["code"] == "PERMISSION_DENIED"
    target.refresh_from_db()
    assert target.revoked_at is None


def test_an_admin_key_revokes_a_key(acme, make_key, client_for):
    _, admin_raw = make_key(acme, "admin")
    target, target_raw = make_key(acme, "agent")
    response = client_for(admin_raw).delete(f"/api/v1/keys/{target.public_id}")
    assert response.status_code == 200
    assert response.json()["revoked_at"] is not None
    assert response.json()["generation"] == 2
    assert client_for(target_raw).get("/api/v1/whoami").status_code == 401


def test_another_tenants_key_is_not_found(acme, globex, make_key, client_for):
    _, admin_raw = make_key(acme, "admin")
    foreign, foreign_raw = make_key(globex, "agent")
    for response in [
        client_for(admin_raw).get(f"/api/v1/keys/{foreign.public_id}"),
        client_for(admin_raw).delete(f"/api/v1/keys/{foreign.public_id}"),
    ]:
        assert response.status_code == 404
        assert error_of(response)["code"] == "KEY_NOT_FOUND"
    listing = client_for(admin_raw).get("/api/v1/keys").json()["results"]
    assert foreign.public_id not in {k["id"] for k in listing}
    assert client_for(foreign_raw).get("/api/v1/whoami").status_code == 200


def test_the_key_list_pages_with_a_cursor(acme, make_key, client_for):
    _, admin_raw = make_key(acme, "admin")
    made = {make_key(acme, "agent")[0].public_id for _ in range(55)}
    client = client_for(admin_raw)
    first = client.get("/api/v1/keys").json()
    assert len(first["results"]) == 50 and first["next"]
    second = client.get(first["next"]).json()
    assert second["next"] is None
    seen = [k["id"] for k in first["results"] + second["results"]]
    assert len(seen) == len(set(seen)) == 56
    assert made <= set(seen)


# Strictness (docs/api.md "Conventions"): no coercion, unknown fields and filters refused.

def _refused(response, *paths: str) -> None:
    assert response.status_code == 400, response.content
    error = error_of(response)
    assert error["code"] == "INVALID_REQUEST"
    assert sorted(e["path"] for e in error["details"]["errors"]) == sorted(paths)


def test_a_new_keys_fields_are_not_coerced(acme, make_key, client_for):
    _, admin_raw = make_key(acme, "admin")
    client = client_for(admin_raw)
    before = ApiKey.objects.count()
    _refused(client.post("/api/v1/keys", {"kind": "agent", "name": 0}, format="json"), "name")
    _refused(client.post("/api/v1/keys", {"kind": "agent", "subject": 7}, format="json"), "subject")
    _refused(client.post("/api/v1/keys", {"kind": "agent", "read_only": "true"}, format="json"), "read_only")
    _refused(client.post("/api/v1/keys", {"kind": "agent", "read_only": 1}, format="json"), "read_only")
    _refused(client.post("/api/v1/keys", {"kind": "agent", "agents": [12]}, format="json"), "agents[0]")
    assert ApiKey.objects.count() == before


def test_null_is_refused_where_a_key_field_is_not_nullable(acme, make_key, client_for):
    _, admin_raw = make_key(acme, "admin")
    client = client_for(admin_raw)
    _refused(client.post("/api/v1/keys", {"kind": "agent", "name": None}, format="json"), "name")
    _refused(client.post("/api/v1/keys", {"kind": "agent", "read_policies": None}, format="json"), "read_policies")
    assert client.post("/api/v1/keys", {"kind": "agent", "agents": None}, format="json").status_code == 201


def test_unknown_fields_of_a_new_key_are_refused_with_every_other_problem(acme, make_key, client_for):
    _, admin_raw = make_key(acme, "admin")
    before = ApiKey.objects.count()
    response = client_for(admin_raw).post(
        "/api/v1/keys", {"kind": "agent", "readonly": True, "name": 5, "scopes": ["all"]}, format="json")
    _refused(response, "name", "readonly", "scopes")
    assert {e["message"] for e in error_of(response)["details"]["errors"] if e["path"] != "name"} == {"Unknown field."}
    assert ApiKey.objects.count() == before


def test_the_key_list_refuses_unknown_query_parameters(acme, make_key, client_for):
    _, admin_raw = make_key(acme, "admin")
    client = client_for(admin_raw)
    _refused(client.get("/api/v1/keys?kind=agent"), "kind")
    _refused(client.get("/api/v1/keys?cursor=not%20a%20cursor"), "cursor")
    assert client.get("/api/v1/keys").status_code == 200


def test_a_key_is_named_only_by_its_id(acme, make_key, client_for):
    key, admin_raw = make_key(acme, "admin")
    client = client_for(admin_raw)
    assert client.get(f"/api/v1/keys/{key.public_id}").status_code == 200
    response = client.get(f"/api/v1/keys/{key.prefix}")
    assert response.status_code == 404
    assert error_of(response)["code"] == "KEY_NOT_FOUND"
