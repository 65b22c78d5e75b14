"""The tenant's literal secrets, redacted from every memory write (docs/memory-files.md
"Redaction") and, when one is added, from what is already stored (docs/memory-files.md "Redaction").

Write-only: a secret can be added or all of them cleared, and nothing here returns a value.
The audit row records counts and digests, never the text (audit_record keeps only a digest
of what it is given, and what it is given holds no secret either).
"""

from __future__ import annotations

from django.apps import apps as django_apps
from django.db import transaction

from memoryhub.actors import Actor
from memoryhub.audit import audit_record
from memoryhub.digests import sha256_hex
from memoryhub.threats import MIN_SECRET_LENGTH
from tenants.memory.projection import schedule_sync
from tenants.memory.service import volume_for
from tenants.memory.stored_redaction import redact_volume
from tenants.models import MemoryVolume, Tenant

MAX_SECRET_LENGTH = 1_000
MAX_SECRETS = 100


class SecretRejected(ValueError):
    """A secret that cannot be stored; `message` is shown to the admin."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _locked_volume(tenant: Tenant) -> MemoryVolume:
    # The same lock every memory write takes, so a write never redacts with half a list and
    # saving the list cannot overwrite a concurrent write's entries.
    return MemoryVolume.objects.select_for_update().get(pk=volume_for(tenant).pk)


def secrets_add(*, tenant: Tenant, secret: str, actor: Actor) -> int:
    """Add one literal secret (surrounding whitespace dropped: pasting tends to add it).
    Returns how many secrets are set. Adding one already set changes nothing."""
    value = secret.strip()
    if len(value) < MIN_SECRET_LENGTH:
        # Shorter ones would redact ordinary words, and the scanner ignores them anyway.
        raise SecretRejected(f"A secret needs at least {MIN_SECRET_LENGTH} characters.")
    if len(value) > MAX_SECRET_LENGTH:
        raise SecretRejected(f"A secret may hold at most {MAX_SECRET_LENGTH:,} characters.")
    with transaction.atomic():
        volume = _locked_volume(tenant)
        secrets = list(volume.secrets)
        if value in secrets:
            return len(secrets)
        if len(secrets) >= MAX_SECRETS:
            raise SecretRejected(f"At most {MAX_SECRETS} secrets can be set; clear them and add the ones in use.")
        volume.secrets = [*secrets, value]
        volume.save(update_fields=["secrets"])
        # What was stored before the secret was configured loses it too: entries, history,
        # pending items, snapshots, findings, and (after commit) the files on disk.
        redact_volume(django_apps, volume)
        schedule_sync(volume)
        audit_record(tenant=tenant, actor=actor, action="memory.secrets.add", object_type="memory_volume",
                     object_id=tenant.slug, before={"count": len(secrets)},
                     after={"count": len(secrets) + 1, "added_sha256": sha256_hex(value)})
        return len(secrets) + 1


def secrets_clear(*, tenant: Tenant, actor: Actor) -> int:
    """Remove every secret; returns how many were set."""
    with transaction.atomic():
        volume = _locked_volume(tenant)
        cleared = len(volume.secrets)
        if cleared:
            volume.secrets = []
            volume.save(update_fields=["secrets"])
            audit_record(tenant=tenant, actor=actor, action="memory.secrets.clear", object_type="memory_volume",
                         object_id=tenant.slug, before={"count": cleared}, after={"count": 0})
        return cleared
