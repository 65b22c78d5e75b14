"""The one helper every service uses to write the audit log."""

from __future__ import annotations

from typing import Any

from django.db.models import Model

from memoryhub.actors import Actor
from memoryhub.digests import digest_of
from memoryhub.models import AuditEvent


def audit_record(
    *,
    tenant: Model,  # a tenants.Tenant; the plumbing does not import the app above it
    actor: Actor,
    action: str,
    object_type: str,
    object_id: str,
    before: Any = None,
    after: Any = None,
) -> AuditEvent:
    """Record one change. Call inside the change's transaction so both land or neither.

    `before` / `after` are JSON-able snapshots; only their digests are stored.
    """
    return AuditEvent.objects.create(
        tenant_id=tenant.pk,
        actor_kind=actor.kind,
        actor_label=actor.label,
        actor_key_id=actor.key_id,
        actor_user_id=actor.user_id,
        action=action,
        object_type=object_type,
        object_id=str(object_id),
        before_digest="" if before is None else digest_of(before),
        after_digest="" if after is None else digest_of(after),
    )
