"""Every JSON body goes through the API's strict parser (memoryhub/api/parsers.py): depth,
repeated keys, U+0000 and lone surrogates are refused with stable codes, before anything
is stored; API families keep their own parse error code (Atoms: INVALID_INPUT)."""

from __future__ import annotations

import json

import pytest

from memoryhub.api.strict_json import MAX_DEPTH
from tenants.models import Tenant
from tests.conftest import error_of
from tests.security.world import state_of

DEEP = b'{"content": ' + b"[" * 1000 + b"]" * 1000 + b"}"


def post(client, path: str, body: bytes, method: str = "POST"):
    return client.generic(method, path, body, content_type="application/json")


@pytest.fixture
def admin(acme, make_key, client_for):
    client = client_for(make_key(acme, "admin")[1])
    # A first request stamps the key's last_used_at, and the first look at the memory files
    # creates the tenant's (empty) volume row: neither may count as a change below.
    assert client.get("/api/v1/memory").status_code == 200
    return client


@pytest.mark.parametrize(("method", "path"), [
    ("POST", "/api/v1/memory/memory"), ("POST", "/api/v1/tools/memory"), ("POST", "/api/v1/sessions"),
    ("POST", "/api/v1/pending/approve-all"), ("PATCH", "/api/v1/tenant"), ("POST", "/api/v1/keys"),
    ("POST", "/api/v1/agents/bot/memory"), ("PUT", "/api/v1/agents/bot/namespaces/ns/keys/k"),
])
def test_json_nested_a_thousand_deep_is_invalid_json(admin, method, path):
    response = post(admin, path, DEEP, method)
    assert response.status_code == 400, response.content[:300]
    assert error_of(response)["code"] == "INVALID_JSON"


def test_the_atom_api_answers_deep_json_with_its_own_parse_code(admin):
    response = post(admin, "/api/v1/atoms/search", b'{"query": "x", "options": ' + b"[" * 500 + b"]" * 500 + b"}")
    assert response.status_code == 400 and error_of(response)["code"] == "INVALID_INPUT"


def test_a_body_exactly_at_the_depth_limit_is_parsed(admin):
    value = b"[" * (MAX_DEPTH - 1) + b"]" * (MAX_DEPTH - 1)
    response = post(admin, "/api/v1/agents/bot/namespaces/ns/keys/deep", b'{"value": ' + value + b"}", "PUT")
    assert response.status_code == 201, response.content[:300]
    over = b'{"value": [' + value + b"]}"
    response = post(admin, "/api/v1/agents/bot/namespaces/ns/keys/deeper", over, "PUT")
    assert response.status_code == 400 and error_of(response)["code"] == "INVALID_JSON"


@pytest.mark.parametrize(("path", "body"), [
    ("/api/v1/memory/memory", b'{"action": "add", "content": "one", "content": "two"}'),
    ("/api/v1/keys", b'{"kind": "agent", "kind": "admin"}'),
    ("/api/v1/agents/bot/memory", b'{"action": "set", "key": "k", "value": {"a": 1, "a": 2}}'),
])
def test_a_repeated_key_is_invalid_json_and_nothing_is_stored(acme: Tenant, admin, path, body):
    before = state_of(acme)
    response = post(admin, path, body)
    assert response.status_code == 400 and error_of(response)["code"] == "INVALID_JSON"
    assert state_of(acme) == before


@pytest.mark.parametrize("text", ["a\u0000b", "\ud800"])
@pytest.mark.parametrize(("path", "template"), [
    ("/api/v1/memory/memory", {"action": "add", "content": "{}"}),
    ("/api/v1/tools/memory", {"action": "add", "content": "{}"}),
    ("/api/v1/sessions", {"chat_id": "{}"}),
    ("/api/v1/keys", {"kind": "agent", "name": "{}"}),
    ("/api/v1/tenant", {"name": "{}"}),
])
def test_u0000_and_lone_surrogates_in_a_value_are_invalid_character(acme: Tenant, admin, path, template, text):
    before = state_of(acme)
    body = json.dumps({name: value.replace("{}", text) for name, value in template.items()})
    response = post(admin, path, body.encode(), "PATCH" if path.endswith("tenant") else "POST")
    assert response.status_code == 400, response.content[:300]
    error = error_of(response)
    assert error["code"] == "INVALID_CHARACTER" and error["details"] == {"location": "body"}
    assert state_of(acme) == before


def test_u0000_in_an_object_key_is_invalid_character(admin):
    response = post(admin, "/api/v1/keys", b'{"kind": "agent", "x\\u0000": 1}')
    assert response.status_code == 400 and error_of(response)["code"] == "INVALID_CHARACTER"


def test_the_atom_api_refuses_u0000_in_atom_text_as_invalid_character(admin):
    body = {"changes": [{"id": "a", "op": "create", "content": {"text": "x\u0000y", "links": []}, "sources": []}]}
    response = post(admin, "/api/v1/atoms/write", json.dumps(body).encode())
    assert response.status_code == 400 and error_of(response)["code"] == "INVALID_CHARACTER"


def test_a_key_value_value_may_still_hold_u0000(acme, make_key, client_for):
    client = client_for(make_key(acme, "agent")[1])
    body = {"action": "set", "key": "k", "value": {"text\u0000": "a\u0000b"}}
    assert post(client, "/api/v1/agents/bot/memory", json.dumps(body).encode()).status_code == 200
    got = post(client, "/api/v1/agents/bot/memory", b'{"action": "get", "key": "k"}')
    assert got.json()["result"] == {"text\u0000": "a\u0000b"}
    put = post(client, "/api/v1/agents/bot/namespaces/ns/keys/k", b'{"value": "x\\u0000"}', "PUT")
    assert put.status_code == 201 and put.json()["value"] == "x\u0000"


def test_a_key_value_key_with_u0000_keeps_its_own_code(acme, make_key, client_for):
    client = client_for(make_key(acme, "agent")[1])
    response = post(client, "/api/v1/agents/bot/memory", b'{"action": "get", "key": "a\\u0000"}')
    assert response.status_code == 400 and error_of(response)["code"] == "KEY_INVALID"


def test_a_key_value_list_prefix_with_u0000_is_invalid_character(acme, make_key, client_for):
    client = client_for(make_key(acme, "agent")[1])
    response = post(client, "/api/v1/agents/bot/memory", b'{"action": "list", "prefix": "a\\u0000"}')
    assert response.status_code == 400 and error_of(response)["code"] == "INVALID_CHARACTER"


def test_a_lone_surrogate_in_a_key_value_body_stays_invalid_json(acme, make_key, client_for):
    client = client_for(make_key(acme, "agent")[1])
    for body in [b'{"action": "set", "key": "k", "value": "\\ud800"}', b'{"action": "list", "prefix": "\\udc00"}']:
        response = post(client, "/api/v1/agents/bot/memory", body)
        assert response.status_code == 400 and error_of(response)["code"] == "INVALID_JSON"
