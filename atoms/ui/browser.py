"""The atom browser (`t/<slug>/atoms/`) and the nav's quarantine badge.

Without a query it lists the tenant's heads newest first (by commit `seq`, then atom id),
paged by a signed cursor naming the last row's (seq, atom id): rows written meanwhile
never shift a page the way offsets would. With a query it runs the real search service as
the signed-in person, so the ranking is exactly what an API key with the same policies
would get, and pages with the service's own cursor.
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
from atoms.models import Ref, Revision
from atoms.principal import Principal
from atoms.services.search import atoms_search
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
# Search ranks active, visible heads only (docs/atoms.md "Recall"); these filters can only be met by listing.
SEARCH_CANNOT = {"state": ("retired",), "review": ("quarantined", "rejected")}


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


def _revisions_of_refs(person: Principal, refs: list[str]) -> dict[str, Revision]:
    """ref → revision, for refs the search just issued to this person."""
    pairs = dict(Ref.objects.filter(tenant=person.tenant, principal=person.principal_id, id__in=refs)
                 .values_list("id", "revision_id"))
    found = {r.id: r for r in Revision.objects.filter(tenant=person.tenant, id__in=pairs.values())}
    return {ref: found[revision_id] for ref, revision_id in pairs.items() if revision_id in found}


def _search(request: TenantRequest, filters: Filters, cursor: str) -> dict[str, Any]:
    body: dict[str, Any] = {"query": filters.q, "options": {"limit": PAGE_SIZE}}
    if filters.policy:
        body["binding"] = {"readPolicies": [filters.policy]}
    page_error = ""
    person = person_of(request)
    try:
        result = atoms_search(caller=person, body={**body, "options": {**body["options"], "cursor": cursor}}
                              if cursor else body)
    except AtomError as error:
        if not cursor or (error.details or {}).get("path") != "options.cursor":
            return {"rows": [], "stale_rows": [], "next_cursor": "", "page_error": error_text(error)}
        # Expired (5 minutes), forged, or issued before the person's policies changed.
        page_error = "That page of results expired; showing the first page again."
        result = atoms_search(caller=person, body=body)
    by_ref = _revisions_of_refs(person, [item["ref"] for item in result["items"]] + result["stale"])
    rows = [Row(by_ref[item["ref"]], item["score"]) for item in result["items"]
            if item["ref"] in by_ref and filters.applies_to(by_ref[item["ref"]])]
    stale_rows = [Row(by_ref[ref]) for ref in result["stale"] if ref in by_ref and filters.applies_to(by_ref[ref])]
    return {"rows": rows, "stale_rows": stale_rows, "next_cursor": result.get("cursor", ""), "page_error": page_error,
            "filtered_out": len(result["items"]) - len(rows)}


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
