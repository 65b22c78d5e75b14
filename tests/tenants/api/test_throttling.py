from __future__ import annotations

import pytest

from tests.conftest import error_of

# Each test counts requests within one window of a stopped clock (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("throttle_clock")


def test_a_key_over_its_tenants_rate_is_throttled(acme, make_key, client_for):
    acme.api_rate_per_minute = 3
    acme.save()
    _, raw = make_key(acme)
    client = client_for(raw)
    statuses = [client.get("/api/v1/whoami").status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    response = client.get("/api/v1/whoami")
    error = error_of(response)
    assert error["code"] == "THROTTLED"
    assert 0 < int(response["Retry-After"]) <= 60
    assert error["details"]["retry_after"] == int(response["Retry-After"])


def test_throttling_counts_per_key(acme, make_key, client_for):
    acme.api_rate_per_minute = 1
    acme.save()
    _, raw_1 = make_key(acme)
    _, raw_2 = make_key(acme)
    assert client_for(raw_1).get("/api/v1/whoami").status_code == 200
    assert client_for(raw_1).get("/api/v1/whoami").status_code == 429
    assert client_for(raw_2).get("/api/v1/whoami").status_code == 200


def test_the_server_default_applies_without_a_tenant_rate(acme, make_key, client_for, settings):
    settings.MEMORYHUB_DEFAULT_API_RATE_PER_MINUTE = 2
    _, raw = make_key(acme)
    client = client_for(raw)
    assert [client.get("/api/v1/whoami").status_code for _ in range(3)] == [200, 200, 429]
