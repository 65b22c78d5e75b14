from __future__ import annotations

import pytest

from tests.tenants.kv.helpers import Kv


@pytest.fixture
def kv(acme, make_key, client_for) -> Kv:
    _, raw = make_key(acme, "agent")
    return Kv(client_for(raw))


@pytest.fixture
def admin_kv(acme, make_key, client_for) -> Kv:
    _, raw = make_key(acme, "admin")
    return Kv(client_for(raw))
