"""Hybrid scoring in read and search (atoms.md §6.3): 0.8 semantic + 0.2 lexical for atoms with a
valid entry, lexical with index "pending" otherwise."""

from __future__ import annotations

import pytest

from atoms.core.embedding import FakeHashProvider
from atoms.core.text import part
from atoms.embedding import forget_providers
from atoms.models import IndexEntry
from tests.atoms.api.helpers import create
from tests.atoms.index.helpers import drain


def test_indexed_atoms_rank_by_their_semantic_part(I, X):
    """Two atoms with the same lexical match for "coffee tea" (one token of two): ranked by
    0.8 semantic + 0.2 lexical the semantically closer one comes first, although the
    lexical tie-break (shorter body first) would put the other first."""
    fake = FakeHashProvider(64)
    query = fake.encode_one("coffee tea")

    def cosine(text: str) -> float:
        return sum(x * y for x, y in zip(query, fake.encode_one(text), strict=True))

    # The longer text must be the semantically closer one, so that lexical order and
    # semantic order disagree; pick such a pair deterministically.
    short = "coffee a"
    long = next(text for text in (f"coffee filler{i} words{i}" for i in range(1000))
                if cosine(text) > cosine(short) + 0.1)
    assert part(0.5, cosine(long)) > part(0.5, cosine(short))
    I.ok_write(create("s", short), create("l", long))
    drain(X)
    body = X.post("search", {"query": "coffee tea"}).json()
    assert body["diagnostics"]["index"] == "ready"
    assert body["diagnostics"]["approximate"] is True
    assert [item["text"] for item in body["items"]] == [long, short]


def test_without_the_index_the_same_atoms_rank_lexically(settings, I, X):
    settings.ATOMS_EMBEDDING_PROVIDER = None
    forget_providers()
    I.ok_write(create("s", "coffee a"), create("l", "coffee filler0 words0"))
    body = X.post("search", {"query": "coffee tea"}).json()
    assert [item["text"] for item in body["items"]] == ["coffee a", "coffee filler0 words0"]


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
