"""Atom tenant settings through PATCH /api/v1/tenant (docs/atoms.md "Decisions", Settings)."""

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
    {"retrieval": {"lexicalCandidates": 0, "semanticCandidates": 0}},
    {"retrieval": {"lexicalCandidates": 10_001}},
    {"retrieval": {"semanticCandidates": -1}},
    {"retrieval": {"semanticCandidates": 1.5}},
    {"retrieval": {"weights": {"semantic": 1}}},
    {"retrieval": {"weights": {"semantic": 1, "lexical": 1, "other": 1}}},
    {"retrieval": {"weights": {"semantic": 0, "lexical": 0}}},
    {"retrieval": {"weights": {"semantic": -0.1, "lexical": 1}}},
    {"retrieval": {"weights": {"semantic": "1", "lexical": 1}}},
    {"retrieval": {"weights": {"semantic": True, "lexical": 1}}},
    {"retrieval": {"weights": [0.7, 0.3]}},
    {"retrieval": {"weights": {"semantic": 1e308, "lexical": 1e308}}},
])
def test_an_invalid_config_is_invalid_input_and_saves_nothing(acme, admin, config):
    """An invalid atoms_config is 400 INVALID_INPUT, and nothing of the request is saved."""
    response = admin.patch("/api/v1/tenant", {"atoms_config": config, "name": "changed"}, format="json")
    assert response.status_code == 400
    assert error_of(response)["code"] == "INVALID_INPUT"
    acme.refresh_from_db()
    assert acme.name == "Acme Corp"
    assert AtomStore.get_or_create_for(acme).config == {}


def test_a_valid_config_and_the_approval_flag_are_saved(acme, admin):
    config = {"retrieval": {"depth": 3}, "activation": {"propagation": 0.25, "maxBoost": 2,
              "relations": {"about": {"forward": 1, "reverse": 0}},
              "model": {"class": "atoms.core.availability.AdaptiveUse", "options": {"initialHalfLifeMs": 1000}}}}
    response = admin.patch("/api/v1/tenant", {"atoms_config": config, "atoms_require_approval": True}, format="json")
    assert response.status_code == 200, response.content
    body = admin.get("/api/v1/tenant").json()
    assert body["atoms_config"] == config and body["atoms_require_approval"] is True


def test_the_recall_keys_are_saved_and_change_the_ranking(acme, admin, make_key, client_for):
    from tests.atoms.api.helpers import AtomsClient, create

    key, raw = make_key(acme, "ingest")
    AtomsClient(client_for(raw), key).ok_write(create("a", "tea tea tea"), create("b", "tea green"))
    config = {"retrieval": {"lexicalCandidates": 1, "semanticCandidates": 0,
                            "weights": {"semantic": 0.5, "lexical": 0.5}}}
    response = admin.patch("/api/v1/tenant", {"atoms_config": config}, format="json")
    assert response.status_code == 200, response.content
    assert admin.get("/api/v1/tenant").json()["atoms_config"] == config
    result = client_for(raw).post("/api/v1/atoms/search", {"query": "tea"}, format="json").json()
    # One lexical candidate: the head with the highest BM25 (three occurrences), and the
    # provider says more may have matched.
    assert [item["text"] for item in result["items"]] == ["tea tea tea"]
    assert result["diagnostics"]["approximate"] is True and result["diagnostics"]["scanned"] == 1
