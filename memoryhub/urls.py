from csp.decorators import csp_update
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path
from rest_framework.permissions import AllowAny

from memoryhub.api.views import RedocView, SchemaView, SwaggerView, unknown_route
from memoryhub.health import healthz
from memoryhub.login_views import ThrottledLoginView
from memoryhub.views import favicon

public = {"authentication_classes": [], "permission_classes": [AllowAny]}
# ReDoc renders with styled-components, which inserts <style> elements, and parses the schema
# in a blob: worker: the one page whose Content-Security-Policy allows either.
redoc_csp = csp_update({"style-src": ["'unsafe-inline'"], "worker-src": ["blob:"]})

# Under /api/v1/ Django's error pages answer the API's error shape (memoryhub/api/views.py).
handler400 = "memoryhub.api.views.bad_request"
handler403 = "memoryhub.api.views.permission_denied"
handler404 = "memoryhub.api.views.page_not_found"
handler500 = "memoryhub.api.views.server_error"

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    # Browsers and feed readers that ignore <link rel="icon"> ask for /favicon.ico.
    path("favicon.ico", favicon, name="favicon"),
    path("admin/", admin.site.urls),
    path("login/", ThrottledLoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/v1/schema/", SchemaView.as_view(**public), name="api-schema"),
    path("api/v1/docs/", SwaggerView.as_view(url_name="api-schema", template_name="api_docs/swagger_ui.html",
                                             **public), name="api-docs"),
    path("api/v1/redoc/", redoc_csp(RedocView.as_view(url_name="api-schema", template_name="api_docs/redoc.html",
                                                      **public)), name="api-redoc"),
    path("api/v1/atoms/", include("atoms.api.urls")),
    path("api/v1/", include("tenants.api.urls")),
    # Last under /api/v1/: anything unmatched is a 404 in the API's error shape.
    re_path(r"^api/v1/(?P<path>.*)$", unknown_route),
    path("", include("atoms.ui.urls")),
    path("", include("tenants.urls")),
]
