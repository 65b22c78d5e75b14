"""A member of a suspended tenant in the browser: the banner on every page, and an htmx write
refused in place with the reason, also on a page opened before the suspension began."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tenants.models import Membership
from tenants.services.suspension import tenant_suspend
from tests.conftest import TEST_ACTOR
from tests.e2e.helpers import log_in

pytestmark = pytest.mark.browser


def test_a_write_on_a_page_opened_before_the_suspension_is_refused_in_place(alice, dave, acme, page,
                                                                              screenshot) -> None:
    log_in(page, "alice")
    expect(page.get_by_test_id("suspended-banner")).to_have_count(0)
    page.goto("/t/acme/members/")
    page.evaluate("window.__sameDocument = true")
    tenant_suspend(tenant=acme, actor=TEST_ACTOR)

    add = page.get_by_role("region", name="Add a member")
    add.get_by_label("Username").fill("dave")
    page.get_by_role("button", name="Add member").click()
    banner = page.get_by_test_id("suspended-banner")
    expect(banner).to_contain_text("Your change was not saved")
    expect(banner).to_have_attribute("role", "alert")
    assert page.evaluate("window.__sameDocument") is True  # swapped in place, the form kept
    expect(add.get_by_label("Username")).to_have_value("dave")
    assert not Membership.objects.filter(user=dave, tenant=acme).exists()
    screenshot("suspended-write-refused")

    page.reload()
    expect(page.get_by_test_id("suspended-banner")).to_contain_text("This tenant is suspended since")
    expect(page.get_by_test_id("suspended-banner")).to_contain_text("changes are refused")
    screenshot("suspended-banner")
