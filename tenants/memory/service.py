"""Memory-file services: writes, staging, versions and undo. Each mutation is one
transaction that starts by locking the tenant's MemoryVolume row (docs/memory-files.md "How it works").

A refused write raises `MemoryRuleError` carrying the store's approved entries and usage
beside its own fields (`refusal`), which every answer to a refusal shows: the REST error
envelope and the tool's `success: false` result (docs/memory-files.md "Using it from an agent")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from memoryhub import threats
from memoryhub.actors import Actor
from memoryhub.audit import audit_record
from tenants.memory import rules
from tenants.memory.rules import MemoryRuleError, WriteRequest
from tenants.models import (
    Approval,
    MemorySession,
    MemoryVersion,
    MemoryVolume,
    Origin,
    PendingWrite,
    Tenant,
    ThreatFinding,
)

STAGED_NOTE = "This write is queued for review. Do not send it again."


@dataclass
class WriteOutcome:
    """A done write: its result `body`, answered with HTTP `status` (202 when staged) and the
    new `version` when one was stored. Refusals are raised as `MemoryRuleError`."""

    body: dict[str, Any]
    status: int = 200
    version: int | None = None


def volume_for(tenant: Tenant) -> MemoryVolume:
    return MemoryVolume.get_or_create_for(tenant)


def store_state(volume: MemoryVolume, target: str) -> dict[str, Any]:
    entries, limit = volume.entries(target), volume.limit(target)
    return {"entries": entries, "usage": rules.usage(entries, limit), "chars": rules.size_of(entries),
            "limit": limit, "entry_count": len(entries), "version": volume.version(target)}


def pending_count(volume: MemoryVolume, target: str | None = None) -> int:
    queryset = volume.pending_writes.filter(status="pending")
    return queryset.filter(target=target).count() if target else queryset.count()


def success_body(volume: MemoryVolume, target: str, message: str) -> dict[str, Any]:
    entries = volume.entries(target)
    return {"success": True, "done": True, "target": target, "message": message,
            "usage": rules.usage(entries, volume.limit(target)), "entry_count": len(entries), "note": rules.DONE_NOTE}


def error_fields(volume: MemoryVolume, target: str, error: MemoryRuleError) -> dict[str, Any]:
    """What a refusal carries besides code and message: the approved entries and usage."""
    entries = volume.entries(target)
    return {"current_entries": entries, "usage": rules.usage(entries, volume.limit(target)), **error.extra}


def refusal(volume: MemoryVolume, target: str, error: MemoryRuleError) -> MemoryRuleError:
    """`error` with the store's entries and usage added to its fields, as it is answered.
    Fields it already has stay (a retry-capped refusal keeps its cause's)."""
    error.details = error_fields(volume, target, error)
    return error


def should_stage(approval: str, origin: str) -> bool:
    return (approval == Approval.ALL and origin in (Origin.FOREGROUND, Origin.REVIEW)) or (
        approval == Approval.REVIEW_ONLY and origin == Origin.REVIEW
    )


def _locked(tenant: Tenant) -> MemoryVolume:
    volume_for(tenant)  # make sure the row exists before locking it
    return MemoryVolume.objects.select_for_update().select_related("tenant").get(tenant=tenant)


def commit_entries(
    *, volume: MemoryVolume, target: str, entries: list[str], origin: str, actor: Actor,
    session: MemorySession | None = None, reason: str = "", pending: PendingWrite | None = None,
    approved_by: Actor | None = None,
) -> int:
    """Store a new version (the volume row must be locked by the caller's transaction)."""
    before = volume.entries(target)
    number = volume.version(target) + 1
    MemoryVersion.objects.create(
        volume=volume, target=target, number=number, entries=entries, origin=origin, actor_label=actor.label,
        actor_key_id=actor.key_id, actor_user_id=actor.user_id, session=session,
        reason=threats.redact(reason, volume.secrets)[:500],  # a person's free text is stored too
        pending=pending, approved_by_id=approved_by.user_id if approved_by else None,
        approved_by_label=approved_by.label if approved_by else "",
    )
    setattr(volume, f"{target}_entries", entries)
    setattr(volume, f"{target}_version", number)
    volume.save(update_fields=[f"{target}_entries", f"{target}_version"])
    open_findings = ThreatFinding.objects.filter(volume=volume, target=target, resolved_at__isnull=True)
    if open_findings.exists():  # most volumes have none: skip sending every entry as a parameter
        open_findings.exclude(entry__in=entries).update(resolved_at=timezone.now())
    audit_record(tenant=volume.tenant, actor=approved_by or actor, action=f"memory.{origin}.write",
                 object_type="memory_store", object_id=f"{target}@{number}", before=before, after=entries)
    from tenants.memory.projection import schedule_sync

    schedule_sync(volume)
    return number


def memory_write(
    *, tenant: Tenant, request: WriteRequest, origin: str, actor: Actor, session: MemorySession | None = None,
    pinned: Sequence[str | None] = (),
) -> WriteOutcome:
    """Validate, then apply or stage one write (request.action != "list"); a refusal raises
    `MemoryRuleError`. `pinned` names whole entries that replace/remove steps aim at (the UI
    edits one exact entry), instead of matching old_text as a substring."""
    target = request.target
    with transaction.atomic():
        volume = _locked(tenant)
        try:
            plan = rules.plan_write(request, volume.entries(target), volume.limit(target), volume.secrets,
                                    pinned=pinned)
        except MemoryRuleError as exc:
            refusal(volume, target, exc)
            raise  # nothing was written: rolling the transaction back loses nothing
        if plan.entries is None:  # no-op: duplicate add or same-text replace
            return WriteOutcome(success_body(volume, target, plan.message))
        if should_stage(volume.approval, origin):
            return _stage(volume, request, plan, origin, actor, session)
        number = commit_entries(volume=volume, target=target, entries=plan.entries, origin=origin, actor=actor,
                                session=session)
        return WriteOutcome(success_body(volume, target, plan.message), version=number)


def _stage(volume: MemoryVolume, request: WriteRequest, plan: rules.Plan, origin: str, actor: Actor,
           session: MemorySession | None) -> WriteOutcome:
    # Stored redacted (docs/memory-files.md "Redaction"): the queue is shown to every member
    # and the payload is replayed at approval, when it is redacted again anyway.
    request = rules.redacted(request, volume.secrets)
    payload = request.payload()
    pending = PendingWrite.objects.filter(volume=volume, target=request.target, status="pending",
                                          payload=payload).first()
    if pending is None:
        pending = PendingWrite.objects.create(
            volume=volume, target=request.target, payload=payload, pinned=plan.pinned, origin=origin,
            summary=rules.summary_of(request), created_by=actor.label, created_by_key_id=actor.key_id,
            session=session,
        )
        audit_record(tenant=volume.tenant, actor=actor, action="memory.stage", object_type="pending_write",
                     object_id=pending.public_id, after=payload)
    body = success_body(volume, request.target, f"Queued for review as {pending.public_id}. Not saved yet; it stays out of "
                        "list results and new sessions until approved.")
    body.update(staged=True, pending_id=pending.public_id, note=STAGED_NOTE)
    return WriteOutcome(body, status=202)


def memory_undo(*, tenant: Tenant, target: str, version: int, actor: Actor, reason: str = "") -> WriteOutcome:
    """Restore the entries after version N (0 = empty) as a new human version. A refusal is
    raised before anything is written."""
    with transaction.atomic():
        volume = _locked(tenant)
        if version == 0:
            entries: list[str] = []
        else:
            row = MemoryVersion.objects.filter(volume=volume, target=target, number=version).first()
            if row is None:
                raise refusal(volume, target, MemoryRuleError("VERSION_NOT_FOUND", f"No {target} version {version}."))
            entries = list(row.entries)
        current = volume.entries(target)
        if entries == current:
            return WriteOutcome({"success": True, "version": volume.version(target)})
        for entry in entries:
            if entry in current:
                continue  # already live: the snapshot scan still guards it
            finding = threats.first_finding(entry)
            if finding is not None:
                error = MemoryRuleError("THREAT_BLOCKED", f"Refused by scanner rule '{finding.pattern}': that version "
                                        "holds an entry memory may not keep.", pattern=finding.pattern)
                raise refusal(volume, target, error)
        limit = volume.limit(target)
        if rules.size_of(entries) > limit and rules.size_of(entries) >= rules.size_of(current):
            error = MemoryRuleError("OVER_LIMIT", f"The result would hold {rules.fmt(rules.size_of(entries))}/"
                                    f"{rules.fmt(limit)} chars. Shorten the new text or trim other entries first.")
            raise refusal(volume, target, error)
        number = commit_entries(volume=volume, target=target, entries=entries, origin=Origin.HUMAN, actor=actor,
                                reason=reason or f"restore version {version}")
        return WriteOutcome({"success": True, "version": number}, version=number)
