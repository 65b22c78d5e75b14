// Live size counters for the memory entry forms. Sizes count code points, as the server
// does (Python len()): [..."🚀"].length is 1 where "🚀".length is 2.
(function () {
  "use strict";

  function codePoints(text) {
    return [...text].length;
  }

  function update(area) {
    var out = document.getElementById(area.dataset.sizeOut);
    if (!out) return;
    var limit = Number(area.dataset.sizeLimit);
    var text = area.value.trim(); // the server trims before storing
    var size = text ? Number(area.dataset.sizeBase) + codePoints(text)
                    : Number(area.dataset.sizeEmpty || area.dataset.sizeBase);
    var shown = out.querySelector("[data-size-text]") || out;
    shown.textContent = size.toLocaleString("en-US") + "/" + limit.toLocaleString("en-US");
    out.classList.toggle("over", size > limit);
  }

  function updateAll(root) {
    (root || document).querySelectorAll("textarea[data-size-out]").forEach(update);
  }

  document.addEventListener("input", function (event) {
    if (event.target.matches && event.target.matches("textarea[data-size-out]")) update(event.target);
  });
  // Panels swapped in by htmx (an editor, a form kept after an error) start with a draft.
  document.addEventListener("htmx:load", function (event) { updateAll(event.target); });
  document.addEventListener("DOMContentLoaded", function () { updateAll(document); });
})();
