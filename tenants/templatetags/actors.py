"""`{% actor_name label %}`: an actor as a person reads it, the stored label in its title."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.safestring import SafeString

from tenants.actor_names import ActorNames, actor_names

register = template.Library()


@register.simple_tag(takes_context=True)
def actor_name(context: template.Context, label: Any, kind: str = "") -> SafeString:
    """`kind` is the audit row's actor kind where the page has it (`key`, `user`, `system`).

    Names come from the request's resolver (tenants/actor_names.py): views prime it with the
    page's actors, so rows ask the database nothing."""
    request = context.get("request")
    names = actor_names(request) if request is not None else ActorNames(None)
    return names.name(str(label or ""), kind).html()
