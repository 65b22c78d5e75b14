"""Access rules for the HTMX pages: membership first (else 404), then role (else 403)."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse

from tenants.models import Membership

CURRENT_TENANT_SESSION_KEY = "current_tenant"

View = Callable[..., HttpResponse]


def tenant_view(min_role: str) -> Callable[[View], View]:
    """Wrap a view taking `slug`: sets request.tenant and request.membership.

    A tenant the user does not belong to is indistinguishable from one that does not
    exist (404); a member without the role gets 403.
    """

    def decorate(view: View) -> View:
        @login_required
        @wraps(view)
        def wrapped(request: HttpRequest, slug: str, *args: Any, **kwargs: Any) -> HttpResponse:
            membership = (
                Membership.objects.select_related("tenant")
                .filter(user=request.user, tenant__slug=slug)
                .first()
            )
            if membership is None:
                raise Http404("No such tenant.")
            # Set before the role check: the 403 page keeps the member's tenant navigation.
            request.tenant = membership.tenant  # type: ignore[attr-defined]
            request.membership = membership  # type: ignore[attr-defined]
            if not membership.has_role(min_role):
                raise PermissionDenied(f"This page needs the {min_role} role.")
            request.session[CURRENT_TENANT_SESSION_KEY] = slug
            return view(request, *args, **kwargs)

        return wrapped

    return decorate
