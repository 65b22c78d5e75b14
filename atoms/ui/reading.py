"""What the atom page shows, read straight from the tenant's storage.

Reviewers see the whole tenant, quarantined atoms included, so these reads do not go through
inspect (which hides quarantined atoms from API keys, docs/atoms.md "Review UI") and create no refs or receipts.
Every query starts from the tenant. Nothing here writes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from atoms.core.spans import quote_digest
from atoms.models import Atom, Origin, PurgedAtom, ReviewStatus, Revision, RevisionState, Slot
from atoms.services.staleness import is_stale
from atoms.ui.graph import MAX_PER_SIDE, Edge, Graph, Node, short
from memoryhub import threats
from tenants.models import Tenant


@dataclass
class LinkOut:
    slot: Slot
    target: Revision | None  # None: the target was purged (or never existed)

    @property
    def at(self) -> str:
        return "observed" if self.slot.target_revision_id else "logical"

    @property
    def unavailable(self) -> bool:
        return self.target is None

    @property
    def pinned_old(self) -> bool:
        """An observed link to a revision that is no longer its atom's head."""
        return self.target is not None and bool(self.slot.target_revision_id) and not self.target.is_head


@dataclass
class LinkIn:
    slot: Slot
    linker: Revision  # the linking atom's head
    pinned_number: int | None = None  # an observed link to an older revision of this atom: its number

    @property
    def at(self) -> str:
        return "observed" if self.slot.target_revision_id else "logical"


@dataclass
class SourceRow:
    origin: Origin
    source: Revision | None

    @property
    def quote(self) -> str:
        if self.source is None:
            return ""
        return self.source.body.encode()[self.origin.start:self.origin.end].decode(errors="replace")

    @property
    def verified(self) -> bool:
        """The cited bytes still hash to the digest written with the citation."""
        return self.source is not None and quote_digest(self.source.body, self.origin.start,
                                                        self.origin.end) == self.origin.quote_digest


@dataclass
class HistoryRow:
    revision: Revision
    number: int
    operation: str  # create | revise | retire | reactivate
    current: bool


@dataclass
class AtomDetail:
    atom: Atom
    head: Revision
    links_out: list[LinkOut]
    links_in: list[LinkIn]
    sources: list[SourceRow]
    history: list[HistoryRow]  # oldest first
    stale: bool
    findings: list[threats.Finding] = field(default_factory=list)

    @property
    def numbers(self) -> dict[str, int]:
        return {row.revision.id: row.number for row in self.history}


def _operation(revision: Revision, previous: Revision | None) -> str:
    if previous is None:
        return "create"
    if revision.state == RevisionState.RETIRED:
        return "retire"
    return "reactivate" if previous.state == RevisionState.RETIRED else "revise"


def history_of(atom: Atom) -> list[HistoryRow]:
    revisions = list(Revision.objects.filter(tenant=atom.tenant, atom=atom).order_by("seq", "id"))
    by_id = {r.id: r for r in revisions}
    return [HistoryRow(revision=r, number=i, operation=_operation(r, by_id.get(r.previous_id or "")),
                       current=r.id == atom.head_id)
            for i, r in enumerate(revisions, start=1)]


def links_out_of(tenant: Tenant, head: Revision) -> list[LinkOut]:
    slots = list(Slot.objects.filter(tenant=tenant, revision=head).order_by("position"))
    atom_ids = {s.target_atom_id for s in slots}
    purged = set(PurgedAtom.objects.filter(tenant=tenant, atom_id__in=atom_ids).values_list("atom_id", flat=True))
    heads = {a.id: a.head for a in Atom.objects.filter(tenant=tenant, id__in=atom_ids).select_related("head")}
    pinned = {r.id: r for r in Revision.objects.filter(
        tenant=tenant, id__in={s.target_revision_id for s in slots if s.target_revision_id})}
    out = []
    for slot in slots:
        target = pinned.get(slot.target_revision_id) if slot.target_revision_id else heads.get(slot.target_atom_id)
        out.append(LinkOut(slot=slot, target=None if slot.target_atom_id in purged else target))
    return out


def links_in_of(tenant: Tenant, atom: Atom, numbers: dict[str, int]) -> list[LinkIn]:
    """Links held by heads (active or retired) of any atom that name this atom: logical ones,
    and observed ones pinned to any of its revisions."""
    slots = (Slot.objects.filter(tenant=tenant, target_atom_id=atom.id, revision__is_head=True)
             .select_related("revision").order_by("revision__seq", "revision_id", "position"))
    out = []
    for slot in slots:
        old = slot.target_revision_id and slot.target_revision_id != atom.head_id
        out.append(LinkIn(slot=slot, linker=slot.revision,
                          pinned_number=numbers.get(slot.target_revision_id) if old else None))
    return out


def sources_of(tenant: Tenant, head: Revision) -> list[SourceRow]:
    origins = list(Origin.objects.filter(tenant=tenant, revision=head).order_by("position"))
    found = {r.id: r for r in Revision.objects.filter(tenant=tenant, id__in={o.source_revision_id for o in origins})}
    return [SourceRow(origin=o, source=found.get(o.source_revision_id)) for o in origins]


def detail_of(tenant: Tenant, atom: Atom) -> AtomDetail:
    head = atom.head
    assert head is not None
    history = history_of(atom)
    numbers = {row.revision.id: row.number for row in history}
    return AtomDetail(
        atom=atom, head=head, links_out=links_out_of(tenant, head), links_in=links_in_of(tenant, atom, numbers),
        sources=sources_of(tenant, head), history=history, stale=is_stale(head),
        findings=threats.scan(head.body) if head.review_status == ReviewStatus.QUARANTINED else [],
    )


def node_status(revision: Revision | None) -> str:
    if revision is None:
        return "unavailable"
    if revision.review_status in (ReviewStatus.QUARANTINED, ReviewStatus.UNREVIEWED):
        return revision.review_status
    return RevisionState.RETIRED if revision.state == RevisionState.RETIRED else RevisionState.ACTIVE


def neighbourhood(detail: AtomDetail, url_for: Callable[[str], str]) -> Graph:
    """The picture's nodes and edges: one node per neighbouring atom (an atom linked both
    ways sits on the outgoing side), one edge per direction and neighbour with its roles
    merged; `url_for` gives an atom's page."""
    center_key = detail.atom.id
    center = Node(key=center_key, label=short(detail.head.body, 40), status="center",
                  title=f"This atom: {short(detail.head.body, 120)}")
    outgoing: dict[str, Node] = {}
    incoming: dict[str, Node] = {}
    edges: dict[tuple[str, str], Edge] = {}

    def add_edge(source: str, target: str, role: str, required: bool) -> None:
        known = edges.get((source, target))
        roles = known.roles if known else ()
        edges[(source, target)] = Edge(source, target, roles if role in roles else (*roles, role),
                                       required or bool(known and known.required))

    for link in detail.links_out:
        target_id = link.slot.target_atom_id
        if target_id == center_key:
            add_edge(center_key, center_key, link.slot.role, link.slot.required)
            continue
        key = target_id if link.target is not None else f"unavailable:{target_id}"
        if key not in outgoing and len(outgoing) >= MAX_PER_SIDE:
            continue
        if key not in outgoing:
            status = node_status(link.target)
            text = link.target.body if link.target is not None else "unavailable (purged)"
            outgoing[key] = Node(key=key, label=short(text, 40), status=status,
                                 href=url_for(target_id) if link.target is not None else None,
                                 title=f"{short(text, 120)} ({status})")
        add_edge(center_key, key, link.slot.role, link.slot.required)
    for link_in in detail.links_in:
        key = link_in.linker.atom_id
        if key == center_key:
            continue  # a self-link, drawn once from the outgoing side
        if key not in outgoing and key not in incoming:
            if len(incoming) >= MAX_PER_SIDE:
                continue
            status = node_status(link_in.linker)
            incoming[key] = Node(key=key, label=short(link_in.linker.body, 40), status=status, href=url_for(key),
                                 title=f"{short(link_in.linker.body, 120)} ({status})")
        add_edge(key, center_key, link_in.slot.role, link_in.slot.required)
    out_keys = {link.slot.target_atom_id if link.target is not None else f"unavailable:{link.slot.target_atom_id}"
                for link in detail.links_out} - {center_key}
    in_keys = {link.linker.atom_id for link in detail.links_in} - {center_key} - out_keys
    shown = outgoing.keys() | incoming.keys()
    # Each side's "+N more" counts the neighbours left out of it (an atom linked both ways counts as out).
    return Graph(center=center, outgoing=list(outgoing.values()), incoming=list(incoming.values()),
                 edges=list(edges.values()), hidden_out=len(out_keys - shown), hidden_in=len(in_keys - shown))
