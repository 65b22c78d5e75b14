from __future__ import annotations

from tests.conftest import PASSWORD


def test_the_login_page_renders_with_labels(db, client):
    response = client.get("/login/")
    assert response.status_code == 200
    assert b'<label for="id_username">' in response.content
    assert b'<label for="id_password">' in response.content


def test_a_member_logs_in_and_lands_on_their_tenant(alice, client):
    response = client.post("/login/", {"username": "alice", "password": PASSWORD}, follow=True)
    assert response.redirect_chain[-1][0] == "/t/acme/"
    assert b"Acme Corp" in response.content


def test_a_wrong_password_is_refused(alice, client):
    response = client.post("/login/", {"username": "alice", "password": "nope"})
    assert response.status_code == 200
    assert b"didn't match" in response.content
    assert "_auth_user_id" not in client.session


def test_logout_needs_post_and_ends_the_session(alice, client):
    client.force_login(alice)
    response = client.post("/logout/")
    assert response.status_code == 302
    assert "_auth_user_id" not in client.session
