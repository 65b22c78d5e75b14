"""Shared plumbing of the Atom review pages: the tenant's atoms, the person as a principal,
and the purge barrier. The request, who acts and how a page answers are the tenant pages'
own (tenants/ui_request.py, tenants/ui_render.py)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from django.http import Http404
from django.template.response import TemplateResponse

from atoms.errors import AtomError
from atoms.models import Atom, AtomStore, OriginKind, ReviewStatus, Revision, RevisionState
from atoms.principal import Principal
from tenants.models import Tenant
from tenants.ui_request import TenantRequest

ATOMS_CHANGED = "atomsChanged"  # the nav badge listens (atoms/badge.html)
# The browser's filter choices, in the order its menus show them.
REVIEW_STATUSES = (ReviewStatus.APPROVED, ReviewStatus.UNREVIEWED, ReviewStatus.QUARANTINED, ReviewStatus.REJECTED)
STATES = tuple(RevisionState)
ORIGINS = tuple(OriginKind)


def person_of(request: TenantRequest) -> Principal:
    """The signed-in person as the Atom engine's principal (docs/atoms.md "Decisions":
    subject `user:<username>`, human, every policy the tenant holds atoms in); the same
    person that actor_of names in audit rows."""
    return Principal.for_person(request.tenant, request.user.get_username())


def atom_or_404(request: TenantRequest, atom_id: str) -> Atom:
    """The tenant's atom with its head; another tenant's (or a purged) atom is simply not found."""
    atom = Atom.objects.select_related("head").filter(tenant=request.tenant, id=atom_id).first()
    if atom is None or atom.head is None:
        raise Http404("No such atom.")
    return atom


def tenant_policies(tenant: Tenant) -> list[str]:
    return sorted(set(Atom.objects.filter(tenant=tenant).values_list("policy", flat=True).distinct()))


def quarantine_count(tenant: Tenant) -> int:
    return Revision.objects.filter(tenant=tenant, is_head=True, review_status=ReviewStatus.QUARANTINED).count()


def purge_pending(tenant: Tenant) -> bool:
    # Read only (not AtomStore.get_or_create_for, which creates the row): a page view writes nothing.
    return bool(AtomStore.objects.filter(tenant=tenant).values_list("purge_barrier", flat=True).first())


def barrier_response(request: TenantRequest) -> TemplateResponse | None:
    """While a purge is pending every Atom page and action is closed (docs/atoms.md "In the web UI: read playground and purge"): a 403
    page that says why, instead of showing atoms that are half erased."""
    if not purge_pending(request.tenant):
        return None
    return TemplateResponse(request, "atoms/barrier.html", {}, status=403)


def error_text(error: AtomError) -> str:
    """An engine error as a person reads it."""
    if error.code == "ACCESS_DENIED" and (error.details or {}).get("reason") == "erasure-incomplete":
        return "A purge is in progress; try again when it completes."
    if error.code == "REVISION_CONFLICT":
        return "Someone changed this atom since you loaded the page; reload to see the new revision."
    return f"{error.message} ({error.code})"


def from_ms(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def query_string(params: dict[str, Any]) -> str:
    """`?a=1&b=2` without the empty ones ("" when nothing is left)."""
    kept = {k: v for k, v in params.items() if v not in (None, "")}
    return f"?{urlencode(kept)}" if kept else ""
