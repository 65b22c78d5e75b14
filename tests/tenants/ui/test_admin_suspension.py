"""Staff suspend and unsuspend tenants in the Django admin (docs/operations.md "Suspending a
tenant"): list actions and the tenant page, audited without the reason."""

from __future__ import annotations

import re
from typing import Any

from memoryhub.models import AuditEvent
from tenants.models import Tenant

LIST = "/admin/tenants/tenant/"


def _page(tenant: Tenant, **changes: Any) -> dict[str, Any]:
    """The tenant page's form as saved unchanged, with `changes`."""
    data = {"slug": tenant.slug, "name": tenant.name, "api_rate_per_minute": "", "max_api_keys": "100",
            "max_read_policies": "100", "suspended_reason": tenant.suspended_reason,
            "memberships-TOTAL_FORMS": "0", "memberships-INITIAL_FORMS": "0"}
    if tenant.suspended_at is not None:
        data["suspended"] = "on"
    # The box's value as the page showed it (a hidden initial input, as the browser sends).
    data["initial-suspended"] = str(tenant.suspended_at is not None)
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}


def test_the_suspend_action_suspends_the_selected_tenants_only(admin_client, acme, globex) -> None:
    response = admin_client.post(LIST, {"action": "suspend", "_selected_action": [acme.pk]}, follow=True)
    assert b"Suspended 1 tenant(s)" in response.content
    acme.refresh_from_db()
    globex.refresh_from_db()
    assert acme.suspended_at is not None and globex.suspended_at is None
    event = AuditEvent.objects.get(action="tenant.suspend")
    assert event.tenant_id == acme.pk and event.object_id == "acme" and event.actor_label.startswith("user:")
    assert not AuditEvent.objects.filter(tenant=globex).exists()


def test_suspending_again_keeps_the_first_date_and_writes_no_second_row(admin_client, acme) -> None:
    admin_client.post(LIST, {"action": "suspend", "_selected_action": [acme.pk]})
    acme.refresh_from_db()
    first = acme.suspended_at
    response = admin_client.post(LIST, {"action": "suspend", "_selected_action": [acme.pk]}, follow=True)
    assert b"Suspended 0 tenant(s)" in response.content
    acme.refresh_from_db()
    assert acme.suspended_at == first
    assert AuditEvent.objects.filter(action="tenant.suspend").count() == 1


def test_the_unsuspend_action_lifts_the_suspension_and_drops_the_note(admin_client, acme) -> None:
    Tenant.objects.filter(pk=acme.pk).update(suspended_at="2026-12-01T00:00:00Z", suspended_reason="abuse report")
    response = admin_client.post(LIST, {"action": "unsuspend", "_selected_action": [acme.pk]}, follow=True)
    assert b"Lifted the suspension of 1 tenant(s)" in response.content
    acme.refresh_from_db()
    assert acme.suspended_at is None and acme.suspended_reason == ""
    assert AuditEvent.objects.filter(action="tenant.unsuspend", tenant=acme).count() == 1


def test_the_tenant_page_suspends_with_a_reason_that_stays_out_of_the_audit_log(admin_client, acme) -> None:
    response = admin_client.post(f"{LIST}{acme.pk}/change/",
                                 _page(acme, suspended="on", suspended_reason="unpaid invoice 4711"))
    assert response.status_code == 302, response.content[:2000]
    acme.refresh_from_db()
    assert acme.suspended_at is not None and acme.suspended_reason == "unpaid invoice 4711"
    # One row, the action alone: no generic update row carrying the note's digest.
    rows = list(AuditEvent.objects.filter(tenant=acme).values("action", "before_digest", "after_digest"))
    assert rows == [{"action": "tenant.suspend", "before_digest": "", "after_digest": ""}]
    page = admin_client.get(f"{LIST}{acme.pk}/change/").content.decode()
    assert re.search(r'name="suspended"[^>]* checked', page) and "unpaid invoice 4711" in page


def test_saving_the_page_of_a_suspended_tenant_keeps_it_suspended(admin_client, acme) -> None:
    Tenant.objects.filter(pk=acme.pk).update(suspended_at="2026-12-01T00:00:00Z", suspended_reason="abuse report")
    acme.refresh_from_db()
    response = admin_client.post(f"{LIST}{acme.pk}/change/", _page(acme, name="Acme Renamed"))
    assert response.status_code == 302, response.content[:2000]
    acme.refresh_from_db()
    assert acme.name == "Acme Renamed" and acme.suspended_at.isoformat().startswith("2026-12-01")
    assert list(AuditEvent.objects.values_list("action", flat=True)) == ["tenant.update"]


def test_unticking_suspended_on_the_page_lifts_the_suspension(admin_client, acme) -> None:
    Tenant.objects.filter(pk=acme.pk).update(suspended_at="2026-12-01T00:00:00Z")
    acme.refresh_from_db()
    response = admin_client.post(f"{LIST}{acme.pk}/change/", _page(acme, suspended=None))
    assert response.status_code == 302, response.content[:2000]
    acme.refresh_from_db()
    assert acme.suspended_at is None
    assert list(AuditEvent.objects.values_list("action", flat=True)) == ["tenant.unsuspend"]


def test_a_page_opened_before_a_suspension_does_not_lift_it_when_saved(admin_client, acme) -> None:
    shown = _page(acme, name="Acme Renamed")  # opened while acme was active: the box unticked
    admin_client.post(LIST, {"action": "suspend", "_selected_action": [acme.pk]})  # another staff member
    response = admin_client.post(f"{LIST}{acme.pk}/change/", shown)
    assert response.status_code == 302, response.content[:2000]
    acme.refresh_from_db()
    assert acme.name == "Acme Renamed" and acme.suspended_at is not None
    assert "tenant.unsuspend" not in AuditEvent.objects.values_list("action", flat=True)


def test_the_tenant_list_shows_and_filters_suspended_tenants(admin_client, acme, globex) -> None:
    Tenant.objects.filter(pk=acme.pk).update(suspended_at="2026-12-01T09:30:00Z")
    listed = admin_client.get(LIST).content.decode()
    assert "2026-12-01 09:30 UTC" in listed
    only = admin_client.get(LIST, {"suspended_at__isempty": "0"}).content.decode()
    assert f"{LIST}{acme.pk}/change/" in only and f"{LIST}{globex.pk}/change/" not in only
