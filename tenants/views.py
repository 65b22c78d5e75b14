"""Tenant pages: home (pick a tenant), the dashboard and key management."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.response import TemplateResponse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from memoryhub.health import health_report
from memoryhub.models import AuditEvent
from tenants import dashboard as dashboard_data
from tenants.api.keys import KeySpecSerializer
from tenants.forms import LenientForm, PostedText
from tenants.models import ApiKey, KeyKind, Membership, Role
from tenants.services.keys import TenantLimitReached, apikey_create, apikey_revoke
from tenants.ui import CURRENT_TENANT_SESSION_KEY, tenant_view
from tenants.ui_render import render_page, wants_partial
from tenants.ui_request import TenantRequest, actor_of


@login_required
def home(request: HttpRequest) -> HttpResponse:
    memberships = list(Membership.objects.for_user(request.user))
    if not memberships:
        return TemplateResponse(request, "tenants/no_tenant.html", {})
    remembered = request.session.get(CURRENT_TENANT_SESSION_KEY)
    slugs = [m.tenant.slug for m in memberships]
    return redirect("dashboard", slug=remembered if remembered in slugs else slugs[0])


@tenant_view(Role.VIEWER)
@require_GET
def dashboard(request: TenantRequest) -> HttpResponse:
    """The tenant at a glance: the tenant's own figures plus what each store registered
    (tenants/dashboard.py). htmx polls single cards: `?panel=health` (the default for an
    htmx request, every 30 s) or a registered card's name (the Atom index, every 5 s)."""
    tenant = request.tenant
    if wants_partial(request):
        name = request.GET.get("panel", "health")
        if name == "health":
            return TemplateResponse(request, "tenants/dashboard.html#health", _health_context())
        if (card := dashboard_data.card(tenant, name)) is not None:
            return TemplateResponse(request, card.template, {"data": card.data})
    context = {
        **_health_context(),
        "member_count": tenant.memberships.count(),
        "active_key_count": ApiKey.objects.for_tenant(tenant).active().count(),
        "recent_events": AuditEvent.objects.for_tenant(tenant)[:10],
        "notices": dashboard_data.notices(tenant),
        "queues": dashboard_data.queues(tenant),
        "cards": dashboard_data.cards(tenant),
        "today": dashboard_data.today(tenant),
    }
    return TemplateResponse(request, "tenants/dashboard.html", context)


def _health_context() -> dict[str, object]:
    status, health = health_report()
    return {"health": health, "health_ok": status == 200}


def _keys_context(request: TenantRequest, **extra: Any) -> dict[str, object]:
    tenant = request.tenant
    errors: dict[str, list[str]] = extra.get("errors") or {}
    return {
        # Field errors are shown next to their field; the rest (tenant limits) above the button.
        "field_errors": {f: errors[f] for f in KEY_FORM_FIELDS if f in errors},
        "other_errors": {f: m for f, m in errors.items() if f not in KEY_FORM_FIELDS},
        "keys": ApiKey.objects.for_tenant(tenant).order_by("revoked_at", "-created_at"),
        "active_key_count": ApiKey.objects.for_tenant(tenant).active().count(),
        "kinds": KeyKind.choices,
        **extra,
    }


def _split(raw: str) -> list[str] | None:
    parts = [p.strip() for p in raw.split(",") if p.strip()]
    return parts or None


KEY_FORM_FIELDS = ("kind", "name", "agents", "read_policies", "write_policies")
LIST_ITEM_NOUNS = {"agents": "agent slug", "read_policies": "policy name", "write_policies": "policy name"}


def key_form_errors(errors: dict[str, Any], submitted: dict[str, Any]) -> dict[str, list[str]]:
    """The serializer's errors as sentences per form field.

    A list field reports a bad item as {index: [messages]}; printed as it came, that read
    "agents: 0". Here it names the value the person typed and says why it is refused.
    """
    shown: dict[str, list[str]] = {}
    for field, detail in errors.items():
        if isinstance(detail, dict):
            items = submitted.get(field) or []
            lines = []
            for index, item_errors in sorted(detail.items()):
                value = items[index] if isinstance(index, int) and index < len(items) else ""
                why = " ".join(str(m) for m in item_errors)
                lines.append(f"“{value}” is not a valid {LIST_ITEM_NOUNS.get(field, 'value')}: {why}")
            shown[field] = lines
        else:
            shown[field] = [str(m) for m in detail]
    return shown


class KeyForm(LenientForm):
    """A new key's fields as typed; KeySpecSerializer judges them, as for `POST /api/v1/keys`.
    Lists are typed comma-separated; an empty policy list is left out (the serializer's default)."""

    kind = PostedText()
    name = PostedText()
    read_only = forms.BooleanField(required=False)
    agents = PostedText()
    read_policies = PostedText()
    write_policies = PostedText()

    @classmethod
    def spec(cls, post: Any) -> dict[str, Any]:
        values = cls.read(post)
        return {
            "kind": values["kind"],
            "name": values["name"],
            "read_only": values["read_only"],
            "agents": _split(values["agents"]),
            **({"read_policies": p} if (p := _split(values["read_policies"])) else {}),
            **({"write_policies": p} if (p := _split(values["write_policies"])) else {}),
        }


@tenant_view(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def keys(request: TenantRequest) -> HttpResponse:
    """List keys; POST creates one and shows its secret once, in this response only."""
    extra: dict[str, object] = {}
    if request.method == "POST":
        data = KeyForm.spec(request.POST)
        spec = KeySpecSerializer(data=data)
        if spec.is_valid():
            try:
                key, raw = apikey_create(
                    tenant=request.tenant, actor=actor_of(request), created_by=request.user, **spec.validated_data,
                )
                extra = {"new_key": key, "new_secret": raw}
            except TenantLimitReached as exc:
                extra = {"errors": {exc.details["limit"]: [exc.message]}, "form_data": request.POST}
        else:
            extra = {"errors": key_form_errors(spec.errors, data), "form_data": request.POST}
    return render_page(request, "tenants/keys.html", _keys_context(request, **extra), partial="key-panel")


@tenant_view(Role.ADMIN)
@require_POST
def key_revoke(request: TenantRequest, key_id: str) -> HttpResponse:
    tenant = request.tenant
    key = get_object_or_404(ApiKey.objects.for_tenant(tenant), prefix=key_id.removeprefix("k_"))
    apikey_revoke(key=key, actor=actor_of(request))
    if not wants_partial(request):
        return redirect("keys", slug=tenant.slug)
    return render_page(request, "tenants/keys.html", _keys_context(request), partial="key-panel")
