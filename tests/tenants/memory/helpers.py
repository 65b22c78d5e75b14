"""Shortcuts for memory-file API tests."""

from __future__ import annotations

from typing import Any

from rest_framework.test import APIClient

from tenants.models import MemoryVolume, Tenant


def set_volume(tenant: Tenant, **fields: Any) -> MemoryVolume:
    volume = MemoryVolume.get_or_create_for(tenant)
    for name, value in fields.items():
        setattr(volume, name, value)
    volume.save()
    return volume


class Mem:
    def __init__(self, client: APIClient) -> None:
        self.client = client

    def post(self, target: str, body: Any, **headers: str) -> Any:
        return self.client.post(f"/api/v1/memory/{target}", body, format="json", headers=headers)

    def add(self, target: str, content: Any, **headers: str) -> Any:
        return self.post(target, {"action": "add", "content": content}, **headers)

    def replace(self, target: str, old: Any, content: Any) -> Any:
        return self.post(target, {"action": "replace", "old_text": old, "content": content})

    def remove(self, target: str, old: Any) -> Any:
        return self.post(target, {"action": "remove", "old_text": old})

    def batch(self, target: str, operations: list[dict[str, Any]]) -> Any:
        return self.post(target, {"operations": operations})

    def entries(self, target: str) -> list[str]:
        return self.client.get(f"/api/v1/memory/{target}").json()["entries"]

    def tool(self, args: dict[str, Any], **headers: str) -> Any:
        return self.client.post("/api/v1/tools/memory", args, format="json", headers=headers)


def seed(tenant: Tenant, target: str, entries: list[str]) -> None:
    """Store entries as an `import` version, bypassing the rules (fixtures only)."""
    from django.db import transaction

    from memoryhub.actors import Actor
    from tenants.memory.service import _locked, commit_entries

    with transaction.atomic():
        commit_entries(volume=_locked(tenant), target=target, entries=entries, origin="import",
                       actor=Actor.system("import"))
