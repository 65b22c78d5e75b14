"""Rejecting quarantined text (docs/atoms.md "Review UI"): the reviewer's "no" to what the
threat scanner flagged, the counterpart of `atoms_approve`.

A reject retires the atom through the ordinary write path (as the person, so validation,
the barrier and the engine's `atoms.write` entry are the API's) and then marks the retired
head `rejected`. Review status is side data of a revision (docs/atoms.md "Layout"), like an
approval's. `rejected` hides the revision from every API caller exactly as `quarantined`
does (`HIDDEN_REVIEW`), so the text a reviewer refused never becomes readable by a key; it
only leaves the quarantine queue. A head that is already retired but still quarantined (an
API key retired it) is marked in place, without a new revision.

The reason is kept readable in a `ReviewNote` tied to the rejected revision, which a purge
erases with it; the audit entry holds only digests, like every audit entry.
"""

from __future__ import annotations

from django.db import transaction

from atoms.errors import AtomError
from atoms.models import NoteKind, ReviewNote, ReviewStatus, Revision, RevisionState
from atoms.principal import Principal
from atoms.services.review import locked_head
from atoms.services.write import WriteCommand, atoms_write, writing_binding
from memoryhub.actors import Actor
from memoryhub.audit import audit_record

MAX_REASON = 500


def retire_command(person: Principal, head: Revision) -> WriteCommand:
    """A one-change retire of `head`, written as the person to the atom's own policy."""
    return WriteCommand.retire(writing_binding(person, head.policy), head)


def keep_note(revision: Revision, *, kind: NoteKind, reason: str, author: str) -> ReviewNote:
    """The readable reason of a retire or reject, erased with `revision` by a purge."""
    return ReviewNote.objects.create(revision=revision, tenant=revision.tenant, kind=kind, reason=reason[:MAX_REASON],
                                     author=author)


def atoms_reject(*, person: Principal, atom_id: str, head_id: str, reason: str, actor: Actor) -> Revision:
    """Reject the quarantined head `head_id` of `atom_id` with `reason`; returns the
    rejected (retired) head. Refuses a head that moved since `head_id` was shown
    (REVISION_CONFLICT) and a head that is not quarantined (INVALID_INPUT)."""
    tenant = person.tenant
    with transaction.atomic():
        # Holding the store row, the head cannot move between the check and the reject.
        _, shown = locked_head(tenant, atom_id)
        if shown.id != head_id:
            raise AtomError("REVISION_CONFLICT", "The atom changed since it was shown.")
        if shown.review_status != ReviewStatus.QUARANTINED:
            raise AtomError("INVALID_INPUT", "Only quarantined text can be rejected.")
        operation = ""
        head = shown
        if shown.state == RevisionState.ACTIVE:
            operation = atoms_write(retire_command(person, shown)).operation_id
            head = Revision.objects.get(tenant=tenant, atom_id=atom_id, is_head=True)
        head.review_status = ReviewStatus.REJECTED
        head.save(update_fields=["review_status"])
        keep_note(head, kind=NoteKind.REJECT, reason=reason, author=person.subject)
        audit_record(tenant=tenant, actor=actor, action="atoms.reject", object_type="atom", object_id=atom_id,
                     before={"reviewStatus": ReviewStatus.QUARANTINED, "revision": shown.id, "state": shown.state},
                     after={"reviewStatus": ReviewStatus.REJECTED, "revision": head.id, "operation": operation})
        return head
