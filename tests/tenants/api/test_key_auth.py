"""Key authentication: valid, malformed, unknown, revoked, wrong tenant."""

from __future__ import annotations

import pytest

from tenants.models import ApiKey
from tenants.services.keys import apikey_revoke
from tests.conftest import TEST_ACTOR, error_of


def _assert_401(response) -> None:
    assert response.status_code == 401
    assert error_of(response)["code"] == "UNAUTHENTICATED"


def test_a_valid_key_authenticates_and_records_last_use(acme, make_key, client_for):
    key, raw = make_key(acme)
    assert key.last_used_at is None
    assert client_for(raw).get("/api/v1/whoami").status_code == 200
    key.refresh_from_db()
    assert key.last_used_at is not None


def test_only_a_hash_of_the_key_is_stored(acme, make_key):
    key, raw = make_key(acme)
    secret = raw.split("_")[2]
    stored = ApiKey.objects.filter(pk=key.pk).values()[0]
    assert not any(secret in str(value) for value in stored.values())
    assert raw.startswith(f"mh_{key.prefix}_")


@pytest.mark.parametrize(
    "header",
    [
        "Bearer",
        "Bearer ",
        "Basic dXNlcjpwYXNz",
        "Token mh_abcdefghij_" + "a" * 40,
        "Bearer mh_short_secret",
        "Bearer mh_ABCDEFGHIJ_" + "a" * 40,
        "Bearer mh_abcdefghij_" + "a" * 39 + "!",
        "Bearer not-a-key",
    ],
)
def test_it_rejects_malformed_keys(db, client, header):
    response = client.get("/api/v1/whoami", HTTP_AUTHORIZATION=header)
    _assert_401(response)


def test_it_rejects_an_unknown_key(acme, make_key, client_for):
    _key, raw = make_key(acme)
    tampered = raw[:-1] + ("A" if raw[-1] != "A" else "B")
    _assert_401(client_for(tampered).get("/api/v1/whoami"))
    _assert_401(client_for("mh_zzzzzzzzzz_" + "a" * 40).get("/api/v1/whoami"))


def test_it_rejects_a_revoked_key_at_once(acme, make_key, client_for):
    key, raw = make_key(acme)
    client = client_for(raw)
    assert client.get("/api/v1/whoami").status_code == 200
    apikey_revoke(key=key, actor=TEST_ACTOR)
    response = client.get("/api/v1/whoami")
    _assert_401(response)
    assert "revoked" in error_of(response)["message"]


def test_revoking_bumps_the_generation(acme, make_key):
    key, _ = make_key(acme)
    revoked = apikey_revoke(key=key, actor=TEST_ACTOR)
    assert revoked.generation == key.generation + 1
    again = apikey_revoke(key=revoked, actor=TEST_ACTOR)
    assert again.generation == revoked.generation


def test_a_key_never_authenticates_for_another_tenant(acme, globex, make_key, client_for):
    key_a, raw_a = make_key(acme, "admin")
    key_b, _ = make_key(globex, "admin")
    # The key authenticates as its own tenant only; naming B's objects is a 404.
    response = client_for(raw_a).get(f"/api/v1/keys/{key_b.public_id}")
    assert response.status_code == 404
    assert client_for(raw_a).get(f"/api/v1/keys/{key_a.public_id}").status_code == 200
