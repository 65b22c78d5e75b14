from django.urls import include, path, register_converter

from tenants import (
    views,
    views_audit,
    views_kv,
    views_members,
    views_memory,
    views_memory_drift,
    views_memory_pending,
    views_memory_review,
    views_settings,
)


class MemoryTargetConverter:
    """`memory` or `user`: any other store name is simply not found."""

    regex = "memory|user"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(MemoryTargetConverter, "target")

# KV pages: a namespace is one resolved name ([A-Za-z0-9_-], the slug converter's alphabet);
# keys travel as ?key= so that any key, even "" or "a/b", can be addressed.
kv_ns = "t/<slug:slug>/agents/<slug:agent>/ns/<slug:ns>/"
mem = "t/<slug:slug>/memory/"
review = views_memory_review

urlpatterns = [
    path("", views.home, name="home"),
    path("t/<slug:slug>/", views.dashboard, name="dashboard"),
    path("t/<slug:slug>/keys/", views.keys, name="keys"),
    path("t/<slug:slug>/audit/", views_audit.audit_log, name="audit"),
    # Read playground and purge pages; before any `<atom_id>/` pattern of the Atom pages.
    path("t/<slug:slug>/atoms/", include("atoms.ui.urls_tools")),
    path("t/<slug:slug>/keys/<str:key_id>/revoke", views.key_revoke, name="key-revoke"),
    path("t/<slug:slug>/agents/", views_kv.kv_agents, name="kv-agents"),
    path("t/<slug:slug>/agents/<slug:agent>/", views_kv.kv_agent, name="kv-agent"),
    path("t/<slug:slug>/agents/<slug:agent>/runs/<str:run_id>/", views_kv.kv_run, name="kv-run"),
    path(kv_ns, views_kv.kv_namespace, name="kv-namespace"),
    path(kv_ns + "clear", views_kv.kv_namespace_clear, name="kv-namespace-clear"),
    path(kv_ns + "entry", views_kv.kv_entry, name="kv-entry"),
    path(kv_ns + "entry/edit", views_kv.kv_entry_edit, name="kv-entry-edit"),
    path(kv_ns + "entry/delete", views_kv.kv_entry_delete, name="kv-entry-delete"),
    # Memory files: USER.md and MEMORY.md
    path(mem, views_memory.memory_page, name="memory"),
    path(mem + "badge", views_memory.memory_badge, name="memory-badge"),
    path(mem + "<target:target>/add", views_memory.memory_entry_add, name="memory-add"),
    path(mem + "<target:target>/edit", views_memory.memory_entry_edit, name="memory-edit"),
    path(mem + "<target:target>/remove", views_memory.memory_entry_remove, name="memory-remove"),
    path(mem + "<target:target>/history/", views_memory.memory_history, name="memory-history"),
    path(mem + "<target:target>/restore", views_memory.memory_restore, name="memory-restore"),
    path(mem + "pending/", views_memory_pending.pending_list, name="memory-pending"),
    path(mem + "pending/approve-all", views_memory_pending.pending_approve_all_view, name="memory-pending-approve-all"),
    path(mem + "pending/bulk", views_memory_pending.pending_bulk_view, name="memory-pending-bulk"),
    path(mem + "pending/<str:pending_id>/approve", views_memory_pending.pending_approve_view, name="memory-pending-approve"),
    path(mem + "pending/<str:pending_id>/reject", views_memory_pending.pending_reject_view, name="memory-pending-reject"),
    path(mem + "findings/", review.findings_list, name="memory-findings"),
    path(mem + "findings/<str:finding_id>/remove", review.finding_remove, name="memory-finding-remove"),
    path(mem + "drift/", views_memory_drift.drift_view, name="memory-drift"),
    path(mem + "drift/marker", views_memory_drift.drift_marker, name="memory-drift-marker"),
    path(mem + "drift/<target:target>/import", views_memory_drift.drift_import, name="memory-drift-import"),
    path(mem + "drift/<target:target>/overwrite", views_memory_drift.drift_overwrite, name="memory-drift-overwrite"),
    path(mem + "settings/", review.memory_settings, name="memory-settings"),
    path(mem + "settings/secrets", review.memory_secret_add, name="memory-secret-add"),
    path(mem + "settings/secrets/clear", review.memory_secrets_clear, name="memory-secrets-clear"),
    # Tenant administration: members and settings (admins only)
    path("t/<slug:slug>/members/", views_members.members, name="members"),
    path("t/<slug:slug>/members/<int:member_id>/role", views_members.member_role, name="member-role"),
    path("t/<slug:slug>/members/<int:member_id>/remove", views_members.member_remove_view, name="member-remove"),
    path("t/<slug:slug>/settings/", views_settings.tenant_settings_page, name="tenant-settings"),
]
