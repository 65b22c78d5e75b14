"""Who belongs to a tenant, as its admins manage it in the web UI (docs/api.md
"Administering a tenant in the web UI"). The last-admin rule holds in the staff tools too:
the Django admin (tenants/admin.py) and `manage.py createreviewer` ask `last_admin_refusal`.

Every change locks the tenant row first, so two admins demoting or removing each other at the
same moment are serialized and cannot both pass the "at least one admin" check. Audit rows
name the member by username and hold roles only, like the Django admin's membership rows.
"""

from __future__ import annotations

from collections.abc import Collection

from django.contrib.auth import get_user_model
from django.db import transaction

from memoryhub.actors import Actor
from memoryhub.audit import audit_record
from tenants.models import Membership, Role, Tenant

LAST_ADMIN = "A tenant needs at least one admin: make another member an admin first."


class MemberError(Exception):
    """A refused change; `field` names the form field the message belongs to."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.field = field


def _check_role(role: str) -> None:
    if role not in Role.values:
        raise MemberError(f"Choose one of: {', '.join(Role.values)}.", field="role")


def _lock(tenant: Tenant) -> None:
    # The tenant row lock serializes every membership change of the tenant (as apikey_issue
    # does for key limits); on SQLite the write lock does the same job.
    Tenant.objects.select_for_update().only("pk").get(pk=tenant.pk)


def last_admin_refusal(*, tenant_id: int, leaving: Collection[int] = (), joining: int = 0) -> str | None:
    """LAST_ADMIN when the tenant has an admin now and would have none once the memberships
    `leaving` are removed or demoted and `joining` other memberships become admins; else None.
    A tenant without admins yet (one being set up) has none to lose. Locks the tenant row, so
    call it inside the transaction that makes the change."""
    Tenant.objects.select_for_update().only("pk").filter(pk=tenant_id).first()
    admins = set(Membership.objects.filter(tenant_id=tenant_id, role=Role.ADMIN).values_list("pk", flat=True))
    if not admins or joining > 0 or admins - set(leaving):
        return None
    return LAST_ADMIN


def _other_admins(membership: Membership) -> bool:
    return (Membership.objects.filter(tenant_id=membership.tenant_id, role=Role.ADMIN)
            .exclude(pk=membership.pk).exists())


def member_add(*, tenant: Tenant, username: str, role: str, actor: Actor) -> Membership:
    """Add an existing user. Unknown usernames and existing members are refused."""
    _check_role(role)
    username = username.strip()
    if not username:
        raise MemberError("Enter a username.", field="username")
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise MemberError("No user has this username; people are created by staff in the Django admin.",
                          field="username")
    with transaction.atomic():
        _lock(tenant)
        existing = Membership.objects.filter(tenant=tenant, user=user).first()
        if existing is not None:
            raise MemberError(f"{user.get_username()} is already a member ({existing.role}).", field="username")
        membership = Membership.objects.create(tenant=tenant, user=user, role=role)
        audit_record(tenant=tenant, actor=actor, action="membership.set", object_type="membership",
                     object_id=user.get_username(), after={"role": role})
    return membership


def member_role_set(*, membership: Membership, role: str, actor: Actor) -> Membership:
    """Change a member's role; the last admin cannot be demoted."""
    _check_role(role)
    with transaction.atomic():
        _lock(membership.tenant)
        locked = Membership.objects.select_related("user", "tenant").get(pk=membership.pk)
        if locked.role == role:
            return locked
        if locked.role == Role.ADMIN and not _other_admins(locked):
            raise MemberError(LAST_ADMIN, field="role")
        before = {"role": locked.role}
        locked.role = role
        locked.save(update_fields=["role"])
        audit_record(tenant=locked.tenant, actor=actor, action="membership.set", object_type="membership",
                     object_id=locked.user.get_username(), before=before, after={"role": role})
    return locked


def member_remove(*, membership: Membership, actor: Actor) -> None:
    """Remove a member; the last admin cannot be removed."""
    with transaction.atomic():
        _lock(membership.tenant)
        locked = Membership.objects.select_related("user", "tenant").filter(pk=membership.pk).first()
        if locked is None:
            return  # removed by someone else meanwhile: nothing left to do
        if locked.role == Role.ADMIN and not _other_admins(locked):
            raise MemberError(LAST_ADMIN)
        locked.delete()
        audit_record(tenant=locked.tenant, actor=actor, action="membership.delete", object_type="membership",
                     object_id=locked.user.get_username(), before={"role": locked.role})
