"""POST /api/v1/atoms/index/prioritize (docs/atoms.md "Semantic index")."""

from __future__ import annotations

from atoms.models import IndexCheckpoint, IndexEntry
from tests.atoms.api.helpers import create


def test_it_encodes_the_given_heads_now_without_moving_checkpoints(I, X):
    outcome = I.ok_write(create("a", "First note."), create("b", "Second note."))
    ref = X.post("search", {"query": "first"}).json()["items"][0]["ref"]
    assert X.post("index/prioritize", {"refs": [ref]}).json() == {"indexed": 1}
    assert IndexEntry.objects.count() == 1
    assert not IndexCheckpoint.objects.filter(seq__gt=0).exists()
    assert X.post("index/prioritize", {"refs": [ref]}).json() == {"indexed": 0}
    assert outcome["indexing"] == "pending"


def test_it_refuses_more_refs_than_the_limit(X):
    response = X.post("index/prioritize", {"refs": ["ref:x"] * 3, "options": {"limit": 2}})
    assert (response.status_code, response.json()["error"]["code"]) == (413, "LIMIT_EXCEEDED")
    response = X.post("index/prioritize", {"refs": ["ref:x"] * 257})
    assert (response.status_code, response.json()["error"]["details"]["limit"]) == (413, 256)


def test_it_refuses_a_cursor(X):
    response = X.post("index/prioritize", {"refs": [], "options": {"cursor": "c"}})
    assert response.json()["error"]["code"] == "INVALID_INPUT"


def test_another_tenants_ref_is_unknown(I, X, globex, make_key, client_for):
    I.ok_write(create("a", "Acme secret plan."))
    ref = X.post("search", {"query": "plan"}).json()["items"][0]["ref"]
    _, raw = make_key(globex, "host")
    response = client_for(raw).post("/api/v1/atoms/index/prioritize", {"refs": [ref]}, format="json")
    assert response.json()["error"]["code"] == "INVALID_REF"
    assert IndexEntry.objects.count() == 0
