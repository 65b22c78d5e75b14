"""Chat sessions with a frozen snapshot of the approved entries (docs/memory-files.md "How it works")."""

from __future__ import annotations

import uuid

from django.db import IntegrityError, transaction

from memoryhub import threats
from memoryhub.actors import Actor
from memoryhub.digests import sha256_hex
from memoryhub.errors import DomainError
from tenants.memory import rules
from tenants.memory.service import volume_for
from tenants.models import MemorySession, MemoryVolume, Tenant, ThreatFinding

RULE = "═" * 46
HEADERS = {"memory": "MEMORY (your personal notes)", "user": "USER PROFILE (who the user is)"}


def _record_finding(volume: MemoryVolume, target: str, entry: str, patterns: list[str]) -> None:
    exists = ThreatFinding.objects.filter(volume=volume, target=target, entry=entry, resolved_at__isnull=True,
                                          patterns_version=threats.PATTERNS_VERSION).exists()
    if not exists:
        ThreatFinding.objects.create(volume=volume, target=target, entry=entry, patterns=patterns,
                                     patterns_version=threats.PATTERNS_VERSION)


def render_block(volume: MemoryVolume, target: str) -> str:
    """One store's block; flagged entries become placeholders (in the snapshot only)."""
    entries = volume.entries(target)
    if not entries:
        return ""
    shown = []
    for entry in entries:
        findings = threats.scan(threats.redact(entry, volume.secrets))
        if findings:
            ids = list(dict.fromkeys(f.pattern for f in findings))
            _record_finding(volume, target, entry, ids)
            shown.append(f"[BLOCKED: matched {', '.join(ids)}; remove it with the memory tool]")
        else:
            shown.append(threats.redact(entry, volume.secrets))
    header = f"{HEADERS[target]} [{rules.usage(entries, volume.limit(target))}]"
    return "\n".join([RULE, header, RULE, rules.file_form(shown)])


def build_snapshot(volume: MemoryVolume) -> str:
    return "\n\n".join(block for block in (render_block(volume, "memory"), render_block(volume, "user")) if block)


def session_create(*, tenant: Tenant, chat_id: str | None, actor: Actor) -> tuple[MemorySession, bool]:
    """A new session (True), or the tenant's existing one for this chat_id (False)."""
    volume = volume_for(tenant)
    if chat_id is not None:
        existing = MemorySession.objects.filter(volume=volume, chat_id=chat_id).first()
        if existing is not None:
            return existing, False
    try:
        with transaction.atomic():
            volume = MemoryVolume.objects.select_related("tenant").get(pk=volume.pk)
            snapshot = build_snapshot(volume)
            session = MemorySession.objects.create(
                volume=volume, chat_id=chat_id, snapshot=snapshot,
                snapshot_digest="sha256:" + sha256_hex(snapshot),
                memory_version=volume.memory_version, user_version=volume.user_version, created_by=actor.label,
            )
    except IntegrityError:  # the same chat_id raced us: answer with the session that won
        return MemorySession.objects.get(volume=volume, chat_id=chat_id), False
    return session, True


def session_of(tenant: Tenant, raw_id: str) -> MemorySession:
    """The tenant's session with this id; any other id (malformed, unknown, another
    tenant's) is the same 404 SESSION_NOT_FOUND."""
    try:
        key = uuid.UUID(raw_id)
    except ValueError:
        key = None
    session = MemorySession.objects.filter(volume__tenant=tenant, pk=key).first() if key else None
    if session is None:
        raise DomainError("SESSION_NOT_FOUND", "No such session.")
    return session


def session_body(session: MemorySession) -> dict[str, object]:
    return {
        "id": str(session.id), "chat_id": session.chat_id,
        "created_at": session.created_at.isoformat().replace("+00:00", "Z"),
        "snapshot": session.snapshot, "snapshot_digest": session.snapshot_digest,
        "versions": {"memory": session.memory_version, "user": session.user_version},
    }
