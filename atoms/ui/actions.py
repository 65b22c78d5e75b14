"""Review actions on an atom (docs/atoms.md "Review UI"), for reviewers and admins: approve, edit, retire
with a reason, reject quarantined text with a reason, and restore an earlier revision's text.

None of them writes by itself. Approve calls `atoms_approve`, reject `atoms_reject`; edit, retire and restore build
a one-change `WriteCommand` and call `atoms_write` as the signed-in person (a human writer:
origin `source`, contract `source-v2`, approved unless the scanner flags the new text), so
validation, conflicts, the barrier and the engine's own audit entry are the API's. Each
action adds one `atoms.ui.*` audit entry naming the person, the revisions and the digests
(a retire's reason included), in the same transaction as the write.

Every form carries the head it was loaded at: acting on a head that moved since is refused,
so nobody approves, edits or retires text they have not seen.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.http import HttpResponse
from django.views.decorators.http import require_POST

from atoms.errors import AtomError
from atoms.models import Atom, AtomStore, NoteKind, Origin, PurgedAtom, ReviewStatus, Revision, RevisionState, Slot
from atoms.principal import Principal
from atoms.services.reject import MAX_REASON, atoms_reject, keep_note, retire_command
from atoms.services.review import atoms_approve
from atoms.services.write import WriteCommand, atoms_write, writing_binding
from atoms.services.write_plan import LinkSpec, SourceSpec
from atoms.ui.common import ATOMS_CHANGED, atom_or_404, barrier_response, error_text, person_of
from atoms.ui.detail import render_detail
from atoms.ui.forms import ActionForm, EditForm, ReasonActionForm, RestoreForm
from atoms.ui.quarantine import render_quarantine
from memoryhub.audit import audit_record
from memoryhub.digests import sha256_hex
from tenants.models import Role
from tenants.ui import tenant_view
from tenants.ui_request import TenantRequest, actor_of

MOVED = "This atom changed since you loaded the page; the new revision is shown. Nothing was done."


class FormError(Exception):
    """A form the person can fix: the page re-renders with the message and their draft."""


@dataclass(frozen=True)
class NewLink:
    role: str
    target: Atom
    required: bool
    at: str  # logical | observed


def _loaded_head(request: TenantRequest, atom: Atom) -> Revision:
    """The revision the form was loaded at; a head that moved since is refused."""
    head_id = ActionForm.read(request.POST)["head"]
    loaded = Revision.objects.filter(tenant=request.tenant, atom=atom, id=head_id).first()
    if loaded is None or loaded.id != atom.head_id:
        raise FormError(MOVED)
    return loaded


def _link_targets(revision: Revision) -> list[tuple[Slot, Revision | None]]:
    """Each link of `revision` with the revision a ref must name to keep it: the target's
    head for a logical link, the pinned revision for an observed one; None when purged."""
    slots = list(Slot.objects.filter(tenant=revision.tenant, revision=revision).order_by("position"))
    atom_ids = {s.target_atom_id for s in slots}
    purged = set(PurgedAtom.objects.filter(tenant=revision.tenant, atom_id__in=atom_ids)
                 .values_list("atom_id", flat=True))
    heads = {a.id: a.head for a in Atom.objects.filter(tenant=revision.tenant, id__in=atom_ids).select_related("head")}
    pinned = {r.id: r for r in Revision.objects.filter(
        tenant=revision.tenant, id__in={s.target_revision_id for s in slots if s.target_revision_id})}
    return [(s, None if s.target_atom_id in purged else
             pinned.get(s.target_revision_id) if s.target_revision_id else heads.get(s.target_atom_id))
            for s in slots]


def revise_command(person: Principal, head: Revision, text: str, *, keep_links: set[int] | None = None,
                   keep_sources: set[int] | None = None, new_link: NewLink | None = None) -> tuple[WriteCommand, int]:
    """A one-change revise of `head` to `text`. Links and sources are kept as they are (role,
    at, required, orderKey, span) unless `keep_*` name the positions to keep; a link whose
    target was purged cannot be written and is dropped. Returns the command and the number
    of links dropped that way."""
    links = [(s, t) for s, t in _link_targets(head) if keep_links is None or s.position in keep_links]
    origins = [o for o in Origin.objects.filter(tenant=head.tenant, revision=head).order_by("position")
               if keep_sources is None or o.position in keep_sources]
    sources = {r.id: r for r in Revision.objects.filter(tenant=head.tenant,
                                                        id__in={o.source_revision_id for o in origins})}
    specs = [LinkSpec(role=s.role, target=t, at="observed" if s.target_revision_id else "logical",
                      required=s.required, order_key=s.order_key)
             for s, t in links if t is not None]
    if new_link is not None and new_link.target.head is not None:
        specs.append(LinkSpec(role=new_link.role, target=new_link.target.head, at=new_link.at,
                              required=new_link.required, order_key=str(len(specs))))
    cited = tuple(SourceSpec(source=sources[o.source_revision_id], start=o.start, end=o.end)
                  for o in origins if o.source_revision_id in sources)
    command = WriteCommand.revise(writing_binding(person, head.policy), head, text, tuple(specs), cited)
    return command, sum(1 for _, t in links if t is None)


def _write(request: TenantRequest, atom: Atom, head: Revision, command: WriteCommand, action: str,
           **audit_after: Any) -> tuple[Revision, str]:
    """The write and its UI audit entry in one transaction; returns the new head and its
    review status. A retire keeps its reason readable in a review note (the audit entry
    holds only its digest)."""
    tenant = request.tenant
    with transaction.atomic():
        outcome = atoms_write(command)
        new_head = Revision.objects.get(tenant=tenant, atom_id=atom.id, is_head=True)
        if action == "retire":
            keep_note(new_head, kind=NoteKind.RETIRE, reason=audit_after["reason"], author=person_of(request).subject)
        audit_record(tenant=tenant, actor=actor_of(request), action=f"atoms.ui.{action}", object_type="atom",
                     object_id=atom.id, before={"revision": head.id, "textDigest": sha256_hex(head.body)},
                     after={"revision": new_head.id, "operation": outcome.operation_id,
                            "textDigest": sha256_hex(new_head.body), **audit_after})
    return new_head, next(iter(outcome.review.values()))


def _review_note(status: str) -> str:
    return " The scanner flags the new text: it stays in quarantine." if status == ReviewStatus.QUARANTINED else ""


def _answer(request: TenantRequest, atom: Atom, *, done: str = "", error: str = "", **extra: Any) -> HttpResponse:
    """Re-render where the form was: the quarantine queue or the atom page. A success fires
    `atomsChanged` (the nav badge listens); an error re-renders with status 200."""
    event = ATOMS_CHANGED if done else ""
    notice = {"notice": done or error, "notice_is_error": bool(error)}
    if ActionForm.read(request.POST)["from"] == "quarantine":
        return render_quarantine(request, event=event, **notice, focus=atom.id if error else "", **extra)
    return render_detail(request, atom, event=event, **notice, **extra)


def _atom_or_closed(request: TenantRequest, atom_id: str) -> Atom | HttpResponse:
    """The tenant's atom, or the barrier's page while a purge is pending."""
    closed = barrier_response(request)
    return closed if closed is not None else atom_or_404(request, atom_id)


@tenant_view(Role.REVIEWER)
@require_POST
def atom_approve(request: TenantRequest, atom_id: str) -> HttpResponse:
    """Mark the head approved, if it is still the head the person saw."""
    atom = _atom_or_closed(request, atom_id)
    if isinstance(atom, HttpResponse):
        return atom
    try:
        with transaction.atomic():
            # Commits and approvals lock the store row; holding it, the head cannot move
            # between the check and the approval.
            AtomStore.objects.select_for_update().filter(tenant=request.tenant).first()
            atom = Atom.objects.select_related("head").get(pk=atom.pk)
            before = _loaded_head(request, atom).review_status
            if before == ReviewStatus.REJECTED:
                raise FormError("This atom was rejected; restore its text to have it reviewed again.")
            atoms_approve(tenant=request.tenant, atom_id=atom.id, actor=actor_of(request))
    except FormError as exc:
        return _answer(request, atom, error=str(exc))
    except AtomError as error:
        return _answer(request, atom, error=error_text(error))
    done = "Approved." if before != ReviewStatus.APPROVED else "It was already approved; nothing changed."
    return _answer(request, atom, done=done)


def _new_link(request: TenantRequest, posted: dict[str, Any]) -> NewLink | None:
    role = posted["new_role"].strip()
    target_id = posted["new_target"].strip()
    if not role and not target_id:
        return None
    if not role or not target_id:
        raise FormError("A new link needs both a role and a target atom id.")
    target = Atom.objects.select_related("head").filter(tenant=request.tenant, id=target_id).first()
    if target is None or target.head is None:
        raise FormError(f"No atom {target_id} in this tenant.")
    at = "observed" if posted["new_at"] == "observed" else "logical"
    return NewLink(role=role, target=target, required=posted["new_required"], at=at)


@tenant_view(Role.REVIEWER)
@require_POST
def atom_edit(request: TenantRequest, atom_id: str) -> HttpResponse:
    """A human revise: the new text, with links and sources kept unless the form drops some
    or adds a link."""
    atom = _atom_or_closed(request, atom_id)
    if isinstance(atom, HttpResponse):
        return atom
    posted = EditForm.read(request.POST)
    text = posted["text"]
    kept: dict[str, Any] = {"draft": text, "edit_open": True, "kept_links": posted["kept_links"],
            "kept_sources": posted["kept_sources"], "new_role": posted["new_role"],
            "new_target": posted["new_target"]}
    try:
        head = _loaded_head(request, atom)
        if not text.strip():
            raise FormError("The text cannot be empty; retire the atom instead.")
        command, dropped = revise_command(person_of(request), head, text, keep_links=kept["kept_links"],
                                          keep_sources=kept["kept_sources"], new_link=_new_link(request, posted))
        _, status = _write(request, atom, head, command, "edit")
    except FormError as exc:
        return _answer(request, atom, error=str(exc), **kept)
    except AtomError as error:
        return _answer(request, atom, error=error_text(error), **kept)
    note = f" {dropped} link{'s' if dropped != 1 else ''} to purged atoms could not be kept." if dropped else ""
    return _answer(request, atom, done=f"Saved as a new revision.{note}{_review_note(status)}")


@tenant_view(Role.REVIEWER)
@require_POST
def atom_retire(request: TenantRequest, atom_id: str) -> HttpResponse:
    """A human retire; the reason is required and audited (as a digest, like all audit data)."""
    atom = _atom_or_closed(request, atom_id)
    if isinstance(atom, HttpResponse):
        return atom
    reason = ReasonActionForm.read(request.POST)["reason"]
    try:
        head = _loaded_head(request, atom)
        _check_reason(reason, "Say why the atom is retired.")
        if head.state == RevisionState.RETIRED:
            raise FormError("The atom is already retired.")
        if head.review_status == ReviewStatus.QUARANTINED:
            # A retired head keeps its review status: retiring would leave it in the queue.
            raise FormError("Quarantined text is rejected, not retired: use Reject.")
        _write(request, atom, head, retire_command(person_of(request), head), "retire", reason=reason)
    except FormError as exc:
        return _answer(request, atom, error=str(exc), reason=reason, retire_open=True)
    except AtomError as error:
        return _answer(request, atom, error=error_text(error), reason=reason, retire_open=True)
    return _answer(request, atom, done=f"Retired. Reason: {reason}")


@tenant_view(Role.REVIEWER)
@require_POST
def atom_restore(request: TenantRequest, atom_id: str) -> HttpResponse:
    """Bring back an earlier revision's text (or a retired atom's) as a new revision; the
    head's links and sources are kept."""
    atom = _atom_or_closed(request, atom_id)
    if isinstance(atom, HttpResponse):
        return atom
    try:
        head = _loaded_head(request, atom)
        revision_id = RestoreForm.read(request.POST)["revision"]
        old = Revision.objects.filter(tenant=request.tenant, atom=atom, id=revision_id).first()
        if old is None:
            raise FormError("That revision is not part of this atom's history.")
        if head.state == RevisionState.ACTIVE and old.body == head.body:
            raise FormError("That text is already the current text; nothing to restore.")
        command, dropped = revise_command(person_of(request), head, old.body)
        _, status = _write(request, atom, head, command, "restore", restoredFrom=old.id)
    except FormError as exc:
        return _answer(request, atom, error=str(exc))
    except AtomError as error:
        return _answer(request, atom, error=error_text(error))
    note = f" {dropped} link{'s' if dropped != 1 else ''} to purged atoms could not be kept." if dropped else ""
    return _answer(request, atom, done=f"Restored the text as a new revision.{note}{_review_note(status)}")


def _check_reason(reason: str, missing: str) -> None:
    if not reason:
        raise FormError(missing)
    if len(reason) > MAX_REASON:
        raise FormError(f"Keep the reason under {MAX_REASON} characters.")


@tenant_view(Role.REVIEWER)
@require_POST
def atom_reject(request: TenantRequest, atom_id: str) -> HttpResponse:
    """Reject quarantined text with a reason: the atom is retired and its head marked
    rejected, so it leaves the queue and stays hidden from API keys (`atoms_reject`)."""
    atom = _atom_or_closed(request, atom_id)
    if isinstance(atom, HttpResponse):
        return atom
    reason = ReasonActionForm.read(request.POST)["reason"]
    try:
        with transaction.atomic():
            head = _loaded_head(request, atom)
            _check_reason(reason, "Say why the text is rejected.")
            if head.review_status != ReviewStatus.QUARANTINED:
                raise FormError("Only quarantined text can be rejected; retire the atom instead.")
            rejected = atoms_reject(person=person_of(request), atom_id=atom.id, head_id=head.id, reason=reason,
                                    actor=actor_of(request))
            audit_record(tenant=request.tenant, actor=actor_of(request), action="atoms.ui.reject",
                         object_type="atom", object_id=atom.id,
                         before={"revision": head.id, "textDigest": sha256_hex(head.body)},
                         after={"revision": rejected.id, "textDigest": sha256_hex(rejected.body), "reason": reason})
    except FormError as exc:
        return _answer(request, atom, error=str(exc), reason=reason, reject_open=True)
    except AtomError as error:
        return _answer(request, atom, error=error_text(error), reason=reason, reject_open=True)
    return _answer(request, atom, done=f"Rejected and retired. Reason: {reason}")
