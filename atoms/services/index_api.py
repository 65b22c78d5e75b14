"""index/update and index/prioritize for API callers (docs/atoms.md "Semantic index"): the indexing services
run for a validated command. atoms/api/index.py parses the bodies and renders the results
(docs/architecture.md "Typed services")."""

from __future__ import annotations

from dataclasses import dataclass

from atoms.embedding import LoadedProvider, ModelSpaceMismatch, ProviderUnavailable, tenant_provider
from atoms.errors import AtomError
from atoms.models import AtomStore, Revision
from atoms.principal import Binding
from atoms.services.barrier import open_store
from atoms.services.indexing import DEFAULT_LIMIT, index_prioritize, index_run
from tenants.models import Tenant


@dataclass(frozen=True)
class IndexUpdateCommand:
    binding: Binding  # its read policies are the feeds consumed, in name order
    limit: int = DEFAULT_LIMIT  # feed events to process, 1 to UPDATE_MAX (atoms/api/index.py)


@dataclass(frozen=True)
class IndexUpdateResult:
    indexed: int  # heads encoded
    processed: int  # feed events consumed
    pending: bool  # more events wait in these feeds


@dataclass(frozen=True)
class IndexPrioritizeCommand:
    binding: Binding
    revisions: tuple[Revision, ...]  # the refs, resolved for the binding's read policies


@dataclass(frozen=True)
class IndexPrioritizeResult:
    indexed: int  # heads encoded now (the others were not active heads or had a valid entry)


def _provider(store: AtomStore, tenant: Tenant) -> LoadedProvider:
    try:
        loaded = tenant_provider(tenant, store)
    except ProviderUnavailable as exc:
        raise AtomError("INDEX_NOT_READY", "The embedding provider failed to load.", {"reason": str(exc)}) from exc
    if loaded is None:
        raise AtomError("INDEX_NOT_READY", "This tenant has no embedding provider.", {"reason": "no-provider"})
    return loaded


def _mismatch(exc: ModelSpaceMismatch) -> AtomError:
    return AtomError("MODEL_SPACE_MISMATCH", "The encoder returned vectors of the wrong dimension.",
                     {"reason": str(exc)})


def atoms_index_update(command: IndexUpdateCommand) -> IndexUpdateResult:
    """Consume up to `limit` feed events over the binding's read policies, in name order."""
    binding = command.binding
    tenant = binding.principal.tenant
    loaded = _provider(open_store(tenant), tenant)
    if not binding.read_policies:
        raise AtomError("INDEX_NOT_READY", "The binding reads no policy: there is no feed.", {"reason": "no-feed"})
    try:
        result = index_run(tenant=tenant, loaded=loaded, policies=binding.read_policies, limit=command.limit)
    except ModelSpaceMismatch as exc:
        raise _mismatch(exc) from exc
    return IndexUpdateResult(indexed=result.indexed, processed=result.processed, pending=result.pending)


def atoms_index_prioritize(command: IndexPrioritizeCommand) -> IndexPrioritizeResult:
    """Encode the given refs now if they are active heads without a valid entry."""
    tenant = command.binding.principal.tenant
    loaded = _provider(open_store(tenant), tenant)
    try:
        indexed = index_prioritize(tenant=tenant, loaded=loaded, revisions=command.revisions)
    except ModelSpaceMismatch as exc:
        raise _mismatch(exc) from exc
    return IndexPrioritizeResult(indexed=indexed)
