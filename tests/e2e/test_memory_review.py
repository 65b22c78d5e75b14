from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.e2e.helpers import log_in
from tests.tenants.ui.memory_helpers import entries_of, seed, volume_of

pytestmark = pytest.mark.browser


def test_a_reviewer_approves_a_staged_write_and_the_next_session_has_it(bob, acme, make_key, client_for, page, screenshot):
    agent = client_for(make_key(acme, "agent")[1])  # new tenants stage every agent write
    staged = agent.post("/api/v1/memory/memory", {"action": "add", "content": "Project uses Bun and Nx"}, format="json")
    assert staged.status_code == 202
    pending_id = staged.json()["pending_id"]
    before = agent.post("/api/v1/sessions", {}, format="json").json()
    assert "Project uses Bun and Nx" not in before["snapshot"]

    log_in(page, "bob")
    badge = page.get_by_test_id("pending-badge")
    assert badge.text_content() == "1 pending"
    page.get_by_role("link", name="Memory 1 pending", exact=True).click()
    page.get_by_role("link", name="Pending review").click()
    page.wait_for_url("**/memory/pending/")
    card = page.get_by_test_id(f"pending-{pending_id}")
    assert "add: Project uses Bun and Nx" in card.get_by_role("heading").inner_text()
    assert "foreground" in card.inner_text() and card.get_by_test_id("author").inner_text().startswith("key ")  # by name
    screenshot("queue")

    page.evaluate("window.__sameDocument = true")
    card.get_by_role("button", name=f"Approve #{pending_id}").click()
    notice = page.get_by_test_id("pending-notice")
    notice.wait_for()
    assert notice.inner_text() == f"Approved #{pending_id}: add: Project uses Bun and Nx"
    page.get_by_test_id("pending-empty").wait_for()
    # pendingChanged refreshed the nav badge in place: no reload happened.
    expect(page.locator("#memory-badge")).to_have_text(re.compile(r"^\s*$"))
    assert page.evaluate("window.__sameDocument") is True
    screenshot("approved")

    assert entries_of(acme) == ["Project uses Bun and Nx"]
    after = agent.post("/api/v1/sessions", {}, format="json")
    assert after.status_code == 201
    assert after.json()["snapshot"].endswith("\nProject uses Bun and Nx")
    assert after.json()["versions"]["memory"] == 1


def test_a_reviewer_edits_an_entry_and_the_usage_bar_follows_without_a_reload(bob, acme, page, screenshot):
    seed(acme, "memory", ["User prefers dark mode", "x" * 1730])  # 1,755 chars: 79 %
    log_in(page, "bob")
    page.get_by_role("link", name="Memory", exact=True).click()
    page.wait_for_url("**/t/acme/memory/")
    usage = page.get_by_test_id("usage-memory")
    bar = page.get_by_test_id("usage-bar-memory")
    assert usage.inner_text() == "79% — 1,755/2,200 chars"
    assert "ok" in bar.get_attribute("class").split()
    page.evaluate("window.__sameDocument = true")

    page.get_by_role("link", name="Edit entry 1 of MEMORY.md").click()
    editor = page.get_by_label("Edit entry 1", exact=True)
    editor.fill("User prefers light mode everywhere")
    assert page.locator("#edit-size-memory").inner_text() == "Size after saving: 1,767/2,200 chars"
    screenshot("editing")
    page.get_by_role("button", name="Save entry").click()

    page.get_by_test_id("store-notice-memory").wait_for()
    assert page.get_by_test_id("store-notice-memory").inner_text() == "Updated the entry."
    assert usage.inner_text() == "80% — 1,767/2,200 chars"
    assert "warn" in bar.get_attribute("class").split()
    assert bar.get_attribute("aria-valuenow") == "1767"
    assert bar.locator(".fill").evaluate("el => el.style.width") == "80%"  # set by bars.js from data-fill
    assert page.evaluate("window.__sameDocument") is True  # swapped in place, no full reload
    assert page.url.endswith("/t/acme/memory/")

    adder = page.get_by_label("New MEMORY.md entry")
    adder.fill("🚀")  # one code point, plus the 3-char gap
    assert page.get_by_test_id("add-size-memory").inner_text() == "Size after adding: 1,771/2,200 chars"
    adder.fill("y" * 440)
    counter = page.get_by_test_id("add-size-memory")
    assert counter.inner_text() == "Size after adding: 2,210/2,200 chars"
    assert "over" in counter.get_attribute("class").split()
    screenshot("edited")

    assert volume_of(acme).entries("memory") == ["User prefers light mode everywhere", "x" * 1730]
