"""Plumbing shared by the KV review pages (tenants/views_kv.py, tenants/views_kv_runs.py)."""

from __future__ import annotations

import json
from typing import Any

from django.http import Http404, HttpRequest
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse

from tenants.models import Agent, Role

KV_CHANGED = "kvChanged"


def wants_partial(request: HttpRequest) -> bool:
    # htmx restoring history asks for the whole page although it is an htmx request.
    htmx = request.htmx  # type: ignore[attr-defined]
    return bool(htmx) and not htmx.history_restore_request


def render_kv(
    request: HttpRequest, template: str, partial: str, context: dict[str, Any], *, changed: bool = False
) -> TemplateResponse:
    name = f"{template}#{partial}" if wants_partial(request) else template
    response = TemplateResponse(request, name, context)
    if changed:
        response["HX-Trigger"] = KV_CHANGED
    return response


def agent_or_404(request: HttpRequest, slug: str) -> Agent:
    # Looked up from the request's tenant: another tenant's slug is simply not found.
    return get_object_or_404(Agent.objects.for_tenant(request.tenant), slug=slug)  # type: ignore[attr-defined]


def key_param(request: HttpRequest) -> str:
    # Keys travel as ?key= so that any key works, including "", "a/b" and "..".
    if "key" not in request.GET:
        raise Http404("No key given.")
    return request.GET["key"]


def int_or_none(raw: str | None) -> int | None:
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


def pretty(value_text: str) -> str:
    """A stored (canonical) value as indented JSON for reading and editing."""
    return json.dumps(json.loads(value_text), indent=2, ensure_ascii=False)


def can_edit(request: HttpRequest) -> bool:
    return request.membership.has_role(Role.REVIEWER)  # type: ignore[attr-defined]
