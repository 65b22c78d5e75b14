"""Hook for projecting the stores onto the tenant volume (files on disk)."""

from __future__ import annotations

from django.conf import settings
from django.db import transaction

from tenants.models import MemoryVolume


def schedule_sync(volume: MemoryVolume) -> None:
    """Queue the file sync after the write commits, when a volume root is configured."""
    if not getattr(settings, "MEMORYHUB_VOLUME_ROOT", None):
        return
    from tenants.tasks import memory_files_sync

    volume_id = volume.pk
    # robust: the write has committed; a broker or disk failure is logged, not turned into
    # an error for a change that is already stored (the next write queues the sync again).
    transaction.on_commit(lambda: memory_files_sync.delay(volume_id), robust=True)
