"""Concurrent key creations on PostgreSQL cannot together pass `max_api_keys`: the tenant
row lock in apikey_issue serializes them (docs/api.md "Tenant settings")."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from memoryhub.actors import Actor
from tenants.models import ApiKey, Tenant
from tenants.services.keys import TenantLimitReached, apikey_create

pytestmark = pytest.mark.django_db(transaction=True)

RACERS = 6


@pytest.fixture(autouse=True)
def _postgres_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("row locks only matter on PostgreSQL (set DATABASE_URL to a postgres:// URL)")


def test_racing_creations_take_the_last_free_place_once(acme: Tenant) -> None:
    Tenant.objects.filter(pk=acme.pk).update(max_api_keys=2, max_read_policies=2)
    apikey_create(tenant=acme, kind="admin", actor=Actor.system("tests"))
    start = threading.Barrier(RACERS)
    outcomes: list[str] = []

    def create(i: int) -> None:
        try:
            start.wait()
            apikey_create(tenant=Tenant.objects.get(pk=acme.pk), kind="host", actor=Actor.system("tests"),
                          read_policies=[f"p{i}"])
            outcomes.append("created")
        except TenantLimitReached as exc:
            outcomes.append(exc.details["limit"])
        finally:
            connection.close()

    threads = [threading.Thread(target=create, args=(i,)) for i in range(RACERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(outcomes) == ["created"] + ["max_api_keys"] * (RACERS - 1)
    assert ApiKey.objects.filter(tenant=acme, revoked_at__isnull=True).count() == 2
