"""index/status (docs/atoms.md "Semantic index" "Readiness") and the progress figures the UI shows.

`ready` is true only when a provider exists and loads, and every served policy (readable by
some active key) is drained: its checkpoint has reached the policy's latest feed position.
A single `pending: false` from index/update proves nothing corpus-wide; this does.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from atoms.core.embedding import index_config
from atoms.embedding import ProviderUnavailable, describe, provider_spec
from atoms.models import AtomStore, IndexEntry
from atoms.services.feed import feed_positions
from atoms.services.indexing import served_policies
from tenants.models import Tenant

RATE_WINDOW = timedelta(minutes=5)


def index_status(tenant: Tenant, *, progress: bool = True) -> dict[str, Any]:
    """The API's status document; with `progress`, also `indexed` (entries under the current
    config), `rate` (entries made per second over the last five minutes) and `error` (why the
    provider did not load), which the dashboard shows.

    The policy rows come from the maintained counters (docs/atoms.md "Index counters"): one
    query for the served policies, one for their feeds and one for their checkpoints, however
    many policies and keys the tenant has."""
    store = AtomStore.get_or_create_for(tenant)
    spec = provider_spec(store)
    error = None
    try:
        encoder = describe(spec)
    except ProviderUnavailable as exc:
        encoder, error = None, str(exc)
    config = index_config(*encoder) if encoder else None
    policies: list[dict[str, Any]] = []
    for policy, (feed, checkpoint) in feed_positions(tenant, config, served_policies(tenant)).items():
        waiting = feed.events - checkpoint.consumed
        policies.append({"policy": policy, "checkpoint": {"seq": checkpoint.seq, "revisionId": checkpoint.revision_id},
                         "headSeq": feed.head_seq, "backlog": waiting, "drained": waiting == 0})
    result: dict[str, Any] = {
        "ready": encoder is not None and all(p["drained"] for p in policies),
        "config": config, "indexGeneration": store.index_generation, "policies": policies,
    }
    if encoder is not None:
        result["encoder"] = {"id": encoder[0], "dimensions": encoder[1]}
    if progress:
        entries = IndexEntry.objects.filter(tenant=tenant, config=config) if config else IndexEntry.objects.none()
        recent = entries.filter(created_at__gte=timezone.now() - RATE_WINDOW).count()
        result["indexed"] = entries.count()
        result["rate"] = round(recent / RATE_WINDOW.total_seconds(), 2)
    result["configured"] = spec is not None
    result["error"] = error
    return result


def status_response(tenant: Tenant) -> dict[str, Any]:
    """Only the keys the API documents."""
    full = index_status(tenant, progress=False)
    keys = ("ready", "encoder", "config", "indexGeneration", "policies")
    return {key: full[key] for key in keys if key in full}
