"""AtomView rendering (atoms.md §2.6): what a principal may see of a revision."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from atoms.models import Atom, Origin, PurgedAtom, Revision, Slot
from atoms.principal import Principal
from atoms.services.refs import issue_refs

AT = {True: "observed", False: "logical"}


class Visibility:
    """Answers "may this principal see that revision?" for one request, caching lookups."""

    def __init__(self, principal: Principal, read_policies: Iterable[str]) -> None:
        self.principal = principal
        self.read_policies = set(read_policies)

    def readable(self, revision: Revision | None) -> bool:
        return (revision is not None and revision.policy in self.read_policies
                and revision.review_status != "quarantined")


def _link_targets(slots: list[Slot]) -> dict[tuple[str, str], Revision | None]:
    """Each slot's target revision: the head for logical links, the pinned one otherwise."""
    atom_ids = {s.target_atom_id for s in slots}
    heads = {a.id: a.head for a in Atom.objects.filter(id__in=atom_ids).select_related("head")}
    pinned_ids = {s.target_revision_id for s in slots if s.target_revision_id}
    pinned = {r.id: r for r in Revision.objects.filter(id__in=pinned_ids)}
    out: dict[tuple[str, str], Revision | None] = {}
    for slot in slots:
        key = (slot.target_atom_id, slot.target_revision_id)
        out[key] = pinned.get(slot.target_revision_id) if slot.target_revision_id else heads.get(slot.target_atom_id)
    return out


def render_views(principal: Principal, revisions: list[Revision], read_policies: Iterable[str],
                 scores: dict[str, float] | None = None) -> list[dict[str, Any]]:
    """AtomViews for revisions the caller may read (the caller checked that already)."""
    visibility = Visibility(principal, read_policies)
    slots = list(Slot.objects.filter(revision__in=revisions).order_by("revision_id", "position"))
    origins = list(Origin.objects.filter(revision__in=revisions).order_by("revision_id", "position"))
    targets = _link_targets(slots)
    purged = set(PurgedAtom.objects.filter(tenant=principal.tenant, atom_id__in={s.target_atom_id for s in slots})
                 .values_list("atom_id", flat=True))
    sources = {r.id: r for r in Revision.objects.filter(id__in={o.source_revision_id for o in origins})}
    shown = [r for r in revisions]
    shown += [t for t in targets.values() if t is not None and visibility.readable(t)]
    shown += [s for s in sources.values() if visibility.readable(s)]
    refs = issue_refs(principal, {r.id: r for r in shown}.values())
    by_revision_slots: dict[str, list[Slot]] = {}
    for slot in slots:
        by_revision_slots.setdefault(slot.revision_id, []).append(slot)
    by_revision_origins: dict[str, list[Origin]] = {}
    for origin in origins:
        by_revision_origins.setdefault(origin.revision_id, []).append(origin)
    views = []
    for revision in revisions:
        links = []
        for slot in by_revision_slots.get(revision.id, []):
            link: dict[str, Any] = {"role": slot.role, "at": AT[bool(slot.target_revision_id)],
                                    "required": slot.required, "orderKey": slot.order_key}
            target = targets.get((slot.target_atom_id, slot.target_revision_id))
            if slot.target_atom_id in purged or not visibility.readable(target):
                link["unavailable"] = True
            else:
                assert target is not None
                link["ref"] = refs[target.id]
            links.append(link)
        cited = []
        for origin in by_revision_origins.get(revision.id, []):
            source = sources.get(origin.source_revision_id)
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
