"""Memory-file review pages (docs/memory-files.md "How it works"): threat findings and the
admin settings. The pending queue is in tenants.views_memory_pending, drift between the
database and the files on disk in tenants.views_memory_drift.

Everything acts through the services (tenants.memory.service, .secrets,
tenants.tenant_settings) with the signed-in person as actor. Findings are looked up from the
request's tenant, so another tenant's ids are simply not found (404).
"""

from __future__ import annotations

import re
from typing import Any

from django.db import transaction
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from rest_framework import serializers

from tenants.forms import LenientForm, PostedText
from tenants.memory import rules
from tenants.memory.importing import FILE_NAMES
from tenants.memory.rules import MemoryRuleError
from tenants.memory.secrets import SecretRejected, secrets_add, secrets_clear
from tenants.memory.service import memory_write, volume_for
from tenants.models import Approval, MemoryVolume, Origin, Role, ThreatFinding
from tenants.tenant_settings import settings_update, settings_validate
from tenants.ui import tenant_view
from tenants.ui_render import render_page
from tenants.ui_request import TenantRequest, actor_of, can_act

SETTINGS_FIELDS = ("memory_limit", "user_limit", "approval")
INTEGER_SETTINGS = ("memory_limit", "user_limit")


# --- Threat findings -------------------------------------------------------------------------

def _findings_context(request: TenantRequest, **extra: Any) -> dict[str, Any]:
    volume = volume_for(request.tenant)
    findings = list(ThreatFinding.objects.filter(volume=volume, resolved_at__isnull=True).order_by("target", "found_at", "id"))
    return {"findings": findings, "volume": volume, "can_act": can_act(request),
            "stored": {t: set(volume.entries(t)) for t in rules.TARGETS}, **extra}


@tenant_view(Role.VIEWER)
@require_GET
def findings_list(request: TenantRequest) -> HttpResponse:
    """Unresolved findings of the rescans and session snapshots."""
    return render_page(request, "memory/findings.html", _findings_context(request), partial="findings-panel")


@tenant_view(Role.REVIEWER)
@require_POST
def finding_remove(request: TenantRequest, finding_id: str) -> HttpResponse:
    """Remove the flagged entry through a normal human write (which resolves the finding)."""
    tenant = request.tenant
    finding = get_object_or_404(ThreatFinding, volume__tenant=tenant, public_id=finding_id,
                                resolved_at__isnull=True)
    try:
        with transaction.atomic():
            # Locked first so the check that this exact entry is still stored and the removal see
            # one state: old_text is a substring test, and a finding whose entry is gone must not
            # delete some other entry that merely contains its text.
            volume = MemoryVolume.objects.select_for_update().get(pk=volume_for(tenant).pk)
            stored = finding.entry in volume.entries(finding.target)
            if stored:
                write = rules.parse_request({"action": "remove", "old_text": finding.entry}, finding.target)
                memory_write(tenant=tenant, request=write, origin=Origin.HUMAN, actor=actor_of(request))
    except MemoryRuleError as exc:
        message = exc.message
        if exc.code == "AMBIGUOUS_MATCH":
            message = "The flagged text also occurs inside another entry; remove it on the Memory page instead."
        context = _findings_context(request, notice=message, notice_is_error=True)
        return render_page(request, "memory/findings.html", context, partial="findings-panel")
    if not stored:
        context = _findings_context(request, notice="That entry is no longer stored; nothing was removed.",
                                    notice_is_error=True)
        return render_page(request, "memory/findings.html", context, partial="findings-panel")
    context = _findings_context(request, notice=f"Removed the flagged {FILE_NAMES[finding.target]} entry.")
    return render_page(request, "memory/findings.html", context, partial="findings-panel")


# --- Admin settings --------------------------------------------------------------------------

def _settings_context(request: TenantRequest, **extra: Any) -> dict[str, Any]:
    volume = volume_for(request.tenant)
    values = {name: getattr(volume, name) for name in SETTINGS_FIELDS}
    return {"values": values, "approval_choices": Approval.choices, "secret_count": len(volume.secrets),
            "volume": volume, "errors": {}, **extra}


def _render_settings(request: TenantRequest, **extra: Any) -> HttpResponse:
    return render_page(request, "memory/settings.html", _settings_context(request, **extra), partial="settings-panel")


class MemorySettingsForm(LenientForm):
    """The fields as typed, trimmed: the settings serializer judges them, as for the API."""

    memory_limit = PostedText(strip=True)
    user_limit = PostedText(strip=True)
    approval = PostedText(strip=True)

    @classmethod
    def payload(cls, post: Any) -> dict[str, Any]:
        """An HTML form sends text, and the settings serializer takes no text for a number
        (docs/api.md "Conventions"): a limit written as an integer goes as one; anything else
        goes as typed, and the serializer's message says why it is refused."""
        values = cls.read(post)
        payload: dict[str, Any] = {name: values[name] for name in SETTINGS_FIELDS}
        for name in INTEGER_SETTINGS:
            if re.fullmatch(r"[+-]?\d{1,9}", payload[name]):
                payload[name] = int(payload[name])
        return payload


class SecretForm(LenientForm):
    secret = PostedText()  # as typed: secrets_add trims it and refuses what it must



@tenant_view(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def memory_settings(request: TenantRequest) -> HttpResponse:
    """Limits and the approval policy, saved through the tenant settings service (audited)."""
    if request.method == "GET":
        return _render_settings(request)
    tenant = request.tenant
    payload = MemorySettingsForm.payload(request.POST)
    try:
        with transaction.atomic():
            # The settings serializer saves the whole volume row; holding the row lock that
            # memory writes take keeps a concurrent write's entries from being overwritten.
            MemoryVolume.objects.select_for_update().get(pk=volume_for(tenant).pk)
            bound = settings_validate(tenant, payload)
            before = {name: getattr(volume_for(tenant), name) for name in SETTINGS_FIELDS}
            settings_update(tenant=tenant, bound=bound, actor=actor_of(request))
    except serializers.ValidationError as exc:
        detail = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
        errors = {name: " ".join(str(m) for m in messages) for name, messages in detail.items()}
        return _render_settings(request, values=payload, errors=errors)
    after = {name: getattr(volume_for(tenant), name) for name in SETTINGS_FIELDS}
    changed = before != after
    notice = "Settings saved." if changed else "Nothing changed."
    return _render_settings(request, notice=notice)


@tenant_view(Role.ADMIN)
@require_POST
def memory_secret_add(request: TenantRequest) -> HttpResponse:
    """Add one secret. The value is never rendered back, not even after an error."""
    try:
        secret = SecretForm.read(request.POST)["secret"]
        count = secrets_add(tenant=request.tenant, secret=secret, actor=actor_of(request))
    except SecretRejected as exc:
        return _render_settings(request, secret_error=exc.message)
    return _render_settings(request, secret_notice=f"Secret saved; {count} set.")


@tenant_view(Role.ADMIN)
@require_POST
def memory_secrets_clear(request: TenantRequest) -> HttpResponse:
    cleared = secrets_clear(tenant=request.tenant, actor=actor_of(request))
    notice = f"Cleared {cleared} secret{'s' if cleared != 1 else ''}." if cleared else "No secrets were set."
    return _render_settings(request, secret_notice=notice)
