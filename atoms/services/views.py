"""AtomView rendering (docs/atoms.md "Try it"): what a principal may see of a revision.

Views are built in two steps so that read can load a whole closure level at once and issue
every ref of a page in one bulk call: `ViewData.load` reads the slots, origins, link targets
and cited sources of many revisions (a fixed number of queries, whatever their count, and
nothing twice when one ViewData serves several loads), then `ViewData.views` assembles the
views from refs issued by the caller. `render_views` does both for one list.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from atoms.models import PurgedAtom, Revision, SlotMode
from atoms.models.review import HIDDEN_REVIEW
from atoms.principal import Principal
from atoms.services.links import GraphLinks, OriginRow, SlotRow, load_closure_links, load_links
from atoms.services.refs import issue_refs
from tenants.models import Tenant

AT = {True: "observed", False: "logical"}


class Visibility:
    """Answers "may this principal see that revision?" for one request, caching lookups."""

    def __init__(self, principal: Principal, read_policies: Iterable[str]) -> None:
        self.principal = principal
        self.read_policies = set(read_policies)

    def readable(self, revision: Revision | None) -> bool:
        return (revision is not None and revision.policy in self.read_policies
                and revision.review_status not in HIDDEN_REVIEW)


@dataclass
class ViewData:
    """Slots, origins, link targets and sources of the revisions loaded so far, by id.

    `heads` maps an atom id to its head (None: no such atom, purged included); `purged`
    holds the atoms without a row that a purge erased (a purge deletes the atom row in the
    transaction that records it, so an atom that has a row is never purged)."""

    tenant: Tenant
    slots: dict[str, list[SlotRow]] = field(default_factory=dict)
    origins: dict[str, list[OriginRow]] = field(default_factory=dict)
    heads: dict[str, Revision | None] = field(default_factory=dict)
    rows: dict[str, Revision | None] = field(default_factory=dict)  # pinned targets and sources by id
    purged: set[str] = field(default_factory=set)
    known: GraphLinks = field(default_factory=GraphLinks)  # read already, in this snapshot

    def preload(self, links: GraphLinks) -> None:
        """Reuse what graph acquisition read in this snapshot: `load` then reads the slots and
        origins of none of its expanded revisions, nor the heads it found."""
        self.known = links
        self.heads.update(links.heads)

    def prefetch_closures(self, roots: Iterable[Revision]) -> None:
        """Read, in one statement, the slots and origins of every revision the closures of
        `roots` can reach and that no earlier load read (atoms.services.links
        `load_closure_links`): `load` then reads nothing for any closure level. The walk
        through what is known already follows the same slots as read's closure (required or
        include), so the statement starts where that knowledge ends. It reads a superset of
        what the closure walk takes: members it does not reach (behind a hidden or stale
        revision) are never used."""
        seeds: list[str] = []
        seen: set[str] = set()
        stack = [r.id for r in roots]
        while stack:
            revision_id = stack.pop()
            if revision_id in seen or revision_id in self.slots:
                continue
            seen.add(revision_id)
            if revision_id not in self.known.slots:
                seeds.append(revision_id)
                continue
            for slot in self.known.slots[revision_id]:
                if slot.required or slot.mode == SlotMode.INCLUDE:
                    target = (self.known.rows.get(slot.target_revision_id) if slot.target_revision_id
                              else self.known.heads.get(slot.target_atom_id))
                    if target is not None:
                        stack.append(target.id)
        if not seeds:
            return
        links = load_closure_links(self.tenant.pk, seeds)
        self.known.absorb(links, links.members)  # the seeds and what lies past them
        self.heads.update(links.heads)

    def load(self, revisions: Iterable[Revision]) -> None:
        """Add these revisions: at most two queries (slots and origins with the revisions they
        name, atoms.services.links; purge records of targets that have no head); the first
        is skipped for revisions `preload` or `prefetch_closures` brought."""
        fresh = [r for r in {r.id: r for r in revisions}.values() if r.id not in self.slots]
        if not fresh:
            return
        for revision in fresh:
            self.slots[revision.id] = list(self.known.slots.get(revision.id, ()))
            self.origins[revision.id] = list(self.known.origins.get(revision.id, ()))
        links = load_links(self.tenant.pk, [r.id for r in fresh if r.id not in self.known.slots])
        for slot in links.slots:
            self.slots[slot.revision_id].append(slot)
        for origin in links.origins:
            self.origins[origin.revision_id].append(origin)
        slots = [s for r in fresh for s in self.slots[r.id]]
        atom_ids = {s.target_atom_id for s in slots} - self.heads.keys()
        if atom_ids:
            # Every target of a loaded slot came with its head, when it has one.
            self.heads.update({atom_id: links.heads.get(atom_id) for atom_id in atom_ids})
            # An atom with a row but no head is looked up too: it is never purged (class docstring).
            gone = [a for a in atom_ids if self.heads[a] is None]
            if gone:
                self.purged.update(PurgedAtom.objects.filter(tenant=self.tenant, atom_id__in=gone)
                                   .values_list("atom_id", flat=True))
        ids = {s.target_revision_id for s in slots if s.target_revision_id}
        ids |= {o.source_revision_id for r in fresh for o in self.origins[r.id]}
        # Every pinned target and cited source of a loaded revision came with it, when it exists.
        self.rows.update({i: links.rows.get(i) or self.known.rows.get(i) for i in ids - self.rows.keys()})

    def target(self, slot: SlotRow) -> Revision | None:
        """The slot's target revision: the head for a logical link, the pinned one otherwise."""
        if slot.target_revision_id:
            return self.rows.get(slot.target_revision_id)
        return self.heads.get(slot.target_atom_id)

    def referenced(self, revisions: Iterable[Revision], visibility: Visibility) -> list[Revision]:
        """The readable link targets and cited sources whose refs these revisions' views show."""
        out: list[Revision] = []
        for revision in revisions:
            for slot in self.slots[revision.id]:
                target = self.target(slot)
                if slot.target_atom_id not in self.purged and target is not None and visibility.readable(target):
                    out.append(target)
            for origin in self.origins[revision.id]:
                source = self.rows.get(origin.source_revision_id)
                if source is not None and visibility.readable(source):
                    out.append(source)
        return out

    def views(self, revisions: Iterable[Revision], refs: dict[str, str], visibility: Visibility,
              scores: dict[str, float] | None = None) -> list[dict[str, Any]]:
        """AtomViews of loaded revisions; `refs` must hold theirs and those of `referenced`."""
        views = []
        for revision in revisions:
            links = []
            for slot in self.slots[revision.id]:
                link: dict[str, Any] = {"role": slot.role, "at": AT[bool(slot.target_revision_id)],
                                        "required": slot.required, "orderKey": slot.order_key}
                target = self.target(slot)
                if slot.target_atom_id in self.purged or target is None or not visibility.readable(target):
                    link["unavailable"] = True
                else:
                    link["ref"] = refs[target.id]
                links.append(link)
            cited = []
            for origin in self.origins[revision.id]:
                source = self.rows.get(origin.source_revision_id)
                if source is not None and visibility.readable(source):
                    cited.append({"ref": refs[source.id], "start": origin.start, "end": origin.end})
            view: dict[str, Any] = {
                "ref": refs[revision.id], "text": revision.body, "links": links, "sources": cited,
                "provenance": {"origin": revision.origin, "producer": revision.producer}, "state": revision.state,
            }
            if scores is not None:
                view["score"] = scores.get(revision.id, 0)
            views.append(view)
        return views


def views_and_refs(principal: Principal, revisions: list[Revision], read_policies: Iterable[str], *,
                   scores: dict[str, float] | None = None, also: Iterable[Revision] = (),
                   links: GraphLinks | None = None) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """AtomViews for revisions the caller may read (the caller checked that already), and
    the refs issued for them in one bulk call, which also covers `also` (e.g. stale ones).
    `links`: what graph acquisition read in this snapshot, not read again (`ViewData.preload`)."""
    visibility = Visibility(principal, read_policies)
    data = ViewData(principal.tenant)
    if links is not None:
        data.preload(links)
    data.load(revisions)
    refs = issue_refs(principal, [*revisions, *data.referenced(revisions, visibility), *also])
    return data.views(revisions, refs, visibility, scores), refs


def render_views(principal: Principal, revisions: list[Revision], read_policies: Iterable[str],
                 scores: dict[str, float] | None = None) -> list[dict[str, Any]]:
    """AtomViews for revisions the caller may read (the caller checked that already)."""
    return views_and_refs(principal, revisions, read_policies, scores=scores)[0]
