"""The atom page's link picture and link picker in Chromium: rendered labels never overlap
with many neighbours, and a reviewer links an atom by typing part of the target's text.
Neither logs a Content-Security-Policy violation. Screenshots go to test-artifacts/."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from atoms.models import Slot
from tests.atoms.ui.review_helpers import head_of, write
from tests.e2e.helpers import log_in

pytestmark = pytest.mark.browser

WATCH = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__csp.push(`${e.violatedDirective} blocked ${e.blockedURI || "inline"} at ${e.sourceFile || ""}:${e.lineNumber} ${e.sample || ""}`);
});
"""

# Every text of the picture with its rendered box in the SVG's own units.
BOXES = """() => Array.from(document.querySelectorAll("svg.atom-graph text")).map((t) => {
  const b = t.getBBox();
  return {text: t.textContent, x0: b.x, y0: b.y, x1: b.x + b.width, y1: b.y + b.height};
})"""


def watch_csp(page: Any) -> list[str]:
    console: list[str] = []
    page.on("console", lambda m: console.append(m.text) if "Content Security Policy" in m.text else None)
    page.context.add_init_script(WATCH)
    return console


def violations(page: Any, console: list[str]) -> list[str]:
    return [*page.evaluate("window.__csp || []"), *console]


def overlapping(boxes: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(a["text"], b["text"]) for a, b in itertools.combinations(boxes, 2)
            if a["x0"] < b["x1"] and b["x0"] < a["x1"] and a["y0"] < b["y1"] and b["y0"] < a["y1"]]


@pytest.mark.parametrize("each_side", [7, 20])
def test_the_link_picture_keeps_labels_apart_with_many_neighbours(each_side, carol, acme, page, screenshot):
    texts = ["Wide WWWW MMMM words that run on and on past any column", "Alice takes her coffee black, no sugar",
             "日本語のテキストはとても長いです", "mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm"]
    targets = [write(acme, f"{texts[i % len(texts)]} {i}") for i in range(each_side)]
    hub = write(acme, "The hub atom, linked from and to many others with long texts",
                links=[{"role": "condition" if i % 2 else "see-also-with-a-long-role", "atom": t, "required": i % 3 == 0}
                       for i, t in enumerate(targets)])
    for i in range(each_side):
        write(acme, f"{texts[(i + 1) % len(texts)]} linker {i}", links=[{"role": "uses", "atom": hub}])
    console = watch_csp(page)
    log_in(page, "carol")
    page.goto(f"/t/acme/atoms/{hub}/")
    console.clear()
    graph = page.locator("svg.atom-graph")
    graph.wait_for()
    boxes = page.evaluate(BOXES)
    assert len(boxes) >= 2 * 2 * min(each_side, 12)  # a label and a role line per row at least
    assert overlapping(boxes) == []
    view = page.evaluate("(() => { const v = document.querySelector('svg.atom-graph').viewBox.baseVal;"
                         " return [v.width, v.height]; })()")
    assert all(0 <= b["x0"] and b["x1"] <= view[0] and 0 <= b["y0"] and b["y1"] <= view[1] for b in boxes)
    if each_side > 12:
        more = graph.locator("a.node.more")
        assert more.count() == 2 and more.first.get_attribute("href") == "#out-h"
        assert "+9 more" in more.first.inner_html()
    screenshot(f"graph-{each_side}-each-side")
    # On a phone the picture keeps its size and scrolls inside its own box, never the page.
    page.set_viewport_size({"width": 390, "height": 800})
    box = page.get_by_test_id("atom-graph")
    assert box.evaluate("(e) => e.scrollWidth > e.clientWidth") is True
    assert box.evaluate("(e) => e.getBoundingClientRect().right") <= 390
    screenshot(f"graph-{each_side}-each-side-390")
    assert violations(page, console) == []


def test_an_atom_without_links_says_so(carol, acme, page):
    lonely = write(acme, "Nobody links here.")
    log_in(page, "carol")
    page.goto(f"/t/acme/atoms/{lonely}/")
    assert page.get_by_test_id("graph-empty").inner_text() == "No links yet."
    assert page.locator("svg.atom-graph").count() == 0


def test_a_reviewer_links_an_atom_by_typing_part_of_its_text(bob, acme, page, screenshot):
    note = write(acme, "Breakfast plan for Alice")
    espresso = write(acme, "Alice drinks a double espresso after lunch.")
    write(acme, "Tea in the afternoon.")
    console = watch_csp(page)
    log_in(page, "bob")
    page.goto(f"/t/acme/atoms/{note}/")
    console.clear()  # only the atom page and its htmx actions count here
    page.evaluate("window.__sameDocument = true")
    page.get_by_text("Edit…").click()
    page.get_by_label("Role").fill("about")
    page.get_by_label("Find the target by its text").press_sequentially("doub espr", delay=40)
    result = page.get_by_test_id("picker-results").get_by_role("button")
    result.first.wait_for()
    assert result.count() == 1 and espresso in result.first.inner_text()
    screenshot("picker")
    result.first.click()
    assert page.get_by_label("Target atom id").input_value() == espresso
    assert "Linking to: Alice drinks a double espresso" in page.locator("[data-picker-chosen]").inner_text()
    page.get_by_role("button", name="Save as a new revision").click()
    notice = page.get_by_test_id("atom-notice")
    notice.wait_for()
    assert notice.inner_text() == "Saved as a new revision."
    assert page.evaluate("window.__sameDocument") is True  # htmx swapped the panel in place
    slots = list(Slot.objects.filter(revision=head_of(note)).values_list("role", "target_atom_id"))
    assert slots == [("about", espresso)]
    row = page.get_by_test_id("links-out").locator("tbody tr")
    assert row.count() == 1 and "about" in row.inner_text() and "double espresso" in row.inner_text()
    assert page.locator("svg.atom-graph circle").count() == 2
    screenshot("linked")
    assert violations(page, console) == []


def test_enter_in_the_picker_picks_the_first_result_instead_of_saving(bob, acme, page):
    note = write(acme, "Breakfast plan for Alice")
    espresso = write(acme, "Alice drinks a double espresso after lunch.")
    log_in(page, "bob")
    page.goto(f"/t/acme/atoms/{note}/")
    page.get_by_text("Edit…").click()
    box = page.get_by_label("Find the target by its text")
    box.press_sequentially("espresso", delay=40)
    page.get_by_test_id("picker-results").get_by_role("button").first.wait_for()
    box.press("Enter")
    assert page.get_by_label("Target atom id").input_value() == espresso
    assert page.get_by_test_id("atom-notice").count() == 0  # nothing was saved
    assert head_of(note).previous_id is None
