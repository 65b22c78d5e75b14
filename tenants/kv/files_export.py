"""The namespace file as the original writes it (shared by the HTTP export and kv_export)."""

from __future__ import annotations

from tenants.kv.rules import export_text
from tenants.kv.store import kv_items
from tenants.models import Agent


def namespace_export_text(*, agent: Agent, namespace: str) -> str:
    """Exactly json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False); `{}` when empty."""
    return export_text(list(kv_items(agent=agent, namespace=namespace)))
