"""read (docs/atoms.md "Recall"): a budgeted set of closures for an agent's state, rendered once.

The first page runs docs/atoms.md "Candidates" and "Defaults" over the state's kinds (recall_graph), computes the required
closure C(r) of every ranked root (read_nodes), packs them by bounded marginal gain
(atoms.core.selection) and renders format 2 (atoms.core.render). Items are the selected
units' AtomViews with scores, in render order; closure-only members outside the graph
score 0, and items keep their full text even where the render quotes.

A cursor freezes the ranking and the activations, never revision ids (like search): it
names the first page's receipt, whose manifest lists every revision the evaluation read,
and holds positions in that list with the activation and score of each root not yet shown.
The next page selects among those roots, recomputing their closures. read never touches
use state.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from atoms.clock import now_ms
from atoms.core.canonical import sha256_hex
from atoms.core.closure import AtomNode, closures
from atoms.core.render import Layout, quote_json
from atoms.core.selection import PackingBudget, Selection, recall_stop, select
from atoms.core.text import seed_match
from atoms.errors import AtomError
from atoms.models import AtomStore, Receipt, Revision
from atoms.models.review import HIDDEN_REVIEW
from atoms.principal import Binding
from atoms.services.barrier import open_store, store_again
from atoms.services.budget import check_deadline
from atoms.services.cursors import bound_request, issue_cursor, open_cursor
from atoms.services.links import GraphLinks
from atoms.services.read_nodes import NodeBuilder
from atoms.services.read_options import ReadOptions, options_as_sent
from atoms.services.recall_graph import recall, recall_figures, recall_settings
from atoms.services.receipts import PresentedUnit, create_receipt, pinned
from atoms.services.rows import revisions_by_id
from atoms.services.semantic import Semantic, prepare
from atoms.services.snapshot import read_snapshot, retried
from atoms.services.staleness import Staleness


@dataclass
class Frozen:
    """The ranking a page selects from: roots (best first) with activation and score, the
    stale revisions, the evaluation's reads and figures."""

    roots: list[tuple[Revision, float, float]]  # (revision, activation, score)
    scores: dict[str, float]  # graph nodes' scores, for closure members that are nodes
    stale: list[Revision]
    reads: list[Revision]
    state_seq: int
    origin: str | None  # the first page's receipt; None on the first page
    figures: dict[str, Any]
    first_page: bool
    links: GraphLinks | None = None  # what the first page's graph acquisition read


@dataclass(frozen=True)
class ReadCommand:
    """One read, validated and authorized (docs/architecture.md "Typed services"): the API
    parses a body into it (atoms/api/read.py), the playground builds it from its form."""

    binding: Binding
    state: dict[str, Any]  # the state's kinds in STATE_KEYS order (read_options.parse_state)
    options: ReadOptions = field(default_factory=ReadOptions)
    # The options as the caller sent them: a cursor is bound to them (docs/atoms.md "Recall").
    # None when the command was built in code; then they are the options that differ from
    # the defaults, as a form would send them.
    sent_options: dict[str, Any] | None = None

    def options_as_sent(self) -> dict[str, Any] | None:
        return self.sent_options if self.sent_options is not None else options_as_sent(self.options)


@dataclass(frozen=True)
class ReadResult:
    """What one read answers; atoms/api/read.py renders it as the RecallResult JSON."""

    items: list[dict[str, Any]]  # the selected units' AtomViews with `score`, in render order
    text: str  # the canonical format-2 render
    sources: list[dict[str, Any]]
    token_count: int
    stale: list[str]  # refs of stale revisions the ranking met
    receipt: Receipt
    usage: dict[str, int]
    diagnostics: dict[str, Any]
    cursor: str | None

    @property
    def refs(self) -> list[str]:
        return [item["ref"] for item in self.items]


@retried
def atoms_read(command: ReadCommand, store: AtomStore | None = None) -> ReadResult:
    """One read (docs/atoms.md "Recall", "Selection utility (read)"). Refs, cursor and receipt are made in one
    transaction. `store` is the tenant's store row when the caller has just loaded it to check the
    purge barrier (the API does); None loads and checks it here."""
    binding, state, options = command.binding, command.state, command.options
    caller = binding.principal
    store = store if store is not None else open_store(caller.tenant)
    check_deadline(options.budget, now_ms())
    request = bound_request({"state": state}, command.options_as_sent(), store)
    kinds = {kind: value if isinstance(value, list) else [value] for kind, value in state.items()}
    # Signals are encoded before the transaction: a first model load or a slow encoder must
    # not hold a database transaction open.
    semantic = prepare(caller.tenant, store, kinds) if options.cursor is None else None
    with read_snapshot():
        store = store_again(store)
        if options.cursor is None:
            frozen = _evaluate(binding, store, kinds, options, semantic)
        else:
            page = open_cursor(binding=binding, kind="read", request=request, cursor=options.cursor,
                               index_generation=store.index_generation)
            frozen = _resume(binding, page)
        return _page(binding, store, state, kinds, options, request, frozen)


def _evaluate(binding: Binding, store: AtomStore, kinds: dict[str, list[str]], options: ReadOptions,
              semantic: Semantic | None) -> Frozen:
    depth = options.depth if options.depth is not None else recall_settings(store.config).depth
    result = recall(binding=binding, store=store, kinds=kinds, depth=depth, budget=options.budget, now=now_ms(),
                    semantic=semantic)
    ranked = result.ranked
    return Frozen(roots=[(node.revision, node.activation, node.score) for node in ranked],
                  scores={r.id: score for r, score in zip(result.nodes, result.scores, strict=True)},
                  stale=result.stale, reads=result.reads, state_seq=store.seq, origin=None,
                  figures=recall_figures(result), first_page=True, links=result.links)


def _expired(message: str) -> AtomError:
    return AtomError("CURSOR_EXPIRED", message, {"path": "options.cursor"})


def _resume(binding: Binding, page: dict[str, Any]) -> Frozen:
    """The roots of a frozen ranking not shown yet; never re-evaluated."""
    principal = binding.principal
    origin = Receipt.objects.filter(tenant=principal.tenant, id=page.get("origin"),
                                    principal=principal.principal_id, kind="read").first()
    if origin is None:
        raise _expired("The read this cursor continues is gone.")
    pins = origin.manifest["acquisition"]["reads"]
    try:
        rest = [(pins[i]["revisionId"], float(activation), float(score)) for i, activation, score in page["rest"]]
        scores = {pins[i]["revisionId"]: float(score) for i, score in page["scores"]}
        stale_ids = [pins[i]["revisionId"] for i in page["stale"]]
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise _expired("The cursor does not match its read.") from exc
    found = revisions_by_id(principal.tenant.pk, [i for i, _, _ in rest] + stale_ids)
    # Whatever became unavailable since is blocked by its closure on this page.
    roots = [(found[i], activation, score) for i, activation, score in rest if i in found]
    policies = set(binding.read_policies)
    stale = [found[i] for i in stale_ids if i in found and found[i].policy in policies
             and found[i].review_status not in HIDDEN_REVIEW]
    reads = [Revision(id=p["revisionId"], atom_id=p["atomId"]) for p in pins]
    return Frozen(roots=roots, scores=scores, stale=stale, reads=reads,
                  state_seq=page["seq"], origin=origin.id, figures=page["figures"], first_page=False)


def _select(frozen: Frozen, options: ReadOptions, builder: NodeBuilder) -> Selection:
    """The page: priced with stand-in refs, then rendered with the real refs of what it
    shows, issued in one bulk call (docs/atoms.md "Read path costs")."""
    # Every closure and view the page may need, in bulk; the stale ones ride along.
    roots = builder.load((r for r, _, _ in frozen.roots), also=frozen.stale)
    # Priced with stand-in refs, so not rendered: the page is rendered once, below, with its refs.
    selection = _pack(frozen, options, builder, roots, render=False)
    nodes = builder.finish(selection.selected, also=frozen.stale)
    if nodes is None:  # a ref of another length: price again with the real refs
        builder.issue_all(also=frozen.stale)
        return _pack(frozen, options, builder, [builder.nodes[r.id] for r, _, _ in frozen.roots])
    rendered = Layout(nodes).render(selection.selected)
    if rendered.token_count != selection.token_count:
        raise AssertionError("a page rendered with its refs must cost what it was priced at")
    return replace(selection, nodes=tuple(nodes), text=rendered.text, sources=rendered.sources,
                   quoted=rendered.quoted)


def _pack(frozen: Frozen, options: ReadOptions, builder: NodeBuilder, roots: list[AtomNode], *,
          render: bool = True) -> Selection:
    found = closures(roots, builder)
    limits = options.budget.limits
    deadline = options.budget.deadline
    return select(
        ranking=[node.revision_id for node in roots], closures=found,
        weights={r.id: activation for r, activation, _ in frozen.roots},
        budget=PackingBudget(tokens=options.tokens, limit=options.limit, max_context_tokens=limits["maxContextTokens"],
                             max_atoms=limits["maxAtoms"], max_bytes=limits["maxBytes"],
                             max_packing_work=limits["maxPackingWork"]),
        deadline_passed=None if deadline is None else (lambda: now_ms() > deadline), render=render,
    )


def _observation(binding: Binding, state: dict[str, Any], kinds: dict[str, list[str]], frozen: Frozen,
                 shown: list[Revision], full: bool) -> dict[str, Any]:
    lexical = [seed_match(kinds, revision.body) for revision in shown]
    return {"kind": "read", "signals": state, "readPolicies": sorted(binding.read_policies),
            "seq": frozen.state_seq, "revisions": [pinned(revision) for revision in shown], "full": full,
            "mFloor": min((m for m in lexical if m > 0), default=0)}


def _diagnostics(figures: dict[str, Any], selection: Selection, stop: str, stale: int) -> dict[str, Any]:
    diagnostics: dict[str, Any] = {
        "method": "graph-activation", "traversal": "bounded-bfs", "approximate": figures["approximate"],
        "scanned": figures["scanned"], "index": figures.get("index", "ready"), "derived": "pending" if stale else "ready",
        "stop": stop, "evaluatedAt": figures["evaluatedAt"], "evaluationConverged": figures["converged"],
        "numericErrorL1Upper": figures["numericErrorL1Upper"],
        "acquisition": {"partial": figures["partial"], "scanned": figures["scanned"], "index": figures.get("index", "ready")},
        "validation": {"stale": stale, "blocked": len(selection.blocked)},
        "evaluation": {"converged": figures["converged"], "numericErrorL1Upper": figures["numericErrorL1Upper"],
                       "scope": "acquired-graph", "work": figures["work"]},
        "selection": {"method": "bounded-marginal-gain", "complete": selection.complete,
                      "baselineComplete": selection.baseline_complete, "utility": selection.utility,
                      "baselineUtility": selection.baseline_utility, "work": selection.work},
        "coverageCertified": False,
    }
    if stale:
        diagnostics["derivedReason"] = "dependency-stale"
    if selection.minimum_tokens is not None:
        diagnostics["minimumTokens"] = selection.minimum_tokens
        diagnostics["selection"]["minimumTokens"] = selection.minimum_tokens
    return diagnostics


def _page(binding: Binding, store: AtomStore, state: dict[str, Any], kinds: dict[str, list[str]],
          options: ReadOptions, request: dict[str, Any], frozen: Frozen) -> ReadResult:
    principal = binding.principal
    builder = NodeBuilder(binding, store, Staleness(principal.tenant, require_approval=store.require_approval),
                          frozen.links)
    selection = _select(frozen, options, builder)
    shown = [builder.revisions[key] for key in selection.selected]
    views = [{**builder.views[key], "score": frozen.scores.get(key, 0)} for key in selection.selected]
    units: list[PresentedUnit] = []
    for key, revision, view in zip(selection.selected, shown, views, strict=True):
        quote = selection.quoted.get(key)
        unit = PresentedUnit(revision=revision, view=view, display="body" if quote is None else "quote")
        if quote is not None:
            unit["quote"] = quote_json(quote)
        units.append(unit)
    selected = set(selection.selected)
    rest = [(r, activation, score) for r, activation, score in frozen.roots if r.id not in selected]
    cursor_due = selection.cursor
    # full: a cursor is returned, or ranked roots were left out (earlier pages count).
    full = bool(rest) or not frozen.first_page
    reads = frozen.reads + builder.reads  # closure members are acquisition reads too
    receipt = create_receipt(binding=binding, kind="read", signal=state, reads=reads, units=units,
                             observations=[_observation(binding, state, kinds, frozen, shown, full)],
                             state_seq=frozen.state_seq, presentation_digest=sha256_hex(selection.text),
                             index_generation=store.index_generation)
    stale_refs = builder.refs
    figures = frozen.figures
    cursor: str | None = None
    if cursor_due:
        # Positions in the first page's acquisition reads, which list `frozen.reads` first, in order.
        positions = {revision.id: i for i, revision in enumerate(frozen.reads)}
        page = {"origin": frozen.origin or receipt.id, "seq": frozen.state_seq, "figures": figures,
                "rest": [[positions[r.id], activation, score] for r, activation, score in rest],
                # Every graph node's score, for roots shown again as closure members.
                "scores": [[positions[key], score] for key, score in frozen.scores.items() if score > 0],
                "stale": [positions[r.id] for r in frozen.stale]}
        cursor = issue_cursor(binding=binding, kind="read", request=request, page=page,
                              index_generation=store.index_generation)
    return ReadResult(
        items=views, text=selection.text, sources=[dict(s) for s in selection.sources],
        token_count=selection.token_count, stale=[stale_refs[r.id] for r in frozen.stale], receipt=receipt,
        usage={"maxAtoms": len(views), "maxCandidates": figures["scanned"] if frozen.first_page else 0,
               "maxBytes": selection.text_bytes, "maxContextTokens": selection.token_count,
               "maxEvaluationWork": figures["work"] if frozen.first_page else 0,
               "maxPackingWork": selection.work},
        diagnostics=_diagnostics(figures, selection, recall_stop(selection, figures["stop"]), len(frozen.stale)),
        cursor=cursor,
    )
