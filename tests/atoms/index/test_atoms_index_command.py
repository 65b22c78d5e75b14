"""manage.py atoms_index drains every served policy of a tenant."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from atoms.models import IndexEntry, VectorIndexSnapshot
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
    assert "acme: 1 atoms with damaged vectors encoded again" in out.getvalue()
    assert not IndexEntry.objects.damaged().exists()
    assert IndexEntry.objects.get(atom_id=damaged.atom_id).matrix().shape == (damaged.count, damaged.dimensions)
    assert X.post("search", {"query": "note"}).json()["diagnostics"]["index"] == "ready"
