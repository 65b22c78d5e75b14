"""The purge barrier (docs/atoms.md "In the web UI: read playground and purge"): while a purge is pending, the Atom API is closed."""

from __future__ import annotations

from atoms.errors import denied
from atoms.models import AtomStore


def check_barrier(store: AtomStore) -> None:
    if store.purge_barrier:
        raise denied("A purge is in progress; retry when it completes.", reason="erasure-incomplete")
