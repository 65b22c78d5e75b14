"""Access rules for the HTMX pages: membership first (else 404), then role (else 403), then
the tenant's suspension: a suspended tenant's pages answer reads only (docs/operations.md
"Suspending a tenant")."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, cast

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django_htmx.http import reselect, reswap, retarget

from tenants.models import Membership, Tenant
from tenants.ui_request import TenantRequest

CURRENT_TENANT_SESSION_KEY = "current_tenant"
READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# The banner every page of a suspended tenant shows (base.html); a refused htmx write replaces it.
SUSPENDED_BANNER_ID = "tenant-suspended"

View = Callable[..., HttpResponse]


def suspended_refusal(request: TenantRequest, tenant: Tenant) -> HttpResponse:
    """403 for a write to a suspended tenant: the whole page, or for htmx the banner with the
    refusal, retargeted onto the page's banner (static/js/refusals.js lets htmx swap it)."""
    context = {"refused": True, "suspended_tenant": tenant}
    if request.htmx:
        target = f"#{SUSPENDED_BANNER_ID}"
        banner = TemplateResponse(request, "tenants/_suspended.html", context, status=403)
        return reselect(reswap(retarget(banner, target), "outerHTML"), target)
    return TemplateResponse(request, "tenants/suspended.html", context, status=403)


def tenant_view(min_role: str, *, post_reads: bool = False) -> Callable[[View], View]:
    """Wrap a view taking `slug`: sets request.tenant and request.membership (the view's
    request is a TenantRequest, tenants/ui_request.py).

    A tenant the user does not belong to is indistinguishable from one that does not
    exist (404); a member without the role gets 403. While the tenant is suspended only
    reads pass; `post_reads` marks a view whose POST only reads (the Atom read playground).
    """

    def decorate(view: View) -> View:
        @login_required
        @wraps(view)
        def wrapped(http_request: HttpRequest, slug: str, *args: Any, **kwargs: Any) -> HttpResponse:
            request = cast(TenantRequest, http_request)  # login_required: a signed-in user
            membership = (
                Membership.objects.select_related("tenant")
                .filter(user=request.user, tenant__slug=slug)
                .first()
            )
            if membership is None:
                raise Http404("No such tenant.")
            # Set before the role check: the 403 page keeps the member's tenant navigation.
            request.tenant = membership.tenant
            request.membership = membership
            if not membership.has_role(min_role):
                raise PermissionDenied(f"This page needs the {min_role} role.")
            if membership.tenant.is_suspended and request.method not in READ_METHODS and not post_reads:
                return suspended_refusal(request, membership.tenant)
            request.session[CURRENT_TENANT_SESSION_KEY] = slug
            return view(request, *args, **kwargs)

        return wrapped

    return decorate
