"""Shared parts of the memory-file API: scopes, write headers, the retry cap, error shapes."""

from __future__ import annotations

from typing import Any

from django.http import JsonResponse

from memoryhub.api.errors import ApiError, PermissionDenied
from tenants.api.base import TenantAPIView
from tenants.memory import rules
from tenants.memory.rules import MemoryRuleError
from tenants.memory.service import WriteOutcome, error_fields
from tenants.memory.tool_call import (
    AGENT_WRITERS,
    HUMAN_WRITERS,
    WriteContext,
    count_outcome,
    require_agent_scope,
    tool_result,
    write_origin,
    write_session,
)
from tenants.models import MemorySession, MemoryVolume


def rule_error(error: MemoryRuleError, details: dict[str, Any] | None = None) -> ApiError:
    return ApiError(error.message, code=error.code, details=details or dict(error.extra))


def body_object(data: Any) -> dict[str, Any]:
    """An optional JSON-object body: an empty body is {}, anything but an object is refused."""
    if not isinstance(data, dict):
        raise ApiError("Request not understood: the body must be a JSON object.", code="INVALID_REQUEST")
    return data


class MemoryAPIView(TenantAPIView):
    """Any key of the tenant reads; writes check their scope per endpoint."""

    read_only_checked_by_view = True

    def require_agent_scope(self) -> None:
        """Memory writes: a writable agent, host, reviewer or admin key."""
        require_agent_scope(self.key)

    def require_reviewer_scope(self) -> None:
        if self.key.read_only or self.key.kind not in HUMAN_WRITERS:
            raise PermissionDenied("Reviewing memory needs a writable reviewer or admin key.")

    def write_context(self) -> WriteContext:
        headers = self.request.headers
        return WriteContext(origin=headers.get("X-Memoryhub-Origin"), session=headers.get("X-Memoryhub-Session"),
                            turn=headers.get("X-Memoryhub-Turn"))

    def write_origin(self) -> str:
        """Agent and host keys write as `foreground` (default) or `review`; others as `human`."""
        return write_origin(self.key, self.write_context().origin)

    def write_session(self, volume: MemoryVolume) -> MemorySession | None:
        return write_session(volume, self.write_context().session)

    def count_outcome(self, outcome: WriteOutcome, volume: MemoryVolume, target: str) -> WriteOutcome:
        """The retry cap: consecutive failed mutations per (tenant, session, turn)."""
        return count_outcome(outcome, tenant_id=self.tenant.pk, context=self.write_context())


def rest_response(outcome: WriteOutcome, volume: MemoryVolume, target: str) -> JsonResponse:
    if outcome.error is None:
        return JsonResponse(outcome.body, status=outcome.status, json_dumps_params={"ensure_ascii": False})
    details = error_fields(volume, target, outcome.error)
    raise rule_error(outcome.error, details)


__all__ = ["AGENT_WRITERS", "HUMAN_WRITERS", "MemoryAPIView", "body_object", "rest_response", "rule_error", "rules", "tool_result"]
