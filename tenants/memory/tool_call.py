"""The memory tool call and the write context every memory-file write carries (origin,
session, the retry cap), whatever transport brought it: the REST views
(tenants/api/memory_base.py, memory_sessions.py) and the MCP `memory` tool
(mcp_server/tools_memory.py) both call these, so docs/memory-files.md has one
implementation."""

from __future__ import annotations

import contextlib
import hashlib
import uuid
from dataclasses import dataclass
from typing import Any

from django.core.cache import cache

from memoryhub.actors import Actor
from memoryhub.api.errors import PermissionDenied
from memoryhub.errors import DomainError
from tenants.memory import rules
from tenants.memory.rules import MemoryRuleError
from tenants.memory.service import error_fields, memory_write, pending_count, store_state, volume_for
from tenants.models import ApiKey, KeyKind, MemorySession, MemoryVolume, Origin

AGENT_WRITERS = frozenset({KeyKind.AGENT, KeyKind.HOST})
HUMAN_WRITERS = frozenset({KeyKind.REVIEWER, KeyKind.ADMIN})
RETRY_CAP = 3
RETRY_TTL = 24 * 3600


@dataclass(frozen=True)
class WriteContext:
    """What a write says about itself besides its arguments: `X-Memoryhub-Origin`,
    `X-Memoryhub-Session` and `X-Memoryhub-Turn` over REST (docs/memory-files.md)."""

    origin: str | None = None
    session: str | None = None
    turn: str | None = None


def may_write(key: ApiKey) -> bool:
    return not key.read_only and key.kind in AGENT_WRITERS | HUMAN_WRITERS


def require_agent_scope(key: ApiKey) -> None:
    """Memory writes: a writable agent, host, reviewer or admin key."""
    if key.read_only:
        raise PermissionDenied("This API key is read-only.")
    if key.kind not in AGENT_WRITERS | HUMAN_WRITERS:
        raise PermissionDenied(f"A {key.kind} key may not write memory.")


def write_origin(key: ApiKey, header: str | None) -> str:
    """Agent and host keys write as `foreground` (default) or `review`; others as `human`."""
    if key.kind not in AGENT_WRITERS:
        return Origin.HUMAN
    if header is None:
        return Origin.FOREGROUND
    if header not in (Origin.FOREGROUND, Origin.REVIEW):
        raise DomainError("INVALID_REQUEST",
                          "Request not understood: X-Memoryhub-Origin must be 'foreground' or 'review'.")
    return header


def write_session(volume: MemoryVolume, raw: str | None) -> MemorySession | None:
    if raw is None:
        return None
    try:
        session_id = uuid.UUID(raw)
    except ValueError as exc:
        raise DomainError("INVALID_REQUEST",
                          "Request not understood: X-Memoryhub-Session is not a session id.") from exc
    session = MemorySession.objects.filter(volume=volume, pk=session_id).first()
    if session is None:
        raise DomainError("SESSION_NOT_FOUND", "No such session.")
    return session


def _retry_key(tenant_id: int, context: WriteContext) -> str | None:
    """The counter's cache key. The turn is the client's own text (any length, any
    characters), so the key holds a digest of it: bounded, safe for every cache backend, and
    no client text in the cache's key space."""
    if not context.session or not context.turn:
        return None
    turn = hashlib.sha256(f"{context.session}\0{context.turn}".encode()).hexdigest()
    return f"memory-retry:{tenant_id}:{turn}"


def count_success(*, tenant_id: int, context: WriteContext) -> None:
    """The retry cap counts consecutive failed mutations per (tenant, session, turn): a done
    write starts the count again."""
    key = _retry_key(tenant_id, context)
    if key is None:
        return
    with contextlib.suppress(Exception):  # the cap is advice; a cache outage must not fail writes
        cache.delete(key)


def count_failure(error: MemoryRuleError, *, tenant_id: int, context: WriteContext) -> MemoryRuleError:
    """Count a refused mutation; the refusal to answer with is `error`, or `RETRY_LIMIT`
    once more than RETRY_CAP failed in a row."""
    key = _retry_key(tenant_id, context)
    if key is None:
        return error
    try:
        cache.add(key, 0, timeout=RETRY_TTL)
        failures = cache.incr(key)
    except Exception:  # noqa: BLE001 - the cap is advice; a cache outage must not fail writes
        return error
    if failures <= RETRY_CAP:
        return error
    return MemoryRuleError(
        "RETRY_LIMIT", f"{failures} memory writes failed in a row this turn. Stop using memory until the next "
        "turn and carry on with the user's request.", cause_code=error.code, done=True,
        **{k: v for k, v in error.extra.items() if k not in ("done",)},
    )


def tool_refusal(error: MemoryRuleError, volume: MemoryVolume, target: str) -> dict[str, Any]:
    """A refusal as the tool answers it: a result with `success: false`, not an error."""
    body: dict[str, Any] = {"success": False}
    if error.code == "RETRY_LIMIT":
        body["done"] = True
    body.update(code=error.code, error=error.message)
    body.update(error_fields(volume, target, error))
    return body


def memory_tool_call(*, key: ApiKey, actor: Actor, data: Any, context: WriteContext) -> dict[str, Any]:
    """The `memory` tool with its exact arguments: always a result body (`success` true or
    false), never an error envelope, except for a key that may not write at all (and a bad
    origin or session header)."""
    require_agent_scope(key)
    volume = volume_for(key.tenant)
    target = "memory"
    try:
        if not isinstance(data, dict):
            raise rules.invalid("the arguments must be a JSON object")
        target = rules.parse_target(data.get("target"), tool_form=True)
        args = {k: v for k, v in data.items() if k != "target"}
        parsed = rules.parse_request(args, target)
        if parsed.action == "list":
            return {"success": True, **store_state(volume, target), "pending_count": pending_count(volume, target)}
        outcome = memory_write(tenant=key.tenant, request=parsed, origin=write_origin(key, context.origin),
                               actor=actor, session=write_session(volume, context.session))
    except MemoryRuleError as exc:
        # The tool answers a refusal as its result (docs/memory-files.md "Using it from an agent").
        # A refused write's own fields hold the store as it was refused.
        return tool_refusal(count_failure(exc, tenant_id=key.tenant_id, context=context), volume, target)
    count_success(tenant_id=key.tenant_id, context=context)
    return outcome.body
