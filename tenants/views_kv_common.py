"""Plumbing shared by the KV review pages (tenants/views_kv.py, tenants/views_kv_runs.py)."""

from __future__ import annotations

import json

from django.http import Http404
from django.shortcuts import get_object_or_404

from tenants.models import Agent
from tenants.ui_request import TenantRequest


def agent_or_404(request: TenantRequest, slug: str) -> Agent:
    # Looked up from the request's tenant: another tenant's slug is simply not found.
    return get_object_or_404(Agent.objects.for_tenant(request.tenant), slug=slug)


def key_param(request: TenantRequest) -> str:
    # Keys travel as ?key= so that any key works, including "", "a/b" and "..".
    if "key" not in request.GET:
        raise Http404("No key given.")
    return request.GET["key"]


def pretty(value_text: str) -> str:
    """A stored (canonical) value as indented JSON for reading and editing."""
    return json.dumps(json.loads(value_text), indent=2, ensure_ascii=False)

