"""manage.py atoms_index drains every served policy of a tenant."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from atoms.embedding import tenant_provider
from atoms.models import IndexEntry, Ref, VectorIndexSnapshot
from atoms.services.indexing import damaged_atoms, repair_damaged
from tenants.models import Tenant
from tests.atoms.api.helpers import create


def test_it_encodes_every_pending_atom_and_writes_the_vector_file(I, X):
    I.ok_write(*[create(f"a{i}", f"note {i}") for i in range(5)])
    out = StringIO()
    call_command("atoms_index", "--tenant", "acme", "--no-progress", "--step", "2", stdout=out)
    assert "acme: 5 atoms encoded with fake-hash-v1:64" in out.getvalue()
    assert IndexEntry.objects.count() == 5
    assert VectorIndexSnapshot.objects.get().vectors == 5
    assert X.post("index/status", {}).json()["ready"] is True


def test_it_refuses_an_unknown_tenant(db):
    with pytest.raises(CommandError):
        call_command("atoms_index", "--tenant", "nope", "--no-progress")


def test_repair_encodes_again_the_atoms_whose_vectors_are_damaged(I, X):
    I.ok_write(create("a", "note a"), create("b", "note b"))
    call_command("atoms_index", "--tenant", "acme", "--no-progress", stdout=StringIO())
    damaged = IndexEntry.objects.order_by("id").first()
    IndexEntry.objects.filter(pk=damaged.pk).update(vectors=b"\x00" * 5)
    assert X.post("search", {"query": "note"}).json()["diagnostics"]["index"] == "pending"
    out = StringIO()
    call_command("atoms_index", "--tenant", "acme", "--no-progress", "--repair", stdout=out)
    assert "acme: damaged vectors in 1 entries, 1 encoded again" in out.getvalue()
    assert not IndexEntry.objects.damaged().exists()
    assert IndexEntry.objects.get(atom_id=damaged.atom_id).matrix().shape == (damaged.count, damaged.dimensions)
    assert X.post("search", {"query": "note"}).json()["diagnostics"]["index"] == "ready"


def test_repair_drops_a_damaged_entry_whose_atom_is_no_longer_served(I, X):
    """The feed drops the entry of a retired head when it gets there; a repair that comes
    first drops it too, since nothing would encode it again."""
    outcome = I.ok_write(create("a", "note a"), create("b", "note b"))
    call_command("atoms_index", "--tenant", "acme", "--no-progress", stdout=StringIO())
    retired = IndexEntry.objects.get(atom_id=Ref.objects.get(id=outcome["changes"]["a"]["ref"]).atom_id)
    IndexEntry.objects.filter(pk=retired.pk).update(vectors=b"\x00" * 5)
    I.ok_write({"id": "x", "op": "retire", "target": outcome["changes"]["a"]["ref"]})
    tenant = Tenant.objects.get(slug="acme")
    loaded = tenant_provider(tenant)
    assert damaged_atoms(tenant, loaded.config) == [retired.atom_id]
    assert repair_damaged(tenant=tenant, loaded=loaded, atom_ids=[retired.atom_id]) == 0
    assert not IndexEntry.objects.filter(atom_id=retired.atom_id).exists()
    assert IndexEntry.objects.count() == 1


@pytest.mark.parametrize("blob, count, dimensions", [
    (b"\x00" * 5, None, None),          # a truncated blob
    (None, 2, None),                     # a count the blob does not hold
    (None, 2**31 - 1, 2**31 - 1),        # a product beyond 64 bits must not overflow the check
])
def test_the_check_finds_every_kind_of_damage_without_failing_itself(I, X, blob, count, dimensions):
    I.ok_write(create("a", "note a"), create("b", "note b"))
    call_command("atoms_index", "--tenant", "acme", "--no-progress", stdout=StringIO())
    damaged, intact = IndexEntry.objects.order_by("id")
    changes = {"vectors": blob, "count": count, "dimensions": dimensions}
    IndexEntry.objects.filter(pk=damaged.pk).update(**{k: v for k, v in changes.items() if v is not None})
    assert set(IndexEntry.objects.intact().values_list("id", flat=True)) == {intact.pk}
    assert set(IndexEntry.objects.damaged().values_list("id", flat=True)) == {damaged.pk}
