// Keyboard shortcuts for the review queues (docs/memory-files.md "Review UI"): the memory
// pending queue and the Atom quarantine queue.
//
// A queue is an element with data-queue="<hint text>"; its items carry data-queue-item, an
// item's approve button data-queue-approve, and its reject control data-queue-reject (a
// <details> holding the reason field, or a button). j/k move a visible focus between the
// items, a approves the focused one, r opens its reject form with the reason field focused
// (Enter sends it, Escape closes it). Nothing happens while a person types in a field, and
// every action is the page's own button, so the server sees exactly what a click sends.
(function () {
  "use strict";

  var current = -1; // index of the focused item; kept across htmx swaps of the queue

  function queue() {
    return document.querySelector("[data-queue]");
  }

  function items() {
    var root = queue();
    if (!root) return [];
    // Only items a person can see: a hidden one (display:none) has no layout box.
    return Array.prototype.filter.call(root.querySelectorAll("[data-queue-item]"), function (item) {
      return item.getClientRects().length > 0;
    });
  }

  // Typing: a text field, not a checkbox or a button (a ticked checkbox keeps the focus).
  var NOT_TEXT = ["checkbox", "radio", "button", "submit", "reset", "hidden", "file", "range", "color"];

  function typing(target) {
    if (!target || !target.closest) return false;
    if (target.closest("textarea, select, [contenteditable=''], [contenteditable='true']")) return true;
    var input = target.closest("input");
    return Boolean(input) && NOT_TEXT.indexOf(input.type) < 0;
  }

  function focusItem(index, scroll) {
    var all = items();
    if (!all.length) { current = -1; return null; }
    current = Math.max(0, Math.min(index, all.length - 1));
    all.forEach(function (item, i) { item.classList.toggle("queue-current", i === current); });
    var item = all[current];
    if (!item.hasAttribute("tabindex")) item.setAttribute("tabindex", "-1");
    item.focus({ preventScroll: !scroll });
    if (scroll) item.scrollIntoView({ block: "nearest" });
    return item;
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
    if (control.tagName === "DETAILS") {
      control.open = true;
      var field = control.querySelector("input:not([type=hidden]), textarea");
      if (field) field.focus();
    } else {
      control.click();
    }
  }

  function addHint(root) {
    if (!root || root.querySelector(":scope > .queue-hint")) return;
    var hint = document.createElement("p");
    hint.className = "queue-hint";
    hint.setAttribute("data-testid", "queue-hint");
    hint.textContent = root.getAttribute("data-queue");
    // After the notice of the last action, if there is one, so a status line stays on top.
    var notice = root.querySelector(":scope > .notice");
    root.insertBefore(hint, notice ? notice.nextSibling : root.firstChild);
  }

  function setUp(root) {
    var container = root && root.matches && root.matches("[data-queue]") ? root
      : root && root.querySelector ? root.querySelector("[data-queue]") : null;
    if (!container) return;
    addHint(container);
    // The queue was swapped after an action: the item that took the decided one's place
    // gets the focus, so "a a a" works through the queue.
    if (current >= 0 && container !== document.body) focusItem(current, true);
  }

  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && typing(event.target)) {
      var open = event.target.closest("details[data-queue-reject]");
      if (open) {
        open.open = false;
        var item = open.closest("[data-queue-item]");
        if (item) item.focus();
        event.preventDefault();
      }
      return;
    }
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
    if (typing(event.target) || !queue()) return;
    var key = event.key;
    if (key === "j" || key === "k") {
      var step = key === "j" ? 1 : -1;
      focusItem(current < 0 ? 0 : current + step, true);
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
