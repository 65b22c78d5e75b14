"""AtomView rendering (docs/atoms.md "Try it"): what a principal may see of a revision.

Views are built in two steps so that read can load a whole closure level at once and issue
every ref of a page in one bulk call: `ViewData.load` reads the slots, origins, link targets
and cited sources of many revisions (a fixed number of queries, whatever their count, and
nothing twice when one ViewData serves several loads), then `ViewData.views` assembles the
views from refs issued by the caller. `render_views` does both for one list.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from django.db import connection

from atoms.models import Origin, PurgedAtom, Revision, Slot
from atoms.models.review import HIDDEN_REVIEW
from atoms.principal import Principal
from atoms.services.refs import issue_refs
from atoms.services.rows import head_revisions, revisions_by_id
from tenants.models import Tenant

AT = {True: "observed", False: "logical"}
# Revision ids per statement of the slot and origin load: far below every database's
# parameter limit (each id is bound twice), and above a normal closure level.
LINKS_CHUNK = 1_000


class SlotRow(NamedTuple):
    """A stored Slot's fields that views and closures read, without a model instance."""

    revision_id: str
    position: int
    role: str
    mode: str
    target_atom_id: str
    target_revision_id: str
    required: bool
    order_key: str


class OriginRow(NamedTuple):
    """A stored Origin's fields that views and closures read, without a model instance."""

    revision_id: str
    position: int
    source_atom_id: str
    source_revision_id: str
    start: int
    end: int
    quote_digest: str


def _links_sql(count: int) -> str:
    """Slots and origins of `count` revisions in one statement; NULL columns take the other
    branch's type on both databases."""
    marks = ", ".join(["%s"] * count)
    slot, origin = connection.ops.quote_name(Slot._meta.db_table), connection.ops.quote_name(Origin._meta.db_table)
    return (f"SELECT 0, s.revision_id, s.position, s.role, s.mode, s.target_atom_id, s.target_revision_id, "  # noqa: S608
            f"s.required, s.order_key, NULL, NULL, NULL, NULL, NULL FROM {slot} s WHERE s.revision_id IN ({marks}) "
            f"UNION ALL SELECT 1, o.revision_id, o.position, NULL, NULL, NULL, NULL, NULL, NULL, o.source_atom_id, "
            f"o.source_revision_id, o.start, o.\"end\", o.quote_digest FROM {origin} o WHERE o.revision_id IN ({marks})")


def load_links(ids: Sequence[str]) -> tuple[list[SlotRow], list[OriginRow]]:
    """The slots and origins of these revisions, each in (revision id, position) order: one
    query per LINKS_CHUNK ids (docs/atoms.md "Read path costs")."""
    slots: list[SlotRow] = []
    origins: list[OriginRow] = []
    with connection.cursor() as cursor:
        for start in range(0, len(ids), LINKS_CHUNK):
            chunk = list(ids[start:start + LINKS_CHUNK])
            cursor.execute(_links_sql(len(chunk)), chunk + chunk)
            for row in cursor.fetchall():
                if row[0] == 0:
                    # SQLite hands booleans back as 0 / 1.
                    slots.append(SlotRow(row[1], row[2], row[3], row[4], row[5], row[6], bool(row[7]), row[8]))
                else:
                    origins.append(OriginRow(row[1], row[2], row[9], row[10], row[11], row[12], row[13]))
    slots.sort(key=lambda s: (s.revision_id, s.position))
    origins.sort(key=lambda o: (o.revision_id, o.position))
    return slots, origins


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

    def load(self, revisions: Iterable[Revision]) -> None:
        """Add these revisions: at most four queries (slots with origins, target heads, pinned
        targets with cited sources, purge records of targets that have no atom row)."""
        fresh = [r for r in {r.id: r for r in revisions}.values() if r.id not in self.slots]
        if not fresh:
            return
        for revision in fresh:
            self.slots[revision.id] = []
            self.origins[revision.id] = []
        found_slots, found_origins = load_links([r.id for r in fresh])
        for slot in found_slots:
            self.slots[slot.revision_id].append(slot)
        for origin in found_origins:
            self.origins[origin.revision_id].append(origin)
        slots = [s for r in fresh for s in self.slots[r.id]]
        atom_ids = {s.target_atom_id for s in slots} - self.heads.keys()
        if atom_ids:
            found = head_revisions(self.tenant.pk, atom_ids)
            self.heads.update({atom_id: found.get(atom_id) for atom_id in atom_ids})
            # An atom with a row but no head is looked up too: it is never purged (class docstring).
            gone = [a for a in atom_ids if a not in found]
            if gone:
                self.purged.update(PurgedAtom.objects.filter(tenant=self.tenant, atom_id__in=gone)
                                   .values_list("atom_id", flat=True))
        ids = {s.target_revision_id for s in slots if s.target_revision_id}
        ids |= {o.source_revision_id for r in fresh for o in self.origins[r.id]}
        ids -= self.rows.keys()
        if ids:
            found_rows = revisions_by_id(self.tenant.pk, ids)
            self.rows.update({i: found_rows.get(i) for i in ids})

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
                   scores: dict[str, float] | None = None, also: Iterable[Revision] = ()
                   ) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """AtomViews for revisions the caller may read (the caller checked that already), and
    the refs issued for them in one bulk call, which also covers `also` (e.g. stale ones)."""
    visibility = Visibility(principal, read_policies)
    data = ViewData(principal.tenant)
    data.load(revisions)
    refs = issue_refs(principal, [*revisions, *data.referenced(revisions, visibility), *also])
    return data.views(revisions, refs, visibility, scores), refs


def render_views(principal: Principal, revisions: list[Revision], read_policies: Iterable[str],
                 scores: dict[str, float] | None = None) -> list[dict[str, Any]]:
    """AtomViews for revisions the caller may read (the caller checked that already)."""
    return views_and_refs(principal, revisions, read_policies, scores=scores)[0]
