"""The Members page (docs/api.md "Administering a tenant in the web UI"): a tenant admin adds
existing users, changes roles and removes members. The rules (known user, not yet a member,
at least one admin left) live in tenants.services.members, which also audits each change.

Another tenant's membership id is simply not found (404). An admin who demotes or removes
themselves is sent where their remaining rights still reach.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from memoryhub.actors import Actor
from tenants.models import Membership, Role, Tenant
from tenants.services.members import MemberError, member_add, member_remove, member_role_set
from tenants.ui import tenant_view
from tenants.views_memory import render

MEMBERS_CHANGED = "membersChanged"


def _tenant(request: HttpRequest) -> Tenant:
    return request.tenant  # type: ignore[attr-defined]


def _actor(request: HttpRequest) -> Actor:
    return Actor.for_user(request.user)  # type: ignore[arg-type]


def _context(request: HttpRequest, **extra: Any) -> dict[str, Any]:
    members = (Membership.objects.filter(tenant=_tenant(request)).select_related("user")
               .order_by("user__username"))
    return {"members": members, "roles": Role.choices, "add_errors": {}, "add_values": {"role": Role.VIEWER},
            "row_errors": {}, **extra}


def _render(request: HttpRequest, *, changed: bool = False, **extra: Any) -> HttpResponse:
    events = (MEMBERS_CHANGED,) if changed else ()
    return render(request, "tenants/members.html", "members-panel", _context(request, **extra), events=events)


def _after_own_change(request: HttpRequest, url: str) -> HttpResponse:
    """The page itself is no longer theirs to see: go to a page that is."""
    if request.htmx:  # type: ignore[attr-defined]
        return HttpResponseClientRedirect(url)
    return redirect(url)


@tenant_view(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def members(request: HttpRequest) -> HttpResponse:
    """List members; POST adds an existing user with a role."""
    if request.method == "GET":
        return _render(request)
    values = {"username": request.POST.get("username", ""), "role": request.POST.get("role", "")}
    try:
        added = member_add(tenant=_tenant(request), username=values["username"], role=values["role"],
                           actor=_actor(request))
    except MemberError as exc:
        return _render(request, add_errors={exc.field or "username": exc.message}, add_values=values)
    notice = f"Added {added.user.get_username()} as {added.get_role_display().lower()}."
    return _render(request, changed=True, notice=notice)


def _membership(request: HttpRequest, member_id: int) -> Membership:
    queryset = Membership.objects.filter(tenant=_tenant(request)).select_related("user", "tenant")
    return get_object_or_404(queryset, pk=member_id)


@tenant_view(Role.ADMIN)
@require_POST
def member_role(request: HttpRequest, member_id: int) -> HttpResponse:
    membership = _membership(request, member_id)
    role = request.POST.get("role", "")
    before = membership.role
    try:
        changed = member_role_set(membership=membership, role=role, actor=_actor(request))
    except MemberError as exc:
        return _render(request, row_errors={membership.pk: exc.message})
    if changed.user_id == request.user.pk and role != Role.ADMIN:
        return _after_own_change(request, reverse("dashboard", args=[_tenant(request).slug]))
    name = changed.user.get_username()
    if before == role:
        return _render(request, notice=f"{name} is already {changed.get_role_display().lower()}.")
    return _render(request, changed=True, notice=f"{name} is now {changed.get_role_display().lower()}.")


@tenant_view(Role.ADMIN)
@require_POST
def member_remove_view(request: HttpRequest, member_id: int) -> HttpResponse:
    membership = _membership(request, member_id)
    try:
        member_remove(membership=membership, actor=_actor(request))
    except MemberError as exc:
        return _render(request, row_errors={membership.pk: exc.message})
    if membership.user_id == request.user.pk:
        return _after_own_change(request, reverse("home"))
    return _render(request, changed=True, notice=f"Removed {membership.user.get_username()}.")
