from __future__ import annotations

from django.contrib.auth.models import User


def test_anonymous_visitors_are_sent_to_login(db, client):
    response = client.get("/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_a_user_without_tenants_is_told_so(db, client):
    client.force_login(User.objects.create_user("nobody", password="x"))
    response = client.get("/")
    assert response.status_code == 200
    assert b"No tenant yet" in response.content


def test_it_goes_to_the_first_tenant_then_remembers_the_last_one(erin, client):
    client.force_login(erin)
    assert client.get("/")["Location"] == "/t/acme/"
    client.get("/t/globex/")
    assert client.get("/")["Location"] == "/t/globex/"
