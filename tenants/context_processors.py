from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from tenants.models import Membership


def _pending_count(tenant: Any) -> int:
    from tenants.views_memory import nav_pending_count

    return nav_pending_count(tenant)


def tenant_nav(request: HttpRequest) -> dict[str, Any]:
    """The tenant switcher's entries and the current tenant, for base.html."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    tenant = getattr(request, "tenant", None)
    return {
        "nav_memberships": list(Membership.objects.for_user(user)),
        "current_tenant": tenant,
        "current_membership": getattr(request, "membership", None),
        # Counted only when a page shows the nav badge (lazy: a query per page, not per render).
        "memory_pending_count": SimpleLazyObject(lambda: _pending_count(tenant)) if tenant is not None else 0,
    }
