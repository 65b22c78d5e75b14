"""The Atom store's part of the tenant dashboard (docs/operations.md "The tenant dashboard"),
registered from AtomsConfig.ready(): the atom counts, the index progress tile, the purge
notice, the unreviewed and quarantined counts and the atoms' row of "what changed today".
Read-only: a GET of the dashboard creates nothing."""

from __future__ import annotations

import logging
from typing import Any

from django.db.models import Count, Q
from django.urls import reverse

from atoms.models import AtomStore, ReviewStatus, Revision, RevisionState
from atoms.services.index_status import index_status
from tenants.dashboard import Cell, DashboardPanel, Day, Notice, Queue, StoreDay, register_panel
from tenants.models import Tenant

logger = logging.getLogger("memoryhub.dashboard")


def atom_store(tenant: Tenant) -> AtomStore | None:
    # Not AtomStore.get_or_create_for: a GET of the dashboard creates nothing.
    return AtomStore.objects.filter(tenant=tenant).first()


def _heads(tenant: Tenant) -> dict[str, int]:
    """Active, unreviewed-and-active and quarantined heads in one query."""
    heads = Revision.objects.filter(tenant=tenant, is_head=True)
    return heads.aggregate(
        active=Count("id", filter=Q(state=RevisionState.ACTIVE)),
        unreviewed=Count("id", filter=Q(state=RevisionState.ACTIVE, review_status=ReviewStatus.UNREVIEWED)),
        quarantined=Count("id", filter=Q(review_status=ReviewStatus.QUARANTINED)),
    )


def atoms_card(tenant: Tenant) -> dict[str, Any]:
    store = atom_store(tenant)
    return {**_heads(tenant), "require_approval": bool(store and store.require_approval)}


def atoms_notices(tenant: Tenant) -> list[Notice]:
    store = atom_store(tenant)
    barrier = (store.purge_barrier if store else None) or None
    if not barrier:
        return []
    return [Notice(text="A purge is in progress: the Atom API and Atom pages are closed until it completes.",
                   testid="purge-banner", url=reverse("atoms-purge-progress", args=[tenant.slug, barrier["atomId"]]),
                   link_text="Follow it", link_for_admins=True, is_error=True)]


def atoms_queues(tenant: Tenant) -> list[Queue]:
    """Unreviewed atoms wait only when the tenant requires approval (otherwise they are
    visible already); quarantined ones always wait."""
    store = atom_store(tenant)
    heads = _heads(tenant)
    slug = tenant.slug
    found = []
    if store is not None and store.require_approval:
        found.append(Queue("Unreviewed atoms", heads["unreviewed"],
                           reverse("atoms", args=[slug]) + "?review=unreviewed&state=active", "pending-atoms"))
    found.append(Queue("Quarantined atoms", heads["quarantined"], reverse("atoms-quarantine", args=[slug]),
                       "quarantine-atoms", kind="quarantine"))
    return found


def atoms_today(day: Day) -> StoreDay:
    # Writes are the revisions committed today (engine times are epoch milliseconds); a
    # quarantine is one of them the scanner flagged that is still waiting for a reviewer: a
    # head (a rejected one's quarantined revision stays in the history, behind the retired head).
    since = int(day.start.timestamp() * 1000)
    counts = Revision.objects.filter(tenant=day.tenant, recorded_at__gte=since).aggregate(
        written=Count("id"), quarantined=Count("id", filter=Q(review_status=ReviewStatus.QUARANTINED, is_head=True)))
    slug = day.tenant.slug
    return StoreDay("Atoms", "today-atoms", {
        "writes": Cell(counts["written"], reverse("atoms", args=[slug])),
        "approvals": Cell(day.count("atoms.approve"), day.audit_url(action="atoms.approve")),
        # Rejected atoms stay listed under their review status; an approved one is just visible.
        "rejections": Cell(day.count("atoms.reject"), reverse("atoms", args=[slug]) + "?review=rejected"),
        "quarantines": Cell(counts["quarantined"], reverse("atoms-quarantine", args=[slug])),
        "purges": Cell(day.count("atoms.purge"), day.audit_url(action="atoms.purge")),
    })


# --- Index progress -------------------------------------------------------------------------

def _events_per_policy(tenant: Tenant) -> dict[str, int]:
    """Revisions per policy: the length of each policy's feed (docs/atoms.md "Semantic index"), indexed or not."""
    rows = Revision.objects.filter(tenant=tenant).values("policy").annotate(n=Count("id")).order_by()
    return {row["policy"]: row["n"] for row in rows}


def index_card(tenant: Tenant) -> dict[str, Any]:
    """`index_status` shaped for the progress tile: per policy done / pending (events of the
    policy's feed behind and ahead of its checkpoint) and, from the overall rate, an estimate
    of the time left. Without a provider configured there is no semantic index to wait for
    (docs/atoms.md "Semantic index"): `off`, and no bars. `available` is False when the status
    cannot be read."""
    try:
        status = index_status(tenant)
    except Exception:  # the tile must never take the dashboard down
        logger.exception("index status of %s failed", tenant.slug)
        return {"available": False, "reason": "Index status could not be read; see the server log."}
    configured = bool(status.get("configured", status.get("encoder") is not None))
    if not configured:
        return {"available": True, "off": True, "generation": status.get("indexGeneration")}
    rate = float(status.get("rate") or 0)
    totals = _events_per_policy(tenant)
    rows = []
    for item in status.get("policies", []):
        pending = int(item.get("backlog", 0))
        total = max(totals.get(item["policy"], 0), pending)
        done = total - pending
        rows.append({
            "policy": item["policy"], "done": done, "pending": pending, "total": total,
            "drained": bool(item.get("drained")), "pct": 100 if total == 0 else done * 100 // total,
            "eta": round(pending / rate) if rate > 0 and pending else None,
        })
    return {"available": True, "off": False, "ready": bool(status.get("ready")), "encoder": status.get("encoder"),
            "error": status.get("error"), "generation": status.get("indexGeneration"),
            "indexed": status.get("indexed", 0), "rate": rate, "policies": rows,
            "backlog": sum(r["pending"] for r in rows)}


def register() -> None:
    register_panel(DashboardPanel("atoms", order=20, card="atoms/_dashboard.html#atoms-card", context=atoms_card,
                                  notices=atoms_notices, queues=atoms_queues, today=atoms_today))
    register_panel(DashboardPanel("index", order=90, card="atoms/_dashboard.html#index", context=index_card))
