"""The Members page (docs/api.md "Administering a tenant in the web UI"): a tenant admin adds
existing users, changes roles and removes members. The rules (known user, not yet a member,
at least one admin left) live in tenants.services.members, which also audits each change.

Another tenant's membership id is simply not found (404). An admin who demotes or removes
themselves is sent where their remaining rights still reach.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from tenants.forms import LenientForm, PostedText
from tenants.models import Membership, Role
from tenants.services.members import MemberError, member_add, member_remove, member_role_set
from tenants.ui import tenant_view
from tenants.ui_render import render_page
from tenants.ui_request import TenantRequest, actor_of


class MemberAddForm(LenientForm):
    # The service names the refused field (an unknown user, a role that does not exist).
    username = PostedText()
    role = PostedText()


class MemberRoleForm(LenientForm):
    role = PostedText()


def _context(request: TenantRequest, **extra: Any) -> dict[str, Any]:
    members = (Membership.objects.filter(tenant=request.tenant).select_related("user")
               .order_by("user__username"))
    return {"members": members, "roles": Role.choices, "add_errors": {}, "add_values": {"role": Role.VIEWER},
            "row_errors": {}, **extra}


def _render(request: TenantRequest, **extra: Any) -> HttpResponse:
    return render_page(request, "tenants/members.html", _context(request, **extra), partial="members-panel")


def _after_own_change(request: TenantRequest, url: str) -> HttpResponse:
    """The page itself is no longer theirs to see: go to a page that is."""
    if request.htmx:
        return HttpResponseClientRedirect(url)
    return redirect(url)


@tenant_view(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def members(request: TenantRequest) -> HttpResponse:
    """List members; POST adds an existing user with a role."""
    if request.method == "GET":
        return _render(request)
    values = MemberAddForm.read(request.POST)
    try:
        added = member_add(tenant=request.tenant, username=values["username"], role=values["role"],
                           actor=actor_of(request))
    except MemberError as exc:
        return _render(request, add_errors={exc.field or "username": exc.message}, add_values=values)
    notice = f"Added {added.user.get_username()} as {added.get_role_display().lower()}."
    return _render(request, notice=notice)


def _membership(request: TenantRequest, member_id: int) -> Membership:
    queryset = Membership.objects.filter(tenant=request.tenant).select_related("user", "tenant")
    return get_object_or_404(queryset, pk=member_id)


@tenant_view(Role.ADMIN)
@require_POST
def member_role(request: TenantRequest, member_id: int) -> HttpResponse:
    membership = _membership(request, member_id)
    role = MemberRoleForm.read(request.POST)["role"]
    before = membership.role
    try:
        changed = member_role_set(membership=membership, role=role, actor=actor_of(request))
    except MemberError as exc:
        return _render(request, row_errors={membership.pk: exc.message})
    if changed.user_id == request.user.pk and role != Role.ADMIN:
        return _after_own_change(request, reverse("dashboard", args=[request.tenant.slug]))
    name = changed.user.get_username()
    if before == role:
        return _render(request, notice=f"{name} is already {changed.get_role_display().lower()}.")
    return _render(request, notice=f"{name} is now {changed.get_role_display().lower()}.")


@tenant_view(Role.ADMIN)
@require_POST
def member_remove_view(request: TenantRequest, member_id: int) -> HttpResponse:
    membership = _membership(request, member_id)
    try:
        member_remove(membership=membership, actor=actor_of(request))
    except MemberError as exc:
        return _render(request, row_errors={membership.pk: exc.message})
    if membership.user_id == request.user.pk:
        return _after_own_change(request, reverse("home"))
    return _render(request, notice=f"Removed {membership.user.get_username()}.")
