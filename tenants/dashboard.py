"""The tenant dashboard's parts (docs/operations.md "The tenant dashboard").

The dashboard knows the tenant itself (members, keys, health, recent activity) and the layout.
What a store shows there it registers as a `DashboardPanel` from its AppConfig.ready(), the
way tenant settings sections are registered (tenants/tenant_settings.py): a card in the grid,
notices above it, rows of the approval and quarantine counts, and its row of "what changed
today". So `tenants` never imports a store app that builds on it (atoms).

Everything here reads; a GET of the dashboard creates nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, time
from typing import Any, Literal
from urllib.parse import urlencode

from django.db.models import Count
from django.urls import reverse
from django.utils import timezone

from memoryhub.models import AuditEvent
from tenants.models import Tenant

logger = logging.getLogger("memoryhub.dashboard")

# The columns of "what changed today", in order.
CHANGE_KINDS = ("writes", "approvals", "rejections", "quarantines", "purges")


@dataclass(frozen=True)
class Queue:
    """One count of items waiting for a person, with the page that lists them."""

    label: str
    count: int
    url: str
    testid: str
    kind: Literal["approval", "quarantine"] = "approval"


@dataclass(frozen=True)
class Notice:
    """Something a person should act on, shown above the cards."""

    text: str
    testid: str
    url: str | None = None
    link_text: str = ""
    since: datetime | None = None  # shown as a date and "N minutes ago"
    is_error: bool = False
    link_for_admins: bool = False  # the link leads to an admin-only page


@dataclass(frozen=True)
class Cell:
    """One count of "what changed today" and the page listing those items."""

    count: int
    url: str | None = None


@dataclass(frozen=True)
class StoreDay:
    """One store's row of "what changed today"; a kind it does not have is left out."""

    store: str
    testid: str
    cells: dict[str, Cell]


@dataclass(frozen=True)
class Day:
    """What every store's row shares: the start of today and the tenant's audit actions
    since then, counted in one query for all stores."""

    tenant: Tenant
    start: datetime
    actions: dict[str, int]

    @property
    def date(self) -> str:
        return timezone.localdate(self.start).isoformat()

    def count(self, *names: str) -> int:
        return sum(self.actions.get(name, 0) for name in names)

    def count_where(self, test: Callable[[str], bool]) -> int:
        return sum(n for name, n in self.actions.items() if test(name))

    def audit_url(self, **filters: str) -> str:
        """The audit log narrowed to today (its date filter uses the same time zone)."""
        query = urlencode({**filters, "since": self.date})
        return f"{reverse('audit', args=[self.tenant.slug])}?{query}"


@dataclass(frozen=True)
class DashboardPanel:
    """A store's part of the dashboard. Every hook is optional and takes the tenant (the
    today hook takes the shared `Day`). `card` names a template (or `template#partial`)
    rendered with the `context` hook's result as `data`; it may poll `?panel=<name>`."""

    name: str
    order: int = 100
    card: str = ""
    context: Callable[[Tenant], dict[str, Any]] | None = None
    notices: Callable[[Tenant], list[Notice]] | None = None
    queues: Callable[[Tenant], list[Queue]] | None = None
    today: Callable[[Day], StoreDay | None] | None = None


@dataclass(frozen=True)
class Card:
    name: str
    template: str
    order: int
    data: dict[str, Any] = field(default_factory=dict)


_panels: dict[str, DashboardPanel] = {}


def register_panel(panel: DashboardPanel) -> None:
    """Called from an AppConfig.ready(); registering a name again replaces it."""
    _panels[panel.name] = panel


def panels() -> list[DashboardPanel]:
    return sorted(_panels.values(), key=lambda p: (p.order, p.name))


# --- Gathering ------------------------------------------------------------------------------

def _guarded(panel: DashboardPanel, hook: str, default: Any, *args: Any) -> Any:
    """One panel's failure must not take the dashboard down; the log names the panel only."""
    try:
        return getattr(panel, hook)(*args)
    except Exception:
        logger.exception("dashboard panel %s: %s failed", panel.name, hook)
        return default


def cards(tenant: Tenant) -> list[Card]:
    return [_card(p, tenant) for p in panels() if p.card]


def _card(panel: DashboardPanel, tenant: Tenant) -> Card:
    data = _guarded(panel, "context", {"unavailable": True}, tenant) if panel.context else {}
    return Card(panel.name, panel.card, panel.order, data)


def card(tenant: Tenant, name: str) -> Card | None:
    """One card for an htmx poll, or None for a name without one."""
    panel = _panels.get(name)
    return _card(panel, tenant) if panel is not None and panel.card else None


def notices(tenant: Tenant) -> list[Notice]:
    return [n for p in panels() if p.notices for n in _guarded(p, "notices", [], tenant)]


def queues(tenant: Tenant) -> dict[str, list[Queue]]:
    found = [q for p in panels() if p.queues for q in _guarded(p, "queues", [], tenant)]
    return {kind: [q for q in found if q.kind == kind] for kind in ("approval", "quarantine")}


def start_of_today() -> datetime:
    """Local midnight in the site's time zone (settings.TIME_ZONE): the audit log's date
    filter counts days in the same zone, so the links show what was counted."""
    return timezone.make_aware(datetime.combine(timezone.localdate(), time.min), timezone.get_current_timezone())


def today(tenant: Tenant) -> dict[str, Any]:
    """The "what changed today" table: one audit query shared by all stores plus what each
    store counts from its own rows, so the number of queries does not grow with the events."""
    start = start_of_today()
    rows = (AuditEvent.objects.for_tenant(tenant).filter(created_at__gte=start)
            .values("action").annotate(n=Count("id")).order_by())
    day = Day(tenant, start, {row["action"]: row["n"] for row in rows})
    stores = [row for p in panels() if p.today if (row := _guarded(p, "today", None, day)) is not None]
    peak = max((c.count for row in stores for c in row.cells.values()), default=0)
    table = [{"store": row.store, "testid": row.testid,
              "cells": [(kind, row.cells.get(kind), _pct(row.cells.get(kind), peak)) for kind in CHANGE_KINDS]}
             for row in stores]
    return {"start": start, "kinds": CHANGE_KINDS, "rows": table,
            "total": sum(c.count for row in stores for c in row.cells.values())}


def _pct(cell: Cell | None, peak: int) -> int:
    # Bars compare the cells of the table with each other; the largest count is a full bar.
    return 0 if cell is None or not peak else cell.count * 100 // peak
