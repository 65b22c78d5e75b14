"""Storage side of read's closures (docs/atoms.md "Read path costs"): AtomNodes and a link resolver.

atoms.core.closure and atoms.core.render work on plain AtomNodes. This module builds them
from stored revisions for one request: the AtomView links and citations exactly as the
reader may see them (the same rule as the items' views, so a unit and its item agree), the
stored slots for the closure walk, and the availability flags that block a root (retired,
stale, outside the read policies, hidden by review).

A revision that cannot be shown is built bare (no ref, no links): it only ever blocks, and
no ref is issued for something the caller may not see.

Costs (docs/atoms.md "Read path costs"): `load` reads the links of every closure member in one
statement (views.ViewData.prefetch_closures), then walks the closures a level at a time with
a fixed number of bulk queries per level (staleness judged in bulk, purge records of
targets without a head), prices the page with stand-in refs of the real refs' length, and `finish` issues the refs of
what the page shows in one bulk call (docs/atoms.md "Read path costs"). The resolver answers
from memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from atoms.core.closure import AtomNode, BlockReason, OriginSpan, Slot
from atoms.models import Atom, AtomStore, PurgedAtom, ReviewStatus, Revision, RevisionState, SlotMode
from atoms.models.review import HIDDEN_REVIEW
from atoms.principal import Binding
from atoms.services.links import GraphLinks
from atoms.services.refs import REF_LENGTH, issue_refs, stand_in_refs
from atoms.services.staleness import Staleness
from atoms.services.views import ViewData, Visibility


class NodeBuilder:
    """AtomNodes for one read, by revision id, plus the closure resolver.

    Every revision loaded is recorded in `reads` (first-read order: the roots, then each
    closure level): closure members are acquisition reads of the receipt (docs/atoms.md "Decisions"). `views`
    holds the AtomView (without score) of every revision that can be shown."""

    def __init__(self, binding: Binding, store: AtomStore, staleness: Staleness,
                 links: GraphLinks | None = None) -> None:
        self.binding = binding
        self.policies = set(binding.read_policies)
        self.require_approval = store.require_approval
        self.staleness = staleness
        self.tenant = binding.principal.tenant
        self.visibility = Visibility(binding.principal, binding.read_policies)
        self.data = ViewData(self.tenant)
        if links is not None:  # the first page: graph acquisition read these in this snapshot
            self.data.preload(links)
        self.nodes: dict[str, AtomNode] = {}
        self.revisions: dict[str, Revision] = {}
        self.views: dict[str, dict[str, Any]] = {}
        self.refs: dict[str, str] = {}
        self.reads: list[Revision] = []

    # --- availability ----------------------------------------------------------------------

    def readable(self, revision: Revision) -> bool:
        return revision.policy in self.policies

    def hidden(self, revision: Revision) -> bool:
        """Hidden by review (docs/atoms.md "Review UI"): quarantined or rejected, or not approved under require-approval."""
        return revision.review_status in HIDDEN_REVIEW or (
            self.require_approval and revision.review_status != ReviewStatus.APPROVED)

    def _shown(self, revision: Revision) -> bool:
        return (self.readable(revision) and not self.hidden(revision) and revision.state == RevisionState.ACTIVE
                and not self.staleness.is_stale(revision))

    # --- loading ----------------------------------------------------------------------------

    def load(self, roots: Iterable[Revision], *, also: Iterable[Revision] = ()) -> list[AtomNode]:
        """Nodes for these roots (in the order given) and for every member of their closures,
        loaded breadth-first a level at a time; then one bulk ref issue for all of them, their
        readable link targets and sources, and `also` (revisions the page names otherwise,
        such as its stale ones). Call once per page."""
        roots = list(roots)
        level = list({r.id: r for r in roots}.values())
        self.data.prefetch_closures(level)  # every closure level's links in one statement
        shown: list[Revision] = []
        while level:
            for revision in level:
                self.revisions[revision.id] = revision
                self.reads.append(revision)
            self.staleness.prefetch(level)
            visible = [r for r in level if self._shown(r)]
            self.data.load(visible)
            shown += visible
            following: dict[str, Revision] = {}
            for revision in visible:
                for slot in self.data.slots[revision.id]:
                    if not (slot.required or slot.mode == SlotMode.INCLUDE) or slot.target_atom_id in self.data.purged:
                        continue
                    target = self.data.target(slot)
                    if target is not None and target.id not in self.revisions:
                        following.setdefault(target.id, target)
            level = list(following.values())
        # Stand-in refs price the page: a ref is always REF_LENGTH ASCII bytes, so the costs
        # are those of the real ones. Real refs are issued in `finish`, for what the page shows.
        self.refs = stand_in_refs([*shown, *self.data.referenced(shown, self.visibility), *also])
        for revision, view in zip(shown, self.data.views(shown, self.refs, self.visibility), strict=True):
            self.views[revision.id] = view
        for revision in self.revisions.values():
            self.nodes[revision.id] = self._node(revision) if revision.id in self.views else self._bare(revision)
        return [self.nodes[r.id] for r in roots]

    def finish(self, selected: Sequence[str], *, also: Iterable[Revision] = ()) -> list[AtomNode] | None:
        """Issue the real refs of the page, in one bulk call: the selected units', the readable
        link targets and sources their views show, and `also`; rebuild the selected views and
        nodes with them. Returns the nodes in `selected` order, or None when an issued ref is
        not REF_LENGTH bytes long (then the stand-in prices were not exact and the caller must
        price again with `issue_all`)."""
        chosen = [self.revisions[key] for key in selected]
        refs = issue_refs(self.binding.principal,
                          [*chosen, *self.data.referenced(chosen, self.visibility), *also])
        if any(len(ref) != REF_LENGTH for ref in refs.values()):
            return None
        self.refs = refs
        for revision, view in zip(chosen, self.data.views(chosen, refs, self.visibility), strict=True):
            self.views[revision.id] = view
            self.nodes[revision.id] = self._node(revision)
        return [self.nodes[key] for key in selected]

    def issue_all(self, *, also: Iterable[Revision] = ()) -> None:
        """The slow path of `finish`: real refs for every shown revision, every view and node
        rebuilt with them (the closures must then be found again)."""
        shown = [self.revisions[key] for key in self.views]
        self.refs = issue_refs(self.binding.principal,
                               [*shown, *self.data.referenced(shown, self.visibility), *also])
        for revision, view in zip(shown, self.data.views(shown, self.refs, self.visibility), strict=True):
            self.views[revision.id] = view
            self.nodes[revision.id] = self._node(revision)

    def _bare(self, revision: Revision) -> AtomNode:
        return AtomNode(revision_id=revision.id, atom_id=revision.atom_id, ref="", text="", origin=revision.origin,
                        producer=revision.producer, state=revision.state,
                        stale=revision.state == RevisionState.ACTIVE and self.readable(revision)
                        and not self.hidden(revision) and self.staleness.is_stale(revision),
                        readable=self.readable(revision), hidden=self.hidden(revision))

    def _node(self, revision: Revision) -> AtomNode:
        view = self.views[revision.id]
        # The same rule as the views' citations: a source outside the policies or quarantined has no ref.
        return AtomNode(
            revision_id=revision.id, atom_id=revision.atom_id, ref=view["ref"], text=revision.body,
            origin=revision.origin, producer=revision.producer, links=tuple(view["links"]),
            slots=tuple(Slot(role=s.role, target_atom_id=s.target_atom_id,
                             target_revision_id=s.target_revision_id or None, required=s.required,
                             order_key=s.order_key, mode="include" if s.mode == SlotMode.INCLUDE else "refer")
                        for s in self.data.slots[revision.id]),
            origins=tuple(OriginSpan(source_revision_id=o.source_revision_id, start=o.start, end=o.end,
                                     quote_digest=o.quote_digest, ref=self._source_ref(o.source_revision_id))
                          for o in self.data.origins[revision.id]),
            state=revision.state,
        )

    def _source_ref(self, source_revision_id: str) -> str | None:
        source = self.data.rows.get(source_revision_id)
        return self.refs[source.id] if source is not None and self.visibility.readable(source) else None

    # --- the resolver of atoms.core.closure ------------------------------------------------------

    def __call__(self, atom_id: str, revision_id: str | None) -> AtomNode | BlockReason:
        """A closure member: answered from what `load` read; a member it did not reach
        (only when called outside `load`'s closures) is looked up and built bare."""
        if atom_id in self.data.purged:
            return "purged"
        if revision_id is None:
            if atom_id not in self.data.heads:
                atom = Atom.objects.filter(tenant=self.tenant, id=atom_id).select_related("head").first()
                self.data.heads[atom_id] = atom.head if atom is not None else None
                if atom is None and PurgedAtom.objects.filter(tenant=self.tenant, atom_id=atom_id).exists():
                    self.data.purged.add(atom_id)
                    return "purged"
            target = self.data.heads[atom_id]
        else:
            if revision_id not in self.data.rows and revision_id not in self.revisions:
                self.data.rows[revision_id] = Revision.objects.filter(tenant=self.tenant, id=revision_id).first()
            target = self.revisions.get(revision_id) or self.data.rows.get(revision_id)
        if target is None or target.atom_id != atom_id:
            return "missing"
        if target.id not in self.nodes:
            self.revisions[target.id] = target
            self.reads.append(target)
            self.nodes[target.id] = self._bare(target)
        return self.nodes[target.id]
