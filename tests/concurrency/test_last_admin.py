"""Admins demoting or removing themselves at the same moment on PostgreSQL leave one admin:
the tenant row lock in tenants.services.members serializes the "another admin left?" check
(docs/api.md "Administering a tenant in the web UI")."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.contrib.auth.models import User
from django.db import connection

from memoryhub.actors import Actor
from tenants.models import Membership, Role, Tenant
from tenants.services.members import MemberError, member_remove, member_role_set

pytestmark = pytest.mark.django_db(transaction=True)

RACERS = 6


@pytest.fixture(autouse=True)
def _postgres_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("row locks only matter on PostgreSQL (set DATABASE_URL to a postgres:// URL)")


def race(acme: Tenant, change: Callable[[Membership], object]) -> list[str]:
    admins = [Membership.objects.create(tenant=acme, user=User.objects.create_user(f"admin{i}"), role=Role.ADMIN)
              for i in range(RACERS)]
    start = threading.Barrier(RACERS)
    outcomes: list[str] = []

    def run(membership: Membership) -> None:
        try:
            start.wait()
            change(Membership.objects.select_related("tenant", "user").get(pk=membership.pk))
            outcomes.append("changed")
        except MemberError:
            outcomes.append("refused")
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(m,)) for m in admins]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return sorted(outcomes)


def test_racing_self_demotions_leave_exactly_one_admin(acme: Tenant) -> None:
    outcomes = race(acme, lambda m: member_role_set(membership=m, role=Role.VIEWER, actor=Actor.system("tests")))
    assert outcomes == ["changed"] * (RACERS - 1) + ["refused"]
    assert Membership.objects.filter(tenant=acme, role=Role.ADMIN).count() == 1


def test_racing_self_removals_leave_exactly_one_admin(acme: Tenant) -> None:
    outcomes = race(acme, lambda m: member_remove(membership=m, actor=Actor.system("tests")))
    assert outcomes == ["changed"] * (RACERS - 1) + ["refused"]
    assert Membership.objects.filter(tenant=acme, role=Role.ADMIN).count() == 1
