"""Hybrid scoring and the semantic channel in read and search (docs/atoms.md "Candidates",
"Match"): the tenant's weights for atoms with a valid entry, lexical with index "pending"
otherwise; eligible heads only, before the channel's limit."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from atoms.core.embedding import FakeHashProvider
from atoms.embedding import forget_providers
from atoms.models import IndexEntry
from tests.atoms.api.helpers import create
from tests.atoms.index.helpers import drain


def test_indexed_atoms_rank_by_their_semantic_part(I, X):
    """Two atoms sharing the query term "coffee": lexically the shorter one ranks first
    (BM25 favours the shorter body), but with the default weights the semantically closer,
    longer one comes first."""
    fake = FakeHashProvider(64)
    query = fake.encode_one("coffee tea")

    def cosine(text: str) -> float:
        return sum(x * y for x, y in zip(query, fake.encode_one(text), strict=True))

    # The longer text must be the semantically closer one, so that lexical order and
    # semantic order disagree; pick such a pair deterministically. Their lexical scores
    # differ by about 0.02 (the shared term is in every head: its idf is small), so a cosine
    # margin of 0.3 decides under the default weights (0.3 semantic, 0.7 lexical).
    short = "coffee a"
    long = next(text for text in (f"coffee filler{i} words{i}" for i in range(1000))
                if cosine(text) > cosine(short) + 0.3)
    I.ok_write(create("s", short), create("l", long))
    drain(X)
    body = X.post("search", {"query": "coffee tea"}).json()
    assert body["diagnostics"]["index"] == "ready"
    # No vector file here: the semantic channel scanned every entry exactly and nothing was cut.
    assert body["diagnostics"]["approximate"] is False
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


def test_the_semantic_channel_keeps_k_eligible_heads_whatever_other_policies_hold(acme, I, X, make_key, client_for):
    """Ten private atoms lie nearer to the query than the one public atom; with K = 1 and no
    lexical channel, a reader of the public policy still gets the public atom (the search
    widens until it finds an eligible head), through the vector file."""
    from atoms.models import AtomStore
    from atoms.vector_index import refresh
    from tests.atoms.api.helpers import AtomsClient

    store = AtomStore.get_or_create_for(acme)
    store.config = {"retrieval": {"lexicalCandidates": 0, "semanticCandidates": 1}}
    store.save()
    key, raw = make_key(acme, "ingest", read_policies=["default", "private"], write_policies=["default", "private"])
    private = AtomsClient(client_for(raw), key)
    private.ok_write(*[create(f"p{i}", "coffee tea") for i in range(10)], binding={"writePolicy": "private"})
    I.ok_write(create("d", "coffee tea public"))
    host, raw_host = make_key(acme, "host", read_policies=["default", "private"])
    drain(AtomsClient(client_for(raw_host), host))
    assert IndexEntry.objects.count() == 11
    entry = IndexEntry.objects.first()
    assert refresh(entry.tenant_id, entry.config) is not None
    body = X.post("search", {"query": "coffee tea"}).json()
    assert [item["text"] for item in body["items"]] == ["coffee tea public"]
    assert body["diagnostics"]["approximate"] is True  # the HNSW file is approximate by nature
    both = private.post("search", {"query": "coffee tea", "binding": {"readPolicies": ["default", "private"]}}).json()
    assert len(both["items"]) == 1 and both["items"][0]["text"] == "coffee tea"


def test_the_semantic_channels_heads_are_neither_read_again_nor_their_vectors_loaded_again(I, X):
    """The semantic channel's eligibility query reads each hit's whole head row and its
    entry's vectors (docs/atoms.md "Read path costs"): with no lexical candidate, scoring
    the candidates issues no re-read of revisions and no look-up of index entries by atom."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    fake = FakeHashProvider(64)
    target = fake.encode_one("coffee")
    twins = [f"zq{i}" for i in range(20_000) if fake.encode_one(f"zq{i}") == target][:2]
    I.ok_write(*[create(f"t{i}", twin) for i, twin in enumerate(twins)])
    drain(X)
    with CaptureQueriesContext(connection) as captured:
        body = X.post("search", {"query": "coffee"}).json()
    assert sorted(item["text"] for item in body["items"]) == sorted(twins) and len(twins) == 2
    assert body["diagnostics"]["index"] == "ready"  # both were scored with their vectors
    statements = [query["sql"] for query in captured.captured_queries]
    # The look-up of entries by atom: a placeholder per id on SQLite, an array on PostgreSQL.
    assert not [sql for sql in statements if "atoms_indexentry" in sql and "atom_id" in sql
                and (" IN (" in sql or "= ANY(" in sql) and "JOIN" not in sql]
    # The core's bulk re-read (atoms.services.rows.revisions_by_id) of candidates no channel returned whole.
    assert not [sql for sql in statements if "WHERE r.tenant_id = " in sql and " AND r.id IN (" in sql]


@pytest.mark.parametrize("op, body", [("search", {"query": "coffee"}), ("read", {"state": {"query": "coffee"}})])
def test_an_entry_with_damaged_vectors_is_left_out_and_the_call_answers(I, X, op, body):
    """Only IndexEntry.pack writes blobs, so one of the wrong length was damaged outside the
    service. It must not fail a read or a search: its atom scores lexically, like an atom
    without an entry, and the index is pending until `atoms_index --repair` encodes it again."""
    I.ok_write(create("a", "coffee beans"), create("b", "coffee cups"))
    drain(X)
    damaged = IndexEntry.objects.order_by("id").first()
    IndexEntry.objects.filter(pk=damaged.pk).update(vectors=b"\x00" * 5)
    response = X.post(op, body)
    assert response.status_code == 200
    answer = response.json()
    assert {item["text"] for item in answer["items"]} == {"coffee beans", "coffee cups"}
    assert answer["diagnostics"]["index"] == "pending"


def _entry_lookups_by_atom(statements: list[str]) -> list[str]:
    """`valid_vectors`' look-up of entries by atom: a placeholder per id on SQLite, an array on
    PostgreSQL, and no join."""
    return [sql for sql in statements if "atoms_indexentry" in sql and "atom_id" in sql
            and (" IN (" in sql or "= ANY(" in sql) and "JOIN" not in sql]


def test_the_lexical_hits_bring_their_entries_so_scoring_looks_none_up(acme, I, X):
    """With signal vectors, the lexical statement joins each hit's entry (docs/atoms.md "Read
    path costs"): candidates the semantic channel did not return still score with their
    vectors, and no entry is looked up by atom afterwards."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from atoms.models import AtomStore

    store = AtomStore.get_or_create_for(acme)
    store.config = {"retrieval": {"semanticCandidates": 1}}  # the other candidates are lexical hits only
    store.save()
    I.ok_write(*[create(f"c{i}", f"coffee batch {i} roasted") for i in range(5)])
    drain(X)
    with CaptureQueriesContext(connection) as captured:
        body = X.post("search", {"query": "coffee roasted"}).json()
    assert len(body["items"]) == 5 and body["diagnostics"]["index"] == "ready"
    assert not _entry_lookups_by_atom([query["sql"] for query in captured.captured_queries])


def test_a_lexical_hit_whose_entry_holds_another_text_scores_lexically(acme, I, X):
    """An entry whose text hash is not its head's is not valid for it, whichever channel read
    it: the atom scores lexically and the index is pending."""
    I.ok_write(create("a", "coffee beans"), create("b", "coffee cups"))
    drain(X)
    ready = X.post("search", {"query": "coffee"}).json()
    assert ready["diagnostics"]["index"] == "ready"
    IndexEntry.objects.filter(pk=IndexEntry.objects.order_by("id").first().pk).update(text_hash="0" * 64)
    body = X.post("search", {"query": "coffee"}).json()
    assert {item["text"] for item in body["items"]} == {"coffee beans", "coffee cups"}
    assert body["diagnostics"]["index"] == "pending"


def test_the_eligibility_statement_returns_a_revised_atoms_head_only(acme, I, X):
    """The eligibility statement finds each hit's head by its atom id and `is_head`: an atom
    whose older revision holds the head's very text (so the entry is valid for both texts)
    comes back as its head, and the database refuses a second head for it (the unique index
    atoms_rev_one_head, which the statement goes through)."""
    from atoms.embedding import provider_spec, tenant_provider
    from atoms.models import AtomStore, Revision
    from atoms.services.semantic import _eligible_entries

    ref = I.ref(create("a", "coffee as before"))
    for i, text in enumerate(["coffee changed", "coffee as before"]):  # back to the first text
        outcome = I.ok_write({"id": f"r{i}", "op": "revise", "target": ref, "content": {"text": text, "links": []},
                              "sources": []})
        ref = outcome["changes"][f"r{i}"]["ref"]
    drain(X)
    head = Revision.objects.get(is_head=True)
    assert Revision.objects.filter(atom_id=head.atom_id, body=head.body).count() == 2
    store = AtomStore.get_or_create_for(acme)
    assert provider_spec(store) is not None
    config = tenant_provider(acme, store).config
    entry = IndexEntry.objects.get(atom_id=head.atom_id, config=config)
    found = _eligible_entries(acme, config, [entry.id], ["default"], require_approval=False)
    assert [revision.id for revision, _ in found.values()] == [head.id]
    body = X.post("search", {"query": "coffee before"}).json()
    assert [item["text"] for item in body["items"]] == ["coffee as before"]
    older = Revision.objects.filter(atom_id=head.atom_id, is_head=False, body=head.body).get()
    with pytest.raises(IntegrityError), transaction.atomic():
        Revision.objects.filter(pk=older.pk).update(is_head=True)
