from __future__ import annotations

import pytest

from memoryhub.actors import Actor
from memoryhub.audit import audit_record


@pytest.mark.parametrize("who", ["alice", "bob", "carol"])
def test_every_role_sees_the_dashboard(request, client, who):
    user = request.getfixturevalue(who)
    client.force_login(user)
    response = client.get("/t/acme/")
    assert response.status_code == 200
    assert b"Acme Corp" in response.content
    assert f"you are {user.memberships.get().role}".encode() in response.content


def test_another_tenants_dashboard_is_404(dave, acme, client):
    client.force_login(dave)
    assert client.get("/t/acme/").status_code == 404
    assert client.get("/t/does-not-exist/").status_code == 404


def test_anonymous_visitors_are_sent_to_login(acme, client):
    response = client.get("/t/acme/")
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_it_shows_recent_activity_of_this_tenant_only(alice, dave, acme, globex, client):
    audit_record(tenant=acme, actor=Actor.system("tests"), action="acme.thing", object_type="o", object_id="1")
    audit_record(tenant=globex, actor=Actor.system("tests"), action="globex.thing", object_type="o", object_id="2")
    client.force_login(alice)
    content = client.get("/t/acme/").content
    assert b"acme.thing" in content and b"globex.thing" not in content


def test_an_htmx_request_gets_only_the_health_partial(alice, client):
    client.force_login(alice)
    response = client.get("/t/acme/", headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert b'id="health"' in response.content
    assert b"<html" not in response.content and b"Recent activity" not in response.content


def test_the_page_carries_csrf_in_hx_headers_and_local_htmx(alice, client):
    client.force_login(alice)
    content = client.get("/t/acme/").content.decode()
    assert 'hx-headers=\'{"X-CSRFToken": "' in content
    assert "/static/vendor/htmx.min.js" in content


def test_the_switcher_lists_only_the_users_tenants(erin, dave, client):
    client.force_login(erin)
    content = client.get("/t/acme/").content.decode()
    assert 'href="/t/acme/"' in content and 'href="/t/globex/"' in content
    client.force_login(dave)
    content = client.get("/t/globex/").content.decode()
    assert 'href="/t/acme/"' not in content
