// The atom picker in the edit form's "Add a link" (docs/atoms.md "Review UI"). htmx fetches
// the matching atoms as the person types; this file only shows the picker (it stays hidden
// without JavaScript, where the plain id field does the job), fills the target id field
// when a result is picked, and keeps Enter in the search box from saving the whole form.
(function () {
  "use strict";

  function reveal(root) {
    var pickers = root.querySelectorAll ? Array.from(root.querySelectorAll("[data-picker]")) : [];
    if (root.matches && root.matches("[data-picker]")) pickers.push(root);
    pickers.forEach(function (picker) {
      picker.hidden = false;
      var form = picker.closest("form");
      var fallback = form && form.querySelector("[data-picker-fallback]");
      if (fallback) fallback.hidden = true;
    });
  }

  function pick(button) {
    var picker = button.closest("[data-picker]");
    var form = picker && picker.closest("form");
    if (!form) return;
    var target = form.querySelector("#" + picker.dataset.picker);
    if (!target) return;
    target.value = button.dataset.pick;
    var chosen = form.querySelector("[data-picker-chosen]");
    if (chosen) chosen.textContent = "Linking to: " + button.dataset.pickLabel;
    var results = picker.querySelector("[data-picker-results]");
    if (results) results.replaceChildren();
    var role = form.querySelector("[name=new_role]");
    (role && !role.value ? role : target).focus();
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("[data-picker] button[data-pick]");
    if (button) pick(button);
  });

  document.addEventListener("keydown", function (event) {
    var input = event.target;
    if (event.key !== "Enter" || !input.matches || !input.matches("[data-picker] input[type=search]")) return;
    event.preventDefault(); // Enter picks the first result instead of submitting the edit
    var first = input.closest("[data-picker]").querySelector("button[data-pick]");
    if (first) pick(first);
  });

  document.addEventListener("DOMContentLoaded", function () { reveal(document); });
  document.addEventListener("htmx:load", function (event) { reveal(event.target); });
})();
