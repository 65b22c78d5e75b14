"""The read playground (docs/atoms.md "In the web UI: read playground and purge"): run the real
`atoms_read` as the signed-in person and show exactly what the API would return for it.

The person reads as `user:<username>` (actor human, every policy the tenant holds atoms in):
`Principal.for_person`, the principal every UI action uses. read records a receipt, as it
does for any caller, but never touches use state: nothing here counts as an accepted use. Errors of the engine are shown with their
code, like validation errors of the form, with status 200.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.http import HttpResponse
from django.views.decorators.http import require_http_methods

from atoms.api.read import read_json
from atoms.errors import AtomError
from atoms.models import Ref
from atoms.principal import Principal, resolve_binding
from atoms.services.read import ReadCommand, atoms_read
from atoms.services.read_options import ReadOptions, options_as_sent, parse_state
from atoms.ui.common import person_of
from tenants.models import Role, Tenant
from tenants.ui import tenant_view
from tenants.ui_render import render_page
from tenants.ui_request import TenantRequest

MAX_TEXT = 65_536  # bytes per state text (docs/atoms.md "Recall"); the engine checks bytes, this is characters


class PlaygroundForm(forms.Form):
    context = forms.CharField(required=False, max_length=MAX_TEXT, widget=forms.Textarea(attrs={"rows": 6}),
                              help_text="What the agent is working on: the conversation so far, a task.")
    query = forms.CharField(required=False, max_length=MAX_TEXT,
                            help_text="Optional: a question the agent asks its memory.")
    tokens = forms.IntegerField(min_value=1, max_value=1_000_000, initial=4096,
                                help_text="Budget in UTF-8 bytes of the rendered text (1 to 1,000,000).")
    limit = forms.IntegerField(min_value=1, max_value=10_000, initial=24,
                               help_text="Most atoms to return (1 to 10,000).")
    cursor = forms.CharField(required=False, widget=forms.HiddenInput)

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data
        if not (data.get("context") or "").strip() and not (data.get("query") or "").strip():
            raise forms.ValidationError("Enter a context or a query.")
        return data

    def options(self) -> ReadOptions:
        data = self.cleaned_data
        return ReadOptions(tokens=data["tokens"], limit=data["limit"], cursor=data.get("cursor") or None)

    def body(self) -> dict[str, Any]:
        """The same read as an API caller would send it, shown beside the answer."""
        data = self.cleaned_data
        state = {name: data[name] for name in ("context", "query") if data[name].strip()}
        return {"state": state, "options": options_as_sent(self.options())}

    def command(self, person: Principal) -> ReadCommand:
        """The read the form asks for, as the signed-in person (parse_state checks the texts'
        byte sizes, which the form counts in characters)."""
        return ReadCommand(binding=resolve_binding(person, None), state=parse_state(self.body()["state"]),
                           options=self.options())


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)


def _with_atom_ids(tenant: Tenant, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each item with the atom its ref names (`atom_id`), so the table links to the atom
    pages. The refs were just issued to the person; the look-up stays inside the tenant."""
    owners = dict(Ref.objects.filter(tenant=tenant, id__in=[i.get("ref") for i in items])
                  .values_list("id", "atom_id"))
    return [{**item, "atom_id": owners.get(item.get("ref", ""), "")} for item in items]


def result_context(tenant: Tenant, body: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    diagnostics = result.get("diagnostics", {})
    return {
        "result": result,
        "items": _with_atom_ids(tenant, result.get("items", [])),
        "blocked": diagnostics.get("validation", {}).get("blocked", 0),
        "diagnostics_json": pretty(diagnostics),
        "usage_json": pretty(result.get("usage", {})),
        "result_json": pretty(result),
        "request_json": pretty(body),
    }


@tenant_view(Role.VIEWER, post_reads=True)  # a read runs while the tenant is suspended too
@require_http_methods(["GET", "POST"])
def playground(request: TenantRequest) -> HttpResponse:
    """GET: the empty form. POST: run read and show its result beside the form."""
    context: dict[str, Any] = {}
    if request.method == "POST":
        form = PlaygroundForm(request.POST)
        if form.is_valid():
            body = form.body()
            try:
                result = read_json(atoms_read(form.command(person_of(request))))
            except AtomError as exc:
                context["error"] = {"code": exc.code, "message": exc.message, "details": pretty(exc.details)}
                context["request_json"] = pretty(body)
            else:
                context.update(result_context(request.tenant, body, result))
    else:
        form = PlaygroundForm()
    context["form"] = form
    return render_page(request, "atoms/playground.html", context, partial="playground-panel")
