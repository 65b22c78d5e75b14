"""write (docs/atoms.md "Decisions"): replay or commit one validated batch atomically.

The API parses a body into a `WriteCommand` (atoms/api/write.py, docs/architecture.md "Typed
services"); the atom page builds one with `WriteCommand.revise` and `WriteCommand.retire`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from django.db import IntegrityError, transaction

from atoms.clock import now_ms
from atoms.core.canonical import digest
from atoms.core.ids import new_operation_id
from atoms.embedding import has_provider
from atoms.errors import AtomError, denied
from atoms.models import Atom, AtomStore, EraseDependency, Origin, PurgedAtom, ReplayRecord, Revision, Slot
from atoms.models.storage import DependencyKind, OriginKind, ReviewStatus, RevisionState, Schema, SlotMode
from atoms.principal import Binding, Principal
from atoms.services.barrier import check_barrier, open_store
from atoms.services.budget import Budget, check_deadline
from atoms.services.feed import feed_added
from atoms.services.indexing import queue_indexing
from atoms.services.lexicon import lexicon_add, lexicon_remove
from atoms.services.tokens import token_for_use
from atoms.services.views import render_views
from atoms.services.write_plan import ChangePlan, LinkSpec, SourceSpec, WritePlan, plan_retire, plan_revise
from memoryhub import threats
from memoryhub.actors import Actor
from memoryhub.audit import audit_record

Indexing = Literal["pending", "ready"]


@dataclass(frozen=True)
class WriteCommand:
    """One batch, validated and authorized (docs/atoms.md "Decisions" steps 1-10): ids allocated,
    refs resolved to the revisions they name, links and sources checked."""

    binding: Binding  # with a write policy: parsing refuses a binding without one
    changes: tuple[ChangePlan, ...]
    # Replay records are keyed by this key and compare this fingerprint, the batch with its
    # refs replaced by the revisions they name (write_plan._fingerprint): a re-sent body with
    # re-issued refs replays, a different batch under the same key is a conflict.
    fingerprint: str
    idempotency_key: str | None = None
    budget: Budget = field(default_factory=Budget)

    @classmethod
    def of(cls, plan: WritePlan) -> WriteCommand:
        return cls(binding=plan.binding, changes=tuple(plan.changes), fingerprint=plan.fingerprint,
                   idempotency_key=plan.idempotency_key, budget=plan.budget)

    @classmethod
    def revise(cls, binding: Binding, head: Revision, text: str, links: tuple[LinkSpec, ...] = (),
               sources: tuple[SourceSpec, ...] = ()) -> WriteCommand:
        """Revise the atom whose head is `head` to `text` with these links and sources."""
        return cls.of(plan_revise(binding, head, text, links, sources))

    @classmethod
    def retire(cls, binding: Binding, head: Revision) -> WriteCommand:
        """Retire the atom whose head is `head`."""
        return cls.of(plan_retire(binding, head))


@dataclass(frozen=True)
class WriteResult:
    """What one write answers; atoms/api/write.py renders it as the outcome JSON."""

    operation_id: str
    repeated: bool  # true when the answer is an idempotent replay of an earlier commit
    # "pending" whenever the tenant has an embedding provider: it names the index, not this commit.
    indexing: Indexing
    # The written revisions' AtomViews (docs/atoms.md "Recall"), by change id in batch order.
    changes: dict[str, dict[str, Any]]
    review: dict[str, str]  # each written revision's review status, by change id


def writing_binding(principal: Principal, policy: str) -> Binding:
    """The binding to write `policy` as `principal` (the atom page writes the atom's own policy),
    as the API resolves a body's binding naming only that write policy."""
    if policy not in principal.write_policies:
        raise denied("The write policy is not granted to this key.")
    actor = {"type": principal.actor_type}
    if principal.actor_type == "agent":
        actor["generatedOrigin"] = OriginKind.DERIVED
    return Binding(principal=principal, write_policy=policy, read_policies=tuple(principal.read_policies), actor=actor)


def replay_scope(binding: Binding, idempotency_key: str | None) -> str:
    """docs/atoms.md "Decisions": keyed by actor, idempotency key, subject and write policy. Not by API key:
    replay records belong to the subject, so a rotated key of the same subject replays."""
    return digest({"actor": binding.actor, "key": idempotency_key, "subject": binding.principal.subject,
                   "writePolicy": binding.write_policy})


def _audit_actor(principal: Principal) -> Actor:
    if principal.key is not None:
        return Actor.for_key(principal.key)
    return Actor(kind="user", label=principal.subject)


def _review_status(plan: ChangePlan, binding: Binding) -> str:
    if plan.text is not None and threats.first_finding(plan.text) is not None:
        return ReviewStatus.QUARANTINED
    return ReviewStatus.UNREVIEWED if binding.principal.actor_type == "agent" else ReviewStatus.APPROVED


def _origin_kind(binding: Binding) -> str:
    return binding.actor.get("generatedOrigin", OriginKind.DERIVED) if binding.principal.actor_type == "agent" else OriginKind.SOURCE


def _outcome(binding: Binding, operation_id: str, order: list[str], revisions: dict[str, Revision],
             repeated: bool, store: AtomStore) -> WriteResult:
    ordered = [revisions[change_id] for change_id in order]
    views = render_views(binding.principal, ordered, binding.read_policies)
    # "pending" whenever the tenant has a provider: it names the index, not this commit (docs/atoms.md "Decisions").
    indexing: Indexing = "pending" if has_provider(store) else "ready"
    return WriteResult(
        operation_id=operation_id, repeated=repeated, indexing=indexing,
        changes={change_id: view for change_id, view in zip(order, views, strict=True)},
        review={change_id: revisions[change_id].review_status for change_id in order},
    )


def _replay(record: ReplayRecord, binding: Binding) -> WriteResult:
    """Same key, same plan: the stored outcome, with this caller's refs."""
    revision_ids = [record.changes[c]["revisionId"] for c in record.order]
    atom_ids = [record.changes[c]["atomId"] for c in record.order]
    if PurgedAtom.objects.filter(tenant=binding.principal.tenant, atom_id__in=atom_ids).exists():
        raise denied("An output of this operation was purged.")
    found = {r.id: r for r in Revision.objects.filter(id__in=revision_ids)}
    if len(found) != len(set(revision_ids)):
        raise denied("An output of this operation was purged.")
    if any(r.policy not in binding.read_policies for r in found.values()):
        raise denied("An output of this operation is outside the read policies.")
    revisions = {c: found[record.changes[c]["revisionId"]] for c in record.order}
    return _outcome(binding, record.operation_id, record.order, revisions, repeated=True,
                    store=AtomStore.get_or_create_for(binding.principal.tenant))


def _check_commit(command: WriteCommand, heads: dict[str, str | None], policies: dict[str, str]) -> None:
    """docs/atoms.md "Decisions" checks 1-3, and 7 for tokenless changes (token checks 4-8 run in the token
    module, where check 6 precedes check 7)."""
    for change in command.changes:
        if change.target is not None and heads.get(change.atom_id) != change.target.id:
            raise AtomError("REVISION_CONFLICT", "The atom's head moved since the ref was issued.",
                            {"changeId": change.change_id})
        if change.target is not None and policies.get(change.atom_id) != command.binding.write_policy:
            raise denied("The atom belongs to another policy.", changeId=change.change_id)
        if change.input is not None:
            continue
        for origin in change.origins:
            if origin.source.schema != Schema.SOURCE:
                raise AtomError("INVALID_SOURCE_SPAN", "Only source atoms can be cited.", {"changeId": change.change_id})


def atoms_write(command: WriteCommand) -> WriteResult:
    """Replay or commit the batch in one transaction, with the checks of docs/atoms.md "Decisions"
    that can change after parsing: the barrier, the deadline, the idempotency record, the input
    tokens, the budget, then (under the store lock) the heads and policies."""
    binding = command.binding
    tenant = binding.principal.tenant
    open_store(tenant)
    check_deadline(command.budget, now_ms())
    scope = replay_scope(binding, command.idempotency_key)
    if command.idempotency_key is not None:
        record = ReplayRecord.objects.filter(tenant=tenant, scope_digest=scope,
                                             idempotency_key=command.idempotency_key).first()
        if record is not None:
            if record.fingerprint != command.fingerprint:
                raise AtomError("IDEMPOTENCY_CONFLICT", "This idempotency key was used for another write.")
            return _replay(record, binding)
    tokens = {c.input: token_for_use(binding, c.input, path=f"changes[{i}].input")
              for i, c in enumerate(command.changes) if c.input is not None}
    command.budget.charge_write(len(command.changes), sum(len((c.text or "").encode()) for c in command.changes))
    try:
        return _commit(command, scope, tokens)
    except IntegrityError:
        # A concurrent request with the same idempotency key won; answer as its replay.
        record = ReplayRecord.objects.filter(tenant=tenant, scope_digest=scope,
                                             idempotency_key=command.idempotency_key).first()
        if record is None:
            raise
        if record.fingerprint != command.fingerprint:
            raise AtomError("IDEMPOTENCY_CONFLICT", "This idempotency key was used for another write.") from None
        return _replay(record, binding)


def _commit(command: WriteCommand, scope: str, tokens: dict[str, Any]) -> WriteResult:
    binding = command.binding
    tenant = binding.principal.tenant
    with transaction.atomic():
        store = AtomStore.objects.select_for_update().get(tenant=tenant)
        check_barrier(store)
        targets = [c.atom_id for c in command.changes if c.target is not None]
        atoms = {a.id: a for a in Atom.objects.select_for_update().filter(id__in=targets)}
        _check_commit(command, {a: atoms[a].head_id for a in atoms}, {a: atoms[a].policy for a in atoms})
        if tokens:
            from atoms.services.token_commit import check_tokens_for_commit

            check_tokens_for_commit(binding, command.changes, tokens)
        seq = store.seq + 1
        operation_id = new_operation_id()
        recorded_at = now_ms()
        revisions: dict[str, Revision] = {}
        for change in command.changes:
            revisions[change.change_id] = _store_change(change, binding, atoms, seq, operation_id, recorded_at)
        # The lexical index changes with the heads, in this transaction (docs/atoms.md "Lexical index").
        lexicon_remove(c.target for c in command.changes if c.target is not None and c.target.state == RevisionState.ACTIVE)
        lexicon_add(revisions.values())
        # So are the index counters (docs/atoms.md "Index counters").
        feed_added(tenant, revisions.values())
        store.seq = seq
        store.save(update_fields=["seq"])
        if tokens:
            from atoms.services.token_commit import record_token_outputs

            record_token_outputs(binding, command.changes, tokens, revisions)
        order = [c.change_id for c in command.changes]
        if command.idempotency_key is not None:
            ReplayRecord.objects.create(
                tenant=tenant, scope_digest=scope, idempotency_key=command.idempotency_key,
                fingerprint=command.fingerprint, operation_id=operation_id, order=order,
                changes={c: {"kind": "pinned", "atomId": r.atom_id, "revisionId": r.id} for c, r in revisions.items()},
                created_at=recorded_at,
            )
        audit_record(tenant=tenant, actor=_audit_actor(binding.principal), action="atoms.write",
                     object_type="operation", object_id=operation_id,
                     after={c: r.id for c, r in revisions.items()})
        queue_indexing(store, {r.policy for r in revisions.values()})
        return _outcome(binding, operation_id, order, revisions, repeated=False, store=store)


def _store_change(change: ChangePlan, binding: Binding, atoms: dict[str, Atom], seq: int, operation_id: str,
                  recorded_at: int) -> Revision:
    tenant = binding.principal.tenant
    previous = change.target
    if change.op == "create":
        # Parsing refused a binding without a write policy.
        assert binding.write_policy is not None
        atom = Atom.objects.create(id=change.atom_id, tenant=tenant, policy=binding.write_policy)
    else:
        atom = atoms[change.atom_id]
        Revision.objects.filter(id=atom.head_id).update(is_head=False)
    origin_kind = _origin_kind(binding)
    fields: dict[str, Any] = {
        "id": change.revision_id, "tenant": tenant, "atom": atom, "policy": atom.policy, "seq": seq,
        "previous": previous, "recorded_at": recorded_at, "operation_id": operation_id, "origin": origin_kind,
        "producer": binding.principal.subject, "input_token": change.input or "",
        "dependency_contract": "observed-v2" if change.input else "source-v2", "is_head": True,
        "visible_seq": seq,
    }
    if change.op == "retire":
        assert previous is not None
        revision = Revision.objects.create(
            **fields, schema=previous.schema, state=RevisionState.RETIRED, body=previous.body, body_bytes=previous.body_bytes,
            valid_time=previous.valid_time, review_status=previous.review_status)
        Slot.objects.bulk_create([Slot(revision=revision, tenant=tenant, position=s.position, role=s.role, mode=s.mode,
                                       target_atom_id=s.target_atom_id, target_revision_id=s.target_revision_id,
                                       required=s.required, order_key=s.order_key)
                                  for s in previous.slots.all()])
        Origin.objects.bulk_create([Origin(revision=revision, tenant=tenant, position=o.position,
                                           source_atom_id=o.source_atom_id, source_revision_id=o.source_revision_id,
                                           start=o.start, end=o.end, quote_digest=o.quote_digest)
                                    for o in previous.origins.all()])
    else:
        assert change.text is not None
        revision = Revision.objects.create(
            **fields, schema=Schema.SOURCE if origin_kind == OriginKind.SOURCE else Schema.ATOM, state=RevisionState.ACTIVE, body=change.text,
            body_bytes=len(change.text.encode()), review_status=_review_status(change, binding))
        Slot.objects.bulk_create([Slot(revision=revision, tenant=tenant, position=i, role=s.role, mode=SlotMode.REFER,
                                       target_atom_id=s.target_atom_id, target_revision_id=s.target_revision_id,
                                       required=s.required, order_key=s.order_key)
                                  for i, s in enumerate(change.slots)])
        Origin.objects.bulk_create([Origin(revision=revision, tenant=tenant, position=i, source_atom_id=o.source.atom_id,
                                           source_revision_id=o.source.id, start=o.start, end=o.end,
                                           quote_digest=o.quote_digest)
                                    for i, o in enumerate(change.origins)])
        EraseDependency.objects.bulk_create(
            [EraseDependency(tenant=tenant, dependent_atom_id=atom.id, dependency_atom_id=o.source.atom_id, kind=DependencyKind.ORIGIN)
             for o in change.origins], ignore_conflicts=True)
    atom.head = revision
    atom.save(update_fields=["head"])
    return revision
