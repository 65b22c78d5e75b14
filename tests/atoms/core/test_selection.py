"""Bounded marginal gain and the packing part of read's result, under the utility of
docs/atoms.md "Selection utility (read)": the root at position k of the page's ranking weighs
a · 2^-(k-1). The worked example there, with the exact activations of the word-overlap match,
is `test_at_1100_tokens_...` below."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from collections.abc import Sequence
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from atoms.core.activation import ActivationGraph, GraphNode, evaluate
from atoms.core.closure import AtomNode, Closure
from atoms.core.packing import Packing, quote_class
from atoms.core.render import Layout
from atoms.core.selection import PackingBudget, Selection, recall_stop, select
from tests.atoms.core.worked_example import (
    E1,
    E2,
    EXACT_ACTIVATION,
    EXAMPLE,
    EXAMPLE_CLOSURES,
    NAME_OF,
    QUOTE_CLOSURES,
    QUOTE_RANKING,
    QUOTE_WEIGHTS,
    RANKING,
    SOURCE,
    TEXT_1100,
    TEXT_4096,
    TEXT_QUOTES,
    citation,
    closures_of,
    make_node,
    quote_universes,
)

SIX_DECIMALS = 5e-7
# The worked example's weights a · 2^-(k-1) over the ranking A, E, B, C, D (denominator 720).
RANK_WEIGHT = {"A": Fraction(14, 9), "E": Fraction(13, 36), "B": Fraction(11, 90), "C": Fraction(7, 144),
               "D": Fraction(11, 720)}


def utility_of(letters: str) -> float:
    return float(sum(RANK_WEIGHT[letter] for letter in letters))


def read_example(**options: int) -> Selection:
    return select(ranking=[node.revision_id for node in RANKING], closures=EXAMPLE_CLOSURES,
                  weights={EXAMPLE[name].revision_id: float(value) for name, value in EXACT_ACTIVATION.items()},
                  budget=PackingBudget(**options))


def names(selection: Selection) -> str:
    return "".join(NAME_OF[key] for key in selection.selected)


def read(nodes: Sequence[AtomNode], ranking: Sequence[AtomNode], weights: dict[str, float], **options: int) -> Selection:
    return select(ranking=[node.revision_id for node in ranking], closures=closures_of(ranking, nodes),
                  weights=weights, budget=PackingBudget(**options))


def activations(nodes: Sequence[tuple[AtomNode, float, float]], links: Sequence[tuple[AtomNode, AtomNode, str]]
                ) -> tuple[list[AtomNode], dict[str, float]]:
    """Ranking and weights from the activation module, defaults β 0.3 and p 0.5; `nodes` are
    (node, m, u) in acquisition order."""
    graph = ActivationGraph()
    for node, m, u in nodes:
        graph.add_node(GraphNode(atom_id=node.atom_id, m=m, u=u, body_bytes=node.body_bytes))
    for source, target, role in links:
        graph.add_edge(source.atom_id, target.atom_id, role)
    evaluation = evaluate(graph, beta=0.3, p=0.5, relations={}, max_work=500_000)
    ordered = [node for node, _, _ in nodes]
    return ([ordered[i] for i in evaluation.ranking],
            {node.revision_id: evaluation.activations[i] for i, node in enumerate(ordered)})


# --- the worked example: budgets, pages and work ---------------------------------------------

@pytest.mark.parametrize(("options", "returned", "tokens", "utility", "greedy", "minimum", "work", "cursor", "stop"), [
    ({}, "AEBDC", 1250, utility_of("AEBDC"), utility_of("AEBDC"), None, 28, False, "completed"),
    ({"tokens": 1100}, "AEBD", 1071, utility_of("AEBD"), utility_of("AEBD"), None, 28, True, "budget"),
    ({"tokens": 800}, "AEC", 799, utility_of("AEC"), utility_of("AEC"), None, 30, True, "budget"),
    ({"tokens": 300}, "C", 223, utility_of("C"), utility_of("C"), 329, 23, True, "budget"),
    ({"tokens": 200}, "", 0, 0.0, 0.0, 210, 18, False, "budget"),
    ({"tokens": 4096, "limit": 3}, "AEC", 799, utility_of("AEC"), utility_of("AEC"), None, 30, True, "page-limit"),
])
def test_it_reproduces_the_budget_table_of_the_worked_example(
        options: dict[str, int], returned: str, tokens: int, utility: float, greedy: float, minimum: int | None,
        work: int, cursor: bool, stop: str) -> None:
    result = read_example(**options)
    assert names(result) == returned
    assert result.token_count == tokens == len(result.text.encode())
    assert result.utility == pytest.approx(utility, abs=SIX_DECIMALS)
    assert result.baseline_utility == result.utility
    assert result.greedy_utility == pytest.approx(greedy, abs=SIX_DECIMALS)
    assert (result.minimum_tokens, result.work, result.cursor, result.stop) == (minimum, work, cursor, stop)
    assert result.complete and result.baseline_complete


def test_at_the_default_budget_everything_fits_in_render_order() -> None:
    result = read_example()
    assert result.text == TEXT_4096
    assert result.utility == pytest.approx(757 / 360, abs=1e-12)
    assert result.left_out == () and result.blocked == () and result.sources == ()
    assert [node.ref for node in result.nodes] == [EXAMPLE[name].ref for name in "AEBDC"]


def test_at_1100_tokens_greedy_reaches_the_baseline_and_c_is_deferred() -> None:
    """The worked example of docs/atoms.md "Selection utility (read)". Unit bytes A 290, E 284,
    B 284, D 165, C 178; cost(S) = 45 + Σ units + (|S| - 1). Baseline: A (335), E (620),
    C(B) = {B, D} (1071), C (1250 > 1100: no), D (in S). Greedy by ΔU / Δtokens: A
    (1.5556/335), then E (0.3611/285) over B+D (0.1375/451) and C (0.0486/179), then B+D
    (0.1375/451 = 0.000305 > C's 0.000272); C no longer fits. Both are AEBD with
    U = 1479/720; the unweighted utility read used before let greedy prefer C to B (131/45
    against the baseline's 271/90)."""
    result = read_example(tokens=1100)
    assert result.text == TEXT_1100 and result.token_count == 1071
    assert result.utility == pytest.approx(1479 / 720, abs=1e-12) and result.greedy_utility is not None
    assert result.greedy_utility == result.baseline_utility == result.utility
    assert [NAME_OF[key] for key in result.left_out] == ["C"]
    assert result.work == 6 + 6 + (6 + 5 + 4 + 1)  # baseline, singles, four greedy rounds
    assert result.text_bytes == sum(EXAMPLE[name].body_bytes for name in "AEBD")


def test_out_of_packing_work_nothing_is_returned() -> None:
    result = read_example(max_packing_work=0)
    assert (names(result), result.text, result.token_count, result.work) == ("", "", 0, 0)
    assert result.complete is False and result.baseline_complete is False
    assert result.greedy_utility is None and result.utility == result.baseline_utility == 0
    assert (result.cursor, result.stop, result.minimum_tokens) == (True, "budget", None)
    assert [NAME_OF[key] for key in result.left_out] == list("AEBCD")


def test_running_out_mid_baseline_keeps_the_partial_baseline() -> None:
    result = read_example(max_packing_work=3)  # A (1), E (1); B+D would need 2 more
    assert (names(result), result.work, result.complete, result.baseline_complete) == ("AE", 2, False, False)
    assert result.stop == "budget"
    later = read_example(max_packing_work=12)  # baseline 6 + singles 6, greedy cannot start
    assert (names(later), later.work, later.complete, later.baseline_complete) == ("AEBDC", 12, False, True)
    assert later.greedy_utility == 0


def test_the_solver_activations_give_the_same_read() -> None:
    ranking, weights = activations(
        [(EXAMPLE["A"], 1.0, 0.0), (EXAMPLE["B"], 1 / 3, 0.5), (EXAMPLE["E"], 1 / 3, 0.0), (EXAMPLE["C"], 0.0, 0.0),
         (EXAMPLE["D"], 0.0, 0.0)],
        [(EXAMPLE["A"], EXAMPLE["C"], "detail"), (EXAMPLE["E"], EXAMPLE["A"], "related"),
         (EXAMPLE["B"], EXAMPLE["D"], "condition")])
    assert ranking == RANKING
    result = select(ranking=[node.revision_id for node in ranking], closures=EXAMPLE_CLOSURES, weights=weights,
                    budget=PackingBudget(tokens=1100))
    assert result.text == TEXT_1100 and result.work == 28
    assert result.utility == pytest.approx(1479 / 720, abs=5 * 2e-6)


# --- overlapping quotes: a source and two extractions -----------------------------------------

def read_quotes(**options: int) -> Selection:
    return select(ranking=[node.revision_id for node in QUOTE_RANKING], closures=QUOTE_CLOSURES,
                  weights=QUOTE_WEIGHTS, budget=PackingBudget(**options))


def test_overlapping_quotes_are_read_with_shared_evidence() -> None:
    result = read_quotes()
    assert list(result.nodes) == [E1, E2, SOURCE]
    assert result.text == TEXT_QUOTES and result.token_count == 984 and result.text.count("BBBB") == 1
    assert list(result.sources) == [{"end": 12, "ref": SOURCE.ref, "start": 0}]
    assert (result.cursor, result.stop, result.utility) == (False, "completed", 1 + 1 / 2 + 1 / 4)


@pytest.mark.parametrize(("limit", "returned", "tokens"), [(2, [E1, E2], 760), (1, [E1], 269)])
def test_smaller_pages_of_the_quote_read_are_the_sets_atoms_scoring_lists(limit: int, returned: list[AtomNode],
                                                                           tokens: int) -> None:
    """The quote example lists E1+E2 (760 bytes) for limit 2 and E1 (269) for limit 1: the
    baseline's sets, which the old unweighted utility missed (docs/atoms.md "Decisions"). The
    three atoms have equal activations, so the rank halving weighs them 1, 1/2, 1/4: the source
    (198 bytes alone) no longer buys E2's or E1's place by being short."""
    result = read_quotes(limit=limit)
    assert list(result.nodes) == returned and result.token_count == tokens
    assert result.utility == result.baseline_utility == {2: 1.5, 1: 1.0}[limit]
    assert (result.cursor, result.stop) == (True, "page-limit")
    assert Layout(QUOTE_RANKING).cost([E1.revision_id, E2.revision_id][:limit]) == tokens


def test_identical_verified_quotes_share_one_utility_class() -> None:
    twin = make_node(14, "AAAABBBB", origin="extraction", producer="key:extractor", origins=[citation(SOURCE, 0, 8)])
    other_producer = dataclasses.replace(twin, revision_id="revision:other", atom_id="atom:other", producer="key:x")
    layout = Layout([E1, twin, other_producer])
    classes = {key: quote_class(node, layout.quotes.get(key)) for key, node in layout.nodes.items()}
    assert classes[E1.revision_id] == classes[twin.revision_id] != classes[other_producer.revision_id]
    result = read([E1, twin], [E1, twin], {E1.revision_id: 1.0, twin.revision_id: 4.0})
    # Weights 1 and 4/2: the baseline takes both for U = max(1, 2); the twin alone has the
    # same U in fewer tokens.
    assert result.baseline_utility == result.utility == 2.0
    assert result.selected == (twin.revision_id,)


# --- closures, budgets and pages (end to end in tests/atoms/api/test_read.py) -------------------

def test_two_roots_share_their_required_condition_once() -> None:
    shared = make_node(3, "Shared condition C.")
    a = make_node(1, "needle a", links=[("condition", 3, True)])
    b = make_node(2, "needle b", links=[("condition", 3, True)])
    result = read([a, b, shared], [a, b, shared], {a.revision_id: 1.0, b.revision_id: 0.9, shared.revision_id: 0.5})
    assert list(result.nodes) == [a, shared, b]
    units = json.loads(result.text)["memory"]
    assert [unit["ref"] for unit in units].count(shared.ref) == 1 and result.text.count(shared.text) == 1


def test_a_cycle_of_nine_required_links_is_read_whole() -> None:
    ring = [make_node(n, f"needle {n}", links=[("next", n % 9 + 1, True)]) for n in range(1, 10)]
    result = read(ring, ring, {node.revision_id: 1.0 for node in ring}, tokens=20_000)
    assert len(result.selected) == 9 and result.token_count <= 4096 and result.stop == "completed"


def test_a_root_whose_closure_cannot_fit_is_absent_and_reported() -> None:
    condition = make_node(3, "x" * 10_000)
    root = make_node(1, "needle root", links=[("condition", 3, True)])
    small = make_node(2, "needle small")
    ranking, weights = activations([(root, 1.0, 0.0), (small, 1.0, 0.0), (condition, 0.0, 0.0)],
                                   [(root, condition, "condition")])
    result = read([root, small, condition], ranking, weights, tokens=1200)
    assert small.revision_id in result.selected and root.revision_id not in result.selected
    assert result.minimum_tokens is not None and result.minimum_tokens > 1200
    assert root.ref not in result.text and condition.ref not in result.text
    assert result.stop == "budget" and result.token_count <= 1200


def test_token_count_is_the_utf8_length_and_one_less_stays_within_budget() -> None:
    node = make_node(1, "日本語 needle")
    first = read([node], [node], {node.revision_id: 1.0})
    assert first.token_count == len(first.text.encode()) and "日本語" in first.text
    second = read([node], [node], {node.revision_id: 1.0}, tokens=first.token_count - 1)
    assert second.token_count <= first.token_count - 1
    assert (second.text, second.minimum_tokens) == ("", first.token_count)


def test_the_selection_never_loses_to_the_baseline() -> None:
    big = make_node(1, "needle " * 300)
    a = make_node(2, "needle a", links=[("condition", 4, True)])
    b = make_node(3, "needle b")
    condition = make_node(4, "condition " * 200)
    ranking, weights = activations([(a, 1.0, 0.0), (b, 1.0, 0.0), (big, 1.0, 1.0), (condition, 0.0, 0.0)],
                                   [(a, condition, "condition")])
    for tokens in (800, 1400, 2200, 2500, 3000):
        result = read([big, a, b, condition], ranking, weights, tokens=tokens)
        assert result.token_count <= tokens
        assert result.utility >= result.baseline_utility
    # The ranking is a (whose closure holds the long condition), big, b, condition. At 2500 the
    # unweighted utility read used before traded a and its condition (U 4/3 + 2/3) for big and b
    # (1.15 + 1); halved per rank they weigh 4/3 + (2/3)/8 against 1.15/2 + 1/4: a is kept.
    assert [node.revision_id for node in ranking] == [a.revision_id, big.revision_id, b.revision_id,
                                                      condition.revision_id]
    result = read([big, a, b, condition], ranking, weights, tokens=2500)
    assert result.selected == (a.revision_id, condition.revision_id)
    assert result.greedy_utility is not None and result.greedy_utility < result.utility


def test_each_cursor_page_shows_the_shared_condition_again() -> None:
    shared = make_node(9, "Shared condition C.")
    roots = [make_node(n, f"needle {n}", links=[("condition", 9, True)]) for n in range(1, 4)]
    ranking, weights = activations([(root, 1.0, 0.0) for root in roots] + [(shared, 0.0, 0.0)],
                                   [(root, shared, "condition") for root in roots])
    closures = closures_of(ranking, [*roots, shared])
    shown: set[str] = set()
    pages = []
    while True:
        remaining = [node.revision_id for node in ranking if node.revision_id not in shown]
        page = select(ranking=remaining, closures=closures, weights=weights, budget=PackingBudget(limit=2))
        pages.append(page)
        shown.update(page.selected)
        if not page.cursor:
            break
    assert [shared.revision_id in page.selected for page in pages] == [True, True, True]
    assert [len(page.selected) for page in pages] == [2, 2, 2]
    assert [page.stop for page in pages] == ["page-limit", "page-limit", "completed"]


# --- blocking, bounds, deadline ----------------------------------------------------------------

def test_a_blocked_root_is_never_shown_nor_replaced_by_a_mention() -> None:
    retired = make_node(3, "Retired condition.", state="retired")
    blocked = make_node(1, "needle blocked", links=[("condition", 3, True)])
    fine = make_node(2, "needle fine")
    result = read([blocked, fine, retired], [blocked, fine], {blocked.revision_id: 2.0, fine.revision_id: 1.0})
    assert result.selected == (fine.revision_id,) and result.blocked == (blocked.revision_id,)
    assert blocked.ref not in result.text and result.left_out == () and result.stop == "completed"


def test_breaking_max_atoms_is_budget_and_breaking_only_limit_is_page_limit() -> None:
    assert read_example(limit=3, max_atoms=3).stop == "budget"
    assert read_example(limit=3, max_atoms=4).stop == "budget"  # B's closure makes 5 > maxAtoms
    assert read_example(limit=3, max_atoms=5).stop == "page-limit"
    assert names(read_example(max_atoms=3)) == "AEC"


def test_max_bytes_bounds_the_items_text() -> None:
    result = read_example(max_bytes=37 + 30)
    assert names(result) == "AE" and result.text_bytes == 67 and result.stop == "budget"


def test_fewer_tokens_break_a_utility_tie() -> None:
    heavy = make_node(3, "A closure-only member that weighs nothing but costs many bytes.")
    x = make_node(1, "needle x", links=[("condition", 3, True)])
    z = make_node(2, "needle z")
    # z weighs nothing: the baseline {x, heavy, z} and x's single {x, heavy} tie on U.
    result = read([x, z, heavy], [x, z], {x.revision_id: 1.0, z.revision_id: 0.0})
    assert result.selected == (x.revision_id, heavy.revision_id) and result.baseline_utility == result.utility == 1.0


def test_a_passed_deadline_stops_packing() -> None:
    calls = itertools.count()
    result = select(ranking=[node.revision_id for node in RANKING], closures=EXAMPLE_CLOSURES,
                    weights={key: 1.0 for key in EXAMPLE_CLOSURES}, budget=PackingBudget(),
                    deadline_passed=lambda: next(calls) >= 2)
    assert (names(result), result.stop, result.complete, result.baseline_complete) == ("AE", "deadline", False, False)
    assert recall_stop(result, "numeric-budget") == "deadline"


def test_the_recall_stop_puts_the_solver_before_packing() -> None:
    assert recall_stop(read_example(tokens=800), "numeric-budget") == "numeric-budget"
    assert recall_stop(read_example(tokens=800), "completed") == "budget"
    assert recall_stop(read_example(), "deadline") == "deadline"


def test_it_rejects_a_ranking_without_closures_or_bad_weights() -> None:
    with pytest.raises(ValueError, match="no closure"):
        select(ranking=["revision:unknown"], closures={}, weights={}, budget=PackingBudget())
    for bad in (-1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="finite"):
            select(ranking=[], closures={}, weights={"x": bad}, budget=PackingBudget())


# --- properties ---------------------------------------------------------------------------

@st.composite
def reads(draw: st.DrawFn) -> tuple[list[AtomNode], dict[str, Closure], list[str], dict[str, float], PackingBudget]:
    size = draw(st.integers(1, 7))
    nodes: list[AtomNode] = draw(quote_universes()) if draw(st.integers(0, 2)) else []
    for n in range(2, size + 2):
        links = draw(st.lists(st.tuples(st.sampled_from(["c", "d"]), st.integers(2, size + 2), st.booleans()),
                              max_size=3))
        flags = draw(st.sampled_from([{}, {}, {}, {}, {"state": "retired"}, {"stale": True}]))
        text = draw(st.text(alphabet="ab é日😀", max_size=40))
        nodes.append(make_node(n, text, links=links, **flags))
    ranked = draw(st.permutations(nodes).flatmap(lambda order: st.lists(st.sampled_from(order), min_size=1,
                                                                          unique_by=lambda node: node.revision_id)))
    weights = {node.revision_id: draw(st.floats(0, 3)) for node in ranked}
    budget = PackingBudget(tokens=draw(st.one_of(st.integers(1, 600), st.integers(600, 5000))),
                           limit=draw(st.integers(1, 12)), max_atoms=draw(st.integers(1, 12)),
                           max_bytes=draw(st.sampled_from([40, 200, 4_194_304, 4_194_304])),
                           max_packing_work=draw(st.sampled_from([0, 3, 10, 40, 2_000_000, 2_000_000, 2_000_000])))
    return nodes, closures_of(ranked, nodes), [node.revision_id for node in ranked], weights, budget


@settings(max_examples=200, deadline=None)
@given(reads())
def test_every_read_stays_within_budget_complete_and_deterministic(
        case: tuple[list[AtomNode], dict[str, Closure], list[str], dict[str, float], PackingBudget]) -> None:
    nodes, closures, ranking, weights, budget = case
    result = select(ranking=ranking, closures=closures, weights=weights, budget=budget)
    assert result.token_count == len(result.text.encode()) <= budget.token_budget
    assert len(result.selected) <= budget.size_budget and result.text_bytes <= budget.max_bytes
    assert result.utility >= result.baseline_utility
    assert result.work <= budget.max_packing_work
    assert result.complete <= result.baseline_complete
    chosen = set(result.selected)
    assert chosen <= {node.revision_id for node in nodes}
    for root in ranking:
        if root in chosen:
            assert not closures[root].is_blocked and set(closures[root].ids) <= chosen
    assert chosen == {key for root in ranking if root in chosen for key in closures[root].ids}
    assert all(node.unavailable() is None for node in result.nodes)
    assert result.minimum_tokens is None or result.minimum_tokens > budget.token_budget
    if not result.complete:
        assert result.stop == "budget"
    assert select(ranking=ranking, closures=closures, weights=weights, budget=budget) == result


@given(quote_universes(), st.data())
def test_incremental_pricing_matches_the_render(universe: list[AtomNode], data: st.DataObject) -> None:
    layout = Layout(universe)
    packing = Packing(layout=layout, class_of={key: key for key in layout.nodes},
                       weight=dict.fromkeys(layout.nodes, 1.0))
    keys = list(layout.nodes)
    for _ in range(data.draw(st.integers(1, 6))):
        group = data.draw(st.lists(st.sampled_from(keys), max_size=3, unique=True))
        trial = packing.trial(group)
        assert trial.cost == layout.cost(packing.ids | set(group))
        if data.draw(st.booleans()):
            packing.commit(trial)
            assert packing.cost == layout.cost(packing.ids) == layout.render(sorted(packing.ids)).token_count
