"""search (docs/atoms.md "Recall"): the frozen activation ranking of one query, a page at a time.

The first request runs docs/atoms.md "Candidates" and "Defaults" with `query` as the only signal kind and pages the
ranking; no closure is computed, so an atom whose required target is retired still appears.
A cursor freezes the ranking. It never carries revision ids (cursors are readable by the
caller): it names the first page's receipt, whose host-side manifest lists every revision
the evaluation read, and holds positions in that list with their scores. A purge bumps the
index generation, which expires such cursors before any position could go stale.

Every page records a search receipt whose Observation (docs/atoms.md "Match") lets tokens built on it watch
the query. search never touches use state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from atoms.clock import now_ms
from atoms.core.text import seed_match
from atoms.errors import AtomError
from atoms.models import AtomStore, Receipt, Revision
from atoms.principal import Binding
from atoms.services.barrier import open_store, store_again
from atoms.services.budget import Budget, check_deadline, paging_as_sent, parse_paging
from atoms.services.cursors import bound_request, issue_cursor, open_cursor
from atoms.services.links import GraphLinks
from atoms.services.recall_graph import Visible, recall, recall_figures, recall_settings
from atoms.services.receipts import PresentedUnit, create_receipt, pinned
from atoms.services.rows import revisions_by_id
from atoms.services.semantic import Semantic, prepare
from atoms.services.snapshot import read_snapshot, retried
from atoms.services.views import views_and_refs

OPTION_KEYS = {"limit", "depth", "cursor", "budget", "deadline"}
DEFAULT_LIMIT = 10
MAX_LIMIT = 10_000
MAX_DEPTH = 32

Entry = tuple[Revision, float]  # a ranked revision and its score


@dataclass(frozen=True)
class SearchOptions:
    limit: int = DEFAULT_LIMIT
    depth: int | None = None  # None: the tenant's retrieval.depth (2 by default)
    cursor: str | None = None
    budget: Budget = field(default_factory=Budget)


def parse_options(raw: Any) -> SearchOptions:
    _, paging = parse_paging(raw, keys=OPTION_KEYS, default_limit=DEFAULT_LIMIT, max_limit=MAX_LIMIT,
                             max_depth=MAX_DEPTH)
    return SearchOptions(limit=paging.limit, depth=paging.depth, cursor=paging.cursor, budget=paging.budget)


def options_as_sent(options: SearchOptions) -> dict[str, Any]:
    """The options object a form would send for `options`: the page size and what differs
    from the defaults (a cursor is bound to the options as sent, less the cursor)."""
    return paging_as_sent(limit=options.limit, depth=options.depth, cursor=options.cursor, budget=options.budget)


@dataclass(frozen=True)
class SearchCommand:
    """One search, validated and authorized (docs/architecture.md "Typed services"): the API
    parses a body into it (atoms/api/search.py)."""

    binding: Binding
    query: str  # non-blank
    options: SearchOptions = field(default_factory=SearchOptions)
    # The options as the caller sent them: a cursor is bound to them (docs/atoms.md "Recall").
    # None when the command was built in code; then they are the options that differ from
    # the defaults, as a form would send them.
    sent_options: dict[str, Any] | None = None

    def options_as_sent(self) -> dict[str, Any]:
        return self.sent_options if self.sent_options is not None else options_as_sent(self.options)


@dataclass(frozen=True)
class SearchResult:
    """What one search page answers; atoms/api/search.py renders it as the SearchResult JSON."""

    items: list[dict[str, Any]]  # AtomViews with `score`, in ranking order (docs/atoms.md "Recall")
    stale: list[str]  # refs of stale revisions the ranking set aside
    receipt: Receipt
    diagnostics: dict[str, Any]  # docs/atoms.md "Recall"
    usage: dict[str, int]
    cursor: str | None


@dataclass
class Frozen:
    """A ranking to page through: what remains of it, the evaluation's figures, the reads."""

    entries: list[Entry]
    stale: list[Revision]
    reads: list[Revision]
    state_seq: int
    origin: str | None  # the receipt holding `reads`; None on the first page
    figures: dict[str, Any]
    first_page: bool
    links: GraphLinks | None = None  # what the first page's graph acquisition read


@retried
def atoms_search(command: SearchCommand, store: AtomStore | None = None) -> SearchResult:
    """docs/atoms.md "Recall". Refs, cursor and receipt are made in one transaction with the reads.
    `store` as for atoms_read: the row the caller loaded to check the purge barrier, or None."""
    binding, query, options = command.binding, command.query, command.options
    store = store if store is not None else open_store(binding.principal.tenant)
    check_deadline(options.budget, now_ms())
    request = bound_request({"query": query}, command.options_as_sent(), store)
    # Signals are encoded before the transaction: a first model load or a slow encoder must
    # not hold a database transaction open.
    semantic = prepare(binding.principal.tenant, store, {"query": [query]}) if options.cursor is None else None
    with read_snapshot():
        store = store_again(store)
        if options.cursor is None:
            frozen = _evaluate(binding, store, query, options, semantic)
        else:
            page = open_cursor(binding=binding, kind="search", request=request, cursor=options.cursor,
                               index_generation=store.index_generation)
            frozen = _resume(binding, store, page)
        return _page(binding, store, query, options, request, frozen)


def _evaluate(binding: Binding, store: AtomStore, query: str, options: SearchOptions,
              semantic: Semantic | None) -> Frozen:
    depth = options.depth if options.depth is not None else recall_settings(store.config).depth
    result = recall(binding=binding, store=store, kinds={"query": [query]}, depth=depth, budget=options.budget,
                    now=now_ms(), semantic=semantic)
    return Frozen(entries=[(node.revision, node.score) for node in result.ranked], stale=result.stale,
                  reads=result.reads, state_seq=store.seq, origin=None, figures=recall_figures(result), first_page=True,
                  links=result.links)


def _expired(message: str) -> AtomError:
    return AtomError("CURSOR_EXPIRED", message, {"path": "options.cursor"})


def _resume(binding: Binding, store: AtomStore, page: dict[str, Any]) -> Frozen:
    """The rest of a frozen ranking. Entries the caller may no longer see (review status,
    require-approval switched on) are dropped; the ranking is otherwise not re-evaluated."""
    principal = binding.principal
    origin = Receipt.objects.filter(tenant=principal.tenant, id=page.get("origin"),
                                    principal=principal.principal_id, kind="search").first()
    if origin is None:
        raise _expired("The search this cursor continues is gone.")
    pins = origin.manifest["acquisition"]["reads"]
    try:
        rest = [(pins[i]["revisionId"], float(score)) for i, score in page["rest"]]
        stale_ids = [pins[i]["revisionId"] for i in page["stale"]]
    except (KeyError, IndexError, TypeError, ValueError) as exc:
        raise _expired("The cursor does not match its search.") from exc
    found = revisions_by_id(principal.tenant.pk, [i for i, _ in rest] + stale_ids)
    # Frozen revisions may have stopped being heads since; only what hides them is re-checked.
    visible = Visible(binding.read_policies, store.require_approval)
    entries = [(found[i], score) for i, score in rest if i in found and visible.readable(found[i])]
    stale = [found[i] for i in stale_ids if i in found and visible.readable(found[i])]
    reads = [Revision(id=p["revisionId"], atom_id=p["atomId"]) for p in pins]
    return Frozen(entries=entries, stale=stale, reads=reads, state_seq=page["seq"], origin=origin.id,
                  figures=page["figures"], first_page=False)


def _fill(entries: list[Entry], limit: int, budget: Budget) -> tuple[list[Entry], int, str]:
    """Items in ranking order until limit, maxAtoms or maxBytes; returns (page, bytes, stop)."""
    page: list[Entry] = []
    used = 0
    for revision, score in entries:
        if len(page) >= limit:
            return page, used, "page-limit"
        if len(page) + 1 > budget.limits["maxAtoms"] or used + revision.body_bytes > budget.limits["maxBytes"]:
            return page, used, "budget"
        page.append((revision, score))
        used += revision.body_bytes
    return page, used, "completed"


def _observation(binding: Binding, query: str, frozen: Frozen, page: list[Entry], full: bool) -> dict[str, Any]:
    lexical = [seed_match({"query": [query]}, revision.body) for revision, _ in page]
    return {"kind": "search", "signals": {"query": query}, "readPolicies": sorted(binding.read_policies),
            "seq": frozen.state_seq, "revisions": [pinned(revision) for revision, _ in page], "full": full,
            "mFloor": min((m for m in lexical if m > 0), default=0)}


def _diagnostics(figures: dict[str, Any], stop: str, stale: int) -> dict[str, Any]:
    diagnostics: dict[str, Any] = {
        "method": "graph-activation", "traversal": "bounded-bfs", "approximate": figures["approximate"],
        "scanned": figures["scanned"], "index": figures.get("index", "ready"), "derived": "pending" if stale else "ready",
        "stop": stop, "evaluatedAt": figures["evaluatedAt"], "evaluationConverged": figures["converged"],
        "numericErrorL1Upper": figures["numericErrorL1Upper"],
        "acquisition": {"partial": figures["partial"], "scanned": figures["scanned"], "index": figures.get("index", "ready")},
        "evaluation": {"converged": figures["converged"], "numericErrorL1Upper": figures["numericErrorL1Upper"],
                       "scope": "acquired-graph", "work": figures["work"]},
        "coverageCertified": False,
    }
    if stale:
        diagnostics["derivedReason"] = "dependency-stale"
    return diagnostics


def _page(binding: Binding, store: AtomStore, query: str, options: SearchOptions, request: dict[str, Any],
          frozen: Frozen) -> SearchResult:
    principal = binding.principal
    page, used_bytes, page_stop = _fill(frozen.entries, options.limit, options.budget)
    if frozen.entries and not page:
        # The same request would give the same empty page forever.
        raise AtomError("BUDGET_EXHAUSTED", "The budget does not cover one item.",
                        {"maxAtoms": options.budget.limits["maxAtoms"], "maxBytes": options.budget.limits["maxBytes"]})
    rest = frozen.entries[len(page):]
    scores = {revision.id: score for revision, score in page}
    # One bulk ref issue for the items, their link targets and sources, and the stale ones.
    views, refs = views_and_refs(principal, [r for r, _ in page], binding.read_policies, scores=scores,
                                 also=frozen.stale, links=frozen.links)
    units = [PresentedUnit(revision=revision, view=view, display="body")
             for (revision, _), view in zip(page, views, strict=True)]
    # full: a cursor is returned, or ranked items were left out (earlier pages count).
    full = bool(rest) or not frozen.first_page
    receipt = create_receipt(binding=binding, kind="search", signal=query, reads=frozen.reads, units=units,
                             observations=[_observation(binding, query, frozen, page, full)],
                             state_seq=frozen.state_seq, index_generation=store.index_generation)
    figures = frozen.figures
    stop = figures["stop"] if figures["stop"] != "completed" else page_stop
    cursor: str | None = None
    if rest:
        # Positions in the origin receipt's acquisition reads, which list `frozen.reads` in order.
        positions = {revision.id: i for i, revision in enumerate(frozen.reads)}
        cursor_page = {"origin": frozen.origin or receipt.id, "seq": frozen.state_seq, "figures": figures,
                       "rest": [[positions[r.id], score] for r, score in rest],
                       "stale": [positions[r.id] for r in frozen.stale]}
        cursor = issue_cursor(binding=binding, kind="search", request=request, page=cursor_page,
                              index_generation=store.index_generation)
    return SearchResult(
        items=views, stale=[refs[r.id] for r in frozen.stale], receipt=receipt,
        diagnostics=_diagnostics(figures, stop, len(frozen.stale)),
        usage={"maxAtoms": len(page), "maxCandidates": figures["scanned"] if frozen.first_page else 0,
               "maxBytes": used_bytes, "maxContextTokens": 0,
               "maxEvaluationWork": figures["work"] if frozen.first_page else 0, "maxPackingWork": 0},
        cursor=cursor,
    )
