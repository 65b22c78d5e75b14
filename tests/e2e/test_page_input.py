"""A form holding U+0000 is refused with a page that says why, also when htmx posts it."""

from __future__ import annotations

import pytest

from tests.e2e.helpers import log_in
from tests.tenants.ui.memory_helpers import entries_of

pytestmark = pytest.mark.browser


def test_a_null_character_in_an_entry_shows_why_nothing_was_saved(bob, acme, page):
    log_in(page, "bob")
    page.get_by_role("link", name="Memory", exact=True).click()
    page.wait_for_url("**/t/acme/memory/")
    page.get_by_label("New MEMORY.md entry").fill("before\u0000after")
    page.locator("form.add").first.get_by_role("button").click()
    refusal = page.get_by_test_id("bad-request")
    refusal.wait_for()
    assert "U+0000" in refusal.inner_text()
    assert entries_of(acme) == []
