"""The tenant Settings page (docs/api.md "Administering a tenant in the web UI"): every field of
`GET/PATCH /api/v1/tenant`, grouped by the section that registered it.

A save goes through the API's own path: `settings_validate` checks the whole submission
against every section before anything is written (so nothing is half-saved) and
`settings_update` saves it in one transaction with the same `tenant.settings` audit row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import HttpResponse
from django.views.decorators.http import require_http_methods
from rest_framework import serializers

from tenants import settings_form
from tenants.models import Role, Tenant
from tenants.tenant_settings import settings_read, settings_update, settings_validate
from tenants.ui import tenant_view
from tenants.ui_render import render_page
from tenants.ui_request import TenantRequest, actor_of


@dataclass(frozen=True)
class Row:
    field: settings_form.SettingField
    text: str  # what the input shows
    was: str  # what the page was loaded with (the hidden `was:` input)
    error: str


def _context(tenant: Tenant, *, texts: dict[str, str] | None = None, was: dict[str, str] | None = None,
             errors: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    current = settings_form.texts(settings_read(tenant))
    shown, loaded, errors = {**current, **(texts or {})}, {**current, **(was or {})}, errors or {}
    groups = [
        (group, [Row(f, shown.get(f.name, ""), loaded.get(f.name, ""), errors.get(f.name, "")) for f in group.fields])
        for group in settings_form.groups()
    ]
    return {"groups": groups, "form_error": errors.get("", ""), "has_errors": bool(errors),
            "was_prefix": settings_form.WAS, **extra}


def _render(request: TenantRequest, tenant: Tenant, **extra: Any) -> HttpResponse:
    return render_page(request, "tenants/settings.html", _context(tenant, **extra), partial="settings-panel")


@tenant_view(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def tenant_settings_page(request: TenantRequest) -> HttpResponse:
    """Show the settings; POST saves the fields that differ from what the page showed."""
    tenant = request.tenant
    if request.method == "GET":
        return _render(request, tenant)
    submission = settings_form.read_post(request.POST)
    errors = dict(submission.errors)  # text that is not JSON never reaches the payload
    bound: list[serializers.ModelSerializer] = []
    try:
        bound = settings_validate(tenant, submission.payload)
    except serializers.ValidationError as exc:
        errors.update(settings_form.field_errors(exc.detail))
    if errors:
        # Nothing is saved while any field is refused, as with a PATCH naming several problems.
        return _render(request, tenant, errors=errors, texts=submission.texts, was=submission.was)
    if not submission.payload:
        return _render(request, tenant, notice="Nothing changed.")
    before = settings_read(tenant)
    after = settings_update(tenant=tenant, bound=bound, actor=actor_of(request))
    return _render(request, tenant, notice="Settings saved." if before != after else "Nothing changed.")
