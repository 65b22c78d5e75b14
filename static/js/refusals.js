// A write refused because the tenant is suspended answers 403 with the suspension banner,
// retargeted onto the page's banner (tenants/ui.py `suspended_refusal`). htmx swaps no 4xx
// answer on its own; this one is let through so the person sees why nothing changed.
(function () {
  "use strict";

  document.addEventListener("htmx:beforeSwap", function (event) {
    var xhr = event.detail.xhr;
    if (xhr.status === 403 && xhr.getResponseHeader("HX-Retarget") === "#tenant-suspended") {
      event.detail.shouldSwap = true;
    }
  });
})();
