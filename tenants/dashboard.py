"""What the tenant dashboard shows: memory-file usage, work waiting for people, quarantined
items, the Atom index's progress. Read-only gathering; the view picks the panels."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.db.models import Count
from django.urls import NoReverseMatch, reverse

from atoms.models import AtomStore, Revision
from tenants.memory import rules
from tenants.memory.service import pending_count, volume_for
from tenants.models import Tenant, ThreatFinding
from tenants.views_memory import StorePanel, store_panel

logger = logging.getLogger("memoryhub.dashboard")


@dataclass(frozen=True)
class Queue:
    """One count of items waiting for a person, with the page that lists them."""

    label: str
    count: int
    url: str | None
    testid: str


def url_or_none(name: str, slug: str, query: str = "") -> str | None:
    """The page's URL, or None while that page does not exist in this build."""
    try:
        return reverse(name, args=[slug]) + query
    except NoReverseMatch:
        return None


def memory_usage(tenant: Tenant) -> list[StorePanel]:
    volume = volume_for(tenant)
    return [store_panel(volume, target) for target in rules.TARGETS]


def _heads(tenant: Tenant, status: str) -> int:
    return Revision.objects.filter(tenant=tenant, is_head=True, state="active", review_status=status).count()


def atom_store(tenant: Tenant) -> AtomStore | None:
    # Not AtomStore.for_tenant: a GET of the dashboard creates nothing.
    return AtomStore.objects.filter(tenant=tenant).first()


def approvals(tenant: Tenant, store: AtomStore | None) -> list[Queue]:
    """Memory-file writes staged for review; unreviewed atoms when the tenant requires
    approval (otherwise they are visible already and nothing waits)."""
    slug = tenant.slug
    queues = [Queue("Memory-file writes", pending_count(volume_for(tenant)), url_or_none("memory-pending", slug),
                    "pending-memory")]
    if store is not None and store.require_approval:
        queues.append(Queue("Unreviewed atoms", _heads(tenant, "unreviewed"),
                            url_or_none("atoms", slug, "?review=unreviewed&state=active"), "pending-atoms"))
    return queues


def quarantined(tenant: Tenant) -> list[Queue]:
    slug = tenant.slug
    findings = ThreatFinding.objects.filter(volume=volume_for(tenant), resolved_at__isnull=True).count()
    atoms = Revision.objects.filter(tenant=tenant, is_head=True, review_status="quarantined").count()
    return [Queue("Memory-file findings", findings, url_or_none("memory-findings", slug), "quarantine-memory"),
            Queue("Quarantined atoms", atoms, url_or_none("atoms-quarantine", slug), "quarantine-atoms")]


def atom_summary(tenant: Tenant, store: AtomStore | None) -> dict[str, Any]:
    barrier = (store.purge_barrier if store else None) or None
    purge_url = None
    if barrier:
        try:
            purge_url = reverse("atoms-purge-progress", args=[tenant.slug, barrier["atomId"]])
        except NoReverseMatch:
            purge_url = None
    return {"active": Revision.objects.filter(tenant=tenant, is_head=True, state="active").count(),
            "require_approval": bool(store and store.require_approval),
            "purge_pending": barrier, "purge_url": purge_url}


# --- index progress ------------------------------------------------------------------------

def _events_per_policy(tenant: Tenant) -> dict[str, int]:
    """Revisions per policy: the length of each policy's feed (docs/atoms.md "Semantic index"), indexed or not."""
    rows = Revision.objects.filter(tenant=tenant).values("policy").annotate(n=Count("id")).order_by()
    return {row["policy"]: row["n"] for row in rows}


def index_panel(tenant: Tenant) -> dict[str, Any]:
    """`index_status` shaped for the progress panel: per policy done / pending (events of
    the policy's feed behind and ahead of its checkpoint) and, from the overall rate, an
    estimate of the time left. `available` is False when the status cannot be read."""
    try:
        from atoms.services.index_status import index_status
    except ImportError:
        return {"available": False, "reason": "Index status is not available in this build."}
    try:
        status = index_status(tenant)
    except Exception:  # the panel must never take the dashboard down
        logger.exception("index status of %s failed", tenant.slug)
        return {"available": False, "reason": "Index status could not be read; see the server log."}
    totals = _events_per_policy(tenant)
    rate = float(status.get("rate") or 0)
    rows = []
    for item in status.get("policies", []):
        pending = int(item.get("backlog", 0))
        total = max(totals.get(item["policy"], 0), pending)
        done = total - pending
        rows.append({
            "policy": item["policy"], "done": done, "pending": pending, "total": total,
            "drained": bool(item.get("drained")), "checkpoint": (item.get("checkpoint") or {}).get("seq", 0),
            "head": item.get("headSeq", 0), "pct": 100 if total == 0 else done * 100 // total,
            "eta": round(pending / rate) if rate > 0 and pending else None,
        })
    return {"available": True, "ready": bool(status.get("ready")), "encoder": status.get("encoder"),
            "configured": status.get("configured", status.get("encoder") is not None), "error": status.get("error"),
            "generation": status.get("indexGeneration"), "indexed": status.get("indexed", 0), "rate": rate,
            "policies": rows, "backlog": sum(r["pending"] for r in rows)}
