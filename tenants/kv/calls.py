"""One key-value call for a key, whatever transport brought it: the REST RPC view
(tenants/api/kv_rpc.py) and the MCP tools (mcp_server/tools_kv.py) both resolve the agent
and run the validated call here, so the rules of docs/kv.md live in one place."""

from __future__ import annotations

from memoryhub.actors import Actor
from tenants.kv.rules import AGENT_SLUG_RE, KvCall, KvError, Limits
from tenants.kv.runs import CallOutcome
from tenants.kv.store import (
    Precondition,
    PreconditionMismatch,
    agent_ensure,
    kv_clear,
    kv_delete,
    kv_get,
    kv_list_text,
    kv_set,
)
from tenants.models import Agent, ApiKey


def agent_for_key(*, key: ApiKey, slug: str, actor: Actor) -> Agent:
    """The caller's agent. Keys that may not create it get one 404 for "missing",
    "another tenant's" and "outside my list" alike (docs/api.md "Tenant isolation"); a writable key creates its
    own agent on first use (docs/kv.md "Implicit agents")."""
    if not AGENT_SLUG_RE.match(slug):
        raise KvError("INVALID_AGENT", "Agent slugs are 1-64 characters of [a-z0-9-].")
    not_found = KvError("AGENT_NOT_FOUND", "No such agent.")
    if not key.allows_agent(slug):
        raise not_found
    agent = Agent.objects.filter(tenant=key.tenant, slug=slug).select_related("tenant").first()
    if agent is not None:
        return agent
    if key.read_only:
        raise not_found
    agent, _ = agent_ensure(tenant=key.tenant, slug=slug, actor=actor)
    return agent


def _expected(call: KvCall) -> Precondition | None:
    if call.expected_version is None:
        return None
    if call.expected_version == 0:
        return Precondition(must_be_absent=True)
    return Precondition(versions=frozenset({call.expected_version}))


def _conflict(call: KvCall, current: int | None) -> KvError:
    return KvError("VERSION_CONFLICT", "expected_version does not match the key's version.",
                   journaled=True, details={"expected": call.expected_version, "current": current or 0})


def perform(*, call: KvCall, agent: Agent, limits: Limits, actor: Actor, run_id: str | None) -> CallOutcome:
    """Run one validated call against the store."""
    ns = call.namespace
    if call.action == "get":
        assert call.key is not None
        entry = kv_get(agent=agent, namespace=ns, key=call.key)
        return CallOutcome(entry.value if entry else "null", ns, etag=entry.version if entry else None)
    if call.action == "set":
        assert call.key is not None and call.value is not None
        try:
            entry, _ = kv_set(agent=agent, limits=limits, namespace=ns, key=call.key,
                              value=call.value, actor=actor, run_id=run_id, precondition=_expected(call))
        except PreconditionMismatch as exc:
            raise _conflict(call, exc.current_version) from exc
        return CallOutcome("null", ns, etag=entry.version)
    if call.action == "delete":
        assert call.key is not None
        try:
            existed = kv_delete(agent=agent, namespace=ns, key=call.key, actor=actor, precondition=_expected(call))
        except PreconditionMismatch as exc:
            raise _conflict(call, exc.current_version) from exc
        return CallOutcome("true" if existed else "false", ns)
    if call.action == "list":
        return CallOutcome(kv_list_text(agent=agent, namespace=ns, prefix=call.prefix, limits=limits), ns)
    kv_clear(agent=agent, namespace=ns, actor=actor)
    return CallOutcome("null", ns)
