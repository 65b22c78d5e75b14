"""Atom tenant settings (row 59) through PATCH /api/v1/tenant."""

from __future__ import annotations

import pytest

from atoms.models import AtomStore
from tests.conftest import error_of


@pytest.fixture
def admin(acme, make_key, client_for):
    return client_for(make_key(acme, "admin")[1])


@pytest.mark.parametrize("config", [
    {"activation": {"propagation": 1}},
    {"maxScan": 10},
    {"ranking": {}},
    {"retrieval": {"depth": 33}},
    {"retrieval": {"maxScan": 0}},
    {"activation": {"maxBoost": -1}},
    {"activation": {"relations": {"about": {"forward": -1}}}},
    {"activation": {"model": {"class": "os.system"}}},
    {"activation": {"model": {"class": "atoms.core.availability.AdaptiveUse", "options": {"initialHalfLifeMs": 0}}}},
])
def test_59_an_invalid_config_is_invalid_input_and_saves_nothing(acme, admin, config):
    response = admin.patch("/api/v1/tenant", {"atoms_config": config, "name": "changed"}, format="json")
    assert response.status_code == 400
    assert error_of(response)["code"] == "INVALID_INPUT"
    acme.refresh_from_db()
    assert acme.name == "Acme Corp"
    assert AtomStore.for_tenant(acme).config == {}


def test_a_valid_config_and_the_approval_flag_are_saved(acme, admin):
    config = {"retrieval": {"depth": 3}, "activation": {"propagation": 0.25, "maxBoost": 2,
              "relations": {"about": {"forward": 1, "reverse": 0}},
              "model": {"class": "atoms.core.availability.AdaptiveUse", "options": {"initialHalfLifeMs": 1000}}}}
    response = admin.patch("/api/v1/tenant", {"atoms_config": config, "atoms_require_approval": True}, format="json")
    assert response.status_code == 200, response.content
    body = admin.get("/api/v1/tenant").json()
    assert body["atoms_config"] == config and body["atoms_require_approval"] is True
