"""A hand-edited MEMORY.md, as the Drift tab and the dashboard tests need it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tenants.memory.files import files_sync
from tenants.models import Tenant
from tests.tenants.ui.memory_helpers import seed, volume_of


def volume_root(settings: Any, tmp_path: Path) -> Path:
    """Project the memory files to disk under a temporary volume root (for a `root` fixture)."""
    settings.MEMORYHUB_VOLUME_ROOT = tmp_path / "volumes"
    return settings.MEMORYHUB_VOLUME_ROOT


def memory_md(root: Path, tenant: Tenant) -> Path:
    return root / tenant.slug / "memories" / "MEMORY.md"


def drift(tenant: Tenant, root: Path, disk: bytes) -> None:
    """The stores written to disk, then MEMORY.md edited by hand and the edit detected."""
    seed(tenant, "memory", ["Project uses Bun", "Deploys go through CI"])
    files_sync(volume_of(tenant).pk)
    memory_md(root, tenant).write_bytes(disk)
    assert files_sync(volume_of(tenant).pk)["memory"] == "drift_detected"
