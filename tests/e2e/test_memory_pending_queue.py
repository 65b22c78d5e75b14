"""The memory pending queue in a browser (docs/memory-files.md "Review UI"): compact items,
a selection approved and rejected in place, the decided list, and the keyboard shortcuts."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tenants.models import PendingWrite, Tenant
from tests.e2e.helpers import log_in
from tests.tenants.ui.memory_helpers import entries_of, seed, stage

pytestmark = pytest.mark.browser

# The ten items below made a 4,477 px page at 1366 by 800 before the queue was made compact
# (measured on the old template: a card of stats, steps and forms per item, about 400 px
# each). Now each takes about 90-130 px and the page about 1,600 px; 2,000 px is under half
# the old height and leaves room for lines that wrap with other fonts.
MAX_PAGE_HEIGHT = 2000


def stage_ten(tenant: Tenant) -> list[PendingWrite]:
    """Ten writes of the kinds agents send: seven notes of ~150 chars, a replace, a remove and
    a batch."""
    seed(tenant, "memory", ["Project uses npm for builds", "stale note about the old VPN"])
    items = [stage(tenant, {"action": "add", "content": (
        f"Fact {i}: the staging cluster runs Kubernetes 1.29 on three nodes; deploys go through Argo CD "
        f"from the infra repo, never kubectl apply. Owner team {i}.")}) for i in range(7)]
    items.append(stage(tenant, {"action": "replace", "old_text": "npm",
                                "content": "Project uses Bun 1.1 and Nx for the monorepo tasks"}))
    items.append(stage(tenant, {"action": "remove", "old_text": "stale note"}))
    items.append(stage(tenant, {"operations": [{"action": "add", "content": "Prefers British English"},
                                               {"action": "add", "content": "Short answers, code first"}]},
                       target="user"))
    return items


def status_of(item: PendingWrite) -> tuple[str, str]:
    item.refresh_from_db()
    return item.status, item.reason


def test_ten_items_fit_a_short_page_and_a_selection_is_approved_then_rejected(bob, acme, page, screenshot):
    items = stage_ten(acme)
    log_in(page, "bob")
    page.goto("/t/acme/memory/pending/")
    first = page.get_by_test_id(f"pending-{items[0].public_id}")
    expect(first.get_by_test_id("size-after")).to_have_text("MEMORY.md after approval: 208 / 2,200")
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height < MAX_PAGE_HEIGHT, height
    screenshot("ten-items")

    page.evaluate("window.__sameDocument = true")
    for item in items[:3]:
        page.get_by_label(f"Select #{item.public_id}").check()
    page.get_by_role("button", name="Approve selected").click()
    notice = page.get_by_test_id("pending-notice")
    expect(notice).to_have_text("Approved 3 items: " + ", ".join(f"#{i.public_id}" for i in items[:3]) + ".")
    expect(page.get_by_test_id("tab-pending")).to_have_text("Pending (7)")

    for item in items[3:5]:
        page.get_by_label(f"Select #{item.public_id}").check()
    page.get_by_label("Reason for rejecting (optional)").fill("duplicates the runbook")
    page.get_by_role("button", name="Reject selected").click()
    expect(notice).to_have_text("Rejected 2 items: " + ", ".join(f"#{i.public_id}" for i in items[3:5]) + ".")
    expect(page.get_by_test_id("tab-pending")).to_have_text("Pending (5)")
    assert page.evaluate("window.__sameDocument") is True  # both swapped in place
    screenshot("after-bulk")

    assert [status_of(item) for item in items[:5]] == [("approved", "")] * 3 + [("rejected", "duplicates the runbook")] * 2
    assert all(status_of(item) == ("pending", "") for item in items[5:])
    assert entries_of(acme)[2:] == [f"Fact {i}: the staging cluster runs Kubernetes 1.29 on three nodes; deploys go "
                                    f"through Argo CD from the infra repo, never kubectl apply. Owner team {i}."
                                    for i in range(3)]

    page.get_by_test_id("tab-decided").click()
    page.wait_for_url("**/memory/pending/?show=decided")
    for item in items[3:5]:
        row = page.get_by_test_id(f"decided-{item.public_id}")
        expect(row.get_by_test_id("decision")).to_have_text("Rejected")
        expect(row.get_by_test_id("reason")).to_have_text("duplicates the runbook")
        expect(row.get_by_test_id("decided-by")).to_have_text("bob")
    for item in items[:3]:
        expect(page.get_by_test_id(f"decided-{item.public_id}").get_by_test_id("decision")).to_have_text("Approved")
    rows = page.locator("table.decided tbody tr")
    expect(rows).to_have_count(5)
    screenshot("decided")


def test_keys_move_the_focus_and_j_j_a_approves_the_second_item(bob, acme, page, screenshot):
    items = [stage(acme, {"action": "add", "content": f"note {n}"}) for n in ("one", "two", "three")]
    log_in(page, "bob")
    page.goto("/t/acme/memory/pending/")
    expect(page.get_by_test_id("queue-hint")).to_have_text("j/k move · a approve · r reject")

    page.keyboard.press("j")
    page.keyboard.press("j")
    second = page.get_by_test_id(f"pending-{items[1].public_id}")
    expect(second).to_have_class("card pending compact queue-current")
    screenshot("focus")
    page.keyboard.press("a")
    expect(page.get_by_test_id("pending-notice")).to_have_text(f"Approved #{items[1].public_id}: add: note two")
    assert [status_of(item)[0] for item in items] == ["pending", "approved", "pending"]
    assert entries_of(acme) == ["note two"]

    # The item that took its place has the focus; k goes back to the first.
    expect(page.get_by_test_id(f"pending-{items[2].public_id}")).to_be_focused()
    page.keyboard.press("k")
    first = page.get_by_test_id(f"pending-{items[0].public_id}")
    expect(first).to_be_focused()

    # r asks for the reason inline; typing there is not a shortcut ("a" stays a letter).
    page.keyboard.press("r")
    reason = page.locator(f"#reason-{items[0].public_id}")
    expect(reason).to_be_focused()
    page.keyboard.type("a one-off")
    expect(reason).to_have_value("a one-off")
    assert status_of(items[0]) == ("pending", "")
    page.keyboard.press("Enter")
    expect(page.get_by_test_id("pending-notice")).to_have_text(f"Rejected #{items[0].public_id}: add: note one")
    assert status_of(items[0]) == ("rejected", "a one-off")
    assert status_of(items[2]) == ("pending", "")


def test_the_bulk_reason_field_takes_letters_without_deciding_anything(bob, acme, page):
    item = stage(acme, {"action": "add", "content": "note"})
    log_in(page, "bob")
    page.goto("/t/acme/memory/pending/")
    page.keyboard.press("j")
    field = page.get_by_label("Reason for rejecting (optional)")
    field.click()
    page.keyboard.type("jar")
    expect(field).to_have_value("jar")
    assert status_of(item) == ("pending", "")
    expect(page.get_by_test_id("pending-notice")).to_have_count(0)
