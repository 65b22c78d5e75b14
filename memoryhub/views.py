"""Small site-wide views that belong to no app."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponsePermanentRedirect
from django.templatetags.static import static
from django.views.decorators.http import require_safe


@require_safe
def favicon(request: HttpRequest) -> HttpResponsePermanentRedirect:
    # Resolved per request, not at import: with the manifest storage of production the
    # hashed name is only known once collectstatic has run.
    return HttpResponsePermanentRedirect(static("img/favicon.svg"))
