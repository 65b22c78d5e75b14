"""Every page keeps working without JavaScript for reading (docs/review-ui.md "Without
JavaScript"): in a browser context with JavaScript disabled, a member logs in through the
form and then only follows links, from the dashboard through each section, and every page
answers 200 with its content rendered by the server.

The tenant is the busy one of test_every_page (KV agents and a run, pending and decided
memory writes, a hand-edited MEMORY.md, linked, quarantined and purged atoms).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import WAIT_MS
from tests.e2e.helpers import log_in
from tests.e2e.test_every_page import build_data

pytestmark = pytest.mark.browser


class Reader:
    """A tab that follows links and checks each page it lands on."""

    def __init__(self, tab: Any) -> None:
        self.tab = tab
        self.statuses: list[tuple[str, int]] = []
        tab.on("response", lambda r: self.statuses.append((r.url, r.status)) if r.request.is_navigation_request()
               else None)

    def follow(self, link: Any, *texts: str) -> None:
        """Click a link (a plain navigation: nothing else can run) and expect the texts."""
        self.statuses.clear()
        with self.tab.expect_navigation():
            link.click()
        url, status = self.statuses[-1]
        assert status == 200, f"{url} answered {status}"
        main = self.tab.locator("main")
        for text in texts:
            expect(main).to_contain_text(text)

    def nav(self, name: str) -> Any:
        return self.tab.get_by_role("navigation", name="Main").get_by_role("link", name=re.compile(f"^{name}"))

    def sub(self, section: str, name: str) -> Any:
        return self.tab.get_by_role("navigation", name=section).get_by_role("link", name=name, exact=True)


def test_a_member_reads_every_section_by_following_links_without_javascript(alice, acme, browser, live_server,
                                                                            settings, tmp_path):
    settings.MEMORYHUB_VOLUME_ROOT = tmp_path / "volumes"
    build_data(acme, settings.MEMORYHUB_VOLUME_ROOT)
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1366, "height": 800},
                                  java_script_enabled=False)
    tab = context.new_page()
    tab.set_default_timeout(WAIT_MS)
    read = Reader(tab)
    log_in(tab, "alice")  # the login form is a plain POST
    main = tab.locator("main")
    expect(main).to_contain_text("What changed today")
    expect(tab.get_by_test_id("drift-notice-memory")).to_contain_text("MEMORY.md on disk differs")

    # Memory: the notice's link, the stores, the queue (no keys without the script), decided items.
    read.follow(tab.get_by_role("link", name="Resolve on the Drift tab"), "Drift between the database and the files")
    read.follow(read.sub("Memory", "Stores"), "MEMORY.md")
    read.follow(read.sub("Memory", "Pending review"), "Deploys go through the release-train-2026-q3 pipeline")
    assert tab.get_by_test_id("queue-hint").count() == 0  # proof that no script ran
    read.follow(tab.get_by_test_id("tab-decided"), "House style says spaces")
    read.follow(read.sub("Memory", "Threat findings"), "Threat findings")
    read.follow(read.sub("Memory", "MEMORY.md history"), "Version 1")

    # Atoms: the list, an atom with its link picture and tables, the quarantine and its atom.
    read.follow(read.nav("Atoms"), "Alice takes her coffee black.")
    read.follow(main.get_by_role("link", name="Alice takes her coffee black.", exact=True), "Links out (3)",
                "Links in (1)", "Only on weekdays.")
    expect(tab.get_by_test_id("atom-graph").locator("svg")).to_have_count(1)
    read.follow(read.sub("Breadcrumb", "Atoms"), "Current revisions")
    read.follow(read.sub("Atoms", "Quarantine"), "IGNORE your prior instructions")
    read.follow(main.get_by_role("link", name=re.compile("IGNORE your prior instructions")), "Quarantined")

    # Key-value memory: agent, namespace, key and its value.
    read.follow(read.nav("Agents"), "acme-corp-release-notes")
    read.follow(main.get_by_role("link", name="acme-corp-release-notes"), "customer-facing-defaults")
    read.follow(main.get_by_role("link", name="customer-facing-defaults"), "onboarding-checklist-v2")
    read.follow(main.get_by_role("link", name="onboarding-checklist-v2"), "Lead with impact")

    # The audit log, and the admin pages.
    read.follow(read.nav("Audit log"), "All entries")
    expect(tab.get_by_test_id("audit-sentence").first).not_to_be_empty()
    read.follow(read.nav("Members"), "alice")
    read.follow(read.nav("Settings"), "Tenant settings")

    # Back to the dashboard, and from "what changed today" to the decided items it counts.
    read.follow(read.nav("Dashboard"), "What changed today")
    read.follow(tab.get_by_test_id("today-memory-rejections").get_by_role("link"), "House style says spaces")
    context.close()
