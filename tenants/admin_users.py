"""The Django admin's user pages, aware of memberships: deleting a person who is the last
admin of a tenant is refused like every other way of removing one (docs/api.md
"Administering a tenant in the web UI"), and the memberships a deletion removes are
audited in their tenants."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from django.contrib import admin
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest

from memoryhub.actors import Actor
from memoryhub.audit import audit_record
from tenants.models import Membership, Role
from tenants.services.members import last_admin_refusal


def last_admin_refusals(users: Sequence[User]) -> list[str]:
    """One line per tenant that deleting `users` would leave without an admin."""
    leaving: dict[tuple[int, str], list[int]] = defaultdict(list)
    for membership in (Membership.objects.filter(user__in=[u.pk for u in users], role=Role.ADMIN)
                       .select_related("tenant").order_by("tenant_id")):
        leaving[(membership.tenant_id, membership.tenant.slug)].append(membership.pk)
    refusals = []
    with transaction.atomic():  # the check locks each tenant row (one order: by id)
        for (tenant_id, slug), pks in leaving.items():
            if last_admin_refusal(tenant_id=tenant_id, leaving=pks) is not None:
                refusals.append(f"Tenant {slug}: it would be left without an admin; "
                                "make another member admin first (its Members page).")
    return refusals


class MemberAwareUserAdmin(UserAdmin):
    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> tuple[Any, Any, Any, Any]:
        # Django's delete page and "delete selected" refuse to delete while `protected`
        # lists anything, and show the list.
        deleted, model_count, perms_needed, protected = super().get_deleted_objects(objs, request)
        return deleted, model_count, perms_needed, [*protected, *last_admin_refusals(list(objs))]

    def _audit_memberships(self, request: HttpRequest, users: Sequence[User]) -> None:
        staff = request.user
        actor = Actor.for_user(staff) if isinstance(staff, User) else Actor.system("admin")
        for membership in Membership.objects.filter(user__in=[u.pk for u in users]).select_related("user", "tenant"):
            audit_record(tenant=membership.tenant, actor=actor, action="membership.delete",
                         object_type="membership", object_id=membership.user.get_username())

    def delete_model(self, request: HttpRequest, obj: User) -> None:
        with transaction.atomic():
            self._audit_memberships(request, [obj])
            super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[User]) -> None:
        with transaction.atomic():
            self._audit_memberships(request, list(queryset))
            super().delete_queryset(request, queryset)


admin.site.unregister(User)
admin.site.register(User, MemberAwareUserAdmin)
