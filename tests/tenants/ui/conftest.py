"""KV fixtures for the review pages: agents and keys made through the store services."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tenants.kv.rules import canonical
from tenants.kv.store import agent_ensure, kv_set, limits_for
from tenants.models import Agent, KvEntry, Tenant
from tests.conftest import TEST_ACTOR

Put = Callable[..., KvEntry]


@pytest.fixture
def make_agent(db: None) -> Callable[[Tenant, str], Agent]:
    def make(tenant: Tenant, slug: str) -> Agent:
        agent, _ = agent_ensure(tenant=tenant, slug=slug, actor=TEST_ACTOR)
        return agent

    return make


@pytest.fixture
def support(acme: Tenant, make_agent: Callable[[Tenant, str], Agent]) -> Agent:
    """acme's agent `support`, with no keys yet."""
    return make_agent(acme, "support")


@pytest.fixture
def put(db: None) -> Put:
    """Set a key as the system would: put(agent, key, value, namespace="default")."""

    def set_value(agent: Agent, key: str, value: Any, namespace: str = "default", **kwargs: Any) -> KvEntry:
        entry, _ = kv_set(agent=agent, limits=limits_for(agent.tenant), namespace=namespace, key=key,
                          value=canonical(value), actor=TEST_ACTOR, **kwargs)
        return entry

    return set_value
