// Progress bars: <div class="fill" data-fill="42"> gets width 42%. The Content-Security-Policy
// forbids inline style attributes (style-src 'self'); a style set from a script file is allowed.
(function () {
  "use strict";

  function apply(root) {
    var bars = root.querySelectorAll ? Array.from(root.querySelectorAll("[data-fill]")) : [];
    if (root.matches && root.matches("[data-fill]")) bars.push(root);
    bars.forEach(function (bar) {
      var pct = Math.max(0, Math.min(100, Number(bar.dataset.fill) || 0));
      bar.style.width = pct + "%";
    });
  }

  document.addEventListener("DOMContentLoaded", function () { apply(document); });
  document.addEventListener("htmx:load", function (event) { apply(event.target); });
})();
