"""`manage.py createreviewer` keeps the last-admin rule of the Members page
(tenants/services/members.py): it never demotes a tenant's last admin."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError

from memoryhub.models import AuditEvent
from tenants.models import Membership, Role
from tenants.services.members import LAST_ADMIN
from tests.conftest import PASSWORD
from tests.tenants.commands.test_commands import run


def test_it_refuses_to_demote_the_last_admin_and_changes_nothing(acme, alice) -> None:
    with pytest.raises(CommandError) as refused:
        run("createreviewer", "--tenant", "acme", "--username", "alice", "--password", "new-pw", "--role", "viewer")
    assert str(refused.value) == f"alice keeps their role in acme: {LAST_ADMIN}"
    alice.refresh_from_db()
    assert alice.check_password(PASSWORD)  # the password was not changed either
    assert Membership.objects.get(user=alice, tenant=acme).role == Role.ADMIN
    assert not AuditEvent.objects.exists()


def test_it_demotes_an_admin_when_another_admin_remains(acme, alice, bob) -> None:
    Membership.objects.filter(user=bob, tenant=acme).update(role=Role.ADMIN)
    run("createreviewer", "--tenant", "acme", "--username", "alice", "--password", "new-pw", "--role", "viewer")
    assert Membership.objects.get(user=alice, tenant=acme).role == Role.VIEWER


def test_the_last_admin_of_one_tenant_may_change_role_in_another(acme, globex, alice, dave) -> None:
    run("createreviewer", "--tenant", "globex", "--username", "alice", "--password", "pw", "--role", "viewer")
    run("createreviewer", "--tenant", "acme", "--username", "alice", "--password", "pw", "--role", "admin")
    assert dict(Membership.objects.filter(user=alice).values_list("tenant__slug", "role")) == {
        "acme": Role.ADMIN, "globex": Role.VIEWER}
    assert User.objects.get(username="alice").check_password("pw")
