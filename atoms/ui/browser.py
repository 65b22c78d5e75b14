"""The atom browser (`t/<slug>/atoms/`) and the nav's quarantine badge.

Without a query it lists the tenant's heads newest first (by commit `seq`, then atom id),
paged by a signed cursor naming the last row's (seq, atom id): rows written meanwhile
never shift a page the way offsets would. With a query it ranks with search's own pipeline
as the signed-in person (atoms/services/ranking_readonly.py, shared with the link picker),
so the order is exactly what `atoms_search` gives an API key with the same policies, but a
GET writes nothing: no receipt, no ref, no search cursor. Its pages follow a signed cursor
of our own carrying the position in the ranking.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.views.decorators.http import require_GET

from atoms.errors import AtomError
from atoms.models import HIDDEN_REVIEW, Revision, RevisionState
from atoms.services.ranking_readonly import page_of, rank
from atoms.ui.common import (
    ORIGINS,
    REVIEW_STATUSES,
    STATES,
    barrier_response,
    error_text,
    person_of,
    quarantine_count,
    query_string,
    tenant_policies,
)
from memoryhub.keyset import BadCursor, open_cursor, sign_cursor
from tenants.models import Role, Tenant
from tenants.ui import tenant_view
from tenants.ui_render import render_page
from tenants.ui_request import TenantRequest

PAGE_SIZE = 25
CURSOR_SALT = "memoryhub.atoms.ui.browse"
SEARCH_SALT = "memoryhub.atoms.ui.search"
# Search ranks active, visible heads only (docs/atoms.md "Recall"); these filters can only be met by listing.
SEARCH_CANNOT = {"state": (RevisionState.RETIRED,), "review": HIDDEN_REVIEW}


@dataclass(frozen=True)
class Filters:
    q: str = ""
    state: str = ""
    review: str = ""
    policy: str = ""
    origin: str = ""

    @classmethod
    def from_request(cls, request: HttpRequest, policies: list[str]) -> Filters:
        get = request.GET

        def pick(name: str, allowed: tuple[str, ...] | list[str]) -> str:
            value = get.get(name, "")
            return value if value in allowed else ""

        return cls(q=get.get("q", "").strip()[:500], state=pick("state", STATES), review=pick("review", REVIEW_STATUSES),
                   policy=pick("policy", policies), origin=pick("origin", ORIGINS))

    def params(self, **extra: str) -> dict[str, str]:
        return {"q": self.q, "state": self.state, "review": self.review, "policy": self.policy,
                "origin": self.origin, **extra}

    def applies_to(self, revision: Revision) -> bool:
        """The filters other than the query and the policy (search applies those itself)."""
        return ((not self.state or revision.state == self.state)
                and (not self.review or revision.review_status == self.review)
                and (not self.origin or revision.origin == self.origin))


@dataclass
class Row:
    revision: Revision
    score: float | None = None


def _listing(tenant: Tenant, filters: Filters) -> dict[str, Any]:
    return {"t": tenant.pk, "f": filters.params(q="")}


def encode_cursor(tenant: Tenant, filters: Filters, last: Revision) -> str:
    return sign_cursor({"s": last.seq, "a": last.atom_id}, salt=CURSOR_SALT, scope=_listing(tenant, filters),
                       compress=False)


def decode_cursor(raw: str, tenant: Tenant, filters: Filters) -> tuple[int, str] | None:
    """(seq, atom id) to continue after, or None when the cursor is not one of ours for
    this tenant and these filters."""
    try:
        data = open_cursor(raw, salt=CURSOR_SALT, scope=_listing(tenant, filters))
    except BadCursor:
        return None
    seq, atom_id = data.get("s"), data.get("a")
    return (seq, atom_id) if isinstance(seq, int) and isinstance(atom_id, str) else None


def heads_page(tenant: Tenant, filters: Filters, after: tuple[int, str] | None,
               limit: int = PAGE_SIZE) -> tuple[list[Revision], Revision | None]:
    """Up to `limit` heads, newest first; returns them and the last one if more remain."""
    heads = Revision.objects.filter(tenant=tenant, is_head=True)
    for name, column in (("state", "state"), ("review", "review_status"), ("policy", "policy"), ("origin", "origin")):
        value = getattr(filters, name)
        if value:
            heads = heads.filter(**{column: value})
    if after is not None:
        seq, atom_id = after
        heads = heads.filter(Q(seq__lt=seq) | Q(seq=seq, atom_id__lt=atom_id))
    found = list(heads.order_by("-seq", "-atom_id")[: limit + 1])
    return found[:limit], found[limit - 1] if len(found) > limit else None


def _search_salt(tenant: Tenant) -> str:
    # The tenant goes into the salt rather than the readable payload: a cursor names no global pk.
    return f"{SEARCH_SALT}:{tenant.pk}"


def encode_search_cursor(tenant: Tenant, filters: Filters, offset: int, last: Revision, now: int) -> str:
    return sign_cursor({"o": offset, "a": last.atom_id, "n": now}, salt=_search_salt(tenant),
                       scope={"f": filters.params()})


def decode_search_cursor(raw: str, tenant: Tenant, filters: Filters) -> tuple[int, str, int] | None:
    """(offset, last atom id shown, the ranking's clock), or None when the cursor is not one
    of ours for this tenant, this query and these filters."""
    try:
        data = open_cursor(raw, salt=_search_salt(tenant), scope={"f": filters.params()})
    except BadCursor:
        return None
    offset, atom_id, now = data.get("o"), data.get("a"), data.get("n")
    if isinstance(offset, int) and offset >= 0 and isinstance(atom_id, str) and isinstance(now, int):
        return offset, atom_id, now
    return None


def _search(request: TenantRequest, filters: Filters, cursor: str) -> dict[str, Any]:
    """search's ranking, read-only (docs/atoms.md "Review UI"): no receipt, ref or cursor
    row. A page re-ranks at the first page's clock and continues after the last atom shown
    (by its offset when that atom left the ranking), so an unchanged tenant pages exactly
    like search's frozen cursor."""
    page_error = ""
    resume = decode_search_cursor(cursor, request.tenant, filters) if cursor else None
    if cursor and resume is None:
        page_error = "That page link is no longer valid; showing the first page."
    try:
        ranking = rank(person_of(request), filters.q, read_policies=[filters.policy] if filters.policy else None,
                       now=resume[2] if resume else None)
        start = 0
        if resume is not None:
            offset, last, _ = resume
            ids = [revision.atom_id for revision, _ in ranking.entries]
            start = ids.index(last) + 1 if last in ids else offset
        page = page_of(ranking.entries[start:], PAGE_SIZE)
    except AtomError as error:
        return {"rows": [], "stale_rows": [], "next_cursor": "", "page_error": error_text(error)}
    rows = [Row(revision, score) for revision, score in page if filters.applies_to(revision)]
    end = start + len(page)
    next_cursor = (encode_search_cursor(request.tenant, filters, end, page[-1][0], ranking.now)
                   if end < len(ranking.entries) else "")
    return {"rows": rows, "stale_rows": [Row(r) for r in ranking.stale if filters.applies_to(r)],
            "next_cursor": next_cursor, "page_error": page_error, "filtered_out": len(page) - len(rows),
            "first_page": resume is None}


def _browse_context(request: TenantRequest) -> dict[str, Any]:
    tenant = request.tenant
    policies = tenant_policies(tenant)
    filters = Filters.from_request(request, policies)
    cursor = request.GET.get("cursor", "")
    base = reverse("atoms", args=[tenant.slug])
    context: dict[str, Any] = {"filters": filters, "policies": policies, "states": STATES,
                               "review_statuses": REVIEW_STATUSES, "origins": ORIGINS, "first_page": not cursor,
                               "first_url": base + query_string(filters.params()), "searching": bool(filters.q),
                               "search_cannot": "", "stale_rows": [], "page_error": "", "filtered_out": 0}
    if filters.q:
        blocked = [getattr(filters, name) for name, values in SEARCH_CANNOT.items() if getattr(filters, name) in values]
        if blocked:
            context.update(rows=[], next_url="", search_cannot=blocked[0])
            return context
        found = _search(request, filters, cursor)
        next_cursor = found.pop("next_cursor")
        context.update(found, next_url=base + query_string(filters.params(cursor=next_cursor)) if next_cursor else "")
        return context
    after = decode_cursor(cursor, tenant, filters) if cursor else None
    if cursor and after is None:
        context["page_error"] = "That page link is no longer valid; showing the first page."
        context["first_page"] = True
    heads, last = heads_page(tenant, filters, after)
    context.update(rows=[Row(r) for r in heads],
                   next_url=base + query_string(filters.params(cursor=encode_cursor(tenant, filters, last))) if last else "")
    return context


@tenant_view(Role.VIEWER)
@require_GET
def atom_browser(request: TenantRequest) -> HttpResponse:
    """Search or list the tenant's atoms with filters; viewers may browse."""
    closed = barrier_response(request)
    if closed is not None:
        return closed
    context = _browse_context(request)
    context["quarantined"] = quarantine_count(request.tenant)
    return render_page(request, "atoms/browser.html", context, partial="atom-list")


@tenant_view(Role.VIEWER)
@require_GET
def quarantine_badge(request: TenantRequest) -> HttpResponse:
    """The nav badge alone, refreshed in place when an `atomsChanged` event fires."""
    return TemplateResponse(request, "atoms/badge.html", {})
