"""Review of staged agent writes: approve (optionally edited), reject, approve all (docs/memory-files.md "How it works")."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from memoryhub import threats
from memoryhub.actors import Actor
from memoryhub.audit import audit_record
from tenants.memory import rules
from tenants.memory.rules import MemoryRuleError, Step, WriteRequest
from tenants.memory.service import WriteOutcome, _locked, commit_entries, refusal
from tenants.models import MemoryVolume, PendingWrite, Tenant


def _request_of(pending: PendingWrite) -> WriteRequest:
    return rules.parse_request(pending.payload, pending.target)


def edited_payload(pending: PendingWrite, edit: dict[str, Any]) -> dict[str, Any]:
    """Apply a reviewer's edit: new `content` for a single add/replace, or `operations` whose
    add/replace steps carry new content (same steps, same order)."""
    request = _request_of(pending)
    if request.is_batch:
        operations = edit.get("operations")
        if not isinstance(operations, list) or len(operations) != len(request.steps):
            raise rules.invalid("an edited batch must list the same operations in the same order")
        steps = []
        for step, new in zip(request.steps, operations, strict=True):
            if not isinstance(new, dict) or new.get("action", step.action) != step.action:
                raise rules.invalid("an edit may change content only, not actions")
            content = new.get("content", step.content) if step.action in ("add", "replace") else step.content
            if content is not None and not isinstance(content, str):
                raise rules.invalid("'content' must be a string")
            steps.append(Step(step.action, content, step.old_text))
        return WriteRequest(pending.target, "batch", tuple(steps)).payload()
    step = request.steps[0]
    content = edit.get("content")
    if step.action not in ("add", "replace") or not isinstance(content, str):
        raise rules.invalid("only the content of an add or replace can be edited")
    return WriteRequest(pending.target, step.action, (Step(step.action, content, step.old_text),)).payload()


def _decidable(volume: MemoryVolume, pending_id: str, target: str | None = None) -> PendingWrite:
    """The locked pending item (by its public id), or the refusal raised, with the fields of
    store `target` (the item's own, or `memory` when there is no item, when None)."""
    pending = PendingWrite.objects.select_for_update().filter(volume_id=volume.pk, public_id=pending_id).first()
    if pending is None:
        raise refusal(volume, target or "memory", MemoryRuleError("PENDING_NOT_FOUND", "No such pending item."))
    if pending.status != "pending":
        raise refusal(volume, target or pending.target,
                      MemoryRuleError("NOT_PENDING", f"This item was already {pending.status}."))
    return pending


def pending_approve(*, tenant: Tenant, pending_id: str, reviewer: Actor, edit: dict[str, Any] | None = None) -> WriteOutcome:
    """Replay the payload through the normal rules (limits and scan again, never re-staged),
    replace/remove aimed at their pinned entries. On failure the item stays pending, with the
    refusal as its `last_error`."""
    with transaction.atomic():
        volume = _locked(tenant)
        pending = _decidable(volume, pending_id)
        if edit:
            try:
                # The reviewer's text is stored redacted, as a staged write is.
                payload = rules.redacted(rules.parse_request(edited_payload(pending, edit), pending.target),
                                         volume.secrets).payload()
            except MemoryRuleError as exc:
                refusal(volume, pending.target, exc)
                raise  # nothing was written yet
            if pending.original_payload is None:
                pending.original_payload = pending.payload
            pending.payload = payload
        request = _request_of(pending)
        try:
            plan = rules.plan_write(request, volume.entries(pending.target), volume.limit(pending.target),
                                    volume.secrets, pinned=pending.pinned)
        except MemoryRuleError as exc:
            # Only the error is kept: a refused edit must not replace the pending content.
            PendingWrite.objects.filter(pk=pending.pk).update(last_error={"code": exc.code, "message": exc.message})
            refused = refusal(volume, pending.target, exc)
        else:
            number = volume.version(pending.target)
            if plan.entries is not None:
                number = commit_entries(volume=volume, target=pending.target, entries=plan.entries,
                                        origin=pending.origin,
                                        actor=Actor(kind="key" if pending.created_by_key_id else "system",
                                                    label=pending.created_by, key_id=pending.created_by_key_id),
                                        session=pending.session, pending=pending, approved_by=reviewer)
            pending.status, pending.decided_at, pending.decided_by = "approved", timezone.now(), reviewer.label
            pending.last_error = None
            pending.save()
            audit_record(tenant=tenant, actor=reviewer, action="memory.approve", object_type="pending_write",
                         object_id=pending.public_id, after=pending.payload)
            return WriteOutcome({"success": True, "version": number}, version=number)
    raise refused  # after the commit, which keeps the item's last_error


def pending_reject(*, tenant: Tenant, pending_id: str, reviewer: Actor, reason: str = "") -> WriteOutcome:
    with transaction.atomic():
        volume = _locked(tenant)
        # Its refusals have always carried the memory store's fields, whatever the item's store.
        pending = _decidable(volume, pending_id, target="memory")
        pending.status, pending.decided_at, pending.decided_by = "rejected", timezone.now(), reviewer.label
        pending.reason = threats.redact(reason, volume.secrets)[:500]  # free text, shown to the queue's readers
        pending.save()
        audit_record(tenant=tenant, actor=reviewer, action="memory.reject", object_type="pending_write",
                     object_id=pending.public_id, before=pending.payload)
    return WriteOutcome({"success": True})


def pending_approve_all(*, tenant: Tenant, reviewer: Actor, target: str | None = None) -> dict[str, Any]:
    """Oldest first, one transaction each, stopping at the first failure."""
    volume = _volume_id(tenant)
    queryset = PendingWrite.objects.filter(volume_id=volume, status="pending").order_by("created_at", "id")
    if target:
        queryset = queryset.filter(target=target)
    approved: list[str] = []
    failed: dict[str, Any] | None = None
    for pending_id in list(queryset.values_list("public_id", flat=True)):
        try:
            pending_approve(tenant=tenant, pending_id=pending_id, reviewer=reviewer)
        except MemoryRuleError as exc:
            failed = {"id": pending_id, "code": exc.code, "error": exc.message}
            break
        approved.append(pending_id)
    return {"approved": approved, "failed": failed, "remaining": queryset.count()}


def _volume_id(tenant: Tenant) -> int:
    from tenants.memory.service import volume_for

    return volume_for(tenant).pk
