"""Suspending a tenant (docs/operations.md "Suspending a tenant"): staff do it in the Django
admin. While a tenant is suspended every one of its API keys is refused (tenants/auth.py) and
its web UI answers reads only (tenants/ui.py); nothing is deleted, so lifting the suspension
restores everything as it was.

The audit rows say only that the tenant was suspended or unsuspended: the reason is a note for
staff and stays out of the audit log, as it stays out of every answer to members and clients.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from memoryhub.actors import Actor
from memoryhub.audit import audit_record
from tenants.models import Tenant

# What every API key of a suspended tenant is told (tenants/auth.py `TenantSuspended`).
SUSPENDED_MESSAGE = "This tenant is suspended; contact the operator of this memoryhub service."


def _locked(tenant: Tenant) -> Tenant:
    return Tenant.objects.select_for_update().get(pk=tenant.pk)


def _copy_state(target: Tenant, source: Tenant) -> None:
    target.suspended_at = source.suspended_at
    target.suspended_reason = source.suspended_reason


def tenant_suspend(*, tenant: Tenant, actor: Actor, reason: str | None = None) -> bool:
    """Suspend `tenant` now; True when it was not suspended yet. A suspended tenant keeps its
    date (its members' banner names the day it began); `reason`, when given, replaces the note."""
    with transaction.atomic():
        locked = _locked(tenant)
        if locked.suspended_at is not None:
            if reason is not None and reason != locked.suspended_reason:
                locked.suspended_reason = reason
                locked.save(update_fields=["suspended_reason"])
            _copy_state(tenant, locked)
            return False
        locked.suspended_at = timezone.now()
        if reason is not None:
            locked.suspended_reason = reason
        locked.save(update_fields=["suspended_at", "suspended_reason"])
        audit_record(tenant=locked, actor=actor, action="tenant.suspend", object_type="tenant",
                     object_id=locked.slug)
    _copy_state(tenant, locked)
    return True


def tenant_unsuspend(*, tenant: Tenant, actor: Actor) -> bool:
    """Lift the suspension; True when the tenant was suspended. The note goes with it: it
    explained this suspension, and the audit log keeps when it began and ended."""
    with transaction.atomic():
        locked = _locked(tenant)
        if locked.suspended_at is None:
            _copy_state(tenant, locked)
            return False
        locked.suspended_at = None
        locked.suspended_reason = ""
        locked.save(update_fields=["suspended_at", "suspended_reason"])
        audit_record(tenant=locked, actor=actor, action="tenant.unsuspend", object_type="tenant",
                     object_id=locked.slug)
    _copy_state(tenant, locked)
    return True
