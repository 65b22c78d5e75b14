"""atoms.services.barrier.open_store reads the store row in plain SQL: the same row the ORM
gives, created when the tenant has none, and the purge barrier still closes the API."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from atoms.errors import AtomError
from atoms.models import AtomStore
from atoms.services.barrier import open_store


def test_a_tenant_without_a_store_row_gets_one(acme) -> None:
    AtomStore.objects.filter(tenant=acme).delete()
    store = open_store(acme)
    assert AtomStore.objects.filter(tenant=acme).count() == 1
    assert store.pk == AtomStore.objects.get(tenant=acme).pk


def test_the_row_read_in_sql_equals_the_orm_row_in_one_statement(acme) -> None:
    AtomStore.get_or_create_for(acme)
    AtomStore.objects.filter(tenant=acme).update(config={"retrieval": {"k": 3}}, seq=7, index_generation=2)
    with CaptureQueriesContext(connection) as captured:
        store = open_store(acme)
    assert len(captured.captured_queries) == 1
    orm = AtomStore.objects.get(tenant=acme)
    assert (store.pk, store.tenant_id, store.seq, store.index_generation, store.config, store.purge_barrier,
            store.require_approval) == (orm.pk, orm.tenant_id, 7, 2, {"retrieval": {"k": 3}}, None,
                                        orm.require_approval)


def test_a_pending_purge_still_closes_the_api(acme) -> None:
    AtomStore.get_or_create_for(acme)
    AtomStore.objects.filter(tenant=acme).update(purge_barrier={"atomId": "atom:x", "phase": "erase"})
    with pytest.raises(AtomError) as raised:
        open_store(acme)
    assert "purge" in str(raised.value).lower()
