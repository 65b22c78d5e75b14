"""The purge barrier (docs/atoms.md "In the web UI: read playground and purge"): while a purge is pending, the Atom API is closed."""

from __future__ import annotations

from atoms.errors import denied
from atoms.models import AtomStore
from tenants.models import Tenant

STORE_ROW = 'SELECT * FROM "atoms_atomstore" WHERE "tenant_id" = %s'


def check_barrier(store: AtomStore) -> None:
    if store.purge_barrier:
        raise denied("A purge is in progress; retry when it completes.", reason="erasure-incomplete")


def store_row(tenant_id: int) -> AtomStore | None:
    """The tenant's store row, in plain SQL without the ORM's query compiler: every read and
    search reads it twice, before its transaction and again in its snapshot (docs/atoms.md
    "Read path costs")."""
    found = list(AtomStore.objects.raw(STORE_ROW, [tenant_id]))
    return found[0] if found else None


def open_store(tenant: Tenant) -> AtomStore:
    """The tenant's store, if its Atom API is open (the barrier check every caller makes first);
    a tenant without one yet gets it created."""
    store = store_row(tenant.pk) or AtomStore.get_or_create_for(tenant)
    check_barrier(store)
    return store


def store_again(store: AtomStore) -> AtomStore:
    """`store` read again, inside the caller's snapshot."""
    again = store_row(store.tenant_id)
    if again is None:  # deleted since (its tenant is going): the ORM's error, as a get would raise
        raise AtomStore.DoesNotExist
    return again
