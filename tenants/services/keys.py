"""API key services. Callers validate the key spec first (tenants.api.keys.KeySpecSerializer)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from memoryhub.actors import Actor
from memoryhub.audit import audit_record
from memoryhub.errors import DomainError
from tenants.models import ApiKey, Tenant
from tenants.models.keys import hash_key


class TenantLimitReached(DomainError):
    """A new key would take the tenant past `max_api_keys` or `max_read_policies`
    (docs/api.md "Tenant settings"). Its code answers 409: the request is fine, the tenant's
    state refuses it."""

    def __init__(self, message: str, *, details: dict[str, object]) -> None:
        super().__init__("TENANT_LIMIT_REACHED", message, details)


def _snapshot(key: ApiKey) -> dict[str, object]:
    return {
        "id": key.public_id, "kind": key.kind, "subject": key.effective_subject,
        "read_only": key.read_only, "agents": key.agents,
        "read_policies": key.effective_read_policies,
        "write_policies": key.effective_write_policies,
        "revoked": key.revoked_at is not None,
    }


def apikey_create(
    *,
    tenant: Tenant,
    kind: str,
    actor: Actor,
    name: str = "",
    subject: str = "",
    read_only: bool = False,
    agents: list[str] | None = None,
    read_policies: list[str] | None = None,
    write_policies: list[str] | None = None,
    created_by: User | None = None,
) -> tuple[ApiKey, str]:
    """Create a key; returns it with the raw key, which exists nowhere else afterwards."""
    key = ApiKey(
        tenant=tenant, name=name, kind=kind, subject=subject, read_only=read_only, agents=agents,
        read_policies=list(read_policies or ["default"]),
        write_policies=list(write_policies or ["default"]),
        created_by=created_by,
    )
    raw = apikey_issue(key=key, actor=actor)
    return key, raw


def apikey_limits_check(*, tenant: Tenant, read_policies: list[str]) -> None:
    """Raise TenantLimitReached if one more active key reading `read_policies` would pass
    the tenant's limits. Revoked keys count for neither limit: they serve no policy."""
    active = list(ApiKey.objects.for_tenant(tenant).active().values_list("read_policies", flat=True))
    if len(active) + 1 > tenant.max_api_keys:
        raise TenantLimitReached(
            f"This tenant may hold at most {tenant.max_api_keys} active API keys; revoke one or raise max_api_keys.",
            details={"limit": "max_api_keys", "max": tenant.max_api_keys, "actual": len(active) + 1})
    in_use = {policy for policies in active for policy in (policies or ["default"])}
    wanted = in_use | set(read_policies or ["default"])
    if len(wanted) > len(in_use) and len(wanted) > tenant.max_read_policies:
        raise TenantLimitReached(
            f"This tenant's active keys may read at most {tenant.max_read_policies} distinct policies; this key "
            f"would make it {len(wanted)}.",
            details={"limit": "max_read_policies", "max": tenant.max_read_policies, "actual": len(wanted)})


def apikey_issue(*, key: ApiKey, actor: Actor) -> str:
    """Give a prepared, unsaved key its prefix and hash, save it, audit it; return the raw key.
    Raises TenantLimitReached (nothing saved) past the tenant's key limits."""
    prefix, raw = ApiKey.new_raw_key()
    while ApiKey.objects.filter(prefix=prefix).exists():  # 36^10 space: practically never loops
        prefix, raw = ApiKey.new_raw_key()
    key.prefix = prefix
    key.key_hash = hash_key(raw)
    key.read_policies = list(key.read_policies or ["default"])
    key.write_policies = list(key.write_policies or ["default"])
    with transaction.atomic():
        # The tenant row lock serializes concurrent creations, so two of them cannot both
        # take the last free place.
        tenant = Tenant.objects.select_for_update().get(pk=key.tenant_id)
        apikey_limits_check(tenant=tenant, read_policies=key.read_policies)
        key.save()
        audit_record(
            tenant=key.tenant, actor=actor, action="apikey.create", object_type="apikey",
            object_id=key.public_id, after=_snapshot(key),
        )
    return raw


def apikey_revoke(*, key: ApiKey, actor: Actor) -> ApiKey:
    """Revoke at once: the next request with this key is 401. Revoking twice is a no-op."""
    with transaction.atomic():
        locked = ApiKey.objects.select_for_update().get(pk=key.pk)
        if locked.revoked_at is None:
            before = _snapshot(locked)
            ApiKey.objects.filter(pk=locked.pk).update(
                revoked_at=timezone.now(), generation=F("generation") + 1
            )
            locked.refresh_from_db()
            audit_record(
                tenant=locked.tenant, actor=actor, action="apikey.revoke", object_type="apikey",
                object_id=locked.public_id, before=before, after=_snapshot(locked),
            )
    return locked
