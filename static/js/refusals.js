// htmx swaps no 4xx answer on its own. Two refusals name their own target (HX-Retarget) and
// are let through so the person sees why nothing changed: a write refused because the tenant
// is suspended (403, onto the page's banner: tenants/ui.py `suspended_refusal`), and a form
// holding U+0000 (400, the whole page: memoryhub/page_input.py).
(function () {
  "use strict";

  document.addEventListener("htmx:beforeSwap", function (event) {
    var xhr = event.detail.xhr;
    var target = xhr.getResponseHeader("HX-Retarget");
    if ((xhr.status === 403 && target === "#tenant-suspended") || (xhr.status === 400 && target === "body")) {
      event.detail.shouldSwap = true;
    }
  });
})();
