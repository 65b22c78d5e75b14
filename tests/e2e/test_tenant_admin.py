"""A tenant admin manages members and settings in the browser, and the API sees the result."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tenants.models import Membership, Role
from tests.e2e.helpers import log_in

pytestmark = pytest.mark.browser

LAST_ADMIN = "A tenant needs at least one admin: make another member an admin first."


def no_horizontal_overflow(page: object) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # type: ignore[attr-defined]


def test_an_admin_manages_members_and_settings_and_the_api_sees_them(
        alice, bob, dave, acme, make_key, client_for, page, screenshot):
    api = client_for(make_key(acme, "admin")[1])
    log_in(page, "alice")

    # Members: dave has an account (in globex) but is not in acme.
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Members").click()
    page.wait_for_url("**/t/acme/members/")
    screenshot("members")
    page.evaluate("window.__sameDocument = true")
    add = page.get_by_role("region", name="Add a member")
    add.get_by_label("Username").fill("dave")
    add.get_by_label("Role").select_option("reviewer")
    page.get_by_role("button", name="Add member").click()
    expect(page.get_by_test_id("members-notice")).to_have_text("Added dave as reviewer.")
    expect(page.get_by_test_id("member-dave")).to_contain_text("dave")
    assert Membership.objects.get(user=dave, tenant=acme).role == Role.REVIEWER

    page.get_by_label("Username").fill("nobody-here")
    page.get_by_role("button", name="Add member").click()
    expect(page.get_by_test_id("add-error")).to_have_text(
        "No user has this username; people are created by staff in the Django admin.")

    bob_row = page.get_by_test_id("member-bob")
    bob_row.get_by_label("Role of bob", exact=True).select_option("viewer")
    bob_row.get_by_role("button", name="Change the role of bob").click()
    expect(page.get_by_test_id("members-notice")).to_have_text("bob is now viewer.")
    assert Membership.objects.get(user=bob, tenant=acme).role == Role.VIEWER

    alice_row = page.get_by_test_id("member-alice")
    alice_row.get_by_label("Role of alice", exact=True).select_option("reviewer")
    alice_row.get_by_role("button", name="Change the role of alice").click()
    expect(page.get_by_test_id("member-alice").get_by_test_id("member-error")).to_have_text(LAST_ADMIN)
    assert Membership.objects.get(user=alice, tenant=acme).role == Role.ADMIN
    assert page.evaluate("window.__sameDocument") is True  # every change swapped in place
    screenshot("last-admin")

    # Settings: the KV value limit and the rate limit, then a bad value.
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Settings").click()
    page.wait_for_url("**/t/acme/settings/")
    page.get_by_label("Value size (bytes)").fill("2048")
    page.get_by_label("Rate limit (requests per minute per key)").fill("600")
    page.get_by_role("button", name="Save settings").click()
    expect(page.get_by_test_id("settings-notice")).to_have_text("Settings saved.")
    screenshot("settings-saved")

    page.get_by_label("Key size (bytes)").fill("0")
    page.get_by_role("button", name="Save settings").click()
    expect(page.get_by_test_id("error-kv_key_bytes")).to_have_text("Ensure this value is greater than or equal to 1.")
    expect(page.get_by_label("Key size (bytes)")).to_have_attribute("aria-invalid", "true")
    screenshot("settings-refused")

    body = api.get("/api/v1/tenant").json()
    assert (body["kv_value_bytes"], body["api_rate_per_minute"], body["kv_key_bytes"]) == (2048, 600, 1024)

    page.set_viewport_size({"width": 390, "height": 800})
    for path, name in [("/t/acme/members/", "members-phone"), ("/t/acme/settings/", "settings-phone")]:
        page.goto(path)
        screenshot(name)
        assert no_horizontal_overflow(page), name
