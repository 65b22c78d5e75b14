"""Redacting what is already stored for one tenant (docs/memory-files.md "Redaction").

Writes are redacted before they are stored; this is for text stored before: by an older
release (migration 0005_redact_stored_secrets) or before the tenant configured a secret
(`secrets_add`). It rewrites in place the current entries, every history version, pending
items, session snapshots (their digest recomputed) and threat findings, and saves only the
rows that change. Idempotent.

Models come from `apps` (`apps.get_model`), so the migration can pass its historical
models and the services the real ones; only fields that exist since 0003_memory_files are
used.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from memoryhub.redaction import redact


def redact_entries(entries: Sequence[str], secrets: Sequence[str]) -> list[str]:
    """Each entry redacted; an entry that redaction made equal to an earlier one is dropped
    (a store never holds the same entry twice)."""
    kept: list[str] = []
    for entry in entries:
        text = redact(entry, secrets) if isinstance(entry, str) else entry
        if text not in kept:
            kept.append(text)
    return kept


def redact_payload(payload: Any, secrets: Sequence[str]) -> Any:
    """A pending payload ({action, content?, old_text?} or {operations: [...]}) redacted."""
    if not isinstance(payload, dict):
        return payload
    if isinstance(payload.get("operations"), list):
        return {**payload, "operations": [redact_payload(step, secrets) for step in payload["operations"]]}
    return {name: redact(value, secrets) if name in ("content", "old_text") and isinstance(value, str) else value
            for name, value in payload.items()}


def _text(value: Any, secrets: Sequence[str]) -> Any:
    return redact(value, secrets) if isinstance(value, str) else value


# Reasons are CharField(max_length=500); redaction can lengthen a text (an eight-character
# secret becomes the 14 characters of the marker), and PostgreSQL refuses what overflows.
REASON_LENGTH = 500


def _reason(value: Any, secrets: Sequence[str]) -> Any:
    text = _text(value, secrets)
    return text[:REASON_LENGTH] if isinstance(text, str) else text


def summary_of_payload(payload: Any, fallback: Any) -> Any:
    """The summary as a write stores it (tenants.memory.rules.summary_of), rebuilt from the
    redacted payload: the stored summary is a 77-character preview that may have cut a secret
    in two, and the half left matches no rule."""
    if not isinstance(payload, dict):
        return fallback
    steps = payload.get("operations")
    if isinstance(steps, list):
        actions = [step.get("action", "?") if isinstance(step, dict) else "?" for step in steps]
        text = f"batch of {len(steps)}: " + ", ".join(str(a) for a in actions)
    else:
        body = payload.get("content") or payload.get("old_text") or ""
        text = f"{payload.get('action', '?')}: {str(body).strip()}"
    return text if len(text) <= 77 else text[:77] + "..."


def _save_changed(row: Any, changes: dict[str, Any]) -> None:
    changed = [name for name, value in changes.items() if getattr(row, name) != value]
    for name in changed:
        setattr(row, name, changes[name])
    if changed:
        row.save(update_fields=changed)


def redact_volume(apps: Any, volume: Any) -> None:
    secrets = [s for s in (volume.secrets or []) if isinstance(s, str)]
    _save_changed(volume, {"memory_entries": redact_entries(volume.memory_entries or [], secrets),
                           "user_entries": redact_entries(volume.user_entries or [], secrets)})
    for version in apps.get_model("tenants", "MemoryVersion").objects.filter(volume_id=volume.pk).iterator():
        _save_changed(version, {"entries": redact_entries(version.entries or [], secrets),
                                "reason": _reason(version.reason, secrets)})
    for item in apps.get_model("tenants", "PendingWrite").objects.filter(volume_id=volume.pk).iterator():
        last_error = item.last_error
        if isinstance(last_error, dict) and isinstance(last_error.get("message"), str):
            last_error = {**last_error, "message": redact(last_error["message"], secrets)}
        payload = redact_payload(item.payload, secrets)
        _save_changed(item, {
            "payload": payload,
            "original_payload": redact_payload(item.original_payload, secrets),
            "pinned": [_text(entry, secrets) for entry in (item.pinned or [])],
            "summary": summary_of_payload(payload, _text(item.summary, secrets)[:80]),
            "last_error": last_error,
            "reason": _reason(item.reason, secrets),
        })
    for session in apps.get_model("tenants", "MemorySession").objects.filter(volume_id=volume.pk).iterator():
        snapshot = redact(session.snapshot, secrets)
        if snapshot != session.snapshot:
            # The digest describes the snapshot as stored; a client comparing digests sees
            # that the snapshot changed, which it did.
            digest = "sha256:" + hashlib.sha256(snapshot.encode("utf-8")).hexdigest()
            _save_changed(session, {"snapshot": snapshot, "snapshot_digest": digest})
    for finding in apps.get_model("tenants", "ThreatFinding").objects.filter(volume_id=volume.pk).iterator():
        _save_changed(finding, {"entry": redact(finding.entry, secrets)})
