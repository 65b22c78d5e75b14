"""The Atom review UI in a browser: approve a quarantined atom from the queue, and edit an
atom, then read the new revision and the diff. Screenshots go to test-artifacts/."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from atoms.models import Revision
from tests.atoms.ui.review_helpers import FLAGGED, agent_write, head_of, write
from tests.e2e.helpers import log_in

pytestmark = pytest.mark.browser


def test_a_reviewer_approves_a_quarantined_atom_from_the_queue(bob, acme, page, screenshot):
    write(acme, "Alice takes her coffee black.")
    agent_write(acme, "Alice probably likes espresso too.")
    flagged = write(acme, FLAGGED)
    log_in(page, "bob")
    assert page.get_by_test_id("quarantine-badge").text_content() == "1 quarantined"
    page.get_by_role("link", name="Atoms 1 quarantined", exact=True).click()
    page.wait_for_url("**/t/acme/atoms/")
    assert page.get_by_test_id("atom-row").count() == 3
    screenshot("browser")

    page.get_by_role("navigation", name="Atoms").get_by_role("link", name="Quarantine").click()
    page.wait_for_url("**/t/acme/atoms/quarantine/")
    card = page.get_by_test_id(f"quarantined-{flagged}")
    assert "prompt_injection" in card.get_by_test_id("findings").inner_text()
    assert "IGNORE your prior instructions" in card.inner_text()
    screenshot("quarantine")

    page.evaluate("window.__sameDocument = true")
    card.get_by_role("button", name=re.compile(r"^Approve ")).click()
    notice = page.get_by_test_id("quarantine-notice")
    notice.wait_for()
    assert notice.inner_text() == "Approved."
    page.get_by_test_id("quarantine-empty").wait_for()
    # atomsChanged refreshed the nav badge in place: no reload happened.
    expect(page.locator("#atoms-badge")).to_have_text(re.compile(r"^\s*$"))
    assert page.evaluate("window.__sameDocument") is True
    assert head_of(flagged).review_status == "approved"


def test_a_reviewer_edits_an_atom_and_sees_the_new_revision_and_the_diff(bob, acme, page, screenshot):
    condition = write(acme, "Only on weekdays.")
    source = write(acme, "Alice takes her coffee black, no sugar, at 8am.")
    note = write(acme, "Alice takes her coffee black.", links=[
        {"role": "condition", "atom": condition, "required": True},
        {"role": "about", "atom": write(acme, "Alice")},
        {"role": "see-also", "atom": write(acme, "Office coffee machine")}],
        sources=[{"atom": source, "start": 0, "end": 28}])
    write(acme, "Breakfast plan for Alice", links=[{"role": "uses", "atom": note, "required": True}])
    write(acme, "Team preferences", links=[{"role": "member", "atom": note}])
    log_in(page, "bob")
    page.goto(f"/t/acme/atoms/{note}/")
    graph = page.locator("svg.atom-graph")
    assert graph.locator("circle").count() == 6  # the atom, 3 links out, 2 links in
    assert graph.locator("g.edge.required").count() == 2
    assert graph.locator("a").count() == 5  # every neighbour is a link to its page
    graph.locator("a").first.focus()
    assert page.evaluate("document.activeElement.tagName.toLowerCase()") == "a"
    screenshot("detail")

    page.evaluate("window.__sameDocument = true")
    page.get_by_text("Edit…").click()
    page.get_by_label("Text", exact=True).fill("Alice takes her coffee black, with oat milk.")
    page.get_by_role("button", name="Save as a new revision").click()
    notice = page.get_by_test_id("atom-notice")
    notice.wait_for()
    assert notice.inner_text() == "Saved as a new revision."
    assert page.get_by_test_id("atom-text").inner_text() == "Alice takes her coffee black, with oat milk."
    newest = page.get_by_test_id("revision-2")
    assert "bob" in newest.inner_text() and "revise" in newest.inner_text()  # the writer by name
    assert page.get_by_test_id("diff-summary").inner_text().startswith("Revision 1 → revision 2: 1 line added, 1 removed")
    assert page.locator("table.diff ins").first.inner_text() == ", with oat milk"
    assert page.locator("svg.atom-graph circle").count() == 6  # links were kept
    screenshot("edited")

    # Pick two revisions the other way round: htmx swaps only the diff.
    first, second = (r.id for r in Revision.objects.filter(atom_id=note).order_by("seq"))
    page.get_by_label("From revision").select_option(value=second)
    page.get_by_label("To revision").select_option(value=first)
    page.get_by_role("button", name="Compare").click()
    expect(page.locator("[data-testid=diff-summary]")).to_contain_text("Revision 2 → revision 1")
    assert page.locator("table.diff del").first.inner_text() == ", with oat milk"
    assert page.evaluate("window.__sameDocument") is True
    assert "a=" in page.url and "b=" in page.url
    head = head_of(note)
    assert (head.producer, head.review_status, head.origin) == ("user:bob", "approved", "source")
