from __future__ import annotations

import pytest

from tests.conftest import PASSWORD

pytestmark = pytest.mark.browser


def test_a_reviewer_logs_in_sees_the_dashboard_and_switches_tenant(erin, page, screenshot):
    page.goto("/")
    assert "/login/" in page.url
    page.get_by_label("Username").fill("erin")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()

    page.wait_for_url("**/t/acme/")
    assert page.get_by_role("heading", level=1).inner_text().startswith("Acme Corp")
    assert "you are reviewer" in page.get_by_role("heading", level=1).inner_text()
    assert page.get_by_role("heading", name="Health").is_visible()
    screenshot("dashboard-acme")

    page.get_by_test_id("tenant-switcher").locator("summary").click()
    page.get_by_role("link", name="Globex").click()
    page.wait_for_url("**/t/globex/")
    heading = page.get_by_role("heading", level=1).inner_text()
    assert heading.startswith("Globex") and "you are viewer" in heading
    screenshot("dashboard-globex")


def test_an_admin_creates_a_key_in_the_browser_and_sees_it_once(alice, page, screenshot):
    page.goto("/login/")
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/t/acme/")
    page.get_by_role("link", name="API keys").click()
    page.get_by_label("Name").fill("support bot")
    page.get_by_role("button", name="Create key").click()
    secret = page.get_by_test_id("new-secret").locator("code").inner_text()
    assert secret.startswith("mh_")
    assert page.locator("table").get_by_text("support bot").is_visible()
    screenshot("keys")
    page.reload()
    assert page.get_by_test_id("new-secret").count() == 0
