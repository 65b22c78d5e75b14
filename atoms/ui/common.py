"""Shared plumbing of the Atom review pages: the tenant's atoms, the person as a principal,
the purge barrier, and rendering (the memory pages' helpers, reused)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from django.http import Http404, HttpRequest
from django.template.response import TemplateResponse

from atoms.errors import AtomError
from atoms.models import Atom, AtomStore, Revision
from atoms.principal import Principal
from memoryhub.actors import Actor
from tenants.models import Role, Tenant
from tenants.views_memory import render as render_page  # noqa: F401 - the Atom views render through it

ATOMS_CHANGED = "atomsChanged"
REVIEW_STATUSES = ("approved", "unreviewed", "quarantined", "rejected")
STATES = ("active", "retired")
ORIGINS = ("source", "extraction", "organization", "derived", "hypothesis")


def tenant_of(request: HttpRequest) -> Tenant:
    return request.tenant  # type: ignore[attr-defined]


def can_act(request: HttpRequest) -> bool:
    return request.membership.has_role(Role.REVIEWER)  # type: ignore[attr-defined]


def actor_of(request: HttpRequest) -> Actor:
    return Actor.for_user(request.user)  # type: ignore[arg-type]


def person_of(request: HttpRequest) -> Principal:
    """The signed-in person as the Atom engine's principal (subject `user:<username>`)."""
    return Principal.for_person(tenant_of(request), request.user.get_username())


def atom_or_404(request: HttpRequest, atom_id: str) -> Atom:
    """The tenant's atom with its head; another tenant's (or a purged) atom is simply not found."""
    atom = Atom.objects.select_related("head").filter(tenant=tenant_of(request), id=atom_id).first()
    if atom is None or atom.head is None:
        raise Http404("No such atom.")
    return atom


def tenant_policies(tenant: Tenant) -> list[str]:
    return sorted(set(Atom.objects.filter(tenant=tenant).values_list("policy", flat=True).distinct()))


def quarantine_count(tenant: Tenant) -> int:
    return Revision.objects.filter(tenant=tenant, is_head=True, review_status="quarantined").count()


def purge_pending(tenant: Tenant) -> bool:
    return bool(AtomStore.for_tenant(tenant).purge_barrier)


def barrier_response(request: HttpRequest) -> TemplateResponse | None:
    """While a purge is pending every Atom page and action is closed (docs/atoms.md "In the web UI: read playground and purge"): a 403
    page that says why, instead of showing atoms that are half erased."""
    if not purge_pending(tenant_of(request)):
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
