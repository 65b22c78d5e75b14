"""uses and uses/reset (docs/atoms.md "Decisions"): the host reports that a model response built from
certain refs succeeded, and the subject's use state grows by one use per revision.

The call is atomic: every `update` runs before anything is written, so a failing model
leaves no state, no marker and no acknowledgement. Markers `(subject, policy, revision,
eventId)` make a retried event count as `repeated`; they survive uses/reset, so a reset
never lets an old event count twice.

atoms/api/uses.py parses a body into a `UsesCommand` or `UsesResetCommand` and renders the
results (docs/architecture.md "Typed services").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import JSONField, Value

from atoms.clock import now_ms
from atoms.core.availability import AvailabilityModel, Json, call_update
from atoms.core.errors import ModelError
from atoms.errors import denied, from_core
from atoms.models import AtomStore, InputToken, PurgedAtom, Revision, UseMarker, UseState
from atoms.principal import Binding, Principal
from atoms.services.availability import check_model_id, evaluated_at, model_for
from atoms.services.barrier import check_barrier, open_store
from atoms.services.receipts import pinned
from memoryhub.actors import Actor
from memoryhub.audit import audit_record


@dataclass(frozen=True)
class UsesCommand:
    """One uses call, validated and authorized: the refs resolved to revisions the bound key
    may read and, with a token, among the units the token presented."""

    caller: Principal  # the host or admin key that reports the uses: the audit row's actor
    binding: Binding  # whose use state grows (the named key) and in which read policies
    revisions: tuple[Revision, ...]  # as mentioned; a repeated revision counts once
    event_id: str
    token: InputToken | None = None  # acknowledged with the event when given


@dataclass(frozen=True)
class UsesResult:
    accepted_at: int  # epoch ms, the time the availability model was updated at
    recorded: int  # revisions that got a use
    repeated: int  # revisions this eventId had already counted for


@dataclass(frozen=True)
class UsesResetCommand:
    caller: Principal  # the audit row's actor
    binding: Binding  # whose use state is deleted, in which read policies


@dataclass(frozen=True)
class UsesResetResult:
    deleted: int  # use-state rows deleted


def _audit_actor(principal: Principal) -> Actor:
    return Actor.for_key(principal.key) if principal.key is not None else Actor(kind="user", label=principal.subject)


def _updates(model: AvailabilityModel, revisions: list[Revision], states: dict[str, UseState],
             accepted_at: int) -> dict[str, Json]:
    """Every new state, computed before anything is stored (docs/atoms.md "Decisions" step 7)."""
    out: dict[str, Json] = {}
    for revision in revisions:
        row = states.get(revision.id)
        try:
            out[revision.id], _ = call_update(model, row.state if row is not None else None, accepted_at)
        except ModelError as exc:
            raise from_core(exc, path="refs") from exc
    return out


def _stored(state: Json) -> Any:
    """A JSONField value: Python None would be SQL NULL, which the column refuses, so a
    model whose state is JSON null gets an explicit JSON null (read back as None)."""
    return Value(None, JSONField()) if state is None else state


def _acknowledge(token: InputToken, event_id: str, accepted_at: int, revisions: list[Revision]) -> None:
    """docs/atoms.md "Decisions" step 8, on the locked token row so concurrent acknowledgements all land."""
    locked = InputToken.objects.select_for_update().filter(pk=token.pk).first()
    if locked is None:  # erased by a purge that finished after the token was checked
        raise denied("The token read an atom that was purged.", path="input")
    manifest = dict(locked.manifest)
    manifest["acknowledgement"] = [*manifest.get("acknowledgement", []), {
        "eventId": event_id, "acceptedAt": accepted_at, "revisions": [pinned(r) for r in revisions]}]
    locked.manifest = manifest
    locked.save(update_fields=["manifest"])


def atoms_uses(command: UsesCommand) -> UsesResult:
    """docs/atoms.md "Decisions". The API view admits host and admin keys that are not read-only."""
    open_store(command.caller.tenant)
    # A revision named twice counts once (docs/atoms.md "Decisions").
    revisions = list({revision.id: revision for revision in command.revisions}.values())
    principal = command.binding.principal
    tenant, subject, policies = principal.tenant, principal.subject, list(command.binding.read_policies)
    event_id = command.event_id
    with transaction.atomic():
        # The store row serializes uses with commits and purges: the barrier is checked
        # again under the lock, and two calls cannot both create the same state row.
        store = AtomStore.objects.select_for_update().get(tenant=tenant)
        check_barrier(store)
        if PurgedAtom.objects.filter(tenant=tenant, atom_id__in=[r.atom_id for r in revisions]).exists():
            raise denied("An atom was purged while the call was checked.")  # a purge finished meanwhile
        model = model_for(tenant, store=store)
        check_model_id(tenant, subject, policies, model)
        accepted_at = evaluated_at(tenant, subject, policies, now_ms())
        states_qs = UseState.objects.filter(tenant=tenant, subject=subject, policy__in=policies)
        seen = set(UseMarker.objects.filter(
            tenant=tenant, subject=subject, event_id=event_id,
            revision_id__in=[r.id for r in revisions]).values_list("policy", "revision_id"))
        fresh = [r for r in revisions if (r.policy, r.id) not in seen]
        states = {row.revision_id: row for row in states_qs.filter(revision_id__in=[r.id for r in fresh])}
        new_states = _updates(model, fresh, states, accepted_at)
        for revision in fresh:
            UseState.objects.update_or_create(
                tenant=tenant, subject=subject, policy=revision.policy, revision_id=revision.id,
                defaults={"model_id": model.id, "state": _stored(new_states[revision.id]),
                          "updated_at": accepted_at})
        UseMarker.objects.bulk_create([
            UseMarker(tenant=tenant, subject=subject, policy=r.policy, revision_id=r.id,
                      event_id=event_id, accepted_at=accepted_at) for r in fresh])
        if command.token is not None and fresh:
            _acknowledge(command.token, event_id, accepted_at, fresh)
        result = UsesResult(accepted_at=accepted_at, recorded=len(fresh), repeated=len(revisions) - len(fresh))
        # The audit row keeps the names it has always been digested with.
        audit_record(tenant=tenant, actor=_audit_actor(command.caller), action="atoms.uses", object_type="subject",
                     object_id=subject[:200],
                     after={"eventId": event_id, "key": principal.principal_id, "revisions": [r.id for r in fresh],
                            "acceptedAt": result.accepted_at, "recorded": result.recorded,
                            "repeated": result.repeated})
    return result


def atoms_uses_reset(command: UsesResetCommand) -> UsesResetResult:
    """docs/atoms.md "Decisions" uses/reset: delete the bound subject's states in the binding's read policies.
    Markers stay, so an old eventId still counts as repeated."""
    open_store(command.caller.tenant)
    principal = command.binding.principal
    policies = sorted(command.binding.read_policies)
    with transaction.atomic():
        check_barrier(AtomStore.objects.select_for_update().get(tenant=principal.tenant))
        deleted, _ = UseState.objects.filter(tenant=principal.tenant, subject=principal.subject,
                                             policy__in=policies).delete()
        audit_record(tenant=principal.tenant, actor=_audit_actor(command.caller), action="atoms.uses.reset",
                     object_type="subject", object_id=principal.subject[:200],
                     after={"key": principal.principal_id, "readPolicies": policies, "deleted": deleted})
    return UsesResetResult(deleted=deleted)
