from django.urls import path

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
]
