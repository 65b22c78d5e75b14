"""Security headers on pages, API answers and errors; the Content-Security-Policy; the
production settings passing `manage.py check --deploy`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client

ROOT = Path(__file__).resolve().parents[2]


def csp_of(response) -> dict[str, list[str]]:
    policy = response["Content-Security-Policy"]
    return {part.split()[0]: part.split()[1:] for part in policy.split(";") if part.strip()}


def assert_common_headers(response) -> None:
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["X-Frame-Options"] == "DENY"
    assert response["Cross-Origin-Opener-Policy"] == "same-origin"
    policy = csp_of(response)
    assert policy["frame-ancestors"] == ["'none'"]
    assert policy["script-src"] == ["'self'"] and policy["style-src"] == ["'self'"]
    assert policy["default-src"] == ["'self'"] and policy["object-src"] == ["'none'"]
    assert policy["base-uri"] == ["'none'"] and policy["form-action"] == ["'self'"]


def test_pages_carry_the_security_headers(alice, client):
    client.force_login(alice)
    for path in ["/login/", "/t/acme/", "/t/acme/memory/", "/t/globex/"]:
        assert_common_headers(client.get(path))


def test_api_answers_and_errors_carry_them_too(acme, make_key, client_for):
    _, raw = make_key(acme)
    for response in [client_for(raw).get("/api/v1/whoami"), client_for(None).get("/api/v1/whoami"),
                     client_for(raw).get("/api/v1/nowhere")]:
        assert_common_headers(response)


def test_nothing_inline_is_allowed_outside_the_redoc_page(db, client):
    for path in ["/login/", "/api/v1/docs/"]:
        policy = client.get(path)["Content-Security-Policy"]
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy, path
    redoc = csp_of(client.get("/api/v1/redoc/"))
    assert redoc["style-src"] == ["'self'", "'unsafe-inline'"] and redoc["worker-src"] == ["blob:"]
    assert redoc["script-src"] == ["'self'"]


def test_the_swagger_page_loads_its_init_script_as_a_file(db, client):
    page = client.get("/api/v1/docs/").content.decode()
    assert "<script>" not in page and "<style>" not in page
    script = client.get("/api/v1/docs/?script=")
    assert script.status_code == 200 and "SwaggerUIBundle" in script.content.decode()


def test_hsts_is_sent_over_https_with_the_production_values(db, settings):
    settings.SECURE_HSTS_SECONDS = 31_536_000
    settings.SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    settings.SECURE_HSTS_PRELOAD = True
    response = Client().get("/login/", secure=True)
    assert response["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains; preload"
    assert "Strict-Transport-Security" not in Client().get("/login/")


@pytest.mark.parametrize("setting", ["SECURE_HSTS_SECONDS", "SECURE_SSL_REDIRECT", "SESSION_COOKIE_SECURE"])
def test_production_turns_on_https_hardening(setting):
    env = {**os.environ, "MEMORYHUB_ENV": "production", "SECRET_KEY": "x" * 64, "ALLOWED_HOSTS": "mh.example.com"}
    code = f"from django.conf import settings; print(repr(settings.{setting}))"
    out = subprocess.run([sys.executable, "-c", f"import django; django.setup(); {code}"], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=120, check=True).stdout.strip()
    assert out not in ("0", "False", "None"), (setting, out)


def test_the_production_settings_pass_the_deploy_check():
    # As `make lint` runs it; the test suite's own DJANGO_ALLOW_ASYNC_UNSAFE is not production's.
    base = {name: value for name, value in os.environ.items() if name != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env = {**base, "MEMORYHUB_ENV": "production", "SECRET_KEY": "k" * 40 + "Zq9!x" * 8,
           "ALLOWED_HOSTS": "mh.example.com"}
    result = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"], env=env,
                            cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
