"""The quarantine queue (`t/<slug>/atoms/quarantine/`): heads the threat scanner flagged,
oldest first, each with what the scanner found, and approve or retire for reviewers.

The findings are recomputed with the scanner that flagged the text (memoryhub/threats.py,
the one memory files use), so a pattern update shows here at once; a head that no longer
matches anything still waits for a person, since quarantine is only lifted by review.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import HttpResponse
from django.template.response import TemplateResponse
from django.views.decorators.http import require_GET

from atoms.models import ReviewStatus, Revision
from atoms.ui.common import barrier_response
from memoryhub import threats
from tenants.models import Role
from tenants.ui import tenant_view
from tenants.ui_render import render_page
from tenants.ui_request import TenantRequest, can_act

QUEUE_SIZE = 50
TEMPLATE = "atoms/quarantine.html"


@dataclass
class QueueItem:
    head: Revision
    findings: list[threats.Finding]

    @property
    def first(self) -> threats.Finding | None:
        return self.findings[0] if self.findings else None


def quarantine_context(request: TenantRequest, **extra: Any) -> dict[str, Any]:
    heads = Revision.objects.filter(tenant=request.tenant, is_head=True, review_status=ReviewStatus.QUARANTINED)
    total = heads.count()
    items = [QueueItem(head=h, findings=threats.scan(h.body)) for h in heads.order_by("seq", "atom_id")[:QUEUE_SIZE]]
    return {"items": items, "total": total, "shown": len(items), "can_act": can_act(request), "focus": "",
            "reason": "", **extra}


def render_quarantine(request: TenantRequest, *, event: str = "", **extra: Any) -> TemplateResponse:
    return render_page(request, TEMPLATE, quarantine_context(request, **extra), partial="quarantine-panel", event=event)


@tenant_view(Role.VIEWER)
@require_GET
def quarantine_queue(request: TenantRequest) -> HttpResponse:
    closed = barrier_response(request)
    if closed is not None:
        return closed
    return render_quarantine(request)
