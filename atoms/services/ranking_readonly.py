"""Search's ranking without search's records, for the review pages (docs/atoms.md "Review UI").

`atoms_search` (atoms/services/search.py) records a receipt, issues a ref for every item and
freezes the ranking behind a cursor: what an API caller needs to cite and page what it was
shown. A person reading the atom browser or typing into the link picker needs none of that,
and a GET must not write. This runs the same pipeline (`recall`: the lexical index, the
semantic channel when the tenant has a provider, activation at the tenant's depth) as the
person, with the same defaults search uses, and only reads.

Nothing is frozen: a caller that pages re-ranks. Passing the first evaluation's `now` back
makes the availability values (hence the scores) those of the first page, so the same state
ranks the same way page after page.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from atoms.clock import now_ms
from atoms.core.text import is_blank
from atoms.errors import AtomError, invalid
from atoms.models import AtomStore, Revision
from atoms.principal import Principal, resolve_binding
from atoms.services.budget import Budget
from atoms.services.recall_graph import recall, recall_settings
from atoms.services.semantic import prepare
from atoms.services.snapshot import read_snapshot

Entry = tuple[Revision, float]  # a ranked head and its score


@dataclass(frozen=True)
class Ranking:
    entries: list[Entry]  # best first, as search's items
    stale: list[Revision]  # matched, set aside from the ranking (search's `stale`)
    now: int  # the clock the availability values were evaluated at


def rank(person: Principal, query: str, *, read_policies: Sequence[str] | None = None, depth: int | None = None,
         now: int | None = None) -> Ranking:
    """search's first-page ranking of `query` for `person`, writing nothing.

    `read_policies` narrows the person's policies like search's `binding.readPolicies`;
    `depth` None is the tenant's retrieval depth (search's default). Raises AtomError as
    search does for a blank query, a policy the person lacks or a budget the solver cannot
    start within."""
    if is_blank(query):
        raise invalid("query must be a non-blank string.", path="query")
    binding = resolve_binding(person, {"readPolicies": list(read_policies)} if read_policies else None)
    at = now_ms() if now is None else now
    # AtomStore.get_or_create_for would create the row: a tenant without one has no atoms to rank.
    store = AtomStore.objects.filter(tenant=person.tenant).first()
    if store is None:
        return Ranking(entries=[], stale=[], now=at)
    kinds = {"query": [query]}
    # As in search: signals are encoded before the transaction (a model load must not hold it open).
    semantic = prepare(person.tenant, store, kinds)
    with read_snapshot():
        store = AtomStore.objects.get(pk=store.pk)
        result = recall(binding=binding, store=store, kinds=kinds,
                        depth=recall_settings(store.config).depth if depth is None else depth,
                        budget=Budget(), now=at, semantic=semantic)
    return Ranking(entries=[(node.revision, node.score) for node in result.ranked], stale=result.stale, now=at)


def page_of(entries: Sequence[Entry], limit: int, budget: Budget | None = None) -> list[Entry]:
    """The next page of `entries` as search fills it: in order until `limit`, or until the
    budget's maxAtoms or maxBytes would be passed. An item no budget covers is an error, as
    in search (the same request would otherwise give the same empty page forever)."""
    budget = budget or Budget()
    page: list[Entry] = []
    used = 0
    for revision, score in entries:
        if len(page) >= limit or len(page) + 1 > budget.limits["maxAtoms"] \
                or used + revision.body_bytes > budget.limits["maxBytes"]:
            break
        page.append((revision, score))
        used += revision.body_bytes
    if entries and not page:
        raise AtomError("BUDGET_EXHAUSTED", "The budget does not cover one item.",
                        {"maxAtoms": budget.limits["maxAtoms"], "maxBytes": budget.limits["maxBytes"]})
    return page
