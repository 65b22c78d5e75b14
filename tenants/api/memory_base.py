"""Shared parts of the memory-file API: scopes, write headers, the retry cap, result shapes.

The services raise refusals as `MemoryRuleError` with all their fields; the one exception
handler renders them (docs/api.md "Errors")."""

from __future__ import annotations

from typing import Any

from django.http import JsonResponse

from memoryhub.api.errors import ApiError, PermissionDenied
from tenants.api.base import TenantAPIView
from tenants.memory import rules
from tenants.memory.rules import MemoryRuleError
from tenants.memory.service import WriteOutcome, refusal
from tenants.memory.tool_call import (
    AGENT_WRITERS,
    HUMAN_WRITERS,
    WriteContext,
    count_failure,
    count_success,
    require_agent_scope,
    write_origin,
    write_session,
)
from tenants.models import MemorySession, MemoryVolume


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

    def count_success(self) -> None:
        """The retry cap: consecutive failed mutations per (tenant, session, turn)."""
        count_success(tenant_id=self.tenant.pk, context=self.write_context())

    def counted_refusal(self, error: MemoryRuleError, volume: MemoryVolume, target: str) -> MemoryRuleError:
        """A refused mutation counted by the retry cap, with the store's fields, to raise."""
        return refusal(volume, target, count_failure(error, tenant_id=self.tenant.pk, context=self.write_context()))


def rest_response(outcome: WriteOutcome) -> JsonResponse:
    return JsonResponse(outcome.body, status=outcome.status, json_dumps_params={"ensure_ascii": False})


__all__ = ["AGENT_WRITERS", "HUMAN_WRITERS", "MemoryAPIView", "body_object", "rest_response", "rules"]
