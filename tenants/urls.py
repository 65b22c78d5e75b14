from django.urls import path

from tenants import views, views_kv

# KV pages: a namespace is one resolved name ([A-Za-z0-9_-], the slug converter's alphabet);
# keys travel as ?key= so that any key, even "" or "a/b", can be addressed.
kv_ns = "t/<slug:slug>/agents/<slug:agent>/ns/<slug:ns>/"

urlpatterns = [
    path("", views.home, name="home"),
    path("t/<slug:slug>/", views.dashboard, name="dashboard"),
    path("t/<slug:slug>/keys/", views.keys, name="keys"),
    path("t/<slug:slug>/keys/<str:key_id>/revoke", views.key_revoke, name="key-revoke"),
    path("t/<slug:slug>/agents/", views_kv.kv_agents, name="kv-agents"),
    path("t/<slug:slug>/agents/<slug:agent>/", views_kv.kv_agent, name="kv-agent"),
    path("t/<slug:slug>/agents/<slug:agent>/runs/<str:run_id>/", views_kv.kv_run, name="kv-run"),
    path(kv_ns, views_kv.kv_namespace, name="kv-namespace"),
    path(kv_ns + "clear", views_kv.kv_namespace_clear, name="kv-namespace-clear"),
    path(kv_ns + "entry", views_kv.kv_entry, name="kv-entry"),
    path(kv_ns + "entry/edit", views_kv.kv_entry_edit, name="kv-entry-edit"),
    path(kv_ns + "entry/delete", views_kv.kv_entry_delete, name="kv-entry-delete"),
]
