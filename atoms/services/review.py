"""Review of atoms (docs/atoms.md "Review UI", ours): approving a head takes a commit `seq`.

Edits and retires by people go through the normal write path as `Principal.for_user`
(origin `source`, contract `source-v2`, approved); only approval needs its own service.
"""

from __future__ import annotations

from django.db import transaction

from atoms.errors import AtomError
from atoms.models import Atom, AtomStore, PurgedAtom, ReviewStatus, Revision
from atoms.services.barrier import check_barrier
from atoms.services.feed import feed_moved
from atoms.services.indexing import queue_indexing
from memoryhub.actors import Actor
from memoryhub.audit import audit_record
from tenants.models import Tenant


def locked_head(tenant: Tenant, atom_id: str) -> tuple[AtomStore, Revision]:
    """The store row, locked, and the atom's head. Call inside a transaction: commits and
    reviews lock the store row, so the head cannot move until it ends. INVALID_REF for an
    atom the tenant does not have, one without a head, or a purged one."""
    store = AtomStore.objects.select_for_update().get(pk=AtomStore.get_or_create_for(tenant).pk)
    check_barrier(store)
    atom = Atom.objects.select_related("head").filter(tenant=tenant, id=atom_id).first()
    if atom is None or atom.head is None or PurgedAtom.objects.filter(tenant=tenant, atom_id=atom_id).exists():
        raise AtomError("INVALID_REF", "No such atom.")
    return store, atom.head


def atoms_approve(*, tenant: Tenant, atom_id: str, actor: Actor) -> int:
    """Mark the atom's head approved (from unreviewed or quarantined); returns the seq
    the approval took. Approving an approved head changes nothing and returns the current seq."""
    with transaction.atomic():
        store, head = locked_head(tenant, atom_id)
        if head.review_status == ReviewStatus.APPROVED:
            return store.seq
        before, old_seq = head.review_status, head.visible_seq
        store.seq += 1
        store.save(update_fields=["seq"])
        # Review status is side data: the revision stays immutable otherwise (docs/atoms.md "Layout" invariant 1);
        # visible_seq records that the head became visible at this approval's seq (docs/atoms.md "Match").
        head.review_status = ReviewStatus.APPROVED
        head.visible_seq = store.seq
        head.save(update_fields=["review_status", "visible_seq"])
        feed_moved(tenant, head, old_seq)
        audit_record(tenant=tenant, actor=actor, action="atoms.approve", object_type="atom", object_id=atom_id,
                     before={"reviewStatus": before, "revision": head.id},
                     after={"reviewStatus": ReviewStatus.APPROVED, "seq": store.seq})
        # The approval is a feed event at its seq: an atom leaving quarantine gets indexed.
        queue_indexing(store, [head.policy])
        return store.seq
