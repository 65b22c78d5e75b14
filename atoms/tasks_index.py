"""Celery tasks of the semantic index (docs/atoms.md "Semantic index"): thin, idempotent, taking ids."""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import worker_init
from django.conf import settings
from django.db import OperationalError

from atoms import embedding
from atoms.embedding import ModelSpaceMismatch, ProviderUnavailable, has_provider, tenant_provider
from atoms.errors import AtomError
from atoms.models import AtomStore, IndexEntry, VectorIndexSnapshot, VectorTombstone
from atoms.services.feed import feed_positions
from atoms.services.indexing import index_drain, served_policies
from atoms.vector_index import current_layout, refresh
from memoryhub.enqueue import enqueue_now
from tenants.models import Tenant

logger = logging.getLogger("atoms.index")


@worker_init.connect
def _mark_worker(**_: object) -> None:
    """The encoder built in this process (or its pool children) may use the worker's torch
    thread count (ATOMS_WORKER_TORCH_THREADS) instead of the web processes' one."""
    embedding.IN_WORKER = True


@shared_task(name="atoms.index_update", autoretry_for=(OperationalError,), max_retries=5, retry_backoff=5,
             retry_backoff_max=120, retry_jitter=True)
def index_update(tenant_id: int, policy: str) -> dict[str, object]:
    """Run steps of ATOMS_INDEX_TASK_STEP events of one policy's feed for up to 30 s, refresh the vector index,
    and queue itself again while events are pending. Exits quietly when another worker
    holds the feed (REVISION_CONFLICT) or the tenant has no working provider."""
    tenant = Tenant.objects.filter(pk=tenant_id).first()
    if tenant is None:
        return {"skipped": "no such tenant"}
    try:
        loaded = tenant_provider(tenant)
    except ProviderUnavailable as exc:
        logger.error("tenant %s: embedding provider unavailable: %s", tenant_id, exc)
        return {"skipped": "provider unavailable"}
    if loaded is None:
        return {"skipped": "no provider"}
    try:
        result = index_drain(tenant=tenant, loaded=loaded, policy=policy, step=settings.ATOMS_INDEX_TASK_STEP)
    except AtomError as exc:
        if exc.code == "REVISION_CONFLICT":
            return {"skipped": "another worker holds this feed"}
        raise
    except ModelSpaceMismatch as exc:
        logger.error("tenant %s: %s", tenant_id, exc)
        return {"skipped": "model space mismatch"}
    if result.indexed:
        refresh(tenant_id, loaded.config)
    if result.pending:
        enqueue_now(index_update, tenant_id, policy)
    return {"indexed": result.indexed, "processed": result.processed, "pending": result.pending}


@shared_task(name="atoms.index_sweep")
def index_sweep() -> dict[str, int]:
    """Every minute: queue index_update for each served policy with a backlog (a write whose
    task was lost still gets indexed), and refresh vector files that fell behind, are
    missing, or have an earlier layout (docs/atoms.md "Semantic index")."""
    queued = refreshed = 0
    for store in AtomStore.objects.select_related("tenant"):
        if not has_provider(store):
            continue
        try:
            loaded = tenant_provider(store.tenant, store)
        except ProviderUnavailable:
            continue
        if loaded is None:
            continue
        # The index counters (docs/atoms.md "Index counters"): two queries per tenant, not
        # a count of revisions per served policy every minute.
        for policy, (feed, checkpoint) in feed_positions(store.tenant, loaded.config,
                                                         served_policies(store.tenant)).items():
            if feed.events > checkpoint.consumed:
                enqueue_now(index_update, store.tenant_id, policy)
                queued += 1
        snapshot = VectorIndexSnapshot.objects.filter(tenant=store.tenant, config=loaded.config).first()
        newest = IndexEntry.objects.filter(tenant=store.tenant, config=loaded.config).order_by("-id").first()
        behind = newest is not None and (snapshot is None or newest.id > snapshot.built_through)
        # A file of an earlier layout answers, more slowly, until a refresh rebuilds it; a
        # missing one leaves only the newest entries to the semantic channel.
        rebuild = snapshot is not None and not current_layout(snapshot.path)
        if behind or rebuild or VectorTombstone.objects.filter(tenant=store.tenant, config=loaded.config).exists():
            # Without waiting: a rebuild still at work from an earlier sweep is left to finish.
            enqueue_now(refresh_vectors, store.tenant_id, loaded.config, wait=False)
            refreshed += 1
    return {"queued": queued, "refreshed": refreshed}


@shared_task(name="atoms.refresh_vectors", autoretry_for=(OperationalError,), max_retries=3, retry_backoff=5)
def refresh_vectors(tenant_id: int, config: str, full: bool = False, wait: bool = True) -> dict[str, object]:
    """Bring the tenant's vector index file up to date (from scratch with `full`); without
    `wait`, skip it while another refresh holds the file (atoms.vector_index.refresh)."""
    snapshot = refresh(tenant_id, config, full=full, wait=wait)
    return {"version": snapshot.version if snapshot else None}
