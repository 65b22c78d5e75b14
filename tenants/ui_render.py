"""How a tenant page answers (docs/architecture.md "Web pages"): the whole page, or for htmx
the page's named partial (`{% partialdef %}`, referenced as `template#name`), plus the events
that other parts of the page listen to."""

from __future__ import annotations

from typing import Any, TypeVar

from django.http import HttpResponse
from django.template.response import TemplateResponse

from tenants.ui_request import TenantRequest

R = TypeVar("R", bound=HttpResponse)


def wants_partial(request: TenantRequest) -> bool:
    """An htmx request, except htmx restoring history: after a cache miss it asks for the
    whole page, although the request carries HX-Request."""
    return bool(request.htmx) and not request.htmx.history_restore_request


def render_page(request: TenantRequest, template: str, context: dict[str, Any], *, partial: str,
                event: str = "") -> TemplateResponse:
    """`template#partial` when wants_partial, else the whole `template`; `event` is sent
    with either (trigger)."""
    name = f"{template}#{partial}" if wants_partial(request) else template
    return trigger(TemplateResponse(request, name, context), event)


def trigger(response: R, *events: str) -> R:
    """Fire `events` in the browser once the response arrives (`HX-Trigger`; an empty name
    fires nothing). The header is htmx's plain form, the names joined by ", ":
    django_htmx.http.trigger_client_event writes the JSON form (`{"atomsChanged": {}}`),
    which htmx reads alike but which would change every header the pages send today."""
    names = [event for event in events if event]
    if names:
        response["HX-Trigger"] = ", ".join(names)
    return response
