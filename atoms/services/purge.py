"""purge (docs/atoms.md "In the web UI: read playground and purge"): erase an atom and everything that depends on it for erasure.

The first call that is not a dry run raises the tenant's purge barrier before any work;
while it is up every other Atom endpoint answers ACCESS_DENIED (`erasure-incomplete`).
Progress is checkpointed in the barrier, so repeating the call for the same atom resumes
where the last one stopped (out of `maxWork`, or a storage error). The final step bumps
the index generation (invalidating every cursor), takes a `seq`, clears the barrier and
keeps an erasure receipt.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Literal, cast

from django.db import DatabaseError, transaction

from atoms.clock import now_ms
from atoms.core.canonical import digest
from atoms.core.ids import is_id_of, new_erasure_id
from atoms.errors import AtomError, denied, invalid
from atoms.models import Atom, AtomStore, ErasureReceipt, PurgedAtom, Ref
from atoms.principal import Principal
from atoms.services.indexing import rebuild_vectors_on_commit
from atoms.services.purge_steps import (
    Checkpoint,
    Meter,
    OutOfWork,
    audit_rows_about,
    erase_next,
    expand_next,
    scan_manifests,
    scan_next,
)
from atoms.services.refs import resolve_ref
from memoryhub.actors import Actor
from memoryhub.audit import audit_record
from tenants.models import KeyKind, Tenant

logger = logging.getLogger("atoms.purge")

MAX_WORK = 16_000_000
NON_DESTRUCTIVE = ("dependencies", "revisions")


@dataclass(frozen=True)
class PurgeCommand:
    """One purge, validated (docs/architecture.md "Typed services"): the API parses a body into
    it (atoms/api/purge.py), the purge pages and the slice task build it in code. It names the
    atom by exactly one of `atom_id` and `ref`; which atom that is, and whether it may still be
    purged, is decided by `atoms_purge` against the store and its barrier."""

    caller: Principal  # an admin key or a person acting in the UI
    atom_id: str | None = None
    ref: str | None = None  # a ref issued to `caller`
    dry_run: bool = False
    max_work: int = MAX_WORK  # work units this call may spend, at most MAX_WORK

    def __post_init__(self) -> None:
        if (self.atom_id is None) == (self.ref is None):
            raise ValueError("A purge names exactly one of atom_id and ref.")


@dataclass(frozen=True)
class PurgeResult:
    """What one purge call did; atoms/api/purge.py renders it as the PurgeResult JSON."""

    complete: bool
    dry_run: bool
    affected_atom_ids: list[str]  # the closure, sorted
    erased_atom_ids: list[str]  # in erasure order; none on a dry run
    legacy_dependencies: bool
    work: int
    minimum_work: int | None = None  # what the next call needs at least, when out of work
    reason: Literal["budget", "storage-error"] | None = None  # why it stopped before completing
    # The stored erasure receipt, the document docs/atoms.md "In the web UI: read playground and
    # purge" shows (id, atomIds, requestedBy, startedAt, completedAt, counts, digest).
    erasure_receipt: dict[str, Any] | None = None


def _target_atom(command: PurgeCommand, barrier: dict[str, Any] | None) -> str:
    """The logical atom the command names. While a purge is pending only its atom may be
    named (to resume), even once that atom's rows and its refs' revisions are gone."""
    pending = barrier["atomId"] if barrier else None
    caller = command.caller
    tenant = caller.tenant
    if command.atom_id is not None:
        atom_id = command.atom_id
        if pending is None:
            if PurgedAtom.objects.filter(tenant=tenant, atom_id=atom_id).exists():
                raise denied("This atom was purged.", path="atomId")
            if not is_id_of(atom_id, "atom") or not Atom.objects.filter(tenant=tenant, id=atom_id).exists():
                raise AtomError("INVALID_REF", "Unknown atom.", {"path": "atomId"})
    else:
        ref = cast(str, command.ref)  # the command names exactly one of the two
        row = Ref.objects.filter(tenant=tenant, id=ref).first()
        if row is None:
            raise AtomError("INVALID_REF", "Unknown ref.", {"path": "ref"})
        if row.principal != caller.principal_id:
            raise denied("This ref was issued to another key.", path="ref")
        if pending is None:
            resolve_ref(caller, ref, caller.read_policies)
        atom_id = row.atom_id
    if pending is not None and atom_id != pending:
        raise invalid("Another purge is pending: repeat that purge until it completes.",
                      reason="erasure-incomplete")
    return atom_id


def _result(cp: Checkpoint, *, dry_run: bool, complete: bool, work: int,
            reason: Literal["budget", "storage-error"] | None = None, minimum: int | None = None,
            receipt: dict[str, Any] | None = None) -> PurgeResult:
    return PurgeResult(complete=complete, dry_run=dry_run, affected_atom_ids=sorted(cp.closure),
                       erased_atom_ids=[] if dry_run else cp.order[:cp.erased], legacy_dependencies=cp.legacy,
                       work=work, minimum_work=minimum, reason=reason, erasure_receipt=receipt)


def check_purger(caller: Principal) -> None:
    """Admin keys and people acting in the UI (whose pages admit admins only) may purge."""
    if caller.kind not in (KeyKind.ADMIN, "ui"):
        raise denied("Only admin keys may purge.")


def atoms_purge(command: PurgeCommand) -> PurgeResult:
    """Admin keys (and UI admins) only; the API view enforces the key kind. The store's purge
    barrier is read here, not by the caller: a pending purge may only be resumed."""
    caller = command.caller
    check_purger(caller)
    store = AtomStore.get_or_create_for(caller.tenant)
    atom_id = _target_atom(command, store.purge_barrier)
    meter = Meter(min(command.max_work, MAX_WORK))
    if command.dry_run:
        return _dry_run(caller.tenant, atom_id, store.purge_barrier, meter)
    barrier = store.purge_barrier or _raise_barrier(caller, atom_id)
    return _run(caller, barrier, meter)


# --- dry run -----------------------------------------------------------------------------

def _dry_run(tenant: Tenant, atom_id: str, barrier: dict[str, Any] | None, meter: Meter) -> PurgeResult:
    """The closure and `legacyDependencies`, with no side effects. `minimumWork` is the
    work done plus the next step's: a dry run keeps nothing, so a retry redoes it all."""
    if barrier is not None:
        saved = Checkpoint.from_json(barrier["checkpoint"])
        if saved.phase() not in NON_DESTRUCTIVE:
            # Erasure has begun, so the stored closure is the only complete one left.
            return _result(saved, dry_run=True, complete=True, work=0)
    cp = Checkpoint(closure=[atom_id])
    try:
        while cp.expanded < len(cp.closure):
            expand_next(tenant, cp, meter)
        while cp.scanned < len(cp.closure):
            scan_next(tenant, cp, meter)
    except OutOfWork as exc:
        return _result(cp, dry_run=True, complete=False, work=meter.used, reason="budget",
                       minimum=meter.used + exc.needed)
    except DatabaseError:
        logger.exception("purge dry run of %s failed", atom_id)
        return _result(cp, dry_run=True, complete=False, work=meter.used, reason="storage-error")
    return _result(cp, dry_run=True, complete=True, work=meter.used)


# --- the barrier and checkpoints ---------------------------------------------------------

def _raise_barrier(caller: Principal, atom_id: str) -> dict[str, Any]:
    """Set `purge:pending` before any work (even with maxWork 0)."""
    with transaction.atomic():
        store = AtomStore.objects.select_for_update().get(tenant=caller.tenant)
        if store.purge_barrier:  # another admin raised it meanwhile
            if store.purge_barrier["atomId"] != atom_id:
                raise invalid("Another purge is pending: repeat that purge until it completes.",
                              reason="erasure-incomplete")
            return store.purge_barrier
        if PurgedAtom.objects.filter(tenant=caller.tenant, atom_id=atom_id).exists():
            raise denied("This atom was purged.")
        cp = Checkpoint(closure=[atom_id])
        store.purge_barrier = {"atomId": atom_id, "erasureId": new_erasure_id(), "startedAt": now_ms(),
                               "requestedBy": caller.subject, "phase": cp.phase(), "checkpoint": cp.to_json()}
        store.save(update_fields=["purge_barrier"])
        return store.purge_barrier


def _locked_store(tenant: Tenant, expected: dict[str, Any]) -> AtomStore:
    """The store row, locked, provided the barrier is still the checkpoint we resumed from
    (a concurrent resume of the same purge moved it: a checkpoint race)."""
    store = AtomStore.objects.select_for_update().get(tenant=tenant)
    if store.purge_barrier != expected:
        raise AtomError("REVISION_CONFLICT", "The purge advanced in another call; repeat the call to resume.")
    return store


def _advanced(barrier: dict[str, Any], cp: Checkpoint) -> dict[str, Any]:
    return {**barrier, "phase": cp.phase(), "checkpoint": cp.to_json()}


def _save(tenant: Tenant, expected: dict[str, Any], cp: Checkpoint) -> dict[str, Any]:
    with transaction.atomic():
        store = _locked_store(tenant, expected)
        store.purge_barrier = _advanced(expected, cp)
        store.save(update_fields=["purge_barrier"])
        return store.purge_barrier


# --- the phases --------------------------------------------------------------------------

def _run(caller: Principal, barrier: dict[str, Any], meter: Meter) -> PurgeResult:
    """Resume from the saved checkpoint and go as far as `maxWork` allows."""
    tenant = caller.tenant
    saved = barrier
    cp = Checkpoint.from_json(barrier["checkpoint"])
    try:
        try:
            while cp.phase() in NON_DESTRUCTIVE:
                if cp.phase() == "dependencies":
                    expand_next(tenant, cp, meter)
                elif cp.scanned < len(cp.closure):
                    scan_next(tenant, cp, meter)
                else:
                    scan_manifests(tenant, cp, meter)
            if saved["checkpoint"] != cp.to_json():
                # The checkpoint the first destructive step starts from.
                saved = _save(tenant, saved, cp)
            while cp.phase() == "erase":
                saved, cp = _erase_step(tenant, saved, cp, meter)
            receipt = _finish(caller, saved, cp, meter)
        except OutOfWork as exc:
            if cp.phase() in NON_DESTRUCTIVE and saved["checkpoint"] != cp.to_json():
                saved = _save(tenant, saved, cp)
            return _result(Checkpoint.from_json(saved["checkpoint"]), dry_run=False, complete=False,
                           work=meter.used, reason="budget", minimum=exc.needed)
    except DatabaseError:
        logger.exception("purge of %s stopped on a storage error", barrier["atomId"])
        return _result(Checkpoint.from_json(saved["checkpoint"]), dry_run=False, complete=False,
                       work=meter.used, reason="storage-error")
    return _result(cp, dry_run=False, complete=True, work=meter.used, receipt=receipt)


def _erase_step(tenant: Tenant, saved: dict[str, Any], cp: Checkpoint,
                meter: Meter) -> tuple[dict[str, Any], Checkpoint]:
    """One logical atom in one transaction, together with the checkpoint that records it."""
    nxt = cp.copy()
    spent = meter.used
    try:
        with transaction.atomic():
            store = _locked_store(tenant, saved)
            erase_next(tenant, nxt, saved["erasureId"], meter)
            store.purge_barrier = _advanced(saved, nxt)
            store.save(update_fields=["purge_barrier"])
    except BaseException:
        meter.used = spent  # rolled back: nothing of this step was done
        raise
    return store.purge_barrier, nxt


def _audit_actor(caller: Principal) -> Actor:
    return Actor.for_key(caller.key) if caller.key is not None else Actor(kind="user", label=caller.subject)


def _finish(caller: Principal, saved: dict[str, Any], cp: Checkpoint, meter: Meter) -> dict[str, Any]:
    """`metadata`: count the audit rows, bump the generation, clear the barrier, keep the
    erasure receipt and audit the purge (its digest only), all in one transaction."""
    tenant = caller.tenant
    spent = meter.used
    try:
        with transaction.atomic():
            store = _locked_store(tenant, saved)
            redacted = audit_rows_about(tenant, cp)
            meter.spend(1 + redacted)  # the store row, and the audit rows about erased atoms
            counts = {**cp.counts, "auditEntriesRedacted": redacted,
                      "replayRecords": (cp.manifests or {}).get("replayRecords", 0)}
            # Cursors are not stored (the generation bump below
            # invalidates them all) and review status lives on the erased revisions, so
            # those counts stay 0.
            receipt: dict[str, Any] = {
                "id": saved["erasureId"], "atomIds": cp.order, "requestedBy": saved["requestedBy"],
                "startedAt": saved["startedAt"], "completedAt": now_ms(), "counts": counts,
            }
            receipt["digest"] = digest(receipt)
            store.seq += 1
            store.index_generation += 1
            store.purge_barrier = None
            store.save(update_fields=["seq", "index_generation", "purge_barrier"])
            ErasureReceipt.objects.create(id=receipt["id"], tenant=tenant, receipt=receipt)
            audit_record(tenant=tenant, actor=_audit_actor(caller),
                         action="atoms.purge", object_type="erasure", object_id=receipt["id"], after=receipt)
            # Vector files still hold the erased vectors: rebuild them from the entries left.
            rebuild_vectors_on_commit(tenant)
    except BaseException:
        meter.used = spent
        raise
    return receipt
