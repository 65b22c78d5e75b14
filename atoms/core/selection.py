"""Bounded marginal gain: which closures a read returns (docs/atoms.md "Selection utility (read)" and "Recall").

Inputs are the frozen ranking (revision ids, best first), the closure of every ranked root
and the unnormalized activations. Definitions, as in the spec:

- R is the ranking without blocked roots. The weight of the root at position k of R (k = 1
  for the first root not yet shown on this page) is w = a · 2^-(k-1), its activation halved
  per rank (docs/atoms.md "Selection utility (read)"); closure-only members
  weigh 0 (a revision missing from `weights` weighs 0). Since activations never rise along
  R, every root weighs more than all roots after it together: U prefers a better-ranked root
  to any number of worse-ranked ones, so packing never trades a relevant atom for many short,
  weakly relevant ones. The baseline (rank-order packing) is beaten only by a set that fits a
  better-ranked root more cheaply: closures that share members, quotes whose evidence merges.
- Classes: each revision is its own class, except that identical verified quotes (same
  source revision, span, producer, origin and slots) share one. U(S) sums, over classes,
  the largest weight in the class.
- S is feasible when cost(S) ≤ min(tokens, maxContextTokens), |S| ≤ min(limit, maxAtoms)
  and the items' text bytes Σ body bytes ≤ maxBytes (our reading of "maxBytes", which
  docs/atoms.md "Recall" reports as text bytes returned and docs/atoms.md "Recall" names as a bound).
- Every tentative evaluation of S with C(r) added charges |C(r)| units of maxPackingWork,
  before it is made; one that would exceed the budget is not made and packing stops.

Steps (the weight changes none of them): baseline (walk R, add C(r) whenever the union stays
feasible; every root is an evaluation, even one already inside S), singles (every C(r) alone,
each charged), greedy (best ΔU / max(1, Δtokens) among roots with C(r) ⊄ S, feasible,
ΔU ≥ 0; ties → larger ΔU, smaller Δtokens, smaller revision id), then the best of them:
higher U, fewer tokens, smaller sorted revision-id list. Out of work (or past the deadline) the best of what was built so far wins,
partial baseline and partial greedy included.

The stop reason, the cursor flag and minimumTokens are not charged.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from atoms.core.closure import AtomNode, Closure
from atoms.core.packing import Packing, Trial, quote_class
from atoms.core.render import Layout, Quote, Rendered, frame_cost, render_order

PackingStop = Literal["completed", "budget", "page-limit", "deadline"]


@dataclass(frozen=True, slots=True)
class PackingBudget:
    """The read options and budget keys selection obeys, already validated and capped."""

    tokens: int = 4096
    limit: int = 24
    max_context_tokens: int = 4096
    max_atoms: int = 128
    max_bytes: int = 4_194_304
    max_packing_work: int = 2_000_000

    @property
    def token_budget(self) -> int:
        return min(self.tokens, self.max_context_tokens)

    @property
    def size_budget(self) -> int:
        return min(self.limit, self.max_atoms)


@dataclass(frozen=True)
class Selection:
    """What read needs from packing. `selected`/`nodes` are in render order; `left_out` are
    the unblocked ranked roots not in S, in rank order; `blocked` the blocked ranked roots.
    `cursor` says a cursor must be returned (docs/atoms.md "Recall" cursor rule); `text_bytes` is Σ body bytes
    of the selected units (usage.maxBytes). `greedy_utility` is None when greedy never ran."""

    selected: tuple[str, ...]
    nodes: tuple[AtomNode, ...]
    text: str
    token_count: int
    sources: tuple[dict[str, Any], ...]
    utility: float
    baseline_utility: float
    greedy_utility: float | None
    work: int
    complete: bool
    baseline_complete: bool
    stop: PackingStop
    minimum_tokens: int | None
    cursor: bool
    left_out: tuple[str, ...]
    blocked: tuple[str, ...]
    text_bytes: int
    quoted: Mapping[str, Quote]  # the units rendered as quotes, by revision id


class _OutOfWork(Exception):
    """Packing work ran out or the deadline passed; unwinds to the best-so-far logic."""

    def __init__(self, deadline: bool) -> None:
        super().__init__()
        self.deadline = deadline


@dataclass
class _Meter:
    budget: int
    deadline_passed: Callable[[], bool] | None
    used: int = 0

    def charge(self, units: int) -> None:
        if self.deadline_passed is not None and self.deadline_passed():
            raise _OutOfWork(deadline=True)
        if self.used + units > self.budget:
            raise _OutOfWork(deadline=False)
        self.used += units


@dataclass(frozen=True, slots=True)
class _Candidate:
    utility: float
    cost: int
    ids: tuple[str, ...]  # sorted

    @property
    def key(self) -> tuple[float, int, tuple[str, ...]]:
        return (-self.utility, self.cost, self.ids)


def _candidate(packing: Packing) -> _Candidate:
    return _Candidate(utility=packing.utility, cost=packing.cost, ids=tuple(sorted(packing.ids)))


def select(
    *,
    ranking: Sequence[str],
    closures: Mapping[str, Closure],
    weights: Mapping[str, float],
    budget: PackingBudget,
    deadline_passed: Callable[[], bool] | None = None,
    render: bool = True,
) -> Selection:
    """Pick, price and render the page (module docstring). `closures` must hold C(r) for
    every ranked root; `deadline_passed`, checked before each evaluation, stops packing with
    `stop: "deadline"`. With `render=False` the page is priced, not rendered: `text` is empty,
    `sources` and `quoted` too, and `token_count` is the priced cost, for a caller that
    renders the chosen units itself (read renders them again with their real refs)."""
    missing = [root for root in ranking if root not in closures]
    if missing:
        raise ValueError(f"no closure for ranked root {missing[0]}")
    roots = [root for root in ranking if not closures[root].is_blocked]
    blocked = tuple(root for root in ranking if closures[root].is_blocked)
    layout = Layout(member for root in roots for member in closures[root].members)
    for key, value in weights.items():
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"the weight of {key} must be finite and at least 0")
    weight = dict.fromkeys(layout.nodes, 0.0)
    for k, root in enumerate(roots):
        # a · 2^-(k-1), k counted from 1: ldexp scales exactly (a power of two).
        weight[root] = math.ldexp(float(weights.get(root, 0.0)), -k)
    # Classes interned as small ints: a quote identity holds the slots, too slow to hash per trial.
    interned: dict[Hashable, int] = {}
    class_of = {key: interned.setdefault(quote_class(node, layout.quotes.get(key)), len(interned))
                for key, node in layout.nodes.items()}
    members = {root: closures[root].ids for root in roots}

    alone: dict[tuple[str, ...], Trial | None] = {}

    def fresh() -> Packing:
        return Packing(layout=layout, class_of=class_of, weight=weight, alone=alone)

    token_budget, size_budget = budget.token_budget, budget.size_budget
    # Every closure priced on its own, once (a tuple's hash is not cached: looked up by root).
    # `_alone` reads only the shared layout, classes, weights and memo, so one empty packing
    # prices them all.
    pricer = fresh()
    alone_of = {root: pricer._alone(members[root]) for root in roots}

    def feasible(trial: Trial) -> bool:
        return trial.cost <= token_budget and trial.count <= size_budget and trial.text_bytes <= budget.max_bytes

    meter = _Meter(budget=budget.max_packing_work, deadline_passed=deadline_passed)
    candidates: list[_Candidate] = []
    baseline = fresh()
    greedy: Packing | None = None
    baseline_complete = complete = False
    deadline = False
    try:
        for root in roots:
            meter.charge(len(members[root]))
            trial = baseline.trial(members[root])
            if feasible(trial):
                baseline.commit(trial)
        baseline_complete = True
        for root in roots:
            meter.charge(len(members[root]))
            lone = alone_of[root]
            if lone is not None:
                # `trial` on ∅ takes the additive path: the set is the closure priced alone, and
                # committing it would give exactly this candidate.
                if (frame_cost(len(lone.new), lone.plain, 0, 0) <= token_budget and len(lone.new) <= size_budget
                        and lone.text_bytes <= budget.max_bytes):
                    candidates.append(_Candidate(utility=math.fsum(lone.classes.values()),
                                                 cost=frame_cost(len(lone.new), lone.plain, 0, 0),
                                                 ids=tuple(sorted(lone.new))))
                continue
            single = fresh()
            trial = single.trial(members[root])
            if feasible(trial):
                single.commit(trial)
                candidates.append(_candidate(single))
        greedy = fresh()
        _greedy(greedy, roots, members, alone_of, meter, feasible, budget)
        complete = True
    except _OutOfWork as stopped:
        deadline = stopped.deadline
    candidates.append(_candidate(baseline))
    if greedy is not None:
        candidates.append(_candidate(greedy))
    best = min(candidates, key=lambda candidate: candidate.key)

    chosen = set(best.ids)
    order = render_order(chosen, ranking, closures)
    final = fresh()
    final.commit(final.trial(order))
    rendered = layout.render(order) if render else Rendered(order=tuple(order), text="", token_count=final.cost,
                                                            sources=(), quoted={})
    left_out = tuple(root for root in roots if root not in chosen)
    solo = {root: _solo(alone_of[root]) or fresh().trial(members[root]) for root in left_out}
    oversized = [solo[root].cost for root in roots if root in solo and solo[root].cost > token_budget]
    return Selection(
        selected=tuple(order),
        nodes=tuple(layout.nodes[key] for key in order),
        text=rendered.text,
        token_count=rendered.token_count,
        sources=rendered.sources,
        utility=best.utility,
        baseline_utility=baseline.utility,
        greedy_utility=greedy.utility if greedy is not None else None,
        work=meter.used,
        complete=complete,
        baseline_complete=baseline_complete,
        stop=_stop(final, left_out, members, budget, complete=complete, deadline=deadline),
        minimum_tokens=min(oversized) if oversized else None,
        cursor=any(solo[root].cost <= token_budget and solo[root].count <= size_budget for root in left_out),
        left_out=left_out,
        blocked=blocked,
        text_bytes=final.text_bytes,
        quoted=rendered.quoted,
    )


def _solo(lone: Trial | None) -> Trial | None:
    """`trial` of a closure on ∅ when it takes the additive path (its `_alone` pricing exists):
    the same cost, count and bytes, without building a packing."""
    if lone is None:
        return None
    count = len(lone.new)
    return Trial(new=lone.new, cost=frame_cost(count, lone.plain, 0, 0), count=count, text_bytes=lone.text_bytes,
                  delta_u=lone.delta_u, classes=lone.classes, sources=lone.sources)


def _greedy(packing: Packing, roots: Sequence[str], members: Mapping[str, tuple[str, ...]],
            alone_of: Mapping[str, Trial | None], meter: _Meter, feasible: Callable[[Trial], bool],
            budget: PackingBudget) -> None:
    """Grow `packing` from ∅ by the best ratio ΔU / max(1, Δtokens) until nothing fits.

    Most tentative sets take `Packing.trial`'s additive path; for those the sums are
    computed here without building a Trial (a read prices hundreds per page), and the
    winner's Trial is built once, by `trial`, from the same sums. `alone_of` holds each
    root's `_alone` pricing."""
    token_budget, size_budget, max_bytes = budget.token_budget, budget.size_budget, budget.max_bytes
    charge = meter.charge
    # What the additive path reads of each root's lone pricing, once: the loop below runs
    # once per root and round, hundreds of times a page.
    lone = {root: (alone.plain + len(alone.new), len(alone.new), alone.text_bytes, alone.delta_u, alone.sources)
            for root in roots if (alone := alone_of[root]) is not None}
    while True:
        best_root: str | None = None
        best_key: tuple[float, float, int, str] | None = None
        current = packing.cost
        ids, sources = packing.ids, packing.sources
        quoted = sources.keys()
        base_count, base_units = len(ids), packing.plain_bytes + packing.extra_units
        entry_count, entry_bytes, base_bytes = packing.entry_count, packing.entry_bytes, packing.text_bytes
        # frame_cost is additive in units and in count past the first unit, so S with n ≥ 1
        # units of p plain bytes added costs `fixed + p + n`.
        fixed = frame_cost(base_count + 1, base_units, entry_count, entry_bytes) - 1
        for root in roots:
            closure = members[root]
            if ids.issuperset(closure):
                continue  # not a tentative evaluation: nothing would change
            charge(len(closure))
            found = lone.get(root)
            if found is not None and ids.isdisjoint(closure) and quoted.isdisjoint(found[4]):
                # `trial`'s additive path, as sums.
                size, added, text_bytes, delta_u, _ = found
                cost = fixed + size
                if (cost > token_budget or base_count + added > size_budget or base_bytes + text_bytes > max_bytes
                        or delta_u < 0):
                    continue
            else:
                trial = packing._trial(closure)
                if not feasible(trial) or trial.delta_u < 0:
                    continue
                cost, delta_u = trial.cost, trial.delta_u
            delta_tokens = cost - current
            # Smallest key wins: best ratio, then larger ΔU, smaller Δtokens, smaller revision id.
            key = (-delta_u / (delta_tokens if delta_tokens > 1 else 1), -delta_u, delta_tokens, root)
            if best_key is None or key < best_key:
                best_root, best_key = root, key
        if best_root is None:
            return
        packing.commit(packing.trial(members[best_root]))


def _stop(final: Packing, left_out: Sequence[str], members: Mapping[str, tuple[str, ...]], budget: PackingBudget,
          *, complete: bool, deadline: bool) -> PackingStop:
    """docs/atoms.md "Recall"'s packing part of `stop`: deadline; budget (work ran out, or some left-out root
    would break the token, maxAtoms or maxBytes bound); page-limit (left-out roots break only
    `limit`); completed. The solver's numeric-budget is the caller's to put before budget."""
    if deadline:
        return "deadline"
    if not complete:
        return "budget"
    page_limit = False
    for root in left_out:
        trial = final.trial(members[root])
        if (trial.cost > budget.token_budget or trial.count > budget.max_atoms
                or trial.text_bytes > budget.max_bytes):
            return "budget"
        if trial.count > budget.limit:
            page_limit = True
    return "page-limit" if page_limit else "completed"


def recall_stop(selection: Selection, solver_stop: str) -> str:
    """diagnostics.stop for a read: the first that applies of deadline, numeric-budget, then
    the packing outcome (budget, page-limit, completed)."""
    if selection.stop == "deadline" or solver_stop == "deadline":
        return "deadline"
    if solver_stop == "numeric-budget":
        return "numeric-budget"
    return selection.stop
