"""uses and uses/reset (docs/atoms.md "Decisions"): the host reports that a model response built from
certain refs succeeded, and the subject's use state grows by one use per revision.

The call is atomic: every `update` runs before anything is written, so a failing model
leaves no state, no marker and no acknowledgement. Markers `(subject, policy, revision,
eventId)` make a retried event count as `repeated`; they survive uses/reset, so a reset
never lets an old event count twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import JSONField, Value

from atoms.clock import now_ms
from atoms.core.availability import AvailabilityModel, Json, call_update
from atoms.core.errors import AtomsCoreError, ModelError
from atoms.core.ids import check_id
from atoms.errors import AtomError, denied, from_core, invalid
from atoms.models import AtomStore, InputToken, PurgedAtom, Revision, UseMarker, UseState
from atoms.principal import Binding, Principal, resolve_binding
from atoms.services.availability import check_model_id, evaluated_at, model_for
from atoms.services.barrier import check_barrier
from atoms.services.receipts import pinned
from atoms.services.refs import resolve_ref
from atoms.services.tokens import token_for_use
from memoryhub.actors import Actor
from memoryhub.audit import audit_record

USES_KEYS = {"binding", "refs", "eventId", "input"}
RESET_KEYS = {"binding"}
MAX_REFS = 256


@dataclass(frozen=True)
class UsesRequest:
    binding: Binding
    revisions: list[Revision]  # distinct, in first-mentioned order
    event_id: str
    token: InputToken | None


def _audit_actor(principal: Principal) -> Actor:
    return Actor.for_key(principal.key) if principal.key is not None else Actor(kind="user", label=principal.subject)


def _open_store(caller: Principal) -> None:
    check_barrier(AtomStore.for_tenant(caller.tenant))


def _presented_revisions(token: InputToken) -> set[str]:
    """The revisions of the token's presented units after narrowing (docs/atoms.md "Decisions")."""
    generation = token.manifest.get("generation") or {}
    return {unit["revision"] for presentation in generation.get("presentations", [])
            for unit in presentation.get("units", [])}


def _parse(caller: Principal, body: Any) -> UsesRequest:
    """docs/atoms.md "Decisions" steps 1-3, in that order."""
    if not isinstance(body, dict):
        raise invalid("The body must be a JSON object.")
    unknown = set(body) - USES_KEYS
    if unknown:
        raise invalid(f"Unknown key {sorted(unknown)[0]!r}.", path=sorted(unknown)[0])
    for name in ("binding", "refs", "eventId"):
        if name not in body:
            raise invalid(f"uses needs {name}.", path=name)
    refs = body["refs"]
    if not isinstance(refs, list) or not all(isinstance(ref, str) for ref in refs):
        raise invalid("refs must be a list of refs.", path="refs")
    if not refs:
        raise invalid("refs must not be empty.", path="refs")
    if len(refs) > MAX_REFS:
        raise AtomError("LIMIT_EXCEEDED", f"At most {MAX_REFS} refs per call.",
                        {"path": "refs", "limit": MAX_REFS, "actual": len(refs)})
    try:
        event_id = check_id(body["eventId"], field="eventId")
    except AtomsCoreError as exc:
        raise from_core(exc) from exc
    binding = resolve_binding(caller, body["binding"], may_name_others=True)
    resolved = [resolve_ref(binding.principal, ref, binding.read_policies, path=f"refs[{index}]")
                for index, ref in enumerate(refs)]
    token = None
    if "input" in body:
        token = token_for_use(binding, body["input"])
        presented = _presented_revisions(token)
        for index, revision in enumerate(resolved):
            if revision.id not in presented:
                raise invalid("The ref is not among the token's presented units.", path=f"refs[{index}]")
    # Duplicate refs count once (step 5).
    distinct = list({revision.id: revision for revision in resolved}.values())
    return UsesRequest(binding=binding, revisions=distinct, event_id=event_id, token=token)


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


def atoms_uses(*, caller: Principal, body: Any) -> dict[str, Any]:
    """docs/atoms.md "Decisions". The API view admits host and admin keys that are not read-only."""
    _open_store(caller)
    request = _parse(caller, body)
    principal = request.binding.principal
    tenant, subject, policies = principal.tenant, principal.subject, list(request.binding.read_policies)
    with transaction.atomic():
        # The store row serializes uses with commits and purges: the barrier is checked
        # again under the lock, and two calls cannot both create the same state row.
        store = AtomStore.objects.select_for_update().get(tenant=tenant)
        check_barrier(store)
        if PurgedAtom.objects.filter(tenant=tenant, atom_id__in=[r.atom_id for r in request.revisions]).exists():
            raise denied("An atom was purged while the call was checked.")  # a purge finished meanwhile
        model = model_for(tenant, store=store)
        check_model_id(tenant, subject, policies, model)
        accepted_at = evaluated_at(tenant, subject, policies, now_ms())
        states_qs = UseState.objects.filter(tenant=tenant, subject=subject, policy__in=policies)
        seen = set(UseMarker.objects.filter(
            tenant=tenant, subject=subject, event_id=request.event_id,
            revision_id__in=[r.id for r in request.revisions]).values_list("policy", "revision_id"))
        fresh = [r for r in request.revisions if (r.policy, r.id) not in seen]
        states = {row.revision_id: row for row in states_qs.filter(revision_id__in=[r.id for r in fresh])}
        new_states = _updates(model, fresh, states, accepted_at)
        for revision in fresh:
            UseState.objects.update_or_create(
                tenant=tenant, subject=subject, policy=revision.policy, revision_id=revision.id,
                defaults={"model_id": model.id, "state": _stored(new_states[revision.id]),
                          "updated_at": accepted_at})
        UseMarker.objects.bulk_create([
            UseMarker(tenant=tenant, subject=subject, policy=r.policy, revision_id=r.id,
                      event_id=request.event_id, accepted_at=accepted_at) for r in fresh])
        if request.token is not None and fresh:
            _acknowledge(request.token, request.event_id, accepted_at, fresh)
        result = {"acceptedAt": accepted_at, "recorded": len(fresh), "repeated": len(request.revisions) - len(fresh)}
        audit_record(tenant=tenant, actor=_audit_actor(caller), action="atoms.uses", object_type="subject",
                     object_id=subject[:200],
                     after={"eventId": request.event_id, "key": principal.principal_id,
                            "revisions": [r.id for r in fresh], **result})
    return result


def atoms_uses_reset(*, caller: Principal, body: Any) -> dict[str, int]:
    """docs/atoms.md "Decisions" uses/reset: delete the bound subject's states in the binding's read policies.
    Markers stay, so an old eventId still counts as repeated."""
    _open_store(caller)
    if not isinstance(body, dict):
        raise invalid("The body must be a JSON object.")
    unknown = set(body) - RESET_KEYS
    if unknown:
        raise invalid(f"Unknown key {sorted(unknown)[0]!r}.", path=sorted(unknown)[0])
    if "binding" not in body:
        raise invalid("uses/reset needs a binding.", path="binding")
    binding = resolve_binding(caller, body["binding"], may_name_others=True)
    principal = binding.principal
    policies = sorted(binding.read_policies)
    with transaction.atomic():
        check_barrier(AtomStore.objects.select_for_update().get(tenant=principal.tenant))
        deleted, _ = UseState.objects.filter(tenant=principal.tenant, subject=principal.subject,
                                             policy__in=policies).delete()
        audit_record(tenant=principal.tenant, actor=_audit_actor(caller), action="atoms.uses.reset",
                     object_type="subject", object_id=principal.subject[:200],
                     after={"key": principal.principal_id, "readPolicies": policies, "deleted": deleted})
    return {"deleted": deleted}

