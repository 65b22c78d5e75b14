// Keyboard shortcuts for the review queues (docs/memory-files.md "Review UI"): the memory
// pending queue and the Atom quarantine queue.
//
// A page has a queue when an element carries data-queue="<hint text>" (rendered for people
// who may act); the hint is shown right after that element. Items carry data-queue-item,
// an item's approve button data-queue-approve, and its reject control data-queue-reject
// (the <summary> of a <details> holding the reason field, or a button). j/k move a visible
// focus between the items, a approves the focused one, r opens its reject form with the
// reason field focused (Enter sends it, Escape closes it). Nothing happens while a person
// types in a field, and every action is the page's own button or form, so the server gets
// exactly what a click sends.
(function () {
  "use strict";

  var current = -1; // index of the focused item; kept across htmx swaps of the queue
  // Typing: a text field, not a checkbox or a button (a ticked checkbox keeps the focus).
  var NOT_TEXT = ["checkbox", "radio", "button", "submit", "reset", "hidden", "file", "range", "color"];

  function active() {
    return document.querySelector("[data-queue]") !== null;
  }

  function items() {
    // Only items a person can see: a hidden one (display:none) has no layout box.
    return Array.prototype.filter.call(document.querySelectorAll("[data-queue-item]"), function (item) {
      return item.getClientRects().length > 0;
    });
  }

  function typing(target) {
    if (!target || !target.closest) return false;
    if (target.closest("textarea, select, [contenteditable=''], [contenteditable='true']")) return true;
    var input = target.closest("input");
    return Boolean(input) && NOT_TEXT.indexOf(input.type) < 0;
  }

  function focusItem(index) {
    var all = items();
    if (!all.length) { current = -1; return; }
    current = Math.max(0, Math.min(index, all.length - 1));
    all.forEach(function (item, i) { item.classList.toggle("queue-current", i === current); });
    var item = all[current];
    if (!item.hasAttribute("tabindex")) item.setAttribute("tabindex", "-1");
    item.focus({ preventScroll: true });
    item.scrollIntoView({ block: "nearest" });
  }

  function focused() {
    var all = items();
    return current >= 0 && current < all.length ? all[current] : null;
  }

  function approve(item) {
    var button = item.querySelector("[data-queue-approve]");
    if (button && !button.disabled) button.click();
  }

  function reject(item) {
    var control = item.querySelector("[data-queue-reject]");
    if (!control) return;
    var details = control.tagName === "SUMMARY" ? control.parentElement : null;
    if (!details) { control.click(); return; }
    details.open = true;
    var field = details.querySelector("input:not([type=hidden]), textarea");
    if (field) field.focus();
  }

  function addHint(marker) {
    var next = marker.nextElementSibling;
    if (next && next.classList.contains("queue-hint")) return;
    var hint = document.createElement("p");
    hint.className = "queue-hint";
    hint.setAttribute("data-testid", "queue-hint");
    hint.textContent = marker.getAttribute("data-queue");
    marker.insertAdjacentElement("afterend", hint);
  }

  function setUp(root) {
    if (!root || !root.querySelectorAll) return;
    var markers = root.matches && root.matches("[data-queue]") ? [root] : root.querySelectorAll("[data-queue]");
    if (!markers.length) return;
    Array.prototype.forEach.call(markers, addHint);
    // The queue was swapped after an action: the item that took the decided one's place
    // gets the focus, so "a a a" works through the queue.
    if (current >= 0) focusItem(current);
  }

  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && typing(event.target)) {
      var details = event.target.closest("details");
      if (details && details.querySelector(":scope > [data-queue-reject]")) {
        details.open = false;
        var item = details.closest("[data-queue-item]");
        if (item) item.focus({ preventScroll: true });
        event.preventDefault();
      }
      return;
    }
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
    if (typing(event.target) || !active()) return;
    var key = event.key;
    if (key === "j" || key === "k") {
      focusItem(current < 0 ? 0 : current + (key === "j" ? 1 : -1));
    } else if ((key === "a" || key === "r") && !event.repeat) {
      var target = focused();
      if (!target) return;
      if (key === "a") approve(target); else reject(target);
    } else {
      return;
    }
    // Keeps the letter out of the reason field that r has just focused.
    event.preventDefault();
  });

  document.addEventListener("DOMContentLoaded", function () { setUp(document); });
  document.addEventListener("htmx:load", function (event) { setUp(event.target); });
})();
