"""Tenant and membership services."""

from __future__ import annotations

from django.contrib.auth.models import AbstractUser
from django.db import transaction

from memoryhub.actors import Actor
from memoryhub.audit import audit_record
from tenants.models import Membership, Role, Tenant
from tenants.services.members import MemberError, last_admin_refusal


def tenant_ensure(*, slug: str, name: str | None = None, actor: Actor) -> tuple[Tenant, bool]:
    """Create the tenant if it does not exist; never changes an existing one's name
    unless a name is given. Returns (tenant, created)."""
    with transaction.atomic():
        tenant, created = Tenant.objects.get_or_create(slug=slug, defaults={"name": name or slug})
        if created:
            audit_record(
                tenant=tenant, actor=actor, action="tenant.create", object_type="tenant",
                object_id=tenant.slug, after={"slug": slug, "name": tenant.name},
            )
        elif name and tenant.name != name:
            before = {"name": tenant.name}
            tenant.name = name
            tenant.save(update_fields=["name"])
            audit_record(
                tenant=tenant, actor=actor, action="tenant.update", object_type="tenant",
                object_id=tenant.slug, before=before, after={"name": name},
            )
    return tenant, created


def membership_set(*, tenant: Tenant, user: AbstractUser, role: str, actor: Actor) -> Membership:
    """Add `user` with `role` or change their role (`manage.py createreviewer`, `demo`).
    Demoting the tenant's last admin raises MemberError, as on the Members page."""
    with transaction.atomic():
        membership, created = Membership.objects.get_or_create(
            tenant=tenant, user=user, defaults={"role": role}
        )
        before = None if created else {"role": membership.role}
        if not created and membership.role == Role.ADMIN and role != Role.ADMIN:
            refusal = last_admin_refusal(tenant_id=tenant.pk, leaving=[membership.pk])
            if refusal is not None:
                raise MemberError(refusal, field="role")
        if not created and membership.role != role:
            membership.role = role
            membership.save(update_fields=["role"])
        if created or before != {"role": role}:
            audit_record(
                tenant=tenant, actor=actor, action="membership.set", object_type="membership",
                object_id=user.get_username(), before=before, after={"role": role},
            )
    return membership
