"""The worker-built vector file (atoms/vector_index.py): refresh, deletes, purge rebuild."""

from __future__ import annotations

import numpy as np

from atoms.core.embedding import FakeHashProvider
from atoms.models import ErasureReceipt, IndexEntry, Ref, Revision, VectorIndexSnapshot, VectorTombstone
from atoms.vector_index import file_layout, forget_opened, nearest, refresh
from tests.atoms.api.helpers import create
from tests.atoms.index.helpers import drain


def query(text: str) -> np.ndarray:
    return np.asarray([FakeHashProvider(64).encode_one(text)], dtype=np.float32)


def test_refresh_writes_a_file_covering_every_entry(I, X):
    I.ok_write(*[create(f"a{i}", f"note {i} about topic{i}") for i in range(20)])
    drain(X)
    entry = IndexEntry.objects.first()
    snapshot = refresh(entry.tenant_id, entry.config)
    assert snapshot is not None and snapshot.version == 1
    assert snapshot.built_through == IndexEntry.objects.order_by("-id").first().id
    assert snapshot.vectors == 20
    hits = nearest(entry.tenant_id, entry.config, query("note 7 about topic7"), 3)
    best = max(hits, key=hits.get)
    assert Revision.objects.get(id=IndexEntry.objects.get(id=best).revision_id).body == "note 7 about topic7"


def test_a_refresh_without_changes_keeps_the_version(I, X):
    I.ok_write(create("a", "alpha"))
    drain(X)
    entry = IndexEntry.objects.get()
    assert refresh(entry.tenant_id, entry.config).version == 1
    assert refresh(entry.tenant_id, entry.config).version == 1


def test_a_re_encoded_entry_leaves_the_file_at_the_next_refresh(I, X):
    outcome = I.ok_write(create("a", "alpha beta"))
    drain(X)
    entry = IndexEntry.objects.get()
    refresh(entry.tenant_id, entry.config)
    I.ok_write({"id": "r", "op": "revise", "target": outcome["changes"]["a"]["ref"],
                "content": {"text": "gamma delta", "links": []}, "sources": []})
    drain(X)
    assert VectorTombstone.objects.filter(entry_id=entry.id).exists()
    snapshot = refresh(entry.tenant_id, entry.config)
    assert snapshot.version == 2 and snapshot.vectors == 1
    assert not VectorTombstone.objects.exists()
    forget_opened()
    hits = nearest(entry.tenant_id, entry.config, query("alpha beta"), 5)
    assert entry.id not in hits


def test_new_entries_are_found_before_the_next_refresh(I, X):
    I.ok_write(create("a", "alpha"))
    drain(X)
    first = IndexEntry.objects.get()
    refresh(first.tenant_id, first.config)
    I.ok_write(create("b", "omega"))
    drain(X)
    second = IndexEntry.objects.exclude(id=first.id).get()
    hits = nearest(first.tenant_id, first.config, query("omega"), 1)
    assert second.id in hits


def test_entries_newer_than_the_file_are_scanned_page_by_page_up_to_the_limit(I, X, monkeypatch):
    """Entries above the file's last one are scored exactly, newest first, in pages of
    DELTA_PAGE, and no more than DELTA_MAX of them."""
    from atoms import vector_index

    I.ok_write(create("a", "alpha"))
    drain(X)
    first = IndexEntry.objects.get()
    refresh(first.tenant_id, first.config)
    I.ok_write(*[create(f"n{i}", f"note{i} beyond the file") for i in range(5)])
    drain(X)
    newer = list(IndexEntry.objects.exclude(id=first.id).order_by("-id").values_list("id", flat=True))
    assert len(newer) == 5
    monkeypatch.setattr(vector_index, "DELTA_PAGE", 2)
    every = vector_index.nearest_each(first.tenant_id, first.config, query("note3 beyond"), 10)
    assert set(every[0][0]) == {first.id, *newer}
    assert every[2] == 6  # the file's vector and the five scanned
    monkeypatch.setattr(vector_index, "DELTA_MAX", 3)
    limited = vector_index.nearest_each(first.tenant_id, first.config, query("note3 beyond"), 10)
    assert set(limited[0][0]) == {first.id, *newer[:3]}  # the three newest


def test_a_purge_rebuilds_the_file_without_the_erased_vectors(I, X, Z, django_capture_on_commit_callbacks, eager):
    outcome = I.ok_write(create("a", "erase me"), create("b", "keep me"))
    drain(X)
    entry = IndexEntry.objects.first()
    refresh(entry.tenant_id, entry.config)
    atom_id = Ref.objects.get(id=outcome["changes"]["a"]["ref"]).atom_id
    with django_capture_on_commit_callbacks(execute=True):
        response = Z.post("purge", {"atomId": atom_id})
    assert response.status_code == 200, response.content
    counts = ErasureReceipt.objects.get().receipt["counts"]
    assert (counts["indexEntries"], counts["vectors"]) == (1, 1)
    assert IndexEntry.objects.count() == 1
    snapshot = VectorIndexSnapshot.objects.get()
    assert (snapshot.vectors, snapshot.version) == (1, 2)  # rebuilt on commit (tasks run in-process here)


def test_an_entry_with_damaged_vectors_stays_out_of_the_file(I, X):
    I.ok_write(create("a", "alpha"), create("b", "omega"))
    drain(X)
    damaged, kept = IndexEntry.objects.order_by("id")
    IndexEntry.objects.filter(pk=damaged.pk).update(vectors=b"\x00" * 5)
    snapshot = refresh(kept.tenant_id, kept.config)
    assert snapshot is not None and snapshot.vectors == kept.count
    assert snapshot.built_through == kept.id
    forget_opened()
    assert set(nearest(kept.tenant_id, kept.config, query("alpha"), 5)) == {kept.id}


def test_the_file_holds_8_bit_vectors_searched_by_cosine(I, X):
    I.ok_write(*[create(f"a{i}", f"note {i} about topic{i}") for i in range(20)])
    drain(X)
    entry = IndexEntry.objects.first()
    snapshot = refresh(entry.tenant_id, entry.config)
    assert file_layout(snapshot.path) == ("i8", "cos")
    # A hit's score is still about its cosine (so it ranks beside the exact scores of newer
    # entries), for a query that is none of the texts.
    vector = query("topic3 notes and more")
    hits = nearest(entry.tenant_id, entry.config, vector, 5)
    for entry_id, score in hits.items():
        exact = float((IndexEntry.objects.get(id=entry_id).matrix() @ vector[0]).max())
        assert exact < 0.99 and abs(score - exact) < 0.02


def test_a_file_of_the_earlier_layout_answers_and_is_rebuilt_at_the_next_refresh(I, X):
    """Files written before held half floats searched by inner product: one still answers
    searches, and the next refresh builds it whole in the current layout, even with no
    new entry."""
    import torch  # noqa: F401 - before usearch, as the service loads them (docs/atoms.md "Semantic index")
    from usearch.index import Index

    I.ok_write(*[create(f"a{i}", f"note {i} about topic{i}") for i in range(20)])
    drain(X)
    entry = IndexEntry.objects.first()
    snapshot = refresh(entry.tenant_id, entry.config)
    rows = list(IndexEntry.objects.order_by("id"))
    old = Index(ndim=64, metric="ip", dtype="f16", connectivity=16)
    old.add(np.array([row.id * 128 for row in rows], dtype=np.uint64), np.stack([row.matrix()[0] for row in rows]))
    old.save(snapshot.path)
    assert file_layout(snapshot.path) == ("f16", "ip")
    forget_opened()
    hits = nearest(entry.tenant_id, entry.config, query("note 7 about topic7"), 3)
    best = max(hits, key=hits.get)
    assert Revision.objects.get(id=IndexEntry.objects.get(id=best).revision_id).body == "note 7 about topic7"
    rebuilt = refresh(entry.tenant_id, entry.config)
    assert rebuilt.version == snapshot.version + 1 and rebuilt.vectors == 20
    assert file_layout(snapshot.path) is not None and file_layout(rebuilt.path) == ("i8", "cos")
    assert refresh(entry.tenant_id, entry.config).version == rebuilt.version  # and then kept


def test_the_index_sweep_rebuilds_a_file_of_the_earlier_layout(I, X, eager):
    """The sweep of every minute asks for a refresh of a file of another layout, which
    rebuilds it, and leaves a current file alone."""
    import torch  # noqa: F401 - before usearch, as the service loads them (docs/atoms.md "Semantic index")
    from usearch.index import Index

    from atoms.tasks_index import index_sweep

    I.ok_write(*[create(f"a{i}", f"note {i}") for i in range(5)])
    drain(X)
    entry = IndexEntry.objects.first()
    snapshot = refresh(entry.tenant_id, entry.config)
    assert index_sweep()["refreshed"] == 0
    rows = list(IndexEntry.objects.order_by("id"))
    old = Index(ndim=64, metric="ip", dtype="f16", connectivity=16)
    old.add(np.array([row.id * 128 for row in rows], dtype=np.uint64), np.stack([row.matrix()[0] for row in rows]))
    old.save(snapshot.path)
    assert index_sweep()["refreshed"] == 1
    assert file_layout(snapshot.path) == ("i8", "cos")
    assert VectorIndexSnapshot.objects.get().version == snapshot.version + 1
    assert index_sweep()["refreshed"] == 0


def test_the_index_sweep_rebuilds_a_missing_file(I, X, eager):
    from pathlib import Path

    from atoms.tasks_index import index_sweep

    I.ok_write(*[create(f"a{i}", f"note {i}") for i in range(5)])
    drain(X)
    entry = IndexEntry.objects.first()
    snapshot = refresh(entry.tenant_id, entry.config)
    Path(snapshot.path).unlink()
    assert index_sweep()["refreshed"] == 1
    assert file_layout(snapshot.path) == ("i8", "cos")


def test_a_refresh_that_may_not_wait_skips_a_file_another_refresh_holds(I, X):
    from pathlib import Path

    from atoms.vector_index import _locked

    I.ok_write(create("a", "alpha"))
    drain(X)
    entry = IndexEntry.objects.get()
    first = refresh(entry.tenant_id, entry.config)
    I.ok_write(create("b", "omega"))
    drain(X)
    with _locked(Path(first.path)) as held:  # as a refresh at work in another process would
        assert held is True
        assert refresh(entry.tenant_id, entry.config, wait=False).version == first.version
    assert refresh(entry.tenant_id, entry.config, wait=False).version == first.version + 1
