"""Atoms for the playground and purge page tests, written through the engine's services
as an ingest key would write them."""

from __future__ import annotations

from typing import Any

from atoms.api.write import answer_write
from atoms.models import Ref
from atoms.principal import Principal
from tenants.models import ApiKey, Tenant
from tenants.services.keys import apikey_create
from tests.conftest import TEST_ACTOR

HX = {"HX-Request": "true"}


def ingest_key(tenant: Tenant) -> ApiKey:
    key = ApiKey.objects.filter(tenant=tenant, kind="ingest", name="ui-tests").first()
    if key is None:
        key, _ = apikey_create(tenant=tenant, kind="ingest", name="ui-tests", actor=TEST_ACTOR)
    return key


def write(tenant: Tenant, text: str, *, sources: list[dict[str, Any]] | None = None,
          links: list[dict[str, Any]] | None = None) -> tuple[str, str]:
    """Create one atom; returns (atomId, the ingest key's ref to it)."""
    change = {"id": "c", "op": "create", "content": {"text": text, "links": links or []}, "sources": sources or []}
    outcome = answer_write(Principal.for_key(ingest_key(tenant)), {"changes": [change]})
    ref = outcome["changes"]["c"]["ref"]
    return Ref.objects.get(id=ref).atom_id, ref


def cited_pair(tenant: Tenant) -> tuple[str, str]:
    """A source S and an atom D citing it: purging S erases both, since D depends on it (docs/atoms.md "Decisions")."""
    s_atom, s_ref = write(tenant, "The vault code is 4-8-15-16.")
    d_atom, _ = write(tenant, "A quote of the vault code.", sources=[{"ref": s_ref, "start": 0, "end": 14}])
    return s_atom, d_atom
