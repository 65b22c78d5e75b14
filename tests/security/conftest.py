"""Tenant B's principals for the isolation tests: a key of every kind (writable and
read-only) and a member of every role. dave is globex's admin (tests/conftest.py); victor
is its viewer and rita its reviewer."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from tenants.models import KeyKind, Membership, Role, Tenant
from tests.conftest import PASSWORD, MakeKey
from tests.security.world import World, build_world


@dataclass
class KeyPrincipal:
    kind: str
    read_only: bool
    client: APIClient

    @property
    def label(self) -> str:
        return f"{self.kind}{' read-only' if self.read_only else ''} key"


@pytest.fixture
def world(acme: Tenant) -> World:
    """Tenant A (acme) with one object of every kind."""
    return build_world(acme)


@pytest.fixture
def b_keys(globex: Tenant, make_key: MakeKey) -> list[KeyPrincipal]:
    made = []
    for kind in KeyKind.values:
        for read_only in (False, True):
            _, raw = make_key(globex, kind, read_only=read_only)
            client = APIClient()
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
            made.append(KeyPrincipal(kind, read_only, client))
    return made


def _member(username: str, tenant: Tenant, role: str) -> User:
    user = User.objects.create_user(username=username, password=PASSWORD)
    Membership.objects.create(tenant=tenant, user=user, role=role)
    return user


@pytest.fixture
def b_members(globex: Tenant, dave: User) -> dict[str, User]:
    """globex's members by role."""
    return {Role.VIEWER: _member("victor", globex, Role.VIEWER), Role.REVIEWER: _member("rita", globex, Role.REVIEWER),
            Role.ADMIN: dave}
