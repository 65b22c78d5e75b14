"""Memory files: two capped entry lists per tenant (USER.md, MEMORY.md), their versions,
staged agent writes, frozen chat sessions and threat findings."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models

from memoryhub.public_ids import MAX_LENGTH, new_finding_id, new_pending_id
from tenants.models.tenancy import Tenant

TARGETS = ("memory", "user")


class Approval(models.TextChoices):
    OFF = "off", "Off: apply agent writes at once"
    REVIEW_ONLY = "review_only", "Review only: stage the after-turn curator's writes"
    ALL = "all", "All: stage every agent write"


class Origin(models.TextChoices):
    FOREGROUND = "foreground", "Foreground (the agent in a chat)"
    REVIEW = "review", "Review (the after-turn curator)"
    HUMAN = "human", "Human"
    IMPORT = "import", "Import"


class MemoryVolume(models.Model):
    """One per tenant; its row lock serializes every mutation of the tenant's two stores."""

    tenant = models.OneToOneField(Tenant, on_delete=models.CASCADE, related_name="memory_volume")
    user_limit = models.PositiveIntegerField(default=1375)
    memory_limit = models.PositiveIntegerField(default=2200)
    approval = models.CharField(max_length=16, choices=Approval.choices, default=Approval.ALL)
    # Literal secrets redacted from every write; write-only in the UI and API.
    secrets = models.JSONField(default=list, blank=True)
    # Current approved state, mirrored from the newest MemoryVersion of each target.
    memory_entries = models.JSONField(default=list, blank=True)
    user_entries = models.JSONField(default=list, blank=True)
    memory_version = models.PositiveIntegerField(default=0)
    user_version = models.PositiveIntegerField(default=0)
    patterns_version = models.PositiveIntegerField(default=0)
    # Files on the tenant volume: the digest last written, and drift per file.
    memory_file_digest = models.CharField(max_length=64, blank=True)
    user_file_digest = models.CharField(max_length=64, blank=True)
    memory_drift = models.JSONField(null=True, blank=True)
    user_drift = models.JSONField(null=True, blank=True)

    def __str__(self) -> str:
        return f"memory volume of {self.tenant.slug}"

    @classmethod
    def get_or_create_for(cls, tenant: Tenant) -> MemoryVolume:
        volume, _ = cls.objects.get_or_create(tenant=tenant)
        return volume

    def entries(self, target: str) -> list[str]:
        return list(self.memory_entries if target == "memory" else self.user_entries)

    def limit(self, target: str) -> int:
        return self.memory_limit if target == "memory" else self.user_limit

    def version(self, target: str) -> int:
        return self.memory_version if target == "memory" else self.user_version


class MemoryVersion(models.Model):
    volume = models.ForeignKey(MemoryVolume, on_delete=models.CASCADE, related_name="versions")
    target = models.CharField(max_length=8)
    number = models.PositiveIntegerField()
    entries = models.JSONField(default=list)
    origin = models.CharField(max_length=16, choices=Origin.choices)
    actor_label = models.CharField(max_length=200)
    actor_key = models.ForeignKey("tenants.ApiKey", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    actor_user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    session = models.ForeignKey("tenants.MemorySession", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    reason = models.CharField(max_length=500, blank=True)
    pending = models.ForeignKey("tenants.PendingWrite", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    approved_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    approved_by_label = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["volume", "target", "number"], name="memory_version_unique")]
        ordering = ["-number"]

    def __str__(self) -> str:
        return f"{self.volume.tenant.slug}:{self.target} v{self.number}"


class PendingStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    APPROVED = "approved", "Approved"
    REJECTED = "rejected", "Rejected"


class PendingWrite(models.Model):
    """An agent write held for review. `payload` is {action, content?, old_text?} or
    {operations}; `pinned` the full text of each entry a replace/remove matched."""

    volume = models.ForeignKey(MemoryVolume, on_delete=models.CASCADE, related_name="pending_writes")
    # The id the API and UI show; the integer pk is global and stays internal (memoryhub/public_ids.py).
    public_id = models.CharField(max_length=MAX_LENGTH, unique=True, default=new_pending_id, editable=False)
    target = models.CharField(max_length=8)
    payload = models.JSONField()
    original_payload = models.JSONField(null=True, blank=True)
    pinned = models.JSONField(default=list, blank=True)
    origin = models.CharField(max_length=16, choices=Origin.choices)
    summary = models.CharField(max_length=80)
    status = models.CharField(max_length=10, choices=PendingStatus.choices, default=PendingStatus.PENDING)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=200)
    created_by_key = models.ForeignKey("tenants.ApiKey", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    session = models.ForeignKey("tenants.MemorySession", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    last_error = models.JSONField(null=True, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.CharField(max_length=200, blank=True)
    reason = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"pending {self.public_id} ({self.status})"


class MemorySession(models.Model):
    """A chat's frozen snapshot: built once, never changed."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    volume = models.ForeignKey(MemoryVolume, on_delete=models.CASCADE, related_name="sessions")
    chat_id = models.CharField(max_length=200, null=True, blank=True)  # noqa: DJ001 - NULLs stay distinct in the unique constraint
    snapshot = models.TextField()
    snapshot_digest = models.CharField(max_length=80)
    memory_version = models.PositiveIntegerField()
    user_version = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=200)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["volume", "chat_id"], name="memory_session_chat_unique")]
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"session {self.id}"


class ThreatFinding(models.Model):
    volume = models.ForeignKey(MemoryVolume, on_delete=models.CASCADE, related_name="findings")
    # The id the UI shows; the integer pk is global and stays internal (memoryhub/public_ids.py).
    public_id = models.CharField(max_length=MAX_LENGTH, unique=True, default=new_finding_id, editable=False)
    target = models.CharField(max_length=8)
    entry = models.TextField()
    patterns = models.JSONField(default=list)
    patterns_version = models.PositiveIntegerField()
    found_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-found_at"]

    def __str__(self) -> str:
        return f"finding {self.patterns} in {self.target}"
