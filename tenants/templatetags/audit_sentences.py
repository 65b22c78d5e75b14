"""`{% audit_sentences events as rows %}`: audit rows with the sentence the audit log shows
for each (tenants/audit_text.py), for pages that show a few rows of their own, like the
dashboard's recent activity. The rows' facts are looked up together, once per call."""

from __future__ import annotations

from collections.abc import Iterable

from django import template
from django.utils.safestring import SafeString

from memoryhub.models import AuditEvent
from tenants.actor_names import ActorNames, actor_names
from tenants.audit_text import Facts, sentence

register = template.Library()


@register.simple_tag(takes_context=True)
def audit_sentences(context: template.Context, events: Iterable[AuditEvent]) -> list[tuple[AuditEvent, SafeString]]:
    request, tenant = context.get("request"), context.get("current_tenant")
    rows = list(events)
    if tenant is None:  # only tenant pages show audit rows
        return []
    names = actor_names(request) if request is not None else ActorNames(tenant)
    facts = Facts.for_rows(tenant, names, rows)
    return [(event, sentence(event, facts)) for event in rows]
