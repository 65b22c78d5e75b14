"""The purge barrier (docs/atoms.md "In the web UI: read playground and purge"): while a purge is pending, the Atom API is closed."""

from __future__ import annotations

from atoms.errors import denied
from atoms.models import AtomStore
from tenants.models import Tenant

STORE_ROW = 'SELECT * FROM "atoms_atomstore" WHERE "tenant_id" = %s'


def check_barrier(store: AtomStore) -> None:
    if store.purge_barrier:
        raise denied("A purge is in progress; retry when it completes.", reason="erasure-incomplete")


def open_store(tenant: Tenant) -> AtomStore:
    """The tenant's store, if its Atom API is open (the barrier check every caller makes first)."""
    # Every read and search starts here: the row is read in plain SQL, without the ORM's query
    # compiler (docs/atoms.md "Read path costs"); a tenant without one yet gets it created.
    found = list(AtomStore.objects.raw(STORE_ROW, [tenant.pk]))
    store = found[0] if found else AtomStore.get_or_create_for(tenant)
    check_barrier(store)
    return store
