"""Every answer the app gives under /api/v1/ is in the error shape, also where Django or a
page view (schema, Swagger UI, ReDoc) answers instead of an API view; pages outside the
API keep Django's HTML."""

from __future__ import annotations

import json
from unittest.mock import ANY

import pytest
from django.test import RequestFactory

from memoryhub.api.views import bad_request, page_not_found, permission_denied, server_error
from tests.conftest import error_of


@pytest.mark.parametrize("path", ["/api/v1/whoami%0A", "/api/v1/%0A", "/api/v1/keys%0A/x", "/api/v1/atoms/%0Awrite"])
def test_a_path_with_a_newline_is_a_json_404(acme, make_key, client_for, path):
    response = client_for(make_key(acme, "agent")[1]).get(path)
    assert response.status_code == 404 and response["Content-Type"] == "application/json"
    assert error_of(response)["code"] == "NOT_FOUND"


@pytest.mark.parametrize("path", ["/api/v1/schema/", "/api/v1/docs/", "/api/v1/redoc/"])
@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_the_documentation_pages_answer_other_methods_with_a_json_405(client, path, method):
    response = client.generic(method, path)
    assert response.status_code == 405 and response["Content-Type"] == "application/json"
    assert error_of(response)["code"] == "METHOD_NOT_ALLOWED"


def test_the_documentation_pages_still_serve_their_own_formats(client):
    assert client.get("/api/v1/schema/")["Content-Type"].startswith("application/vnd.oai.openapi")
    assert client.get("/api/v1/docs/")["Content-Type"].startswith("text/html")


def test_a_host_django_refuses_gets_a_json_400_under_the_api(client):
    response = client.get("/api/v1/whoami", headers={"host": "evil.example"})
    assert response.status_code == 400 and error_of(response)["code"] == "INVALID_REQUEST"
    assert client.get("/login/", headers={"host": "evil.example"})["Content-Type"].startswith("text/html")


def test_pages_outside_the_api_keep_django_s_404(client):
    response = client.get("/no-such-page%0A")
    assert response.status_code == 404 and response["Content-Type"].startswith("text/html")


@pytest.mark.parametrize(("handler", "status", "code"), [
    (lambda r: bad_request(r, Exception()), 400, "INVALID_REQUEST"),
    (lambda r: permission_denied(r, Exception()), 403, "PERMISSION_DENIED"),
    (lambda r: page_not_found(r, Exception()), 404, "NOT_FOUND"),
    (server_error, 500, "INTERNAL"),
])
def test_django_s_error_handlers_answer_the_error_shape_under_the_api(handler, status, code):
    response = handler(RequestFactory().get("/api/v1/anything"))
    assert response.status_code == status and response["Content-Type"] == "application/json"
    assert json.loads(response.content) == {"error": {"code": code, "message": ANY, "details": {}}}
    outside = handler(RequestFactory().get("/settings"))
    assert outside.status_code == status and outside["Content-Type"].startswith("text/html")
