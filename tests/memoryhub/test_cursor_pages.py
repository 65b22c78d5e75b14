"""Cursor-paged lists answer a cursor they cannot read with 400 INVALID_REQUEST, like the
key-value pages, not with DRF's 404: the list exists, the request is wrong. Cursors are
signed and bound to the tenant and the list: another list's or tenant's cursor, or base64
that DRF would have read as "the first page", is refused too."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from tenants.services.keys import apikey_revoke
from tests.conftest import TEST_ACTOR, error_of

PAGED = ["/api/v1/keys", "/api/v1/audit", "/api/v1/agents/bot/runs", "/api/v1/memory/memory/history"]


@pytest.mark.parametrize("path", PAGED)
def test_it_refuses_a_cursor_it_cannot_read(acme, make_key, client_for, path):
    client = client_for(make_key(acme, "admin")[1])
    assert client.get(path).status_code == 200
    # Not base64; not a cursor; a well-formed cursor whose position fits no ordering field.
    for cursor in ["not-a-cursor", "õ", "cD1ub3QtYS10aW1l"]:
        response = client.get(path, {"cursor": cursor})
        assert response.status_code == 400, (path, cursor)
        assert error_of(response)["code"] == "INVALID_REQUEST"


def test_a_cursor_from_a_next_link_still_works(acme, make_key, client_for):
    client = client_for(make_key(acme, "admin")[1])
    for _ in range(51):  # one more than a page of keys
        make_key(acme, "agent")
    first = client.get("/api/v1/keys").json()
    assert len(first["results"]) == 50 and first["next"]
    second = client.get(first["next"])
    assert second.status_code == 200 and len(second.json()["results"]) == 2


def _cursor(next_link: str) -> str:
    return parse_qs(urlparse(next_link).query)["cursor"][0]


@pytest.fixture
def issued(acme, make_key, client_for):
    """Cursors the server issued for acme's key list and audit log (51 keys and 101 audit
    rows: more than a page of either)."""
    client = client_for(make_key(acme, "admin")[1])
    for _ in range(50):
        apikey_revoke(key=make_key(acme, "agent")[0], actor=TEST_ACTOR)
    return client, {path: _cursor(client.get(path).json()["next"]) for path in ("/api/v1/keys", "/api/v1/audit")}


def test_a_cursor_of_another_list_is_refused(issued):
    client, cursors = issued
    for path, other in [("/api/v1/keys", "/api/v1/audit"), ("/api/v1/audit", "/api/v1/keys")]:
        assert client.get(path, {"cursor": cursors[path]}).status_code == 200
        response = client.get(path, {"cursor": cursors[other]})
        assert response.status_code == 400 and error_of(response)["code"] == "INVALID_REQUEST", (path, response.content)


def test_a_cursor_of_another_tenant_is_refused(issued, globex, make_key, client_for):
    _, cursors = issued
    theirs = client_for(make_key(globex, "admin")[1])
    for path, cursor in cursors.items():
        response = theirs.get(path, {"cursor": cursor})
        assert response.status_code == 400 and error_of(response)["code"] == "INVALID_REQUEST", path


@pytest.mark.parametrize("path", PAGED)
@pytest.mark.parametrize("cursor", ["Zm9vYmFy", "cD0yMDI2LTExLTMwKzEwJTNBMDAlM0EwMA==", "bz01", "cj0x"])
def test_base64_that_is_no_cursor_of_ours_is_refused_not_read_as_the_first_page(acme, make_key, client_for, path,
                                                                                cursor):
    client = client_for(make_key(acme, "admin")[1])
    response = client.get(path, {"cursor": cursor})
    assert response.status_code == 400 and error_of(response)["code"] == "INVALID_REQUEST", response.content


def test_a_run_list_cursor_is_bound_to_its_agent(acme, make_key, client_for):
    client = client_for(make_key(acme, "agent")[1])
    for _ in range(51):
        assert client.post("/api/v1/agents/one/runs", {}, format="json").status_code == 201
    cursor = client.get("/api/v1/agents/one/runs").json()["next_cursor"]
    assert cursor and client.get("/api/v1/agents/one/runs", {"cursor": cursor}).status_code == 200
    client.post("/api/v1/agents/two/runs", {}, format="json")
    response = client.get("/api/v1/agents/two/runs", {"cursor": cursor})
    assert response.status_code == 400 and error_of(response)["code"] == "INVALID_REQUEST"
