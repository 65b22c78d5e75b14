"""The input boundary of the web pages: a posted form field (name or value) holding U+0000 is
400, before any view reads it (docs/api.md "Input boundary" says the same of the API).

PostgreSQL cannot store U+0000 in text, so such a value would fail deep in a write with a
database error (a 500), and SQLite would store what the API refuses. Django's form fields
refuse it too, but the pages' forms are deliberately lenient (tenants/forms.py): one check
here covers every page, whatever its form. Only urlencoded and multipart bodies of POSTs
outside /api/ are read here; the API parses its own bodies (memoryhub/api/parsers.py).
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from memoryhub.api.middleware import API_PREFIX

MESSAGE = "The form holds a character that cannot be stored (U+0000). Remove it and send the form again."


def holds_null(request: HttpRequest) -> bool:
    return any("\x00" in name or any("\x00" in value for value in values)
               for name, values in request.POST.lists())


class PageInputMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method == "POST" and not request.path_info.startswith(API_PREFIX) and holds_null(request):
            response = render(request, "400.html", {"exception": MESSAGE}, status=400)
            if request.headers.get("HX-Request") == "true":
                # htmx swaps no 4xx answer on its own: this one names the page body as its
                # target so the person sees why nothing was saved (static/js/refusals.js).
                response["HX-Retarget"] = "body"
                response["HX-Reswap"] = "innerHTML"
            return response
        return self.get_response(request)
