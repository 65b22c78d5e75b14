"""The memory pending queue (docs/memory-files.md "Review UI"): staged agent writes, oldest
first, each compact with the store's size after approval; approve (optionally edited),
reject, approve all, approve or reject a selection; and the decided items with their reasons.

Every decision goes through tenants.memory.approval with the signed-in person as actor.
Pending items are looked up from the request's tenant, so another tenant's ids are simply
not found (404).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.paginator import Paginator
from django.db.models import F
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET, require_POST

from memoryhub import threats
from tenants.forms import LenientForm, PostedList, PostedText, ReasonForm, first_error
from tenants.memory import rules
from tenants.memory.approval import pending_approve, pending_approve_all, pending_reject
from tenants.memory.rules import MemoryRuleError
from tenants.memory.service import pending_count, volume_for
from tenants.models import PendingWrite, Role
from tenants.pending_rows import PendingRow, SizeAfter, redacted_row, refusal_text, row_of, size_after
from tenants.ui import tenant_view
from tenants.ui_render import render_page
from tenants.ui_request import TenantRequest, actor_of, can_act
from tenants.views_memory import PENDING_CHANGED

PENDING_PER_PAGE = 50
DECIDED_PER_PAGE = 25
# A selection is made on one page of the queue, so it never holds more than a page.
MAX_SELECTION = PENDING_PER_PAGE
BULK_DECISIONS = ("approve", "reject")


def _target(params: Any) -> str:
    return params.get("target") if params.get("target") in rules.TARGETS else ""


class ApproveForm(LenientForm):
    """The reviewer's text for each add/replace step, as `content-<step>`. A step has a field
    only when the page sent one: a card approved without opening its editor sends none."""

    def __init__(self, data: Any, *, row: PendingRow) -> None:
        super().__init__(data)
        for step in row.steps:
            name = f"content-{step['index']}"
            if step["action"] in ("add", "replace") and name in data:
                self.fields[name] = PostedText()


class ApproveAllForm(LenientForm):
    target = PostedText()  # a store name narrows the run; anything else is every store


class BulkForm(forms.Form):
    """A decision on the selected items; the first refusal (decision, then the selection) is
    the page's notice and nothing is decided."""

    decision = forms.ChoiceField(choices=[(d, d) for d in BULK_DECISIONS], error_messages={
        "required": "Choose “Approve selected” or “Reject selected”.",
        "invalid_choice": "Choose “Approve selected” or “Reject selected”.",
    })
    ids = PostedList()
    reason = PostedText(strip=True)

    def clean_ids(self) -> list[str]:
        ids = list(dict.fromkeys(self.cleaned_data["ids"]))
        if not ids:
            raise forms.ValidationError("Select at least one item first; nothing was decided.")
        if len(ids) > MAX_SELECTION:
            raise forms.ValidationError(f"Select at most {MAX_SELECTION} items at a time; nothing was decided.")
        return ids


def _pending_context(request: TenantRequest, *, focus: PendingRow | None = None, **extra: Any) -> dict[str, Any]:
    volume = volume_for(request.tenant)
    target = _target(request.GET)
    queryset = PendingWrite.objects.filter(volume=volume, status="pending").order_by("created_at", "id")
    if target:
        queryset = queryset.filter(target=target)
    page = Paginator(queryset, PENDING_PER_PAGE).get_page(request.GET.get("page"))
    rows = [focus if focus is not None and focus.item.pk == item.pk else row_of(item, volume) for item in page]
    if not can_act(request):
        rows = [redacted_row(row, volume.secrets) for row in rows]
    return {"rows": rows, "page": page, "target": target, "query": f"?target={target}" if target else "",
            "total": pending_count(volume), "volume": volume, "can_act": can_act(request), "show": "pending",
            **extra}


def _decided_context(request: TenantRequest) -> dict[str, Any]:
    """Decided items, newest decision first; viewers see summaries and reasons redacted again
    with the tenant's current secrets, as they see pending items."""
    volume = volume_for(request.tenant)
    target = _target(request.GET)
    queryset = (PendingWrite.objects.filter(volume=volume).exclude(status="pending")
                .order_by(F("decided_at").desc(nulls_last=True), "-id"))
    if target:
        queryset = queryset.filter(target=target)
    page = Paginator(queryset, DECIDED_PER_PAGE).get_page(request.GET.get("page"))
    decided = list(page)
    if not can_act(request):
        for item in decided:
            item.summary = threats.redact(item.summary, volume.secrets)
            item.reason = threats.redact(item.reason, volume.secrets)
    return {"decided": decided, "page": page, "target": target, "query": f"?target={target}" if target else "",
            "total": pending_count(volume), "volume": volume, "can_act": can_act(request), "show": "decided"}


def _render_pending(request: TenantRequest, *, event: str = "", **extra: Any) -> HttpResponse:
    return render_page(request, "memory/pending.html", _pending_context(request, **extra), partial="pending-panel",
                       event=event)


def _pending_item(request: TenantRequest, pending_id: str) -> PendingWrite:
    return get_object_or_404(PendingWrite, volume__tenant=request.tenant, public_id=pending_id)


@tenant_view(Role.VIEWER)
@require_GET
def pending_list(request: TenantRequest) -> HttpResponse:
    """Staged agent writes, oldest first; with ?show=decided the decided ones, newest first."""
    if request.GET.get("show") == "decided":
        return render_page(request, "memory/pending.html", _decided_context(request), partial="pending-panel")
    return _render_pending(request)


def _edit_of(request: TenantRequest, row: PendingRow) -> tuple[dict[str, Any] | None, dict[int, str]]:
    """The reviewer's edit as pending_approve takes it (None when nothing was changed)."""
    posted = ApproveForm.read(request.POST, row=row)
    drafts = {step["index"]: posted[f"content-{step['index']}"] for step in row.steps
              if f"content-{step['index']}" in posted}
    if all(drafts[i] == step["content"] for i, step in enumerate(row.steps, start=1) if i in drafts):
        return None, drafts
    if "operations" not in row.item.payload:
        return {"content": drafts[1]}, drafts
    operations = [{"action": step["action"], "content": drafts.get(step["index"], step["content"])}
                  if step["action"] in ("add", "replace") else {"action": step["action"]} for step in row.steps]
    return {"operations": operations}, drafts


@tenant_view(Role.REVIEWER)
@require_POST
def pending_approve_view(request: TenantRequest, pending_id: str) -> HttpResponse:
    """Approve as staged, or after editing the content of its add/replace steps."""
    item = _pending_item(request, pending_id)
    volume = volume_for(request.tenant)
    edit, drafts = _edit_of(request, row_of(item, volume))
    try:
        pending_approve(tenant=request.tenant, pending_id=item.public_id, reviewer=actor_of(request), edit=edit)
    except MemoryRuleError as exc:
        if exc.code == "NOT_PENDING":
            return _render_pending(request, notice=f"#{item.public_id}: {exc.message}", notice_is_error=True,
                                   event=PENDING_CHANGED)
        item.refresh_from_db()  # pending_approve recorded last_error
        kept = drafts if edit else None
        failed = row_of(item, volume, drafts=kept)
        # The row's size is the staged text's: after a refused edit the refusal gives no numbers.
        size = SizeAfter(failed.size.file_name, None, failed.size.limit) if edit and failed.size else failed.size
        failed.error = refusal_text(exc.code, exc.message, size)
        return _render_pending(request, focus=failed)
    notice = f"Approved #{item.public_id}{' after your edit' if edit else ''}: {item.summary}"
    return _render_pending(request, notice=notice, event=PENDING_CHANGED)


@tenant_view(Role.REVIEWER)
@require_POST
def pending_reject_view(request: TenantRequest, pending_id: str) -> HttpResponse:
    item = _pending_item(request, pending_id)
    try:
        pending_reject(tenant=request.tenant, pending_id=item.public_id, reviewer=actor_of(request),
                       reason=ReasonForm.read(request.POST)["reason"])
    except MemoryRuleError as exc:
        return _render_pending(request, notice=f"#{item.public_id}: {exc.message}", notice_is_error=True,
                               event=PENDING_CHANGED)
    return _render_pending(request, notice=f"Rejected #{item.public_id}: {item.summary}", event=PENDING_CHANGED)


@tenant_view(Role.REVIEWER)
@require_POST
def pending_approve_all_view(request: TenantRequest) -> HttpResponse:
    """Oldest first, stopping at the first failure (which stays pending with its error)."""
    target = _target(ApproveAllForm.read(request.POST)) or None
    result = pending_approve_all(tenant=request.tenant, reviewer=actor_of(request), target=target)
    approved = len(result["approved"])
    notice = f"Approved {approved} item{'s' if approved != 1 else ''}."
    failed = result["failed"]
    if failed is not None:
        item = _pending_item(request, failed["id"])
        error = refusal_text(failed["code"], failed["error"], size_after(item, volume_for(request.tenant)))
        notice += (f" Stopped at #{failed['id']}: {error} {result['remaining']} "
                   f"item{'s' if result['remaining'] != 1 else ''} still pending.")
    return _render_pending(request, notice=notice, notice_is_error=failed is not None,
                           event=PENDING_CHANGED if approved else "")


def _items(n: int) -> str:
    return f"{n} item{'s' if n != 1 else ''}"


@tenant_view(Role.REVIEWER)
@require_POST
def pending_bulk_view(request: TenantRequest) -> HttpResponse:
    """Approve or reject the selected items (docs/memory-files.md "Review UI").

    Each item is decided by the same service call as its own Approve or Reject button, in
    its own transaction, oldest first; a failure does not undo or stop the others: what was
    decided stays decided, and a failed approval stays pending with its error, as after a
    single approve. The whole selection is looked up first: an id this tenant does not have
    is 404 and nothing is decided.
    """
    form = BulkForm(request.POST)
    if not form.is_valid():
        return _render_pending(request, notice=first_error(form), notice_is_error=True)
    decision, ids = form.cleaned_data["decision"], form.cleaned_data["ids"]
    items = list(PendingWrite.objects.filter(volume__tenant=request.tenant, public_id__in=ids)
                 .order_by("created_at", "id"))
    if len(items) != len(ids):
        raise Http404("No such pending item.")
    reviewer, reason = actor_of(request), form.cleaned_data["reason"]
    done: list[str] = []
    refused: list[tuple[PendingWrite, MemoryRuleError]] = []
    for item in items:
        try:
            if decision == "approve":
                pending_approve(tenant=request.tenant, pending_id=item.public_id, reviewer=reviewer)
            else:
                pending_reject(tenant=request.tenant, pending_id=item.public_id, reviewer=reviewer, reason=reason)
        except MemoryRuleError as exc:
            refused.append((item, exc))
        else:
            done.append(item.public_id)
    # Sizes against the store as the selection left it, as the cards below show them.
    volume = volume_for(request.tenant)
    failures = [f"#{item.public_id}: {refusal_text(error.code, error.message, size_after(item, volume))}"
                for item, error in refused]
    verb = "Approved" if decision == "approve" else "Rejected"
    notice = f"{verb} {_items(len(done))}"
    notice += f": {', '.join('#' + public_id for public_id in done)}." if done else "."
    if failures:
        notice += f" Not {verb.lower()} ({_items(len(failures))}, still shown if pending): {' '.join(failures)}"
    return _render_pending(request, notice=notice, notice_is_error=bool(failures), event=PENDING_CHANGED if done else "")
