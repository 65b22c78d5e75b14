from django.urls import path

from tenants import views

urlpatterns = [
    path("", views.home, name="home"),
    path("t/<slug:slug>/", views.dashboard, name="dashboard"),
    path("t/<slug:slug>/keys/", views.keys, name="keys"),
    path("t/<slug:slug>/keys/<str:key_id>/revoke", views.key_revoke, name="key-revoke"),
]
