from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest

from memoryhub.models import AuditEvent, OutboxTask, WorkerHeartbeat


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "tenant", "actor_label", "action", "object_type", "object_id"]
    list_filter = ["action", "actor_kind", "tenant"]
    search_fields = ["actor_label", "object_id", "action"]
    date_hierarchy = "created_at"


@admin.register(WorkerHeartbeat)
class WorkerHeartbeatAdmin(ReadOnlyAdmin):
    list_display = ["hostname", "beat_at"]


@admin.register(OutboxTask)
class OutboxTaskAdmin(ReadOnlyAdmin):
    list_display = ["id", "task_name", "args", "requested_at", "attempts", "last_error"]
    list_filter = ["task_name"]
