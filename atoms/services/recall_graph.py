"""Seeds, graph acquisition and activation for search and read (docs/atoms.md "Candidates" and "Defaults").

`recall` runs the whole pipeline up to the frozen ranking: candidates from the provider,
re-read and re-scored here (the provider's word is never taken), stale ones set aside,
seeds, breadth-first acquisition over links, use values, and the residual-push solver of
atoms.core.activation. What comes back is everything search pages through and read packs:
the ranked nodes with activations and scores, the stale revisions, the reads in first-read
order and the diagnostics figures.

A node is an active, readable, visible, non-stale head. "Visible" is the review rule of
docs/atoms.md "Review UI": never quarantined, and approved when the tenant requires approval.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from atoms.clock import now_ms
from atoms.config import DEFAULT_WEIGHTS, RETRIEVAL
from atoms.core.activation import ActivationGraph, BudgetExhausted, GraphNode, RelationWeight, evaluate, is_traversed
from atoms.errors import from_core, invalid
from atoms.models import AtomStore, ReviewStatus, Revision, RevisionState
from atoms.models.review import HIDDEN_REVIEW
from atoms.principal import Binding
from atoms.services import availability
from atoms.services.budget import Budget
from atoms.services.candidates import Candidates, signal_terms, two_channel_candidates
from atoms.services.lexical_statistics import load_statistics
from atoms.services.links import Ahead, GraphLinks, SlotRow, load_links
from atoms.services.rows import revisions_by_id
from atoms.services.scoring import Weights, seed_matches
from atoms.services.semantic import Semantic, cosines, prepare
from atoms.services.staleness import Staleness

DEFAULT_BETA = 0.3
DEFAULT_PROPAGATION = 0.25  # measured on the LoCoMo dev set: docs/atoms.md "Defaults"
# The weights of a role the tenant's `activation.relations` does not name, and of a direction
# it leaves out: activation flows from a link's target to the atom that links to it, for every
# role alike (measured on the LoCoMo dev set: docs/atoms.md "Defaults").
DEFAULT_RELATION = RelationWeight(forward=0.0, reverse=1.0)

Stop = Literal["completed", "numeric-budget", "deadline"]
Provider = Callable[..., Candidates]


@dataclass(frozen=True)
class RecallSettings:
    """The tenant's retrieval and activation settings, defaults filled in (docs/atoms.md "Defaults")."""

    depth: int
    max_seeds: int
    max_nodes: int
    max_edges: int
    max_scan: int
    lexical_candidates: int
    semantic_candidates: int
    weights: Weights
    beta: float
    propagation: float
    relations: dict[str, RelationWeight]


def recall_settings(config: Any) -> RecallSettings:
    config = config if isinstance(config, dict) else {}
    retrieval = config.get("retrieval") or {}
    activation = config.get("activation") or {}
    value = {name: retrieval.get(name, default) for name, (default, _, _) in RETRIEVAL.items()}
    relations = {role: RelationWeight(float(w.get("forward", DEFAULT_RELATION.forward)),
                                      float(w.get("reverse", DEFAULT_RELATION.reverse)))
                 for role, w in (activation.get("relations") or {}).items()}
    return RecallSettings(
        depth=value["depth"], max_seeds=value["maxSeeds"], max_nodes=value["maxNodes"],
        max_edges=value["maxEdges"], max_scan=value["maxScan"], lexical_candidates=value["lexicalCandidates"],
        semantic_candidates=value["semanticCandidates"],
        weights=Weights(**{k: float(v) for k, v in (retrieval.get("weights") or DEFAULT_WEIGHTS).items()}),
        beta=float(activation.get("maxBoost", DEFAULT_BETA)),
        propagation=float(activation.get("propagation", DEFAULT_PROPAGATION)), relations=relations,
    )


@dataclass(frozen=True)
class RankedNode:
    revision: Revision
    m: float
    u: float
    activation: float  # unnormalized a_i: the weight w(x) of read's selection
    score: float  # a_i / Σa


@dataclass
class Recall:
    nodes: list[Revision]  # acquisition order
    m: list[float]
    u: list[float]
    edges: list[tuple[int, int, str]]  # (from, to, role) by node position, collapsed
    activations: tuple[float, ...]
    scores: list[float]
    ranking: list[int]  # node positions with score > 0, best first
    stale: list[Revision]  # stale candidates and neighbours, first found first
    reads: list[Revision]  # every revision re-read, once each, first-read order
    scanned: int
    complete: bool
    approximate: bool
    partial: bool
    converged: bool
    numeric_error_l1_upper: float
    work: int
    evaluated_at: int
    stop: Stop
    index: str = "ready"  # "pending" while a candidate lacked a valid index entry (docs/atoms.md "Semantic index")
    links: GraphLinks = field(default_factory=GraphLinks)  # slots, origins and target heads of expanded nodes

    @property
    def ranked(self) -> list[RankedNode]:
        return [RankedNode(self.nodes[i], self.m[i], self.u[i], self.activations[i], self.scores[i])
                for i in self.ranking]


class Visible:
    """The node rule: an active head the binding may read and review does not hide."""

    def __init__(self, read_policies: Sequence[str], require_approval: bool) -> None:
        self.policies = set(read_policies)
        self.require_approval = require_approval

    def readable(self, revision: Revision) -> bool:
        """Inside the read policies and not hidden by review, head or not."""
        return (revision.policy in self.policies and revision.review_status not in HIDDEN_REVIEW
                and (not self.require_approval or revision.review_status == ReviewStatus.APPROVED))

    def __call__(self, revision: Revision) -> bool:
        return revision.is_head and revision.state == RevisionState.ACTIVE and self.readable(revision)


class _Full(Exception):
    """maxNodes or maxEdges reached: acquisition stops, partial."""


@dataclass
class _Acquisition:
    visible: Visible
    staleness: Staleness
    relations: dict[str, RelationWeight]
    max_nodes: int
    max_edges: int
    nodes: list[Revision] = field(default_factory=list)
    positions: dict[str, int] = field(default_factory=dict)  # atom id → position
    edges: list[tuple[int, int, str]] = field(default_factory=list)
    edge_keys: set[tuple[int, int, str]] = field(default_factory=set)
    stale: list[Revision] = field(default_factory=list)
    reads: list[Revision] = field(default_factory=list)
    read_ids: set[str] = field(default_factory=set)
    rejected: set[str] = field(default_factory=set)  # revision ids that cannot be nodes
    partial: bool = False
    links: GraphLinks = field(default_factory=GraphLinks)  # what `expand` read: for search's page, read's closures
    # Atom id → the (slot, head) pairs of active heads that link to it, for every atom read.
    linkers: dict[str, list[tuple[SlotRow, Revision]]] = field(default_factory=dict)

    def read(self, revision: Revision) -> None:
        if revision.id not in self.read_ids:
            self.read_ids.add(revision.id)
            self.reads.append(revision)

    def set_stale(self, revision: Revision) -> None:
        if revision.id not in self.rejected:
            self.rejected.add(revision.id)
            self.stale.append(revision)

    def add_node(self, revision: Revision) -> int:
        if len(self.nodes) >= self.max_nodes:
            self.partial = True
            raise _Full
        self.positions[revision.atom_id] = len(self.nodes)
        self.nodes.append(revision)
        return len(self.nodes) - 1

    def link(self, source: Revision, target: Revision, role: str, new: Revision, frontier: list[int]) -> None:
        """Record the link source → target; `new` (one of the two) may join as a node."""
        if new.atom_id not in self.positions:
            if new.id in self.rejected or not self.visible(new):
                return
            self.read(new)
            if self.staleness.is_stale(new):
                self.set_stale(new)
                return
            if len(self.edges) >= self.max_edges:  # the new node's edge could not be kept
                self.partial = True
                raise _Full
            frontier.append(self.add_node(new))
        key = (self.positions[source.atom_id], self.positions[target.atom_id], role)
        if key in self.edge_keys:
            return
        if len(self.edges) >= self.max_edges:
            self.partial = True
            raise _Full
        self.edge_keys.add(key)
        self.edges.append(key)

    def _read(self, revisions: list[Revision], ahead: Ahead) -> None:
        """Read the links of the revisions and atoms not read yet (atoms.services.links
        `load_links`): nothing when an earlier level's statement read them ahead."""
        ids = [r.id for r in revisions if r.id not in self.links.slots]
        atoms = sorted({r.atom_id for r in revisions if r.atom_id not in self.linkers})
        if not ids and not atoms:
            return
        links = load_links(revisions[0].tenant_id, ids, atoms, ahead=ahead)
        self.links.absorb(links, (*ids, *links.members))
        fresh_atoms = {a for a in (*atoms, *links.members.values()) if a is not None and a not in self.linkers}
        for atom_id in fresh_atoms:
            self.linkers[atom_id] = []
        for slot, linker in links.linkers:
            if slot.target_atom_id in fresh_atoms:
                self.linkers[slot.target_atom_id].append((slot, linker))
        for atom_id in fresh_atoms:
            self.linkers[atom_id].sort(key=lambda pair: (pair[1].seq, pair[1].id, pair[0].position))

    def expand(self, level: list[int], deadline_passed: Callable[[], bool], ahead: Ahead = "") -> list[int]:
        """Expand one breadth-first level in acquisition order; returns the next level.

        At most one query whatever the level's size (`_read`): the level's own slots with
        their targets' heads and its origins, together with the slots of active heads that
        link into it and those heads; with `ahead`, the slots and origins of every revision
        that could join at this level as well ("links"), and their linking slots when another
        level follows ("level"), so that expanding it costs no query. A level read ahead
        this way sends no query, so its own joiners are not read ahead (at depth 2, search's
        page and read's closures read theirs). All but the linkers are kept in `links`:
        search's page and read's closure load do not read them again. Staleness of every
        revision that could join is judged in bulk before the walk."""
        revisions = [self.nodes[i] for i in level]
        self._read(revisions, ahead)
        slots = {r.id: self.links.slots[r.id] for r in revisions}
        linkers = {r.atom_id: self.linkers[r.atom_id] for r in revisions}
        heads = self.links.heads  # every target atom of the level's slots that has a head
        joining = [h for r in revisions for slot in slots[r.id]
                   if (h := heads.get(slot.target_atom_id)) is not None and h.atom_id not in self.positions]
        joining += [r for pairs in linkers.values() for _, r in pairs if r.atom_id not in self.positions]
        self.staleness.prefetch(r for r in joining if r.id not in self.rejected and self.visible(r))
        frontier: list[int] = []
        for x in revisions:
            if deadline_passed():
                raise _Deadline
            for slot in slots.get(x.id, []):
                head = heads.get(slot.target_atom_id)
                # An observed link is followed only while its pinned revision is the head.
                if head is None or (slot.target_revision_id and slot.target_revision_id != head.id):
                    continue
                if is_traversed(slot.role, self.relations, DEFAULT_RELATION):
                    self.link(x, head, slot.role, head, frontier)
            for slot, linker in linkers.get(x.atom_id, []):
                if slot.target_revision_id and slot.target_revision_id != x.id:
                    continue
                if is_traversed(slot.role, self.relations, DEFAULT_RELATION):
                    self.link(linker, x, slot.role, linker, frontier)
        return frontier


class _Deadline(Exception):
    """The request's deadline passed during acquisition."""


def _checked_refs(candidates: Candidates, max_scan: int) -> list[tuple[str, str]]:
    """(atomId, revisionId) of the provider's entries; more than maxScan or a non-pinned
    entry is the provider's fault, reported as INVALID_INPUT (docs/atoms.md "Candidates")."""
    if len(candidates.refs) > max_scan:
        raise invalid("The candidate provider returned more entries than maxScan.")
    out = []
    for ref in candidates.refs:
        if not isinstance(ref, Mapping) or ref.get("kind") != "pinned" \
                or not isinstance(ref.get("atomId"), str) or not isinstance(ref.get("revisionId"), str):
            raise invalid("The candidate provider returned an entry that is not a PinnedRef.")
        out.append((ref["atomId"], ref["revisionId"]))
    return out


def _reread(tenant_id: int, refs: list[tuple[str, str]], known: Mapping[str, Revision]) -> list[Revision]:
    """The revisions of `refs` that exist in this tenant; `known` rows (read whole by the
    provider in this transaction) are taken as they are."""
    ids = [revision_id for _, revision_id in refs if revision_id not in known]
    found: dict[str, Revision] = {r.id: r for r in known.values() if r.tenant_id == tenant_id}
    found.update(revisions_by_id(tenant_id, ids))
    return [found[r] for a, r in refs if r in found and found[r].atom_id == a]


def recall(*, binding: Binding, store: AtomStore, kinds: Mapping[str, Sequence[str]], depth: int, budget: Budget,
           now: int, provider: Provider | None = None, semantic: Semantic | None = None) -> Recall:
    """docs/atoms.md "Candidates" and "Defaults" for one request. Raises BUDGET_EXHAUSTED when the solver cannot even
    start, INVALID_INPUT / STATE_INVALIDATED from the availability model."""
    tenant = binding.principal.tenant
    settings = recall_settings(store.config)
    deadline = budget.deadline

    def deadline_passed() -> bool:
        return deadline is not None and now_ms() > deadline

    limit = min(settings.max_scan, budget.limits["maxCandidates"])
    if semantic is None:
        semantic = prepare(tenant, store, kinds)
    if provider is None:
        candidates = two_channel_candidates(
            tenant=tenant, kinds=kinds, read_policies=binding.read_policies, require_approval=store.require_approval,
            limit=limit, lexical_k=settings.lexical_candidates, semantic_k=settings.semantic_candidates,
            semantic=semantic)
    else:
        candidates = provider(tenant=tenant, kinds=kinds, read_policies=binding.read_policies,
                              require_approval=store.require_approval, limit=limit)
    stats = candidates.statistics
    if stats is None:  # a provider of its own (tests): the statistics are still ours
        stats = load_statistics(tenant.pk, binding.read_policies, signal_terms(kinds))
    visible = Visible(binding.read_policies, store.require_approval)
    acquisition = _Acquisition(visible=visible, staleness=Staleness(tenant), relations=settings.relations,
                               max_nodes=settings.max_nodes, max_edges=settings.max_edges)
    m_of: dict[str, float] = {}
    pool: list[Revision] = []
    visible_candidates = [r for r in _reread(tenant.pk, _checked_refs(candidates, settings.max_scan), candidates.rows)
                          if visible(r)]
    matches = seed_matches(kinds, visible_candidates, stats, cosines(tenant, semantic, visible_candidates),
                           settings.weights)
    acquisition.staleness.prefetch(visible_candidates)  # no query per candidate (docs/atoms.md "Read path costs")
    for revision in visible_candidates:
        m = matches[revision.id]
        if m <= 0:
            continue
        acquisition.read(revision)
        if acquisition.staleness.is_stale(revision):
            acquisition.set_stale(revision)  # stale candidates never lend activation
            continue
        m_of[revision.atom_id] = m
        pool.append(revision)
    pool.sort(key=lambda r: (-m_of[r.atom_id], r.body_bytes, r.atom_id))
    stop: Stop = "completed"
    try:
        level = [acquisition.add_node(r) for r in pool[:settings.max_seeds]]
        for step in range(depth):
            if not level:
                break
            level = acquisition.expand(level, deadline_passed, ahead="level" if step < depth - 1 else "links")
    except _Full:
        pass
    except _Deadline:
        acquisition.partial = True
        stop = "deadline"
    result = _evaluate(binding, store, acquisition, m_of, candidates, settings, budget, now, stop, deadline_passed)
    result.index = semantic.index
    return result


def _evaluate(binding: Binding, store: AtomStore, acquisition: _Acquisition, m_of: dict[str, float],
              candidates: Candidates, settings: RecallSettings, budget: Budget, now: int, stop: Stop,
              deadline_passed: Callable[[], bool]) -> Recall:
    tenant, subject, policies = binding.principal.tenant, binding.principal.subject, binding.read_policies
    nodes = acquisition.nodes
    evaluated_at, values = availability.use_snapshot(tenant, subject, policies, [r.id for r in nodes], now,
                                                     model=availability.model_for(tenant, store=store))
    graph = ActivationGraph()
    m = [m_of.get(r.atom_id, 0.0) for r in nodes]
    u = [values[r.id] for r in nodes]
    for revision, m_i, u_i in zip(nodes, m, u, strict=True):
        graph.add_node(GraphNode(atom_id=revision.atom_id, m=m_i, u=u_i, body_bytes=revision.body_bytes))
    for source, target, role in acquisition.edges:
        graph.add_edge(nodes[source].atom_id, nodes[target].atom_id, role)
    try:
        evaluation = evaluate(graph, beta=settings.beta, p=settings.propagation, relations=settings.relations,
                              default_relation=DEFAULT_RELATION, max_work=budget.limits["maxEvaluationWork"],
                              deadline_passed=None if stop == "deadline" else deadline_passed)
    except BudgetExhausted as exc:
        raise from_core(exc) from exc
    solution = evaluation.solution
    if stop != "deadline":
        stop = solution.stop
    return Recall(
        nodes=nodes, m=m, u=u, edges=list(acquisition.edges), activations=solution.x, scores=evaluation.scores,
        ranking=evaluation.ranking, stale=acquisition.stale, reads=acquisition.reads, scanned=candidates.scanned,
        complete=candidates.complete, approximate=candidates.approximate or not candidates.complete,
        partial=acquisition.partial, converged=solution.converged,
        numeric_error_l1_upper=solution.numeric_error_l1_upper, work=solution.work, evaluated_at=evaluated_at,
        stop=stop, links=acquisition.links,
    )



def recall_figures(result: Recall) -> dict[str, Any]:
    """The evaluation figures a page reports and a cursor carries (search and read alike)."""
    return {"approximate": result.approximate, "scanned": result.scanned, "partial": result.partial,
            "evaluatedAt": result.evaluated_at, "converged": result.converged,
            "numericErrorL1Upper": result.numeric_error_l1_upper, "work": result.work, "stop": result.stop,
            "index": result.index}
