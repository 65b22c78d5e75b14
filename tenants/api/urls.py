from django.urls import path

from tenants.api import kv_agents, kv_resources, kv_rpc, kv_runs, memory_review, memory_sessions, memory_store
from tenants.api.audit import AuditListView
from tenants.api.keys import KeyDetailView, KeyListView
from tenants.api.tenant import TenantSettingsView
from tenants.api.whoami import WhoamiView

urlpatterns = [
    path("whoami", WhoamiView.as_view(), name="api-whoami"),
    path("tenant", TenantSettingsView.as_view(), name="api-tenant"),
    path("keys", KeyListView.as_view(), name="api-keys"),
    path("keys/<str:key_id>", KeyDetailView.as_view(), name="api-key"),
    path("audit", AuditListView.as_view(), name="api-audit"),
    # Key-value memory
    path("agents", kv_agents.AgentsView.as_view(), name="api-agents"),
    path("agents/<str:agent>", kv_agents.AgentDetailView.as_view(), name="api-agent"),
    path("agents/<str:agent>/memory", kv_rpc.KvMemoryView.as_view(), name="api-kv-memory"),
    path("agents/<str:agent>/namespaces", kv_resources.NamespacesView.as_view(), name="api-kv-namespaces"),
    path("agents/<str:agent>/namespaces/<str:ns>", kv_resources.NamespaceView.as_view(), name="api-kv-namespace"),
    path("agents/<str:agent>/namespaces/<str:ns>/keys", kv_resources.KeysView.as_view(), name="api-kv-keys"),
    path("agents/<str:agent>/namespaces/<str:ns>/keys/<path:key>", kv_resources.EntryView.as_view(), name="api-kv-entry"),
    path("agents/<str:agent>/namespaces/<str:ns>/key", kv_resources.QueryEntryView.as_view(), name="api-kv-key"),
    path("agents/<str:agent>/namespaces/<str:ns>/export", kv_resources.ExportView.as_view(), name="api-kv-export"),
    path("agents/<str:agent>/runs", kv_runs.RunsView.as_view(), name="api-kv-runs"),
    path("agents/<str:agent>/runs/<str:run_id>", kv_runs.RunDetailView.as_view(), name="api-kv-run"),
    path("agents/<str:agent>/runs/<str:run_id>/close", kv_runs.RunCloseView.as_view(), name="api-kv-run-close"),
    path("agents/<str:agent>/runs/<str:run_id>/journal", kv_runs.RunJournalView.as_view(), name="api-kv-run-journal"),
    # Memory files
    path("memory", memory_store.MemoryOverviewView.as_view(), name="api-memory"),
    path("memory/<str:target>", memory_store.MemoryStoreView.as_view(), name="api-memory-store"),
    path("memory/<str:target>/history", memory_store.MemoryHistoryView.as_view(), name="api-memory-history"),
    path("memory/<str:target>/undo", memory_store.MemoryUndoView.as_view(), name="api-memory-undo"),
    path("sessions", memory_sessions.SessionsView.as_view(), name="api-sessions"),
    path("sessions/<str:session_id>", memory_sessions.SessionDetailView.as_view(), name="api-session"),
    path("pending", memory_review.PendingListView.as_view(), name="api-pending"),
    path("pending/approve-all", memory_review.PendingApproveAllView.as_view(), name="api-pending-approve-all"),
    path("pending/<str:pending_id>", memory_review.PendingDetailView.as_view(), name="api-pending-detail"),
    path("pending/<str:pending_id>/approve", memory_review.PendingApproveView.as_view(), name="api-pending-approve"),
    path("pending/<str:pending_id>/reject", memory_review.PendingRejectView.as_view(), name="api-pending-reject"),
    path("tools/memory", memory_sessions.MemoryToolView.as_view(), name="api-tools-memory"),
    path("tools/memory/schema", memory_sessions.MemoryToolSchemaView.as_view(), name="api-tools-memory-schema"),
]
