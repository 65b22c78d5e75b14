"""The atom page (`t/<slug>/atoms/<atom id>/`): text, links out and in, sources with their
quoted spans, the full history, a diff between any two revisions, staleness, review
status, and the neighbourhood drawn as server-side SVG.

htmx requests get a partial: `diff-panel` when the diff form asks (its target), otherwise
the whole `atom-panel`, which is also what the review actions answer with.

A purged atom's address answers 410 Gone with the purge's date and erasure receipt id
(docs/atoms.md "Review UI"): the atom is known to have existed and to be gone for good.
Another tenant's atom, purged or not, stays a plain 404.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from atoms.models import Atom, ErasureReceipt, PurgedAtom, ReviewNote
from atoms.ui import diff as diffing
from atoms.ui.common import barrier_response, from_ms
from atoms.ui.graph import render_svg
from atoms.ui.reading import AtomDetail, HistoryRow, detail_of, neighbourhood
from tenants.models import Role, Tenant
from tenants.ui import tenant_view
from tenants.ui_render import render_page
from tenants.ui_request import TenantRequest, can_act

DETAIL = "atoms/detail.html"
PURGED = "atoms/purged.html"


def atom_url(slug: str, atom_id: str) -> str:
    return reverse("atom-detail", args=[slug, atom_id])


def _pick(history: list[HistoryRow], raw: str | None) -> HistoryRow | None:
    return next((row for row in history if row.revision.id == raw), None)


def diff_context(detail: AtomDetail, old_id: str | None, new_id: str | None) -> dict[str, Any]:
    """The two revisions to compare (default: the head's predecessor and the head) and the
    table. An unknown choice falls back to the default and says so."""
    history = detail.history
    error = ""
    new = _pick(history, new_id) if new_id else history[-1]
    old = _pick(history, old_id) if old_id else (history[-2] if len(history) > 1 else history[-1])
    if new is None or old is None:
        error = "That revision is not part of this atom's history; showing the latest change."
        new, old = history[-1], history[-2] if len(history) > 1 else history[-1]
    rows = diffing.diff_rows(old.revision.body, new.revision.body)
    added, removed = diffing.counts(rows)
    table = diffing.render_table(rows, old_label=f"Revision {old.number}", new_label=f"Revision {new.number}")
    return {"diff_old": old, "diff_new": new, "diff_table": mark_safe(table),  # noqa: S308 - escaped in diff.py
            "diff_same": old.revision.body == new.revision.body, "diff_added": added, "diff_removed": removed,
            "diff_error": error}


def graph_context(detail: AtomDetail, slug: str) -> dict[str, Any]:
    graph = neighbourhood(detail, lambda atom_id: atom_url(slug, atom_id))
    outgoing, incoming = len(detail.links_out), len(detail.links_in)
    description = (f"This atom in the centre, {len(graph.outgoing)} atoms it links to on the right and "
                   f"{len(graph.incoming)} atoms linking to it on the left; required links are solid and thick, "
                   f"ordinary links dashed.")
    svg = render_svg(graph, title="Links around this atom", description=description)
    return {"graph_svg": mark_safe(svg), "graph_hidden": graph.hidden,  # noqa: S308 - escaped in graph.py
            "graph_empty": not outgoing and not incoming}


def detail_context(request: TenantRequest, atom: Atom, **extra: Any) -> dict[str, Any]:
    tenant = request.tenant
    atom = Atom.objects.select_related("head").get(pk=atom.pk)  # an action may have moved the head
    detail = detail_of(tenant, atom)
    context: dict[str, Any] = {
        "detail": detail, "atom": atom, "head": detail.head, "can_act": can_act(request),
        "can_purge": request.membership.has_role(Role.ADMIN),
        # The reason of the retire or reject that made the head (docs/atoms.md "Review UI").
        "review_note": ReviewNote.objects.filter(tenant=tenant, revision=detail.head).first(),
        "history_newest_first": list(reversed(detail.history)),
        **diff_context(detail, request.GET.get("a"), request.GET.get("b")),
        **graph_context(detail, tenant.slug),
    }
    context.setdefault("draft", detail.head.body)
    context.update(extra)
    return context


def render_detail(request: TenantRequest, atom: Atom, *, event: str = "", **extra: Any) -> TemplateResponse:
    return render_page(request, DETAIL, detail_context(request, atom, **extra), partial="atom-panel", event=event)


def purged_context(tenant: Tenant, atom_id: str) -> dict[str, Any] | None:
    """When and by which erasure the tenant's atom was purged; None if it never was."""
    purged = PurgedAtom.objects.filter(tenant=tenant, atom_id=atom_id).first()
    if purged is None:
        return None
    row = ErasureReceipt.objects.filter(tenant=tenant, id=purged.erasure_id).first()
    completed = (row.receipt or {}).get("completedAt") if row else None
    return {"atom_id": atom_id, "receipt_id": purged.erasure_id,
            "purged_at": from_ms(completed) if completed else (row.created_at if row else None)}


@tenant_view(Role.VIEWER)
@require_GET
def atom_detail(request: TenantRequest, atom_id: str) -> HttpResponse:
    closed = barrier_response(request)
    if closed is not None:
        return closed
    tenant = request.tenant
    atom = Atom.objects.select_related("head").filter(tenant=tenant, id=atom_id).first()
    if atom is None or atom.head is None:
        gone = purged_context(tenant, atom_id)
        if gone is None:
            raise Http404("No such atom.")
        gone["can_purge"] = request.membership.has_role(Role.ADMIN)
        return TemplateResponse(request, PURGED, gone, status=410)
    partial = "diff-panel" if request.htmx.target == "diff-panel" else "atom-panel"
    return render_page(request, DETAIL, detail_context(request, atom), partial=partial)
