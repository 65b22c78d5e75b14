"""Hook for projecting the stores onto the tenant volume (files on disk)."""

from __future__ import annotations

from django.conf import settings

from memoryhub.enqueue import enqueue_on_commit
from tenants.models import MemoryVolume


def schedule_sync(volume: MemoryVolume) -> None:
    """Queue the file sync after the write commits, when a volume root is configured."""
    if not getattr(settings, "MEMORYHUB_VOLUME_ROOT", None):
        return
    # The write has committed by then: a broker failure is not turned into an error for a
    # change that is already stored; the sync waits in the outbox until the broker is back.
    enqueue_on_commit("tenants.memory_files_sync", volume.pk)
