"""No store endpoint answers a malformed body with a 500 (Atom endpoints: tests/atoms).

Some bodies are valid for some endpoints (the key-value RPC ignores unknown fields, docs/kv.md
"Strict resources, lenient RPC"); the rule checked is: never a server error, and every error in the one shape."""

from __future__ import annotations

import pytest

from tests.conftest import error_of

POSTS = ["/api/v1/agents/bot/memory", "/api/v1/agents/bot/runs", "/api/v1/memory/memory", "/api/v1/sessions",
         "/api/v1/pending/approve-all", "/api/v1/pending/1/approve", "/api/v1/memory/user/undo", "/api/v1/keys",
         "/api/v1/agents"]
BODIES = [b"[]", b"null", b'"x"', b"{", b'{"action": []}', b'{"operations": {}}', b'{"kind": 5}',
          b'{"chat_id": 7}', b'{"version": "x"}', b'{"target": []}', b'{"mode": 1, "lax": "no"}', b"\xff"]


@pytest.mark.parametrize("path", POSTS)
def test_malformed_bodies_get_a_client_error(acme, make_key, client_for, path):
    client = client_for(make_key(acme, "admin")[1])
    for body in BODIES:
        response = client.generic("POST", path, body, content_type="application/json")
        assert response.status_code < 500, (path, body, response.content[:300])
        if response.status_code >= 400:
            error_of(response)


@pytest.mark.parametrize("path", ["/api/v1/agents/bot/runs", "/api/v1/sessions", "/api/v1/pending/approve-all"])
@pytest.mark.parametrize("body", [b"[]", b"null", b'"x"'])
def test_optional_bodies_must_still_be_objects(acme, make_key, client_for, path, body):
    client = client_for(make_key(acme, "admin")[1])
    response = client.generic("POST", path, body, content_type="application/json")
    assert response.status_code == 400 and error_of(response)["code"] == "INVALID_REQUEST"


def test_a_non_string_kv_action_is_unknown_not_a_crash(acme, make_key, client_for):
    client = client_for(make_key(acme, "agent")[1])
    response = client.post("/api/v1/agents/bot/memory", {"action": []}, format="json")
    assert response.status_code == 400 and error_of(response)["code"] == "UNKNOWN_ACTION"
