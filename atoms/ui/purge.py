"""Purge pages (docs/atoms.md "In the web UI: read playground and purge" and "Review UI"; admins only): a dry-run preview, a confirmed start, and a
progress view that ends with the erasure receipt.

The preview is `atoms_purge` with a dry-run `PurgeCommand`, which changes nothing. Confirming re-runs the
dry run and refuses if the affected set changed since the preview was shown (the form
carries its digest), then raises the purge barrier with a `maxWork: 0` call (so the tenant's
Atom API closes before the response) and queues `atoms.purge_run` on commit, which does the
work in `maxWork` slices. Every call acts as the signed-in admin, `user:<username>`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django import forms
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import push_url

from atoms.api.purge import purge_json
from atoms.errors import AtomError
from atoms.models import Atom, AtomStore, ErasureReceipt, PurgedAtom
from atoms.services.purge import PurgeCommand, atoms_purge
from atoms.services.purge_slices import run_state
from atoms.services.purge_steps import Checkpoint
from atoms.tasks import purge_run
from atoms.ui.common import person_of
from atoms.ui.playground import pretty
from memoryhub.digests import digest_of
from memoryhub.enqueue import enqueue_on_commit
from tenants.forms import PostedText, Ticked, first_error
from tenants.models import Role, Tenant
from tenants.ui import tenant_view
from tenants.ui_render import render_page, wants_partial
from tenants.ui_request import TenantRequest

PREVIEW_ROWS = 200  # atoms listed in full; the rest are counted
TEXT_PREVIEW = 240
PHASES = (("dependencies", "Finding dependants"), ("revisions", "Reading what they stored"),
          ("erase", "Erasing atoms"), ("metadata", "Finishing: index generation and receipt"))


def _when(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, tz=UTC)


def _pending_barrier(tenant: Tenant) -> dict[str, Any] | None:
    return AtomStore.get_or_create_for(tenant).purge_barrier or None


# --- preview -----------------------------------------------------------------------------

def _affected_rows(tenant: Tenant, atom_ids: list[str], requested: str) -> list[dict[str, Any]]:
    shown = atom_ids[:PREVIEW_ROWS]
    atoms = {a.id: a for a in Atom.objects.filter(tenant=tenant, id__in=shown).select_related("head")}
    rows = []
    for atom_id in sorted(shown, key=lambda i: (i != requested, i)):  # the requested atom first
        atom = atoms.get(atom_id)
        head = atom.head if atom else None
        body = head.body if head else ""
        rows.append({"id": atom_id, "requested": atom_id == requested, "policy": atom.policy if atom else "",
                     "state": head.state if head else "", "review": head.review_status if head else "",
                     "origin": head.origin if head else "", "text": body[:TEXT_PREVIEW],
                     "cut": len(body) > TEXT_PREVIEW})
    return rows


def _dry_run(request: TenantRequest, atom_id: str) -> dict[str, Any]:
    """The preview context. An atom this tenant does not have is a 404."""
    try:
        result = atoms_purge(PurgeCommand(caller=person_of(request), atom_id=atom_id, dry_run=True))
    except AtomError as exc:
        if exc.code == "INVALID_REF":
            raise Http404("No such atom.") from exc
        return {"atom_id": atom_id, "error": {"code": exc.code, "message": exc.message}}
    affected = result.affected_atom_ids
    # The page shows the dry run as the API answers it (the template reads the same keys).
    preview = purge_json(result)
    return {"atom_id": atom_id, "preview": preview, "affected_digest": digest_of(affected),
            "rows": _affected_rows(request.tenant, affected, atom_id),
            "more": max(0, len(affected) - PREVIEW_ROWS), "preview_json": pretty(preview)}


class PurgeConfirmForm(forms.Form):
    """The confirmation: the box ticked, and the digest of the affected set the preview showed
    (compared with a fresh dry run by the view)."""

    confirm = Ticked(required=True, error_messages={"required": "Tick the box to confirm the erasure."})
    affected = PostedText()


def _render_preview(request: TenantRequest, context: dict[str, Any]) -> TemplateResponse:
    return render_page(request, "atoms/purge.html", context, partial="purge-panel")


@tenant_view(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def purge_page(request: TenantRequest, atom_id: str) -> HttpResponse:
    """GET: the dry-run preview. POST (confirm): start the purge and show its progress."""
    tenant = request.tenant
    barrier = _pending_barrier(tenant)
    if (barrier and barrier["atomId"] == atom_id) or PurgedAtom.objects.filter(tenant=tenant, atom_id=atom_id).exists():
        # Running or done: there is nothing to preview or confirm any more.
        return _progress_response(request, atom_id)
    if barrier:
        if not Atom.objects.filter(tenant=tenant, id=atom_id).exists():
            raise Http404("No such atom.")
        other = barrier["atomId"]
        return _render_preview(request, {"atom_id": atom_id, "blocked_by": other,
                                         "blocked_url": reverse("atoms-purge-progress", args=[tenant.slug, other])})
    context = _dry_run(request, atom_id)
    if request.method == "GET" or "preview" not in context:
        return _render_preview(request, context)
    form = PurgeConfirmForm(request.POST)
    if not form.is_valid():
        return _render_preview(request, {**context, "confirm_error": first_error(form)})
    if form.cleaned_data["affected"] != context["affected_digest"]:
        return _render_preview(request, {**context, "changed": True})
    try:
        # maxWork 0 raises the barrier and does no erasing; the task does the rest.
        atoms_purge(PurgeCommand(caller=person_of(request), atom_id=atom_id, max_work=0))
    except AtomError as exc:
        return _render_preview(request, {**context, "error": {"code": exc.code, "message": exc.message}})
    enqueue_on_commit(purge_run, tenant.pk, atom_id, request.user.get_username())
    progress_url = reverse("atoms-purge-progress", args=[tenant.slug, atom_id])
    if not wants_partial(request):
        return redirect(progress_url)
    return push_url(_progress_response(request, atom_id), progress_url)


# --- progress and receipt ----------------------------------------------------------------

def _phases(current: str) -> list[dict[str, str]]:
    names = [name for name, _ in PHASES]
    at = names.index(current) if current in names else len(names)
    return [{"name": name, "label": label, "status": "done" if i < at else "current" if i == at else "todo"}
            for i, (name, label) in enumerate(PHASES)]


def _percent(cp: Checkpoint) -> int:
    """A rough overall figure for the bar: the closure grows while dependencies are found,
    so early numbers are estimates; the phase list says exactly where the purge is."""
    size = max(1, len(cp.closure))
    phase = cp.phase()
    if phase == "dependencies":
        return 10 * cp.expanded // size
    if phase == "revisions":
        return 10 + 20 * cp.scanned // size
    if phase == "erase":
        return 30 + 65 * cp.erased // size
    return 95


def progress_context(tenant: Tenant, atom_id: str) -> dict[str, Any]:
    # An atom's PurgedAtom row is written when that atom is erased, which is before the rest
    # of its purge set and the receipt; the receipt is kept in the transaction that lowers
    # the barrier (docs/atoms.md "In the web UI: read playground and purge", step 4). So an
    # erased atom without its receipt belongs to the purge still running: the barrier's.
    barrier = _pending_barrier(tenant)
    purged = PurgedAtom.objects.filter(tenant=tenant, atom_id=atom_id).first()
    row = (ErasureReceipt.objects.filter(tenant=tenant, id=purged.erasure_id).first()
           if purged is not None else None)
    if barrier and (barrier["atomId"] == atom_id or (purged is not None and row is None)):
        cp = Checkpoint.from_json(barrier["checkpoint"])
        return {"atom_id": barrier["atomId"], "state": "running", "barrier": barrier, "phase": cp.phase(),
                "phases": _phases(cp.phase()), "percent": _percent(cp), "closure": len(cp.closure),
                "expanded": cp.expanded, "scanned": cp.scanned, "erased": cp.erased,
                "started": _when(barrier.get("startedAt")),
                "run": run_state(tenant.pk, barrier["atomId"]) or {}}
    if purged is not None:
        receipt = row.receipt if row else None
        return {"atom_id": atom_id, "state": "complete", "receipt": receipt,
                "receipt_json": pretty(receipt) if receipt else "",
                "started": _when(receipt and receipt.get("startedAt")),
                "completed": _when(receipt and receipt.get("completedAt")),
                "counts": sorted((receipt or {}).get("counts", {}).items())}
    if not Atom.objects.filter(tenant=tenant, id=atom_id).exists():
        raise Http404("No such atom.")
    return {"atom_id": atom_id, "state": "none"}


def _progress_response(request: TenantRequest, atom_id: str) -> TemplateResponse:
    context = progress_context(request.tenant, atom_id)
    return render_page(request, "atoms/purge_progress.html", context, partial="purge-progress")


@tenant_view(Role.ADMIN)
@require_GET
def purge_progress(request: TenantRequest, atom_id: str) -> HttpResponse:
    """The purge's phase while it runs (htmx polls the partial), then its erasure receipt."""
    return _progress_response(request, atom_id)


@tenant_view(Role.ADMIN)
@require_POST
def purge_resume(request: TenantRequest, atom_id: str) -> HttpResponse:
    """Queue the slice task again for a pending purge (after storage errors used up its retries)."""
    tenant = request.tenant
    barrier = _pending_barrier(tenant)
    if barrier and barrier["atomId"] == atom_id:
        enqueue_on_commit(purge_run, tenant.pk, atom_id, request.user.get_username())
    if not wants_partial(request):
        return redirect("atoms-purge-progress", slug=tenant.slug, atom_id=atom_id)
    return _progress_response(request, atom_id)
