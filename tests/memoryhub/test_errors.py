"""Every error class answers {"error": {"code", "message", "details"}} with a stable code."""

from __future__ import annotations

import pytest
from django.core.exceptions import RequestDataTooBig
from django.db import IntegrityError, OperationalError
from rest_framework.test import APIRequestFactory

from memoryhub.api.errors import ApiError, api_exception_handler, translate
from tests.conftest import error_of


def test_unknown_routes_under_the_api_are_404(db, client):
    for path in ["/api/v1/nope", "/api/v1/", "/api/v1/keys/a/b/c"]:
        response = client.get(path)
        assert response.status_code == 404, path
        assert error_of(response)["code"] == "NOT_FOUND"


def test_a_wrong_method_is_405(acme, make_key, client_for):
    _, raw = make_key(acme)
    response = client_for(raw).delete("/api/v1/whoami")
    assert response.status_code == 405
    assert error_of(response)["code"] == "METHOD_NOT_ALLOWED"


def test_malformed_json_is_400_invalid_json(acme, make_key, client_for):
    _, raw = make_key(acme, "admin")
    response = client_for(raw).generic("PATCH", "/api/v1/tenant", b'{"name": ', content_type="application/json")
    assert response.status_code == 400
    assert error_of(response)["code"] == "INVALID_JSON"


def test_a_non_json_body_is_415(acme, make_key, client_for):
    _, raw = make_key(acme, "admin")
    response = client_for(raw).generic("PATCH", "/api/v1/tenant", b"name=x", content_type="text/plain")
    assert response.status_code == 415
    assert error_of(response)["code"] == "UNSUPPORTED_MEDIA_TYPE"


def test_validation_errors_are_400_with_paths(acme, make_key, client_for):
    _, raw = make_key(acme, "admin")
    response = client_for(raw).post("/api/v1/keys", {"kind": "agent", "agents": ["ok", "NOT OK"]}, format="json")
    error = error_of(response)
    assert response.status_code == 400 and error["code"] == "INVALID_REQUEST"
    assert error["details"]["errors"][0]["path"] == "agents[1]"


def test_a_body_over_the_limit_is_413(acme, make_key, client_for, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    _, raw = make_key(acme, "admin")
    response = client_for(raw).patch("/api/v1/tenant", {"name": "x" * 500}, format="json")
    assert response.status_code == 413
    assert error_of(response)["code"] == "LIMIT_EXCEEDED"
    acme.refresh_from_db()
    assert acme.name == "Acme Corp"


def test_unauthenticated_forbidden_and_throttled_answers_share_the_envelope(acme, make_key, client_for,
                                                                             throttle_clock):
    acme.api_rate_per_minute = 1
    acme.save()
    _, agent_raw = make_key(acme, "agent")
    assert error_of(client_for(None).get("/api/v1/whoami"))["code"] == "UNAUTHENTICATED"
    assert error_of(client_for(agent_raw).get("/api/v1/keys"))["code"] == "PERMISSION_DENIED"
    client_for(agent_raw).get("/api/v1/whoami")
    assert error_of(client_for(agent_raw).get("/api/v1/whoami"))["code"] == "THROTTLED"


@pytest.mark.parametrize(
    ("exc", "status", "code"),
    [
        (ApiError("custom", code="KEY_INVALID", status=400, details={"key": "x"}), 400, "KEY_INVALID"),
        (RequestDataTooBig("big"), 413, "LIMIT_EXCEEDED"),
        (OperationalError("server closed the connection"), 503, "SERVICE_UNAVAILABLE"),
        (IntegrityError("duplicate key"), 500, "INTERNAL"),
        (ZeroDivisionError("boom"), 500, "INTERNAL"),
    ],
)
def test_the_handler_maps_server_side_failures(exc, status, code):
    got_status, body, _ = translate(exc, {})
    assert (got_status, body["error"]["code"]) == (status, code)
    # Never a stack trace or the raw exception text for unexpected failures.
    if status >= 500:
        assert "boom" not in body["error"]["message"] and "duplicate" not in body["error"]["message"]


def test_views_can_name_their_families_codes():
    class AtomLikeView:
        validation_error_code = "INVALID_INPUT"
        permission_denied_code = "ACCESS_DENIED"

    from rest_framework.exceptions import PermissionDenied, ValidationError

    request = APIRequestFactory().get("/")
    ctx = {"view": AtomLikeView(), "request": request}
    assert api_exception_handler(ValidationError({"a": ["bad"]}), ctx).data["error"]["code"] == "INVALID_INPUT"
    assert api_exception_handler(PermissionDenied(), ctx).data["error"]["code"] == "ACCESS_DENIED"


def test_unexpected_errors_in_api_middleware_keep_the_shape(rf):
    from memoryhub.api.middleware import ApiErrorMiddleware

    middleware = ApiErrorMiddleware(lambda request: None)
    response = middleware.process_exception(rf.get("/api/v1/whatever"), RuntimeError("secret detail"))
    assert response.status_code == 500
    assert b"secret detail" not in response.content
    assert b'"INTERNAL"' in response.content
    assert middleware.process_exception(rf.get("/t/acme/"), RuntimeError("x")) is None
