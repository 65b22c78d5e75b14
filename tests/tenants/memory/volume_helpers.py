"""Helpers for the memory-file projection tests: stores set through the services, and the
tenant's files under a temporary volume root."""

from __future__ import annotations

from pathlib import Path

from django.db import transaction

from memoryhub.actors import Actor
from tenants.memory import rules
from tenants.memory.service import WriteOutcome, _locked, commit_entries, memory_write
from tenants.models import Approval, MemoryVolume, Origin, Tenant

ACTOR = Actor.system("tests")


def volume_of(tenant: Tenant) -> MemoryVolume:
    return MemoryVolume.objects.get(pk=MemoryVolume.get_or_create_for(tenant).pk)


def approval_off(tenant: Tenant) -> MemoryVolume:
    volume = MemoryVolume.get_or_create_for(tenant)
    volume.approval = Approval.OFF
    volume.save(update_fields=["approval"])
    return volume


def write(tenant: Tenant, data: dict[str, object], target: str = "memory") -> WriteOutcome:
    """An agent write (foreground); applied at once when approval is off (a refusal raises)."""
    return memory_write(tenant=tenant, request=rules.parse_request(data, target), origin=Origin.FOREGROUND,
                        actor=ACTOR)


def add(tenant: Tenant, content: str, target: str = "memory") -> WriteOutcome:
    return write(tenant, {"action": "add", "content": content}, target)


def store(tenant: Tenant, entries: list[str], target: str = "memory") -> int:
    """Set a store's entries directly (no checks), as a fixture would."""
    with transaction.atomic():
        volume = _locked(tenant)
        return commit_entries(volume=volume, target=target, entries=entries, origin=Origin.HUMAN, actor=ACTOR)


def folder_of(root: Path, tenant: Tenant) -> Path:
    return root / tenant.slug / "memories"


def backups(folder: Path, name: str = "MEMORY.md") -> list[Path]:
    return sorted(folder.glob(f"{name}.bak.*"))
