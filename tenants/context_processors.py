from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from tenants.models import Membership


def tenant_nav(request: HttpRequest) -> dict[str, Any]:
    """The tenant switcher's entries and the current tenant, for base.html."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {
        "nav_memberships": list(Membership.objects.for_user(user)),
        "current_tenant": getattr(request, "tenant", None),
        "current_membership": getattr(request, "membership", None),
    }
