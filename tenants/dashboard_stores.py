"""The memory files' and the KV store's parts of the dashboard (registered from
tenants.apps; the Atom store registers its own from atoms.apps)."""

from __future__ import annotations

from typing import Any

from django.urls import reverse

from tenants.dashboard import Cell, DashboardPanel, Day, Notice, Queue, StoreDay, register_panel
from tenants.memory import rules
from tenants.memory.importing import FILE_NAMES
from tenants.memory.service import pending_count, volume_for
from tenants.models import MemoryVolume, Tenant, ThreatFinding
from tenants.templatetags.when import as_datetime
from tenants.views_memory import store_panel

KV_WRITES = ("kv.set", "kv.delete", "kv.clear")


# --- Memory files ---------------------------------------------------------------------------

def _open_findings(volume: MemoryVolume) -> int:
    return ThreatFinding.objects.filter(volume=volume, resolved_at__isnull=True).count()


def memory_card(tenant: Tenant) -> dict[str, Any]:
    volume = volume_for(tenant)
    return {"stores": [store_panel(volume, target) for target in rules.TARGETS]}


def memory_notices(tenant: Tenant) -> list[Notice]:
    """A hand-edited file (drift, docs/memory-files.md "How it works") and open threat
    findings: both keep something from agents until a person acts."""
    volume = volume_for(tenant)
    found: list[Notice] = []
    for target in rules.TARGETS:
        drift = getattr(volume, f"{target}_drift")
        if drift:
            found.append(Notice(
                text=f"{FILE_NAMES[target]} on disk differs from the database: the file is not rewritten "
                     "until a reviewer imports or overwrites it.",
                testid=f"drift-notice-{target}", url=reverse("memory-drift", args=[tenant.slug]),
                link_text="Resolve on the Drift tab", since=as_datetime(drift.get("since")), is_error=True))
    if findings := _open_findings(volume):
        found.append(Notice(
            text=f"{findings} open threat finding{'s' if findings != 1 else ''} in the memory files.",
            testid="findings-notice", url=reverse("memory-findings", args=[tenant.slug]),
            link_text="Review the findings", is_error=True))
    return found


def memory_queues(tenant: Tenant) -> list[Queue]:
    volume = volume_for(tenant)
    slug = tenant.slug
    return [Queue("Memory-file writes", pending_count(volume), reverse("memory-pending", args=[slug]), "pending-memory"),
            Queue("Memory-file findings", _open_findings(volume), reverse("memory-findings", args=[slug]),
                  "quarantine-memory", kind="quarantine")]


def _decided_url(day: Day) -> str:
    # The pending queue's Decided tab lists decisions newest first, so today's lead.
    return reverse("memory-pending", args=[day.tenant.slug]) + "?show=decided"


def memory_today(day: Day) -> StoreDay:
    # Writes are the committed versions (`memory.<origin>.write`, approvals' included); a
    # quarantine is a threat finding recorded today, resolved since or not.
    volume = volume_for(day.tenant)
    flagged = ThreatFinding.objects.filter(volume=volume, found_at__gte=day.start).count()
    return StoreDay("Memory files", "today-memory", {
        "writes": Cell(day.count_where(lambda a: a.startswith("memory.") and a.endswith(".write")),
                       day.audit_url(object_type="memory_store")),
        "approvals": Cell(day.count("memory.approve"), _decided_url(day)),
        "rejections": Cell(day.count("memory.reject"), _decided_url(day)),
        "quarantines": Cell(flagged, reverse("memory-findings", args=[day.tenant.slug])),
    })


# --- KV -------------------------------------------------------------------------------------

def kv_today(day: Day) -> StoreDay:
    return StoreDay("KV", "today-kv", {"writes": Cell(day.count(*KV_WRITES), day.audit_url(action="kv."))})


def register() -> None:
    register_panel(DashboardPanel("memory", order=10, card="tenants/dashboard.html#memory-usage", context=memory_card,
                                  notices=memory_notices, queues=memory_queues, today=memory_today))
    register_panel(DashboardPanel("kv", order=5, today=kv_today))
