"""Storage side of read's closures (atoms.md §6.5): AtomNodes and a link resolver.

atoms.core.closure and atoms.core.render work on plain AtomNodes. This module builds them
from stored revisions for one request: the AtomView links and citations exactly as the
reader may see them (the same rule as the items' views, so a unit and its item agree), the
stored slots for the closure walk, and the availability flags that block a root (retired,
stale, outside the read policies, hidden by review).

A revision that cannot be shown is built bare (no ref, no links): it only ever blocks, and
no ref is issued for something the caller may not see.
"""

from __future__ import annotations

from collections.abc import Iterable

from atoms.core.closure import AtomNode, BlockReason, OriginSpan, Slot
from atoms.models import Atom, AtomStore, Origin, PurgedAtom, Revision
from atoms.models import Slot as StoredSlot
from atoms.principal import Binding
from atoms.services.refs import issue_refs
from atoms.services.staleness import Staleness
from atoms.services.views import render_views


class NodeBuilder:
    """AtomNodes for one read, cached by revision id, plus the closure resolver.

    Every revision built is recorded in `reads` (first-read order): closure members are
    acquisition reads of the receipt (§5.3)."""

    def __init__(self, binding: Binding, store: AtomStore, staleness: Staleness) -> None:
        self.binding = binding
        self.policies = set(binding.read_policies)
        self.require_approval = store.require_approval
        self.staleness = staleness
        self.tenant = binding.principal.tenant
        self.nodes: dict[str, AtomNode] = {}
        self.revisions: dict[str, Revision] = {}
        self.reads: list[Revision] = []
        self._purged: dict[str, bool] = {}
        self._heads: dict[str, Revision | None] = {}

    # --- availability ----------------------------------------------------------------------

    def readable(self, revision: Revision) -> bool:
        return revision.policy in self.policies

    def hidden(self, revision: Revision) -> bool:
        """Hidden by review (§11): quarantined, or not approved under require-approval."""
        return revision.review_status == "quarantined" or (
            self.require_approval and revision.review_status != "approved")

    def _shown(self, revision: Revision) -> bool:
        return (self.readable(revision) and not self.hidden(revision) and revision.state == "active"
                and not self.staleness.is_stale(revision))

    # --- building ----------------------------------------------------------------------------

    def build(self, revisions: Iterable[Revision]) -> list[AtomNode]:
        """Nodes for these revisions (cached), in the order given."""
        revisions = list(revisions)
        fresh = list({r.id: r for r in revisions if r.id not in self.nodes}.values())
        for revision in fresh:
            self.revisions[revision.id] = revision
            self.reads.append(revision)
        shown = [r for r in fresh if self._shown(r)]
        shown_ids = {r.id for r in shown}
        for revision in fresh:
            if revision.id not in shown_ids:
                self.nodes[revision.id] = self._bare(revision)
        if shown:
            self._build_shown(shown)
        return [self.nodes[r.id] for r in revisions]

    def _bare(self, revision: Revision) -> AtomNode:
        return AtomNode(revision_id=revision.id, atom_id=revision.atom_id, ref="", text="", origin=revision.origin,
                        producer=revision.producer, state=revision.state,
                        stale=revision.state == "active" and self.readable(revision)
                        and not self.hidden(revision) and self.staleness.is_stale(revision),
                        readable=self.readable(revision), hidden=self.hidden(revision))

    def _build_shown(self, revisions: list[Revision]) -> None:
        principal = self.binding.principal
        views = render_views(principal, revisions, self.binding.read_policies)
        slots: dict[str, list[StoredSlot]] = {}
        for slot in StoredSlot.objects.filter(revision__in=revisions).order_by("revision_id", "position"):
            slots.setdefault(slot.revision_id, []).append(slot)
        origins: dict[str, list[Origin]] = {}
        for origin in Origin.objects.filter(revision__in=revisions).order_by("revision_id", "position"):
            origins.setdefault(origin.revision_id, []).append(origin)
        source_ids = {o.source_revision_id for group in origins.values() for o in group}
        sources = {r.id: r for r in Revision.objects.filter(tenant=self.tenant, id__in=source_ids)}
        # The same rule as the views' citations: a source outside the policies or quarantined is dropped.
        readable_sources = [s for s in sources.values()
                            if s.policy in self.policies and s.review_status != "quarantined"]
        source_refs = issue_refs(principal, readable_sources)
        for revision, view in zip(revisions, views, strict=True):
            self.nodes[revision.id] = AtomNode(
                revision_id=revision.id, atom_id=revision.atom_id, ref=view["ref"], text=revision.body,
                origin=revision.origin, producer=revision.producer, links=tuple(view["links"]),
                slots=tuple(Slot(role=s.role, target_atom_id=s.target_atom_id,
                                 target_revision_id=s.target_revision_id or None, required=s.required,
                                 order_key=s.order_key, mode="include" if s.mode == "include" else "refer")
                            for s in slots.get(revision.id, [])),
                origins=tuple(OriginSpan(source_revision_id=o.source_revision_id, start=o.start, end=o.end,
                                         quote_digest=o.quote_digest, ref=source_refs.get(o.source_revision_id))
                              for o in origins.get(revision.id, [])),
                state=revision.state,
            )

    # --- bulk warm-up ----------------------------------------------------------------------------

    def prefetch_closures(self, roots: list[AtomNode]) -> None:
        """Load every required-link target of these roots, level by level, in a few bulk
        queries, so the closure walk below finds them cached instead of querying per atom.
        Reads are recorded in the order revisions are loaded here (breadth-first)."""
        frontier = roots
        while frontier:
            logical: set[str] = set()
            pinned: dict[str, str] = {}
            for node in frontier:
                for slot in node.slots:
                    if not (slot.required or slot.mode == "include"):
                        continue
                    if slot.target_revision_id:
                        pinned[slot.target_revision_id] = slot.target_atom_id
                    else:
                        logical.add(slot.target_atom_id)
            atom_ids = (logical | set(pinned.values())) - self._purged.keys()
            if atom_ids:
                purged = set(PurgedAtom.objects.filter(tenant=self.tenant, atom_id__in=atom_ids)
                             .values_list("atom_id", flat=True))
                self._purged.update({atom_id: atom_id in purged for atom_id in atom_ids})
            wanted_heads = [a for a in logical if a not in self._heads]
            for atom in Atom.objects.filter(tenant=self.tenant, id__in=wanted_heads).select_related("head"):
                self._heads[atom.id] = atom.head
            for atom_id in wanted_heads:
                self._heads.setdefault(atom_id, None)
            missing = [r for r in pinned if r not in self.revisions]
            for revision in Revision.objects.filter(tenant=self.tenant, id__in=missing):
                self.revisions[revision.id] = revision
            targets = [self._heads[a] for a in sorted(logical) if not self._purged.get(a)]
            targets += [self.revisions[r] for r, a in pinned.items() if r in self.revisions and not self._purged.get(a)]
            fresh = list({t.id: t for t in targets if t is not None and t.id not in self.nodes}.values())
            frontier = self.build(fresh) if fresh else []

    # --- the resolver of atoms.core.closure ------------------------------------------------------

    def __call__(self, atom_id: str, revision_id: str | None) -> AtomNode | BlockReason:
        if atom_id not in self._purged:
            self._purged[atom_id] = PurgedAtom.objects.filter(tenant=self.tenant, atom_id=atom_id).exists()
        if self._purged[atom_id]:
            return "purged"
        if revision_id is None:
            if atom_id not in self._heads:
                atom = Atom.objects.filter(tenant=self.tenant, id=atom_id).select_related("head").first()
                self._heads[atom_id] = atom.head if atom is not None else None
            target = self._heads[atom_id]
        else:
            target = self.revisions.get(revision_id) or Revision.objects.filter(
                tenant=self.tenant, id=revision_id).first()
        if target is None or target.atom_id != atom_id:
            return "missing"
        return self.build([target])[0]
