"""The last-admin rule in the Django admin (tenants/services/members.py): staff cannot remove or
demote a tenant's last admin, on the tenant page's member rows nor on the membership pages; they
get an error message, never a 500. Deleting a whole tenant stays possible."""

from __future__ import annotations

from typing import Any

from memoryhub.models import AuditEvent
from tenants.models import Membership, Role, Tenant
from tenants.services.members import LAST_ADMIN

TENANTS = "/admin/tenants/tenant/"
MEMBERSHIPS = "/admin/tenants/membership/"


def _tenant_page(tenant: Tenant, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The tenant page's form with these member rows (id, user, role, DELETE)."""
    data: dict[str, Any] = {"slug": tenant.slug, "name": tenant.name, "api_rate_per_minute": "",
                            "max_api_keys": "100", "max_read_policies": "100", "suspended_reason": "",
                            "memberships-TOTAL_FORMS": str(len(rows)), "memberships-INITIAL_FORMS":
                                str(sum(1 for row in rows if "id" in row))}
    for index, row in enumerate(rows):
        for name, value in row.items():
            data[f"memberships-{index}-{name}"] = value
        data[f"memberships-{index}-tenant"] = tenant.pk
    return data


def _row(membership: Membership, **changes: Any) -> dict[str, Any]:
    return {"id": membership.pk, "user": membership.user_id, "role": membership.role, **changes}


def _membership(user: Any, tenant: Tenant) -> Membership:
    return Membership.objects.get(user=user, tenant=tenant)


def test_demoting_the_last_admin_on_the_tenant_page_is_refused(admin_client, acme, alice, bob) -> None:
    rows = [_row(_membership(alice, acme), role=Role.REVIEWER), _row(_membership(bob, acme))]
    response = admin_client.post(f"{TENANTS}{acme.pk}/change/", _tenant_page(acme, rows))
    assert response.status_code == 200
    assert LAST_ADMIN in response.content.decode()
    assert _membership(alice, acme).role == Role.ADMIN
    assert not AuditEvent.objects.exists()


def test_removing_the_last_admin_on_the_tenant_page_is_refused(admin_client, acme, alice, bob) -> None:
    rows = [_row(_membership(alice, acme), DELETE="on"), _row(_membership(bob, acme))]
    response = admin_client.post(f"{TENANTS}{acme.pk}/change/", _tenant_page(acme, rows))
    assert response.status_code == 200 and LAST_ADMIN in response.content.decode()
    assert Membership.objects.filter(tenant=acme, role=Role.ADMIN).count() == 1


def test_handing_over_the_admin_role_on_the_tenant_page_is_allowed(admin_client, acme, alice, bob) -> None:
    rows = [_row(_membership(alice, acme), DELETE="on"), _row(_membership(bob, acme), role=Role.ADMIN)]
    response = admin_client.post(f"{TENANTS}{acme.pk}/change/", _tenant_page(acme, rows))
    assert response.status_code == 302, response.content.decode()[:3000]
    assert list(Membership.objects.filter(tenant=acme).values_list("user__username", "role")) == [("bob", "admin")]


def test_changing_the_last_admins_role_on_the_membership_page_is_refused(admin_client, acme, alice) -> None:
    membership = _membership(alice, acme)
    response = admin_client.post(f"{MEMBERSHIPS}{membership.pk}/change/", {"role": Role.VIEWER})
    assert response.status_code == 200 and LAST_ADMIN in response.content.decode()
    assert _membership(alice, acme).role == Role.ADMIN


def test_a_second_admin_may_be_demoted_on_the_membership_page(admin_client, acme, alice, bob) -> None:
    Membership.objects.filter(user=bob, tenant=acme).update(role=Role.ADMIN)
    response = admin_client.post(f"{MEMBERSHIPS}{_membership(alice, acme).pk}/change/", {"role": Role.VIEWER})
    assert response.status_code == 302
    assert _membership(alice, acme).role == Role.VIEWER


def test_deleting_the_last_admins_membership_is_refused_with_a_message(admin_client, acme, alice) -> None:
    membership = _membership(alice, acme)
    for method in ("get", "post"):
        response = getattr(admin_client, method)(f"{MEMBERSHIPS}{membership.pk}/delete/", follow=True)
        assert response.status_code == 200 and LAST_ADMIN in response.content.decode()
    assert Membership.objects.filter(pk=membership.pk).exists()


def test_bulk_deleting_every_admin_of_a_tenant_is_refused(admin_client, acme, globex, alice, bob, dave) -> None:
    chosen = [_membership(alice, acme).pk, _membership(bob, acme).pk]
    response = admin_client.post(MEMBERSHIPS, {"action": "delete_selected", "_selected_action": chosen,
                                               "post": "yes"}, follow=True)
    assert f"Nothing deleted. acme: {LAST_ADMIN}" in response.content.decode()
    assert Membership.objects.filter(tenant=acme).count() == 2


def test_bulk_deleting_non_admins_still_works(admin_client, acme, alice, bob, carol) -> None:
    chosen = [_membership(bob, acme).pk, _membership(carol, acme).pk]
    response = admin_client.post(MEMBERSHIPS, {"action": "delete_selected", "_selected_action": chosen,
                                               "post": "yes"}, follow=True)
    assert response.status_code == 200
    assert list(Membership.objects.filter(tenant=acme).values_list("user__username", flat=True)) == ["alice"]
    # Each removed row is audited like a single delete, by username.
    removed = AuditEvent.objects.filter(tenant=acme, action="membership.delete")
    assert sorted(removed.values_list("object_id", flat=True)) == ["bob", "carol"]


def test_staff_may_still_delete_a_whole_tenant(admin_client, acme, alice, globex, dave) -> None:
    response = admin_client.post(f"{TENANTS}{acme.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not Tenant.objects.filter(pk=acme.pk).exists() and not Membership.objects.filter(user=alice).exists()
    assert Membership.objects.filter(user=dave, tenant=globex).exists()


USERS = "/admin/auth/user/"


def test_deleting_the_user_who_is_a_tenants_last_admin_is_refused(admin_client, acme, alice, bob) -> None:
    response = admin_client.post(f"{USERS}{alice.pk}/delete/", {"post": "yes"})
    assert response.status_code == 200  # the confirmation page again, listing why not
    assert "Tenant acme: it would be left without an admin" in response.content.decode()
    assert Membership.objects.filter(user=alice, tenant=acme, role=Role.ADMIN).exists()


def test_bulk_deleting_users_that_include_a_last_admin_deletes_none(admin_client, acme, alice, bob, carol) -> None:
    response = admin_client.post(USERS, {"action": "delete_selected", "_selected_action": [alice.pk, carol.pk],
                                         "post": "yes"})
    assert "Tenant acme: it would be left without an admin" in response.content.decode()
    assert Membership.objects.filter(tenant=acme).count() == 3


def test_deleting_a_member_who_is_not_a_last_admin_audits_the_memberships_it_removes(
        admin_client, acme, alice, erin) -> None:
    response = admin_client.post(f"{USERS}{erin.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not Membership.objects.filter(user_id=erin.pk).exists()
    rows = AuditEvent.objects.filter(action="membership.delete", object_id="erin")
    assert sorted(rows.values_list("tenant__slug", flat=True)) == ["acme", "globex"]
