"""Shortcuts for the memory-file page tests: stores and pending items set up through the
services, as an agent or an import would leave them."""

from __future__ import annotations

from typing import Any

from memoryhub.actors import Actor
from tenants.memory import rules
from tenants.memory.service import WriteOutcome, memory_write
from tenants.models import MemoryVolume, PendingWrite, Tenant
from tests.tenants.memory.helpers import seed, set_volume

HX = {"HX-Request": "true"}
AGENT = Actor.system("agent-bot")

__all__ = ["AGENT", "HX", "agent_write", "entries_of", "page_url", "seed", "set_volume", "stage", "volume_of"]


def page_url(slug: str = "acme", rest: str = "") -> str:
    return f"/t/{slug}/memory/{rest}"


def volume_of(tenant: Tenant) -> MemoryVolume:
    return MemoryVolume.objects.get(pk=MemoryVolume.get_or_create_for(tenant).pk)


def entries_of(tenant: Tenant, target: str = "memory") -> list[str]:
    return volume_of(tenant).entries(target)


def agent_write(tenant: Tenant, data: dict[str, Any], target: str = "memory") -> WriteOutcome:
    """An agent's foreground write: staged when the tenant's approval is `all` (a refusal raises)."""
    return memory_write(tenant=tenant, request=rules.parse_request(data, target), origin="foreground", actor=AGENT)


def stage(tenant: Tenant, data: dict[str, Any], target: str = "memory") -> PendingWrite:
    set_volume(tenant, approval="all")
    outcome = agent_write(tenant, data, target)
    assert outcome.status == 202, outcome.body
    return PendingWrite.objects.get(public_id=outcome.body["pending_id"])
