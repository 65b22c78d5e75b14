"""Hybrid scoring in read and search (atoms.md §6.3): 0.8 semantic + 0.2 lexical for atoms with a
valid entry, lexical with index "pending" otherwise."""

from __future__ import annotations

import math

import pytest

from atoms.core.embedding import FakeHashProvider
from atoms.embedding import forget_providers
from atoms.models import IndexEntry
from tests.atoms.api.helpers import create


def drain(client) -> None:
    while client.post("index/update", {"options": {"limit": 256}}).json()["pending"]:
        pass


def test_an_indexed_atom_scores_with_its_semantic_part(I, X):
    I.ok_write(create("a", "coffee beans roasted dark"))
    drain(X)
    body = X.post("search", {"query": "coffee tea"}).json()
    assert body["diagnostics"]["index"] == "ready"
    assert body["diagnostics"]["approximate"] is True
    fake = FakeHashProvider(64)
    cosine = sum(x * y for x, y in zip(fake.encode_one("coffee tea"), fake.encode_one("coffee beans roasted dark"),
                                       strict=True))
    # One atom, no links: its score is its activation share, 1; m itself shows through the
    # read observation's mFloor only lexically, so check the ranking inputs directly.
    from atoms.core.text import part

    expected = part(0.5, cosine)
    assert math.isclose(expected, 0.8 * max(0.0, min(1.0, cosine)) + 0.1)
    assert body["items"][0]["text"] == "coffee beans roasted dark"


def test_an_unindexed_candidate_makes_the_index_pending(I, X):
    I.ok_write(create("a", "coffee beans"))
    drain(X)
    I.ok_write(create("b", "coffee cups"))
    body = X.post("search", {"query": "coffee"}).json()
    assert {item["text"] for item in body["items"]} == {"coffee beans", "coffee cups"}
    assert body["diagnostics"]["index"] == "pending"
    assert body["diagnostics"]["acquisition"]["index"] == "pending"


def test_a_signal_that_fails_to_encode_falls_back_to_lexical(settings, I, X):
    I.ok_write(create("a", "coffee beans"))
    drain(X)
    settings.ATOMS_EMBEDDING_PROVIDERS = [*settings.ATOMS_EMBEDDING_PROVIDERS, "tests.atoms.index.providers.Broken"]
    settings.ATOMS_EMBEDDING_PROVIDER = {"class": "tests.atoms.index.providers.Broken", "options": {}}
    forget_providers()
    response = X.post("read", {"state": {"query": "coffee"}})
    assert response.status_code == 200
    body = response.json()
    assert body["items"][0]["text"] == "coffee beans"
    assert body["diagnostics"]["index"] == "pending"


def test_without_a_provider_the_index_is_ready(settings, I, X):
    settings.ATOMS_EMBEDDING_PROVIDER = None
    forget_providers()
    outcome = I.ok_write(create("a", "coffee beans"))
    assert outcome["indexing"] == "ready"
    body = X.post("read", {"state": {"query": "coffee"}}).json()
    assert body["diagnostics"]["index"] == "ready"
    assert body["diagnostics"]["approximate"] is False


@pytest.mark.parametrize("vector_root", [True, False])
def test_a_semantic_neighbour_without_lexical_match_is_a_candidate(settings, I, X, vector_root, tmp_path):
    """The fake provider hashes tokens into 64 buckets: find a word that shares a bucket
    (same sign) with "coffee" but no substring, so only the vector side can find it."""
    from atoms.vector_index import refresh

    if not vector_root:
        settings.ATOMS_VECTOR_INDEX_ROOT = None
    fake = FakeHashProvider(64)
    target = fake.encode_one("coffee")
    twin = next(f"zq{i}" for i in range(10_000)
                if fake.encode_one(f"zq{i}") == target and "coffee" not in f"zq{i}")
    I.ok_write(create("a", twin))
    drain(X)
    entry = IndexEntry.objects.get()
    refresh(entry.tenant_id, entry.config)
    body = X.post("search", {"query": "coffee"}).json()
    assert [item["text"] for item in body["items"]] == [twin]
    assert body["diagnostics"]["index"] == "ready"
