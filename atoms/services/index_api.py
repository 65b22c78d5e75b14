"""index/update and index/prioritize for API callers (docs/atoms.md "Semantic index"): validation, then the
indexing services."""

from __future__ import annotations

from typing import Any

from atoms.embedding import LoadedProvider, ModelSpaceMismatch, ProviderUnavailable, tenant_provider
from atoms.errors import AtomError, invalid
from atoms.models import AtomStore
from atoms.principal import Principal, resolve_binding
from atoms.services.barrier import check_barrier
from atoms.services.budget import is_int
from atoms.services.indexing import DEFAULT_LIMIT, index_prioritize, index_run
from atoms.services.refs import resolve_ref

UPDATE_MAX = 1024
PRIORITIZE_LIMIT = 256


def _provider(store: AtomStore, principal: Principal) -> LoadedProvider:
    try:
        loaded = tenant_provider(principal.tenant, store)
    except ProviderUnavailable as exc:
        raise AtomError("INDEX_NOT_READY", "The embedding provider failed to load.", {"reason": str(exc)}) from exc
    if loaded is None:
        raise AtomError("INDEX_NOT_READY", "This tenant has no embedding provider.", {"reason": "no-provider"})
    return loaded


def _limit(raw: Any, default: int, maximum: int) -> int:
    options = {} if raw is None else raw
    if not isinstance(options, dict):
        raise invalid("options must be an object.", path="options")
    if "cursor" in options:
        raise invalid("Index calls take no cursor.", path="options.cursor")
    unknown = sorted(set(options) - {"limit"})
    if unknown:
        raise invalid(f"Unknown option {unknown[0]!r}.", path=f"options.{unknown[0]}")
    limit = options.get("limit", default)
    if not is_int(limit) or not 1 <= limit <= maximum:
        raise AtomError("INVALID_SCHEMA", f"limit must be an integer from 1 to {maximum}.", {"path": "options.limit"})
    return limit


def _mismatch(exc: ModelSpaceMismatch) -> AtomError:
    return AtomError("MODEL_SPACE_MISMATCH", "The encoder returned vectors of the wrong dimension.",
                     {"reason": str(exc)})


def atoms_index_update(*, caller: Principal, body: Any) -> dict[str, Any]:
    """Consume up to `limit` feed events over the binding's read policies, in name order."""
    store = AtomStore.for_tenant(caller.tenant)
    check_barrier(store)
    if not isinstance(body, dict) or set(body) - {"binding", "options"}:
        raise invalid("The body keys are binding and options.")
    limit = _limit(body.get("options"), DEFAULT_LIMIT, UPDATE_MAX)
    binding = resolve_binding(caller, body.get("binding"))
    loaded = _provider(store, caller)
    if not binding.read_policies:
        raise AtomError("INDEX_NOT_READY", "The binding reads no policy: there is no feed.", {"reason": "no-feed"})
    try:
        result = index_run(tenant=caller.tenant, loaded=loaded, policies=binding.read_policies, limit=limit)
    except ModelSpaceMismatch as exc:
        raise _mismatch(exc) from exc
    return {"indexed": result.indexed, "processed": result.processed, "pending": result.pending}


def atoms_index_prioritize(*, caller: Principal, body: Any) -> dict[str, Any]:
    """Encode the given refs now if they are active heads without a valid entry."""
    store = AtomStore.for_tenant(caller.tenant)
    check_barrier(store)
    if not isinstance(body, dict) or set(body) - {"binding", "refs", "options"}:
        raise invalid("The body keys are binding, refs and options.")
    limit = _limit(body.get("options"), PRIORITIZE_LIMIT, PRIORITIZE_LIMIT)
    refs = body.get("refs")
    if not isinstance(refs, list):
        raise invalid("refs must be a list of refs.", path="refs")
    if len(refs) > limit:
        raise AtomError("LIMIT_EXCEEDED", f"At most {limit} refs per call.",
                        {"path": "refs", "limit": limit, "actual": len(refs)})
    binding = resolve_binding(caller, body.get("binding"))
    revisions = [resolve_ref(binding.principal, ref, binding.read_policies, path=f"refs[{i}]")
                 for i, ref in enumerate(refs)]
    loaded = _provider(store, caller)
    try:
        indexed = index_prioritize(tenant=caller.tenant, loaded=loaded, revisions=revisions)
    except ModelSpaceMismatch as exc:
        raise _mismatch(exc) from exc
    return {"indexed": indexed}
