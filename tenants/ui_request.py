"""The request a tenant page sees, who is acting in it, and how its form fields are read.

`tenant_view` (tenants/ui.py) lets a view run only for a signed-in member of the tenant in
the URL, and sets `tenant` and `membership` on the request before it does; django-htmx's
middleware sets `htmx`. Views annotate their request as `TenantRequest` so that these
attributes, and `user` as a real user rather than `User | AnonymousUser`, are typed (the
django-stubs and django-htmx pattern: a subclass that only declares attributes; at run
time the object is Django's own HttpRequest).
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails

from memoryhub.actors import Actor
from tenants.models import Membership, Role, Tenant


class TenantRequest(HttpRequest):
    user: User  # login_required ran first
    tenant: Tenant
    membership: Membership
    htmx: HtmxDetails


def actor_of(request: TenantRequest) -> Actor:
    """The signed-in person as the actor of a write and its audit row (`user:<username>`)."""
    return Actor.for_user(request.user)


def can_act(request: TenantRequest) -> bool:
    """Whether the person may change things on the review pages (reviewers and admins);
    the pages show viewers the same data without the forms."""
    return request.membership.has_role(Role.REVIEWER)


def int_or_none(raw: str | None) -> int | None:
    """A form or query field as an integer; None when it is absent, empty or not a number
    (a tampered or stale form: the page answers as if the field were missing)."""
    try:
        return int(raw) if raw else None
    except ValueError:
        return None
