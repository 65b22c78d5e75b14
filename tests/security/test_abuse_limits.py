"""Abuse limits of the API: the body cap on every endpoint, per-key throttles, and
revocation taking effect on the next request."""

from __future__ import annotations

import pytest

from tenants import throttling
from tests.conftest import THROTTLE_WINDOW_START, error_of
from tests.security.probe import SAFE
from tests.security.routes import all_routes
from tests.security.test_isolation_matrix import API_ROUTES

# Every test here that counts requests does so within one window of a stopped clock.
pytestmark = pytest.mark.usefixtures("throttle_clock")

ROUTES = {route.template: route for route in all_routes()}
LIMIT = 1024


def _endpoints() -> list[tuple[str, str]]:
    """(template, method) for every API route and every method that takes a body."""
    found = []
    for template in API_ROUTES:
        route = ROUTES[template]
        methods = ["POST"] if route.view_class is None else [m for m in route.api_methods() if m not in SAFE]
        found.extend((template, method) for method in methods)
    return found


def _path(template: str) -> str:
    return ROUTES[template].path({p: "x" for p in ROUTES[template].params})


@pytest.mark.parametrize(("template", "method"), _endpoints())
def test_every_api_endpoint_answers_an_oversized_body_with_413(template, method, acme, make_key, client_for, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = LIMIT
    _, raw = make_key(acme, "admin")
    body = '{"pad": "' + "x" * LIMIT + '"}'
    for client in (client_for(raw), client_for(None)):  # before authentication too
        response = client.generic(method, _path(template), body, content_type="application/json")
        assert response.status_code == 413, response.content
        error = error_of(response)
        assert error["code"] == "LIMIT_EXCEEDED"
        assert error["details"] == {"limit": "body_bytes", "max": LIMIT, "actual": len(body)}


def test_a_body_at_the_limit_goes_through(acme, make_key, client_for, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = LIMIT
    _, raw = make_key(acme, "admin")
    frame = '{"name": "ok", "pad": ""}'
    body = frame[:-2] + "x" * (LIMIT - len(frame)) + '"}'
    assert len(body) == LIMIT
    response = client_for(raw).generic("PATCH", "/api/v1/tenant", body, content_type="application/json")
    assert response.status_code == 400 and error_of(response)["code"] == "INVALID_REQUEST"  # parsed, not capped


def test_the_api_cap_leaves_the_ui_to_django(alice, client, settings):
    # Form posts are capped by Django itself (RequestDataTooBig → 400), not by the API middleware.
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = LIMIT
    client.force_login(alice)
    response = client.post("/t/acme/memory/memory/add", {"content": "x" * (2 * LIMIT), "version": "0"})
    assert response.status_code == 400


# --- Per-key throttles ------------------------------------------------------------------------

STORE_CALLS = [
    ("get", "/api/v1/whoami", None),
    ("post", "/api/v1/agents/bot/memory", {"action": "list"}),
    ("get", "/api/v1/memory", None),
    ("post", "/api/v1/atoms/search", {"query": "anything"}),
]


def test_one_counter_per_key_spans_every_store(acme, make_key, client_for):
    acme.api_rate_per_minute = len(STORE_CALLS)
    acme.save()
    _, raw = make_key(acme, "host")
    client = client_for(raw)
    for method, path, body in STORE_CALLS:
        assert getattr(client, method)(path, body, format="json").status_code == 200, path
    for method, path, body in STORE_CALLS:
        response = getattr(client, method)(path, body, format="json")
        assert response.status_code == 429, path
        assert error_of(response)["code"] == "THROTTLED" and int(response["Retry-After"]) >= 1


def test_one_tenants_busy_key_does_not_throttle_another_tenant(acme, globex, make_key, client_for):
    acme.api_rate_per_minute = 1
    acme.save()
    _, a_raw = make_key(acme)
    _, b_raw = make_key(globex)
    assert client_for(a_raw).get("/api/v1/whoami").status_code == 200
    assert client_for(a_raw).get("/api/v1/whoami").status_code == 429
    assert client_for(b_raw).get("/api/v1/whoami").status_code == 200


def test_the_count_starts_again_in_the_next_window(acme, make_key, client_for, throttle_clock):
    acme.api_rate_per_minute = 1
    acme.save()
    _, raw = make_key(acme)
    client = client_for(raw)
    now = throttle_clock
    now[0] = THROTTLE_WINDOW_START
    assert client.get("/api/v1/whoami").status_code == 200
    now[0] += 59
    response = client.get("/api/v1/whoami")
    assert response.status_code == 429 and response["Retry-After"] == "1"
    now[0] += 1
    assert client.get("/api/v1/whoami").status_code == 200


def test_rejected_requests_count_and_unauthenticated_ones_do_not(acme, make_key, client_for):
    acme.api_rate_per_minute = 2
    acme.save()
    _, raw = make_key(acme)
    for _ in range(5):
        assert client_for("mh_aaaaaaaaaa_" + "b" * 40).get("/api/v1/whoami").status_code == 401
    client = client_for(raw)
    assert [client.get("/api/v1/whoami").status_code for _ in range(4)] == [200, 200, 429, 429]


def test_a_cache_outage_lets_requests_through(acme, make_key, client_for, monkeypatch):
    acme.api_rate_per_minute = 1
    acme.save()
    _, raw = make_key(acme)

    def down(*args, **kwargs):
        raise ConnectionError("cache down")

    monkeypatch.setattr(throttling.cache, "incr", down)
    client = client_for(raw)
    assert [client.get("/api/v1/whoami").status_code for _ in range(3)] == [200, 200, 200]


# --- Revocation -----------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["agent", "ingest", "host", "reviewer", "admin"])
def test_a_revoked_key_is_refused_on_its_next_request(kind, acme, make_key, client_for):
    key, raw = make_key(acme, kind)
    _, admin_raw = make_key(acme, "admin")
    client = client_for(raw)
    calls = [("get", "/api/v1/whoami", None), ("get", "/api/v1/memory", None),
             ("post", "/api/v1/atoms/search", {"query": "x"}), ("post", "/api/v1/agents/bot/memory", {"action": "list"})]
    assert client.get("/api/v1/whoami").status_code == 200
    assert client_for(admin_raw).delete(f"/api/v1/keys/{key.public_id}").status_code == 200
    for method, path, body in calls:
        response = getattr(client, method)(path, body, format="json")
        assert response.status_code == 401, path
        error = error_of(response)
        assert error["code"] == "UNAUTHENTICATED" and "revoked" in error["message"]


def test_a_key_revoked_in_the_ui_is_refused_at_once(alice, acme, make_key, client, client_for):
    key, raw = make_key(acme, "agent")
    api = client_for(raw)
    assert api.get("/api/v1/whoami").status_code == 200
    client.force_login(alice)
    revoked = client.post(f"/t/acme/keys/{key.public_id}/revoke")  # a plain form post: back to the list
    assert (revoked.status_code, revoked["Location"]) == (302, "/t/acme/keys/")
    assert api.get("/api/v1/whoami").status_code == 401
