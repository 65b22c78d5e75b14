"""The steps of a purge (docs/atoms.md "In the web UI: read playground and purge") and the checkpoint that records how far it got.

A purge runs in phases: `dependencies` (the erase closure), `revisions` (what each closure
atom stored, and which receipts and tokens read it), `erase` (one transaction per atom) and
`metadata` (bump the index generation, clear the barrier, keep the erasure receipt). Every
step is all-or-nothing: its cost is counted before it starts, and a step that does not fit
the remaining `maxWork` is not begun, so a checkpoint always sits between two steps.

Work: one unit per row read or deleted (an in-place reduction, such as a ref losing its
revision, counts as a row read). Counting a step's rows beforehand uses aggregate queries,
which are not charged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q, QuerySet

from atoms.models import (
    Atom,
    DependencyKind,
    EraseDependency,
    IndexEntry,
    InputToken,
    Origin,
    PurgedAtom,
    Receipt,
    Ref,
    ReplayRecord,
    Revision,
    RevisionState,
    Slot,
    Tombstone,
    UseMarker,
    UseState,
)
from atoms.services.feed import feed_removed
from atoms.services.lexicon import lexicon_remove
from memoryhub.models import AuditEvent
from tenants.models import Tenant

LEGACY_SLOT = DependencyKind.LEGACY_SLOT
COUNT_KEYS = (
    "atoms", "revisions", "slots", "origins", "indexEntries", "vectors", "useStates", "useEvents", "receipts",
    "inputTokens", "cursors", "replayRecords", "refsReduced", "reviewRecords", "auditEntriesRedacted",
)
# Lookups by many ids go in slices, so no query outgrows a backend's parameter limit.
CHUNK = 500


class OutOfWork(Exception):
    """The next step needs `needed` units and the call has fewer left."""

    def __init__(self, needed: int) -> None:
        super().__init__(f"the next step needs {needed} units of work")
        self.needed = needed


@dataclass
class Meter:
    limit: int
    used: int = 0

    def spend(self, cost: int) -> None:
        if self.used + cost > self.limit:
            raise OutOfWork(cost)
        self.used += cost


@dataclass
class Checkpoint:
    """How far a purge got; stored in `AtomStore.purge_barrier["checkpoint"]`."""

    closure: list[str]  # discovery order; the first is the requested atom
    expanded: int = 0  # closure members whose dependants were read
    legacy: bool = False
    revisions: dict[str, list[str]] = field(default_factory=dict)
    operations: set[str] = field(default_factory=set)
    scanned: int = 0  # atoms (in id order) whose revisions were read
    # {"receipts": {atomId: [id]}, "tokens": {atomId: [id]}, "replayRecords": n}: each
    # receipt or token is erased with the first closure atom (in id order) it read.
    manifests: dict[str, Any] | None = None
    erased: int = 0  # atoms (in id order) erased
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNT_KEYS, 0))

    def __post_init__(self) -> None:
        self._known = set(self.closure)
        self._order: list[str] = []

    @property
    def order(self) -> list[str]:
        """Closure atoms in id order: the order of the revisions and erase phases."""
        if len(self._order) != len(self.closure):
            self._order = sorted(self.closure)
        return self._order

    def phase(self) -> str:
        if self.expanded < len(self.closure):
            return "dependencies"
        if self.scanned < len(self.closure) or self.manifests is None:
            return "revisions"
        if self.erased < len(self.closure):
            return "erase"
        return "metadata"

    def add(self, atom_id: str) -> None:
        if atom_id not in self._known:
            self._known.add(atom_id)
            self.closure.append(atom_id)

    def to_json(self) -> dict[str, Any]:
        return {"closure": list(self.closure), "expanded": self.expanded, "legacy": self.legacy,
                "revisions": {a: list(r) for a, r in self.revisions.items()}, "operations": sorted(self.operations),
                "scanned": self.scanned, "manifests": self.manifests, "erased": self.erased,
                "counts": dict(self.counts)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Checkpoint:
        return cls(closure=list(data["closure"]), expanded=data["expanded"], legacy=data["legacy"],
                   revisions={a: list(r) for a, r in data["revisions"].items()},
                   operations=set(data["operations"]), scanned=data["scanned"], manifests=data["manifests"],
                   erased=data["erased"], counts=dict(data["counts"]))

    def copy(self) -> Checkpoint:
        return Checkpoint.from_json(self.to_json())


# --- dependencies ------------------------------------------------------------------------

def expand_next(tenant: Tenant, cp: Checkpoint, meter: Meter) -> None:
    """Add the erase dependants of the next closure member (reverse edges, docs/atoms.md "In the web UI: read playground and purge"): origins and
    token reads always, slots only when legacy. Weights play no part."""
    atom_id = cp.closure[cp.expanded]
    edges = EraseDependency.objects.filter(tenant=tenant, dependency_atom_id=atom_id)
    meter.spend(edges.count())
    for dependent, kind, legacy in edges.order_by("dependent_atom_id", "kind").values_list(
            "dependent_atom_id", "kind", "legacy"):
        if kind == LEGACY_SLOT and not legacy:
            continue
        cp.legacy = cp.legacy or legacy
        cp.add(dependent)
    cp.expanded += 1


# --- revisions ---------------------------------------------------------------------------

def scan_next(tenant: Tenant, cp: Checkpoint, meter: Meter) -> None:
    """Read the revisions of the next closure atom; a legacy one (no dependency contract,
    imports only) sets `legacyDependencies`."""
    atom_id = cp.order[cp.scanned]
    rows = Revision.objects.filter(tenant=tenant, atom_id=atom_id)
    meter.spend(rows.count())
    ids: list[str] = []
    for revision_id, operation_id, contract in rows.order_by("seq", "id").values_list(
            "id", "operation_id", "dependency_contract"):
        ids.append(revision_id)
        cp.operations.add(operation_id)
        cp.legacy = cp.legacy or not contract
    cp.revisions[atom_id] = ids
    cp.scanned += 1


def _mentioned(value: Any, out: set[str]) -> None:
    """Every string in a manifest, except under `outputs`: what a token wrote is not what
    it read, and a token outlives the purge of one of its outputs."""
    if isinstance(value, str):
        out.add(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            if key != "outputs":
                _mentioned(item, out)
    elif isinstance(value, list):
        for item in value:
            _mentioned(item, out)


def _first_read(manifest: Any, owner: dict[str, str]) -> str | None:
    """The first closure atom (in id order) a manifest names by atom or revision id.

    The whole manifest is searched rather than its erase set alone (a token's `reads`; a
    receipt stores only part of it, docs/atoms.md "Decisions"), so a receipt that quotes or
    digests an erased revision anywhere goes with it."""
    strings: set[str] = set()
    _mentioned(manifest, strings)
    hits = [owner[s] for s in strings if s in owner]
    return min(hits) if hits else None


def scan_manifests(tenant: Tenant, cp: Checkpoint, meter: Meter) -> None:
    """Find the receipts and tokens whose reads include a closure atom, and count the
    replay records that name one (they hold PinnedRefs only, so they stay and replay
    answers ACCESS_DENIED)."""
    receipts = Receipt.objects.filter(tenant=tenant)
    tokens = InputToken.objects.filter(tenant=tenant)
    replays = ReplayRecord.objects.filter(tenant=tenant)
    meter.spend(receipts.count() + tokens.count() + replays.count())
    owner = {a: a for a in cp.closure}
    owner.update({r: a for a, revisions in cp.revisions.items() for r in revisions})
    plan: dict[str, Any] = {"receipts": {}, "tokens": {}, "replayRecords": 0}
    for name, rows in (("receipts", receipts), ("tokens", tokens)):
        for row_id, manifest in rows.order_by("id").values_list("id", "manifest").iterator():
            hit = _first_read(manifest, owner)
            if hit is not None:
                plan[name].setdefault(hit, []).append(row_id)
    for changes in replays.values_list("changes", flat=True).iterator():
        if any(isinstance(p, dict) and p.get("atomId") in owner for p in (changes or {}).values()):
            plan["replayRecords"] += 1
    cp.manifests = plan


# --- erase -------------------------------------------------------------------------------

def _deleted(rows: QuerySet[Any]) -> int:
    """Rows of the queryset's own model that a delete removed (cascades counted apart)."""
    return rows.delete()[1].get(rows.model._meta.label, 0)


def erase_next(tenant: Tenant, cp: Checkpoint, erasure_id: str, meter: Meter) -> None:
    """Erase the next closure atom: run inside the transaction that also saves `cp`."""
    atom_id = cp.order[cp.erased]
    assert cp.manifests is not None
    receipt_ids = cp.manifests["receipts"].get(atom_id, [])
    token_ids = cp.manifests["tokens"].get(atom_id, [])
    slots = Slot.objects.filter(tenant=tenant, revision__atom_id=atom_id)
    origins = Origin.objects.filter(tenant=tenant, revision__atom_id=atom_id)
    revisions = Revision.objects.filter(tenant=tenant, atom_id=atom_id)
    atom = Atom.objects.filter(tenant=tenant, id=atom_id)
    edges = EraseDependency.objects.filter(tenant=tenant).filter(
        Q(dependent_atom_id=atom_id) | Q(dependency_atom_id=atom_id))
    refs = Ref.objects.filter(tenant=tenant, atom_id=atom_id).exclude(revision_id="")
    receipts = Receipt.objects.filter(tenant=tenant, id__in=receipt_ids)
    tokens = InputToken.objects.filter(tenant=tenant, id__in=token_ids)
    revision_ids = list(revisions.values_list("id", flat=True))
    use_states = UseState.objects.filter(tenant=tenant, revision_id__in=revision_ids)
    use_events = UseMarker.objects.filter(tenant=tenant, revision_id__in=revision_ids)
    entries = IndexEntry.objects.filter(tenant=tenant, atom_id=atom_id)
    meter.spend(len(revision_ids) + sum(q.count() for q in (slots, origins, atom, edges, refs, receipts, tokens,
                                                              use_states, use_events, entries)))
    counts = cp.counts
    counts["slots"] += _deleted(slots)
    counts["origins"] += _deleted(origins)
    # Postings and statistics go with the head (docs/atoms.md "Lexical index"); they are
    # derived counts, not listed in the receipt.
    lexicon_remove(revisions.filter(is_head=True, state=RevisionState.ACTIVE))
    atom.update(head=None)
    feed_rows = list(revisions.values_list("policy", "visible_seq", "id"))
    counts["revisions"] += _deleted(revisions)
    feed_removed(tenant, feed_rows)  # the index counters (docs/atoms.md "Index counters")
    counts["atoms"] += _deleted(atom)
    _deleted(edges)
    # Refs shrink to {ref, key, atomId} and keep answering ACCESS_DENIED (docs/atoms.md "Decisions").
    counts["refsReduced"] += refs.update(revision_id="")
    counts["receipts"] += _deleted(receipts)
    counts["inputTokens"] += _deleted(tokens)
    counts["useStates"] += _deleted(use_states)
    counts["useEvents"] += _deleted(use_events)
    # Index entries go with their vectors; the vector files are rebuilt without them once
    # the purge completes (atoms/vector_index.py), so no tombstone is needed here.
    counts["vectors"] += sum(entries.values_list("count", flat=True))
    counts["indexEntries"] += _deleted(entries)
    Tombstone.objects.bulk_create([Tombstone(id=i, tenant=tenant, erasure_id=erasure_id)
                                   for i in [*receipt_ids, *token_ids]], ignore_conflicts=True)
    PurgedAtom.objects.bulk_create([PurgedAtom(tenant=tenant, atom_id=atom_id, erasure_id=erasure_id)],
                                   ignore_conflicts=True)
    cp.erased += 1


# --- metadata ----------------------------------------------------------------------------

def audit_rows_about(tenant: Tenant, cp: Checkpoint) -> int:
    """Audit rows about erased atoms: those naming a closure atom, one of its revisions, or
    an operation that committed one of them.

    Our decision on "audit text is blanked": an AuditEvent row holds only ids (`object_id`),
    digests, the actor and the time, never content, so it already is the blanked form docs/atoms.md "In the web UI: read playground and purge"
    keeps and nothing in it is rewritten. These rows are what `auditEntriesRedacted` counts.
    """
    ids = [*cp.closure, *(r for revisions in cp.revisions.values() for r in revisions), *cp.operations]
    return sum(AuditEvent.objects.filter(tenant=tenant, object_id__in=ids[i:i + CHUNK]).count()
               for i in range(0, len(ids), CHUNK))
