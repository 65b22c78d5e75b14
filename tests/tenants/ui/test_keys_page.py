from __future__ import annotations

import re

import pytest

from tenants.models import ApiKey


@pytest.mark.parametrize("who", ["bob", "carol"])
def test_reviewers_and_viewers_may_not_manage_keys(request, acme, make_key, client, who):
    key, _ = make_key(acme)
    client.force_login(request.getfixturevalue(who))
    assert client.get("/t/acme/keys/").status_code == 403
    assert client.post("/t/acme/keys/", {"kind": "agent"}).status_code == 403
    assert client.post(f"/t/acme/keys/{key.public_id}/revoke").status_code == 403
    key.refresh_from_db()
    assert key.revoked_at is None
    assert ApiKey.objects.count() == 1


def test_the_nav_shows_keys_to_admins_only(alice, bob, client):
    client.force_login(alice)
    assert b'href="/t/acme/keys/"' in client.get("/t/acme/").content
    client.force_login(bob)
    assert b'href="/t/acme/keys/"' not in client.get("/t/acme/").content


def test_an_admin_creates_a_key_and_sees_it_once(alice, client, client_for):
    client.force_login(alice)
    response = client.post("/t/acme/keys/", {"kind": "agent", "name": "bot", "agents": "support, triage"})
    assert response.status_code == 200
    raw = re.search(rb"mh_[a-z0-9]{10}_[A-Za-z0-9]{40}", response.content).group().decode()
    whoami = client_for(raw).get("/api/v1/whoami").json()
    assert whoami["key"]["agents"] == ["support", "triage"]
    assert raw.encode() not in client.get("/t/acme/keys/").content
    key = ApiKey.objects.get()
    assert key.created_by == alice


def test_an_htmx_create_answers_with_the_partial(alice, client):
    client.force_login(alice)
    response = client.post("/t/acme/keys/", {"kind": "ingest"}, headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert b'id="key-panel"' in response.content and b"<html" not in response.content


def test_the_read_only_box_makes_a_read_only_key(alice, client):
    client.force_login(alice)
    client.post("/t/acme/keys/", {"kind": "ingest", "name": "reader", "read_only": "on"})
    client.post("/t/acme/keys/", {"kind": "ingest", "name": "writer"})
    assert dict(ApiKey.objects.values_list("name", "read_only")) == {"reader": True, "writer": False}


def test_a_bad_key_spec_re_renders_with_errors(alice, client):
    client.force_login(alice)
    response = client.post("/t/acme/keys/", {"kind": "agent", "agents": "Not Valid"}, headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert b"agents" in response.content and b'role="alert"' in response.content
    assert not ApiKey.objects.exists()


def test_an_admin_revokes_a_key(alice, acme, make_key, client, client_for):
    key, raw = make_key(acme)
    client.force_login(alice)
    response = client.post(f"/t/acme/keys/{key.public_id}/revoke", headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert client_for(raw).get("/api/v1/whoami").status_code == 401
    plain = client.post(f"/t/acme/keys/{key.public_id}/revoke")
    assert plain.status_code == 302 and plain["Location"] == "/t/acme/keys/"


def test_an_admin_cannot_revoke_another_tenants_key(alice, globex, make_key, client):
    foreign, _ = make_key(globex)
    client.force_login(alice)
    assert client.post(f"/t/acme/keys/{foreign.public_id}/revoke").status_code == 404
    assert client.post(f"/t/globex/keys/{foreign.public_id}/revoke").status_code == 404
    foreign.refresh_from_db()
    assert foreign.revoked_at is None


def test_revoking_needs_post(alice, acme, make_key, client):
    key, _ = make_key(acme)
    client.force_login(alice)
    assert client.get(f"/t/acme/keys/{key.public_id}/revoke").status_code == 405


def test_an_invalid_agent_slug_is_named_next_to_its_field(alice, client):
    client.force_login(alice)
    response = client.post("/t/acme/keys/", {"kind": "agent", "name": "bot", "agents": "support, Not Valid"},
                           headers={"HX-Request": "true"})
    html = response.content.decode()
    error = re.search(r'<span class="error" id="agents-error" data-testid="agents-error">(.*?)</span>', html).group(1)
    assert error == "“Not Valid” is not a valid agent slug: Agent slugs are 1-64 characters of [a-z0-9-]."
    assert 'aria-invalid="true" aria-describedby="agents-error"' in html
    assert "agents: 0" not in html
    # What was typed stays in the form, the kind included.
    assert 'value="support, Not Valid"' in html and '<option value="agent" selected>' in html
    assert not ApiKey.objects.exists()


def test_each_bad_field_gets_its_own_message(alice, client):
    client.force_login(alice)
    html = client.post("/t/acme/keys/", {"kind": "robot", "read_policies": "ok, b@d, ok"}).content.decode()
    assert 'data-testid="kind-error">&quot;robot&quot; is not a valid choice.</span>' in html
    policies = re.search(r'data-testid="read_policies-error">(.*?)</span>', html).group(1)
    assert "“b@d” is not a valid policy name: Policy names match" in policies
    assert 'data-testid="agents-error"' not in html
