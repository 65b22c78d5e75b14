"""The purge barrier (docs/atoms.md "In the web UI: read playground and purge"): while a purge is pending, the Atom API is closed."""

from __future__ import annotations

from atoms.errors import denied
from atoms.models import AtomStore
from tenants.models import Tenant


def check_barrier(store: AtomStore) -> None:
    if store.purge_barrier:
        raise denied("A purge is in progress; retry when it completes.", reason="erasure-incomplete")


def open_store(tenant: Tenant) -> AtomStore:
    """The tenant's store, if its Atom API is open (the barrier check every caller makes first)."""
    store = AtomStore.get_or_create_for(tenant)
    check_barrier(store)
    return store
