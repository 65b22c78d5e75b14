"""Key-value memory: agents, one row per key, per-namespace counters, runs and journals."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper

from tenants.models.keys import agent_slug_validator
from tenants.models.tenancy import Tenant


class CodePointTextField(models.TextField):
    """Text that sorts by Unicode code point (= UTF-8 byte order).

    SQLite's default BINARY collation already compares UTF-8 bytes; PostgreSQL needs the
    "C" collation on the column, which SQLite would not understand, so it is added per vendor.
    """

    def db_parameters(self, connection: BaseDatabaseWrapper) -> dict[str, Any]:
        params = super().db_parameters(connection)
        if connection.vendor == "postgresql":
            params["collation"] = "C"
        return params


class KvConfig(models.Model):
    """Per-tenant KV limits (PATCH /api/v1/tenant fields `kv_<limit>`)."""

    tenant = models.OneToOneField(Tenant, on_delete=models.CASCADE, related_name="kv_config")
    key_bytes = models.PositiveIntegerField(default=1024)
    value_bytes = models.PositiveIntegerField(default=1_048_576)
    keys_per_namespace = models.PositiveIntegerField(default=100_000)
    namespaces_per_agent = models.PositiveIntegerField(default=1000)
    response_bytes = models.PositiveBigIntegerField(default=33_554_432)

    def __str__(self) -> str:
        return f"KV limits of {self.tenant.slug}"

    @classmethod
    def get_or_create_for(cls, tenant: Tenant) -> KvConfig:
        config, _ = cls.objects.get_or_create(tenant=tenant)
        return config


class AgentQuerySet(models.QuerySet["Agent"]):
    def for_tenant(self, tenant: Tenant) -> AgentQuerySet:
        return self.filter(tenant=tenant)


class Agent(models.Model):
    """Owns a KV store; deleting the agent deletes its keys and runs."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="agents")
    slug = models.CharField(max_length=64, validators=[agent_slug_validator])
    name = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = AgentQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "slug"], name="agent_unique_slug")]
        ordering = ["slug"]

    def __str__(self) -> str:
        return f"{self.tenant.slug}/{self.slug}"


class KvNamespace(models.Model):
    """Counter row per (agent, namespace). Writes that add or remove keys lock it first, so
    the key and namespace limits hold exactly under concurrency. A namespace "exists" while
    key_count > 0; the row itself is kept to avoid delete/recreate races."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="namespaces")
    name = models.CharField(max_length=128)
    key_count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["agent", "name"], name="kv_namespace_unique")]

    def __str__(self) -> str:
        return f"{self.agent}:{self.name}"


class KvEntry(models.Model):
    """One key. `value` is canonical JSON text, so numbers keep their exact spelling
    (big integers, 3.0) and the size limit measures exactly what is stored."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="entries")
    namespace = models.CharField(max_length=128)
    key = CodePointTextField()
    value = models.TextField()
    key_bytes = models.PositiveIntegerField()
    value_bytes = models.PositiveIntegerField()
    version = models.PositiveBigIntegerField(default=1)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    created_by = models.CharField(max_length=200)
    updated_by = models.CharField(max_length=200)
    last_run_id = models.CharField(max_length=64, null=True, blank=True)  # noqa: DJ001 - null is "written outside a run"

    class Meta:
        constraints = [models.UniqueConstraint(fields=["agent", "namespace", "key"], name="kv_entry_unique")]

    def __str__(self) -> str:
        return f"{self.agent}:{self.namespace}:{self.key[:40]}"


class RunMode(models.TextChoices):
    RECORD = "record", "Record"
    VERIFY = "verify", "Verify"


def new_run_id() -> str:
    return str(uuid.uuid4())


class KvRun(models.Model):
    run_id = models.CharField(max_length=64, unique=True, default=new_run_id)
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="runs")
    mode = models.CharField(max_length=8, choices=RunMode.choices, default=RunMode.RECORD)
    lax = models.BooleanField(default=False)
    frontier = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    created_by = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"run {self.run_id} of {self.agent}"

    @property
    def status(self) -> str:
        return "closed" if self.closed_at else "open"


class KvJournalRecord(models.Model):
    """One journaled call. args/result are canonical JSON text; error is set on failures."""

    run = models.ForeignKey(KvRun, on_delete=models.CASCADE, related_name="records")
    seq = models.PositiveIntegerField()
    function = models.CharField(max_length=32, default="memory")
    args = models.TextField()
    namespace = models.CharField(max_length=128)
    result = models.TextField(default="null")
    error_status = models.PositiveSmallIntegerField(null=True, blank=True)
    error_code = models.CharField(max_length=64, blank=True)
    error_message = models.TextField(blank=True)
    error_details = models.JSONField(null=True, blank=True)
    etag_version = models.PositiveBigIntegerField(null=True, blank=True)
    duration_ms = models.PositiveIntegerField(default=0)
    timestamp = models.DateTimeField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="kv_journal_unique_seq")]
        ordering = ["seq"]

    def __str__(self) -> str:
        return f"{self.run.run_id}#{self.seq}"
