"""Running a purge to the end in `maxWork` slices (docs/atoms.md "Review UI": the UI's purge task).

`atoms_purge` does at most `maxWork` units per call and keeps a checkpoint in the tenant's
purge barrier; this module repeats the call for the same atom until the purge completes,
a time slice is used up (the Celery task then queues itself again) or storage fails. It
never starts a purge: the person's confirmed request raised the barrier, so a late or
repeated delivery of the task for a finished purge does nothing.

The state of the last run is kept in the cache for the progress page (running, waiting
for a retry after a storage error, failed); losing it only hides that hint.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import cache

from atoms.errors import AtomError
from atoms.models import AtomStore, PurgedAtom
from atoms.principal import Principal
from atoms.services.purge import PurgeCommand, atoms_purge
from tenants.models import Tenant

DEFAULT_SLICE_WORK = 20_000
DEFAULT_SLICE_SECONDS = 20.0
STATE_TTL = 24 * 3600


class PurgeStorageError(Exception):
    """A slice stopped with `reason: "storage-error"`; the barrier stays up, retry later."""


@dataclass(frozen=True)
class SliceRun:
    state: str  # complete | continue | idle | conflict
    calls: int
    erasure_id: str | None = None


def slice_work() -> int:
    return max(1, int(getattr(settings, "ATOMS_PURGE_SLICE_WORK", DEFAULT_SLICE_WORK)))


def slice_seconds() -> float:
    return float(getattr(settings, "ATOMS_PURGE_SLICE_SECONDS", DEFAULT_SLICE_SECONDS))


def _state_key(tenant_id: int, atom_id: str) -> str:
    return f"atoms:purge-run:{tenant_id}:{atom_id}"


def run_state(tenant_id: int, atom_id: str) -> dict[str, Any] | None:
    """What the last task run said about this purge, if the cache still has it."""
    return cache.get(_state_key(tenant_id, atom_id))


def note_state(tenant_id: int, atom_id: str, state: str, **extra: Any) -> None:
    cache.set(_state_key(tenant_id, atom_id), {"state": state, "at": time.time(), **extra}, STATE_TTL)


def purge_in_slices(*, tenant_id: int, atom_id: str, username: str, seconds: float | None = None) -> SliceRun:
    """Resume the pending purge of `atom_id`, `slice_work()` units per call, for about
    `seconds`. `continue` means time ran out with work left; `idle` that no purge of this
    atom is pending (finished or never started); `conflict` that a concurrent run moved the
    checkpoint (that run carries on). Raises PurgeStorageError on a storage error."""
    tenant = Tenant.objects.get(pk=tenant_id)
    caller = Principal.for_person(tenant, username)
    budget = seconds if seconds is not None else slice_seconds()
    deadline = time.monotonic() + budget
    work = slice_work()
    calls = 0
    while True:
        barrier = AtomStore.get_or_create_for(tenant).purge_barrier
        if not barrier or barrier.get("atomId") != atom_id:
            purged = PurgedAtom.objects.filter(tenant=tenant, atom_id=atom_id).first()
            note_state(tenant_id, atom_id, "complete" if purged else "idle")
            return SliceRun("idle", calls, purged.erasure_id if purged else None)
        note_state(tenant_id, atom_id, "running", phase=barrier.get("phase"))
        try:
            result = atoms_purge(PurgeCommand(caller=caller, atom_id=atom_id, max_work=work))
        except AtomError as exc:
            if exc.code == "REVISION_CONFLICT":
                return SliceRun("conflict", calls)
            note_state(tenant_id, atom_id, "failed", error=f"{exc.code}: {exc.message}")
            raise
        calls += 1
        if result.complete:
            receipt = result.erasure_receipt["id"] if result.erasure_receipt else None
            note_state(tenant_id, atom_id, "complete", erasure=receipt)
            return SliceRun("complete", calls, receipt)
        if result.reason == "storage-error":
            note_state(tenant_id, atom_id, "retrying", error="storage error")
            raise PurgeStorageError(f"the purge of {atom_id} stopped on a storage error")
        # minimumWork is the next step's cost: a step larger than a slice still gets done,
        # and a call that could not take a single step is repeated at once, whatever the
        # clock says, so every run makes progress.
        work = max(slice_work(), result.minimum_work or 0)
        if result.work > 0 and time.monotonic() >= deadline:
            return SliceRun("continue", calls)
