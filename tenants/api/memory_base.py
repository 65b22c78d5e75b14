"""Shared parts of the memory-file API: scopes, write headers, the retry cap, error shapes."""

from __future__ import annotations

import uuid
from typing import Any

from django.core.cache import cache
from django.http import JsonResponse

from memoryhub.api.errors import ApiError, PermissionDenied
from tenants.api.base import TenantAPIView
from tenants.memory import rules
from tenants.memory.rules import MemoryRuleError
from tenants.memory.service import WriteOutcome, error_fields
from tenants.models import KeyKind, MemorySession, MemoryVolume, Origin

AGENT_WRITERS = frozenset({KeyKind.AGENT, KeyKind.HOST})
HUMAN_WRITERS = frozenset({KeyKind.REVIEWER, KeyKind.ADMIN})
RETRY_CAP = 3
RETRY_TTL = 24 * 3600


def rule_error(error: MemoryRuleError, details: dict[str, Any] | None = None) -> ApiError:
    return ApiError(error.message, code=error.code, status=error.status, details=details or dict(error.extra))


def body_object(data: Any) -> dict[str, Any]:
    """An optional JSON-object body: an empty body is {}, anything but an object is refused."""
    if not isinstance(data, dict):
        raise ApiError("Request not understood: the body must be a JSON object.", code="INVALID_REQUEST", status=400)
    return data


class MemoryAPIView(TenantAPIView):
    """Any key of the tenant reads; writes check their scope per endpoint."""

    read_only_checked_by_view = True

    def require_agent_scope(self) -> None:
        """Memory writes: a writable agent, host, reviewer or admin key."""
        if self.key.read_only:
            raise PermissionDenied("This API key is read-only.")
        if self.key.kind not in AGENT_WRITERS | HUMAN_WRITERS:
            raise PermissionDenied(f"A {self.key.kind} key may not write memory.")

    def require_reviewer_scope(self) -> None:
        if self.key.read_only or self.key.kind not in HUMAN_WRITERS:
            raise PermissionDenied("Reviewing memory needs a writable reviewer or admin key.")

    def write_origin(self) -> str:
        """Agent and host keys write as `foreground` (default) or `review`; others as `human`."""
        header = self.request.headers.get("X-Memoryhub-Origin")
        if self.key.kind not in AGENT_WRITERS:
            return Origin.HUMAN
        if header is None:
            return Origin.FOREGROUND
        if header not in (Origin.FOREGROUND, Origin.REVIEW):
            raise ApiError("Request not understood: X-Memoryhub-Origin must be 'foreground' or 'review'.",
                           code="INVALID_REQUEST", status=400)
        return header

    def write_session(self, volume: MemoryVolume) -> MemorySession | None:
        raw = self.request.headers.get("X-Memoryhub-Session")
        if raw is None:
            return None
        try:
            session_id = uuid.UUID(raw)
        except ValueError as exc:
            raise ApiError("Request not understood: X-Memoryhub-Session is not a session id.",
                           code="INVALID_REQUEST", status=400) from exc
        session = MemorySession.objects.filter(volume=volume, pk=session_id).first()
        if session is None:
            raise ApiError("No such session.", code="SESSION_NOT_FOUND", status=404)
        return session

    def retry_key(self) -> str | None:
        session, turn = self.request.headers.get("X-Memoryhub-Session"), self.request.headers.get("X-Memoryhub-Turn")
        if not session or not turn:
            return None
        return f"memory-retry:{self.tenant.pk}:{session}:{turn}"

    def count_outcome(self, outcome: WriteOutcome, volume: MemoryVolume, target: str) -> WriteOutcome:
        """The retry cap: consecutive failed mutations per (tenant, session, turn)."""
        key = self.retry_key()
        if key is None:
            return outcome
        try:
            if outcome.error is None:
                cache.delete(key)
                return outcome
            cache.add(key, 0, timeout=RETRY_TTL)
            failures = cache.incr(key)
        except Exception:  # noqa: BLE001 - the cap is advice; a cache outage must not fail writes
            return outcome
        if failures <= RETRY_CAP:
            return outcome
        cause = outcome.error
        capped = MemoryRuleError(
            "RETRY_LIMIT", f"{failures} memory writes failed in a row this turn. Stop using memory until the next "
            "turn and carry on with the user's request.", 429, cause_code=cause.code, done=True,
            **{k: v for k, v in cause.extra.items() if k not in ("done",)},
        )
        return WriteOutcome({}, 429, capped)


def rest_response(outcome: WriteOutcome, volume: MemoryVolume, target: str) -> JsonResponse:
    if outcome.error is None:
        return JsonResponse(outcome.body, status=outcome.status, json_dumps_params={"ensure_ascii": False})
    details = error_fields(volume, target, outcome.error)
    raise rule_error(outcome.error, details)


def tool_result(outcome: WriteOutcome, volume: MemoryVolume, target: str) -> dict[str, Any]:
    if outcome.error is None:
        return outcome.body
    error = outcome.error
    body: dict[str, Any] = {"success": False}
    if error.code == "RETRY_LIMIT":
        body["done"] = True
    body.update(code=error.code, error=error.message)
    body.update(error_fields(volume, target, error))
    return body


__all__ = ["MemoryAPIView", "body_object", "rest_response", "rule_error", "rules", "tool_result"]
