"""Per-principal access records: refs, receipts, input tokens, replay records."""

from __future__ import annotations

from django.db import models

from tenants.models import ApiKey, Tenant


class Ref(models.Model):
    """`ref:<uuid>` issued to one principal for one exact revision. After a purge the row
    shrinks to (ref, principal, atom) with no revision, and keeps answering ACCESS_DENIED."""

    id = models.CharField(max_length=64, primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    principal = models.CharField(max_length=200)
    key = models.ForeignKey(ApiKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    atom_id = models.CharField(max_length=64)
    revision_id = models.CharField(max_length=64, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "principal", "revision_id"], name="atoms_ref_unique",
                                               condition=~models.Q(revision_id=""))]
        indexes = [models.Index(fields=["tenant", "atom_id"], name="atoms_ref_atom"),
                   # The bulk issue's look-up (`revision_id IN (...)`) cannot use the partial unique
                   # index above; without this SQLite walks the tenant's refs instead.
                   models.Index(fields=["tenant", "principal", "revision_id"], name="atoms_ref_lookup")]

    def __str__(self) -> str:
        return self.id


class ReplayRecord(models.Model):
    """Idempotency: keyed per tenant by the scope digest and the idempotency key."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    scope_digest = models.CharField(max_length=64)
    idempotency_key = models.CharField(max_length=600)
    fingerprint = models.CharField(max_length=64)
    operation_id = models.CharField(max_length=64)
    changes = models.JSONField()  # {changeId: PinnedRef}, request order kept in `order`
    order = models.JSONField()
    created_at = models.BigIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "scope_digest", "idempotency_key"],
                                               name="atoms_replay_unique")]

    def __str__(self) -> str:
        return f"replay {self.operation_id}"


class Receipt(models.Model):
    """What a read, search, inspect or observe touched and showed (the manifest)."""

    id = models.CharField(max_length=64, primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    principal = models.CharField(max_length=200)
    key = models.ForeignKey(ApiKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    kind = models.CharField(max_length=8)
    state_seq = models.PositiveBigIntegerField()
    signal_digest = models.CharField(max_length=64)
    manifest = models.JSONField()
    created_at = models.BigIntegerField()

    class Meta:
        # Look-ups by id inside a tenant (`tenant = ? AND id IN (...)`) stay index look-ups on
        # SQLite (docs/atoms.md "Read path costs").
        indexes = [models.Index(fields=["tenant", "id"], name="atoms_receipt_tenant_id")]

    def __str__(self) -> str:
        return self.id


class InputToken(models.Model):
    """`input:<uuid>`: what an agent's output was made from (issued by observe)."""

    id = models.CharField(max_length=64, primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    principal = models.CharField(max_length=200)
    key = models.ForeignKey(ApiKey, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    manifest = models.JSONField()
    outputs = models.JSONField(default=list)
    created_at = models.BigIntegerField()
    expires_at = models.BigIntegerField()

    class Meta:
        # Look-ups by id inside a tenant (`tenant = ? AND id IN (...)`) stay index look-ups on
        # SQLite (docs/atoms.md "Read path costs").
        indexes = [models.Index(fields=["tenant", "id"], name="atoms_token_tenant_id")]

    def __str__(self) -> str:
        return self.id


class Tombstone(models.Model):
    """An erased receipt or token: later use answers ACCESS_DENIED."""

    id = models.CharField(max_length=64, primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    erasure_id = models.CharField(max_length=64)

    class Meta:
        # Look-ups by id inside a tenant (`tenant = ? AND id IN (...)`) stay index look-ups on
        # SQLite (docs/atoms.md "Read path costs").
        indexes = [models.Index(fields=["tenant", "id"], name="atoms_tomb_tenant_id")]

    def __str__(self) -> str:
        return f"tombstone {self.id}"
