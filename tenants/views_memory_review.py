"""Memory-file review pages (docs/memory-files.md "How it works"): the pending queue, threat
findings and the admin settings (drift between the database and the files on disk is in
tenants.views_memory_drift).

Everything acts through the services (tenants.memory.approval, .service, .files, .secrets,
tenants.tenant_settings) with the signed-in person as actor. Pending items and findings are
looked up from the request's tenant, so another tenant's ids are simply not found (404).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.core.paginator import Paginator
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from rest_framework import serializers

from memoryhub import threats
from tenants.memory import rules
from tenants.memory.approval import pending_approve, pending_approve_all, pending_reject
from tenants.memory.importing import FILE_NAMES
from tenants.memory.secrets import SecretRejected, secrets_add, secrets_clear
from tenants.memory.service import memory_write, pending_count, volume_for
from tenants.models import Approval, MemoryVolume, Origin, PendingWrite, Role, ThreatFinding
from tenants.tenant_settings import settings_update, settings_validate
from tenants.ui import tenant_view
from tenants.views_memory import (
    MEMORY_CHANGED,
    PENDING_CHANGED,
    actor_of,
    can_act,
    render,
    tenant_of,
)

PENDING_PER_PAGE = 50
SETTINGS_FIELDS = ("memory_limit", "user_limit", "approval")
INTEGER_SETTINGS = ("memory_limit", "user_limit")
SETTINGS_CHANGED = "memorySettingsChanged"


# --- Pending queue ---------------------------------------------------------------------------

@dataclass
class PendingRow:
    item: PendingWrite
    steps: list[dict[str, Any]]  # action, content, old_text, pinned, index (from 1)
    error: str = ""
    drafts: dict[int, str] | None = None  # the reviewer's edits, kept when approval failed

    @property
    def editable(self) -> bool:
        return any(step["action"] in ("add", "replace") for step in self.steps)


def _steps_of(item: PendingWrite, drafts: dict[int, str] | None = None) -> list[dict[str, Any]]:
    """The payload's steps for display; `draft` is what the edit form shows for each."""
    payload = item.payload
    operations = payload["operations"] if "operations" in payload else [payload]
    pinned = list(item.pinned or [])
    return [{"index": i, "action": op.get("action"), "content": op.get("content"), "old_text": op.get("old_text"),
             "pinned": pinned[i - 1] if i - 1 < len(pinned) else None,
             "draft": (drafts or {}).get(i, op.get("content") or "")}
            for i, op in enumerate(operations, start=1)]


def _redacted_row(row: PendingRow, secrets: list[str]) -> PendingRow:
    """What a viewer sees: every text redacted again at display time. Items are stored
    redacted; this also covers the tenant's secrets added after an item was staged."""
    def clean(text: str | None) -> str | None:
        return threats.redact(text, secrets) if text is not None else None

    row.item.summary = clean(row.item.summary) or ""
    row.steps = [{**step, **{name: clean(step[name]) for name in ("content", "old_text", "pinned", "draft")}}
                 for step in row.steps]
    return row


def _pending_context(request: HttpRequest, *, focus: PendingRow | None = None, **extra: Any) -> dict[str, Any]:
    volume = volume_for(tenant_of(request))
    target = request.GET.get("target") if request.GET.get("target") in rules.TARGETS else ""
    queryset = PendingWrite.objects.filter(volume=volume, status="pending").order_by("created_at", "id")
    if target:
        queryset = queryset.filter(target=target)
    page = Paginator(queryset, PENDING_PER_PAGE).get_page(request.GET.get("page"))
    rows = [focus if focus is not None and focus.item.pk == item.pk else PendingRow(item, _steps_of(item))
            for item in page]
    if not can_act(request):
        rows = [_redacted_row(row, volume.secrets) for row in rows]
    return {"rows": rows, "page": page, "target": target, "query": f"?target={target}" if target else "",
            "total": pending_count(volume), "volume": volume, "can_act": can_act(request), **extra}


def _render_pending(request: HttpRequest, *, events: tuple[str, ...] = (), **extra: Any) -> HttpResponse:
    return render(request, "memory/pending.html", "pending-panel", _pending_context(request, **extra), events=events)


def _pending_item(request: HttpRequest, pending_id: str) -> PendingWrite:
    return get_object_or_404(PendingWrite, volume__tenant=tenant_of(request), public_id=pending_id)


@tenant_view(Role.VIEWER)
@require_GET
def pending_list(request: HttpRequest) -> HttpResponse:
    """Staged agent writes, oldest first."""
    return _render_pending(request)


def _edit_of(request: HttpRequest, row: PendingRow) -> tuple[dict[str, Any] | None, dict[int, str]]:
    """The reviewer's edit as pending_approve takes it (None when nothing was changed)."""
    drafts = {step["index"]: request.POST[f"content-{step['index']}"] for step in row.steps
              if step["action"] in ("add", "replace") and f"content-{step['index']}" in request.POST}
    if all(drafts[i] == step["content"] for i, step in enumerate(row.steps, start=1) if i in drafts):
        return None, drafts
    if "operations" not in row.item.payload:
        return {"content": drafts[1]}, drafts
    operations = [{"action": step["action"], "content": drafts.get(step["index"], step["content"])}
                  if step["action"] in ("add", "replace") else {"action": step["action"]} for step in row.steps]
    return {"operations": operations}, drafts


@tenant_view(Role.REVIEWER)
@require_POST
def pending_approve_view(request: HttpRequest, pending_id: str) -> HttpResponse:
    """Approve as staged, or after editing the content of its add/replace steps."""
    item = _pending_item(request, pending_id)
    row = PendingRow(item, _steps_of(item))
    edit, drafts = _edit_of(request, row)
    outcome = pending_approve(tenant=tenant_of(request), pending_id=item.public_id, reviewer=actor_of(request), edit=edit)
    if outcome.error is None:
        notice = f"Approved #{item.public_id}{' after your edit' if edit else ''}: {item.summary}"
        return _render_pending(request, notice=notice, events=(PENDING_CHANGED, MEMORY_CHANGED))
    if outcome.error.code == "NOT_PENDING":
        return _render_pending(request, notice=f"#{item.public_id}: {outcome.error.message}", notice_is_error=True,
                               events=(PENDING_CHANGED,))
    item.refresh_from_db()  # pending_approve recorded last_error
    kept = drafts if edit else None
    failed = PendingRow(item, _steps_of(item, kept), error=outcome.error.message, drafts=kept)
    return _render_pending(request, focus=failed)


@tenant_view(Role.REVIEWER)
@require_POST
def pending_reject_view(request: HttpRequest, pending_id: str) -> HttpResponse:
    item = _pending_item(request, pending_id)
    outcome = pending_reject(tenant=tenant_of(request), pending_id=item.public_id, reviewer=actor_of(request),
                             reason=request.POST.get("reason", "").strip())
    if outcome.error is not None:
        return _render_pending(request, notice=f"#{item.public_id}: {outcome.error.message}", notice_is_error=True,
                               events=(PENDING_CHANGED,))
    return _render_pending(request, notice=f"Rejected #{item.public_id}: {item.summary}", events=(PENDING_CHANGED,))


@tenant_view(Role.REVIEWER)
@require_POST
def pending_approve_all_view(request: HttpRequest) -> HttpResponse:
    """Oldest first, stopping at the first failure (which stays pending with its error)."""
    target = request.POST.get("target") if request.POST.get("target") in rules.TARGETS else None
    result = pending_approve_all(tenant=tenant_of(request), reviewer=actor_of(request), target=target)
    approved = len(result["approved"])
    notice = f"Approved {approved} item{'s' if approved != 1 else ''}."
    failed = result["failed"]
    if failed is not None:
        notice += (f" Stopped at #{failed['id']}: {failed['error']} {result['remaining']} "
                   f"item{'s' if result['remaining'] != 1 else ''} still pending.")
    events = (PENDING_CHANGED, MEMORY_CHANGED) if approved else ()
    return _render_pending(request, notice=notice, notice_is_error=failed is not None, events=events)


# --- Threat findings -------------------------------------------------------------------------

def _findings_context(request: HttpRequest, **extra: Any) -> dict[str, Any]:
    volume = volume_for(tenant_of(request))
    findings = list(ThreatFinding.objects.filter(volume=volume, resolved_at__isnull=True).order_by("target", "found_at", "id"))
    return {"findings": findings, "volume": volume, "can_act": can_act(request),
            "stored": {t: set(volume.entries(t)) for t in rules.TARGETS}, **extra}


@tenant_view(Role.VIEWER)
@require_GET
def findings_list(request: HttpRequest) -> HttpResponse:
    """Unresolved findings of the rescans and session snapshots."""
    return render(request, "memory/findings.html", "findings-panel", _findings_context(request))


@tenant_view(Role.REVIEWER)
@require_POST
def finding_remove(request: HttpRequest, finding_id: str) -> HttpResponse:
    """Remove the flagged entry through a normal human write (which resolves the finding)."""
    tenant = tenant_of(request)
    finding = get_object_or_404(ThreatFinding, volume__tenant=tenant, public_id=finding_id,
                                resolved_at__isnull=True)
    with transaction.atomic():
        # Locked first so the check that this exact entry is still stored and the removal see
        # one state: old_text is a substring test, and a finding whose entry is gone must not
        # delete some other entry that merely contains its text.
        volume = MemoryVolume.objects.select_for_update().get(pk=volume_for(tenant).pk)
        if finding.entry not in volume.entries(finding.target):
            outcome = None
        else:
            write = rules.parse_request({"action": "remove", "old_text": finding.entry}, finding.target)
            outcome = memory_write(tenant=tenant, request=write, origin=Origin.HUMAN, actor=actor_of(request))
    if outcome is None:
        context = _findings_context(request, notice="That entry is no longer stored; nothing was removed.",
                                    notice_is_error=True)
        return render(request, "memory/findings.html", "findings-panel", context)
    if outcome.error is not None:
        message = outcome.error.message
        if outcome.error.code == "AMBIGUOUS_MATCH":
            message = "The flagged text also occurs inside another entry; remove it on the Memory page instead."
        context = _findings_context(request, notice=message, notice_is_error=True)
        return render(request, "memory/findings.html", "findings-panel", context)
    context = _findings_context(request, notice=f"Removed the flagged {FILE_NAMES[finding.target]} entry.")
    return render(request, "memory/findings.html", "findings-panel", context, events=(MEMORY_CHANGED,))


# --- Admin settings --------------------------------------------------------------------------

def _settings_context(request: HttpRequest, **extra: Any) -> dict[str, Any]:
    volume = volume_for(tenant_of(request))
    values = {name: getattr(volume, name) for name in SETTINGS_FIELDS}
    return {"values": values, "approval_choices": Approval.choices, "secret_count": len(volume.secrets),
            "volume": volume, "errors": {}, **extra}


def _render_settings(request: HttpRequest, *, events: tuple[str, ...] = (), **extra: Any) -> HttpResponse:
    return render(request, "memory/settings.html", "settings-panel", _settings_context(request, **extra), events=events)


def _form_values(post: Any) -> dict[str, Any]:
    """An HTML form sends text, and the settings serializer takes no text for a number
    (docs/api.md "Conventions"): a limit written as an integer goes as one; anything else goes
    as typed, and the serializer's message says why it is refused."""
    payload: dict[str, Any] = {name: post.get(name, "").strip() for name in SETTINGS_FIELDS}
    for name in INTEGER_SETTINGS:
        if re.fullmatch(r"[+-]?\d{1,9}", payload[name]):
            payload[name] = int(payload[name])
    return payload


@tenant_view(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def memory_settings(request: HttpRequest) -> HttpResponse:
    """Limits and the approval policy, saved through the tenant settings service (audited)."""
    if request.method == "GET":
        return _render_settings(request)
    tenant = tenant_of(request)
    payload = _form_values(request.POST)
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
    return _render_settings(request, notice=notice, events=(SETTINGS_CHANGED, MEMORY_CHANGED) if changed else ())


@tenant_view(Role.ADMIN)
@require_POST
def memory_secret_add(request: HttpRequest) -> HttpResponse:
    """Add one secret. The value is never rendered back, not even after an error."""
    try:
        count = secrets_add(tenant=tenant_of(request), secret=request.POST.get("secret", ""), actor=actor_of(request))
    except SecretRejected as exc:
        return _render_settings(request, secret_error=exc.message)
    return _render_settings(request, secret_notice=f"Secret saved; {count} set.", events=(SETTINGS_CHANGED,))


@tenant_view(Role.ADMIN)
@require_POST
def memory_secrets_clear(request: HttpRequest) -> HttpResponse:
    cleared = secrets_clear(tenant=tenant_of(request), actor=actor_of(request))
    notice = f"Cleared {cleared} secret{'s' if cleared != 1 else ''}." if cleared else "No secrets were set."
    return _render_settings(request, secret_notice=notice, events=(SETTINGS_CHANGED,) if cleared else ())
