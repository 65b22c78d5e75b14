"""API paths and query strings must be UTF-8 text without U+0000 (memoryhub/api/url_input.py):
anything else is 400 INVALID_CHARACTER before routing, authentication or the database."""

from __future__ import annotations

import pytest
from django.http import HttpResponse
from django.test import RequestFactory

from memoryhub.api.url_input import UrlInputMiddleware, bad_path, bad_query
from tests.conftest import error_of
from tests.security.world import state_of


@pytest.fixture
def admin(acme, make_key, client_for):
    client = client_for(make_key(acme, "admin")[1])
    assert client.get("/api/v1/memory").status_code == 200  # stamps last_used_at, creates the volume
    return client


def refused_as(response, location: str) -> None:
    assert response.status_code == 400, response.content[:300]
    error = error_of(response)
    assert error["code"] == "INVALID_CHARACTER" and error["details"] == {"location": location}


@pytest.mark.parametrize("path", [
    "/api/v1/keys/k_%00", "/api/v1/sessions/%00", "/api/v1/pending/1%00/approve", "/api/v1/memory/%00",
    "/api/v1/agents/bot/namespaces/ns/keys/a%00b", "/api/v1/agents/bot%00", "/api/v1/agents/bot/runs/%00",
    "/api/v1/no-such-route%00",
])
def test_u0000_in_a_path_is_invalid_character(acme, admin, path):
    before = state_of(acme)
    refused_as(admin.get(path), "path")
    refused_as(admin.generic("DELETE", path), "path")
    assert state_of(acme) == before


@pytest.mark.parametrize("query", [
    "action=%00", "action=a%00", "%00=x", "cursor=%00", "prefix=%00", "key=%00", "x=%ED%A0%80", "%ED%A0%80",
    "action=%FF", "a=1&b=%00",
])
@pytest.mark.parametrize("path", ["/api/v1/audit", "/api/v1/keys", "/api/v1/pending",
                                  "/api/v1/agents/bot/namespaces/ns/keys", "/api/v1/agents/bot/namespaces/ns/key"])
def test_u0000_or_bytes_that_are_not_utf8_in_a_query_are_invalid_character(acme, admin, path, query):
    before = state_of(acme)
    refused_as(admin.get(f"{path}?{query}"), "query")
    assert state_of(acme) == before


def test_a_refusal_needs_no_key(client_for):
    refused_as(client_for(None).get("/api/v1/audit?action=%00"), "query")


def test_ordinary_text_passes(admin):
    assert admin.get("/api/v1/audit?action=apikey.create").status_code == 200
    response = admin.get("/api/v1/agents/bot/namespaces/ns/key?key=%C3%A9%E2%80%A8+tab%09")
    assert error_of(response)["code"] == "KEY_NOT_FOUND"


def test_pages_outside_the_api_are_left_alone(client):
    assert client.get("/login/?next=%00").status_code != 400


def test_a_non_ascii_path_passes(acme, admin):
    """é is two UTF-8 bytes, each in U+0080-U+00FF: text, not bytes to refuse."""
    response = admin.get("/api/v1/agents/bot/namespaces/ns/keys/caf%C3%A9")
    assert error_of(response)["code"] != "INVALID_CHARACTER"
    assert admin.get("/api/v1/agents/bot/namespaces/ns/keys/%E2%80%A8x").status_code != 400


@pytest.mark.parametrize("raw", ["/api/v1/keys/k_%ED%A0%80", "/api/v1/keys/k_%FF?x=1",
                                 "http://testserver/api/v1/keys/k_%C0%80"])
def test_bytes_that_are_not_utf8_in_the_raw_request_line_are_refused(acme, admin, raw):
    """What gunicorn keeps of the request line (RAW_URI); Django's own path has lost the bytes."""
    before = state_of(acme)
    refused_as(admin.get("/api/v1/keys/k_x", RAW_URI=raw), "path")
    refused_as(admin.get("/api/v1/keys/k_x", REQUEST_URI=raw), "path")
    assert state_of(acme) == before


def test_a_utf8_raw_request_line_passes(admin):
    response = admin.get("/api/v1/agents/bot/namespaces/ns/keys/caf%C3%A9",
                         RAW_URI="/api/v1/agents/bot/namespaces/ns/keys/caf%C3%A9")
    assert error_of(response)["code"] != "INVALID_CHARACTER"


# What a WSGI server passes (PEP 3333: raw bytes decoded as ISO-8859-1) for the query string,
# which Django leaves as it came; the middleware is called directly.

def run(environ_path: str, query: str = "") -> HttpResponse:
    request = RequestFactory().get("/api/v1/keys")
    request.META["PATH_INFO"], request.META["QUERY_STRING"] = environ_path, query
    return UrlInputMiddleware(lambda _: HttpResponse("reached the view"))(request)


def test_raw_bytes_in_a_query_are_judged_as_bytes() -> None:
    assert run("/api/v1/keys", b"a=\xed\xa0\x80".decode("iso-8859-1")).status_code == 400
    assert run("/api/v1/keys", b"a=caf\xc3\xa9".decode("iso-8859-1")).content == b"reached the view"


@pytest.mark.parametrize(("text", "bad"), [("/api/v1/x", False), ("/api/v1/\x00", True), ("/api/v1/\x0a", False),
                                           ("/api/v1/\xed\xa0\x80", True), ("/api/v1/\xc3\xa9", False)])
def test_bad_path(text: str, bad: bool) -> None:
    assert bad_path(text) is bad


@pytest.mark.parametrize(("query", "bad"), [("", False), ("a=b&c", False), ("a=%00", True), ("%00", True),
                                            ("a=%ED%A0%80", True), ("a=%C3%A9", False), ("a=%", False),
                                            ("a=%zz", False), ("a=+%2B", False), ("a=b;c=%00", True)])
def test_bad_query(query: str, bad: bool) -> None:
    assert bad_query(query) is bad
