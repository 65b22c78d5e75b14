"""Cursor-paged lists answer a cursor they cannot read with 400 INVALID_REQUEST, like the
key-value pages, not with DRF's 404: the list exists, the request is wrong."""

from __future__ import annotations

import pytest

from tests.conftest import error_of

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
