"""Shared records: the audit log, worker heartbeats and the task outbox."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from memoryhub.public_ids import MAX_LENGTH, new_audit_id


class AuditEventQuerySet(models.QuerySet["AuditEvent"]):
    def for_tenant(self, tenant: models.Model) -> AuditEventQuerySet:
        return self.filter(tenant_id=tenant.pk)


class AuditEvent(models.Model):
    """One change by one actor. Holds digests, never content, so purges leave no text here."""

    tenant = models.ForeignKey("tenants.Tenant", on_delete=models.CASCADE, related_name="audit_events")
    # The id the API and UI show; the integer pk is global and stays internal (memoryhub/public_ids.py).
    public_id = models.CharField(max_length=MAX_LENGTH, unique=True, default=new_audit_id, editable=False)
    actor_kind = models.CharField(max_length=16)
    actor_label = models.CharField(max_length=200)
    actor_key = models.ForeignKey(
        "tenants.ApiKey", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    action = models.CharField(max_length=64)
    object_type = models.CharField(max_length=64)
    object_id = models.CharField(max_length=200)
    before_digest = models.CharField(max_length=64, blank=True)
    after_digest = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["tenant", "-created_at", "-id"], name="audit_tenant_recent")]

    def __str__(self) -> str:
        return f"{self.actor_label} {self.action} {self.object_type}:{self.object_id}"


class WorkerHeartbeat(models.Model):
    """Last time each Celery worker host ran the heartbeat task; read by /healthz."""

    hostname = models.CharField(max_length=255, primary_key=True)
    beat_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.hostname} @ {self.beat_at.isoformat()}"


class OutboxTask(models.Model):
    """A Celery task the broker could not take when its transaction committed.

    `memoryhub.enqueue.enqueue_on_commit` records the row instead of losing the task; the
    beat task `memoryhub.outbox_sweep` sends it once the broker is back and deletes the row.
    Equal calls (same task, same arguments) share one row: tasks are idempotent and read
    the newest state, so sending one of them later does the work of all of them.
    """

    task_name = models.CharField(max_length=200)
    args = models.JSONField(default=list)
    kwargs = models.JSONField(default=dict)
    # sha256 of the task name and the canonical JSON of its arguments: the dedupe key.
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Moved forward by every later failed enqueue of the same call, so a sweep that sent an
    # older request does not delete a newer one (see outbox_sweep).
    requested_at = models.DateTimeField()
    attempts = models.PositiveIntegerField(default=0)  # failed sends by the sweeper
    last_error = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.task_name}{tuple(self.args)}"
