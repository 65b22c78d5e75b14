"""The dashboard in a browser: a hand-edited MEMORY.md is announced, resolving it on the Drift
tab clears the tab's "!" without a reload, and without an embedding provider the index tile
says recall is lexical."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.helpers import log_in
from tests.tenants.ui.drift_helpers import drift, memory_md, volume_root
from tests.tenants.ui.memory_helpers import volume_of

pytestmark = pytest.mark.browser


@pytest.fixture
def root(settings: Any, tmp_path: Path) -> Path:
    return volume_root(settings, tmp_path)


def test_a_hand_edit_is_announced_and_resolving_it_clears_the_drift_tabs_marker(bob, acme, root, page, screenshot):
    drift(acme, root, "Project uses Bun\n§\nHand-written note\n".encode())

    log_in(page, "bob")
    notice = page.get_by_test_id("drift-notice-memory")
    expect(notice).to_contain_text("MEMORY.md on disk differs from the database")
    expect(notice.locator("time")).to_have_text(re.compile(r"^\d{1,2} \w{3} \d{4}, \d\d:\d\d UTC \(just now\)$"))
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", notice.locator("time").get_attribute("datetime"))
    screenshot("dashboard-drift")
    page.set_viewport_size({"width": 390, "height": 800})
    screenshot("dashboard-drift-390")
    page.set_viewport_size({"width": 1366, "height": 800})

    notice.get_by_role("link", name="Resolve on the Drift tab").click()
    page.wait_for_url("**/t/acme/memory/drift/")
    marker = page.get_by_test_id("drift-marker")
    expect(marker).to_contain_text("!")
    expect(page.get_by_test_id("drift-since").locator("time")).to_contain_text("UTC")
    page.evaluate("window.__sameDocument = true")
    page.on("dialog", lambda dialog: dialog.accept())  # hx-confirm asks first
    page.get_by_test_id("drift-memory").get_by_role("button", name="Overwrite disk").click()

    expect(page.get_by_test_id("drift-notice")).to_have_text(
        "Wrote the stored entries over MEMORY.md on disk; the backup is kept.")
    expect(marker).not_to_contain_text("!")  # driftChanged refreshed it in place
    assert page.evaluate("window.__sameDocument") is True
    screenshot("drift-resolved")
    assert volume_of(acme).memory_drift is None
    assert memory_md(root, acme).read_text(encoding="utf-8") == "Project uses Bun\n§\nDeploys go through CI"

    page.get_by_role("link", name="Dashboard", exact=True).click()
    page.wait_for_url("**/t/acme/")
    expect(page.get_by_test_id("today-memory-writes")).to_be_visible()
    assert page.get_by_test_id("drift-notice-memory").count() == 0


def test_without_an_embedding_provider_the_index_tile_says_recall_is_lexical(carol, acme, page, screenshot):
    from tests.atoms.ui.tools_helpers import write

    for i in range(3):
        write(acme, f"Atom number {i}")
    log_in(page, "carol")
    tile = page.get_by_test_id("index-progress")
    expect(tile.get_by_test_id("index-off")).to_have_text(
        "Semantic index off (no embedding provider) — lexical recall only.")
    assert tile.get_by_role("progressbar").count() == 0
    writes = page.get_by_test_id("today-atoms-writes")
    expect(writes.get_by_role("link")).to_contain_text("3")
    # The bars of "what changed today" get their width from bars.js (no inline styles: CSP).
    assert writes.locator(".fill").evaluate("el => el.style.width") == "100%"
    screenshot("dashboard-no-provider")
