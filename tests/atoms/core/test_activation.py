"""Graph activation against the worked example: the five atoms of docs/atoms.md "Worked example (search)" with
the word-overlap match values that preceded BM25 (A 1, B and E 1/3), one use of B, β = 0.3 and p = 0.5."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from atoms.core.activation import (
    TOLERANCE,
    ActivationGraph,
    BudgetExhausted,
    Edge,
    GraphNode,
    RelationWeight,
    TransitionRow,
    evaluate,
    exact_activation,
    is_traversed,
    normalize,
    rank,
    relation_weight,
    seed_vector,
    solve,
    transition_rows,
)

SOLVER_TOLERANCE = 2e-6  # solver activations against the exact ones
EXACT_TOLERANCE = 1e-9  # exact fractions and full-precision doubles
SIX_DECIMALS = 5e-7  # figures printed to six decimals

# --- the worked example, entered by hand ---------------------------------------------------

T0 = 1_767_225_600_000
EVALUATED_AT = 1_767_830_400_000
# B's AdaptiveUse state {"halfLifeMs":604800000,"mass":1,"updatedAt":T0}, valued at evaluatedAt.
U_B = 1 * 2 ** (-(EVALUATED_AT - T0) / 604_800_000)
ATOM = {name: f"atom:00000000-0000-4000-8000-00000000000{n}" for n, name in enumerate("ABCDE", start=1)}
# Acquisition order A, B, E, C, D with (m, u, body bytes).
EXAMPLE_NODES = [
    ("A", 1.0, 0.0, 37),
    ("B", 1 / 3, U_B, 29),
    ("E", 1 / 3, 0.0, 30),
    ("C", 0.0, 0.0, 38),
    ("D", 0.0, 0.0, 25),
]
EXAMPLE_LINKS = [("A", "C", "detail"), ("E", "A", "related"), ("B", "D", "condition")]
ORDER = [name for name, *_ in EXAMPLE_NODES]

EXACT_B = [Fraction(1), Fraction(11, 30), Fraction(1, 3), Fraction(0), Fraction(0)]
EXACT_A = [Fraction(14, 9), Fraction(22, 45), Fraction(13, 18), Fraction(7, 18), Fraction(11, 45)]
EXACT_SCORES = [Fraction(70, 153), Fraction(22, 153), Fraction(65, 306), Fraction(35, 306), Fraction(11, 153)]
PRINTED_A = [1.555556, 0.488889, 0.722222, 0.388889, 0.244444]
PRINTED_SCORES = [0.457516, 0.143791, 0.212418, 0.114379, 0.071895]


def example_graph() -> ActivationGraph:
    graph = ActivationGraph()
    for name, m, u, body_bytes in EXAMPLE_NODES:
        graph.add_node(GraphNode(atom_id=ATOM[name], m=m, u=u, body_bytes=body_bytes))
    for source, target, role in EXAMPLE_LINKS:
        assert graph.add_edge(ATOM[source], ATOM[target], role)
    return graph


def evaluate_example(max_work: int = 500_000):
    return evaluate(example_graph(), beta=0.3, p=0.5, relations={}, max_work=max_work)


def names(graph: ActivationGraph, positions: list[int]) -> list[str]:
    by_id = {atom_id: name for name, atom_id in ATOM.items()}
    return [by_id[graph.nodes[i].atom_id] for i in positions]


def l1_to_exact(scores: list[float], exact_scores: list[Fraction]) -> Fraction:
    return sum((abs(Fraction(s) - e) for s, e in zip(scores, exact_scores, strict=True)), Fraction(0))


# --- seed vector ----------------------------------------------------------------------------

def test_it_values_b_use_at_one_half_after_one_half_life() -> None:
    assert U_B == 0.5


def test_the_seed_vector_matches_the_worked_example() -> None:
    b = seed_vector([m for _, m, _, _ in EXAMPLE_NODES], [u for _, _, u, _ in EXAMPLE_NODES], 0.3)
    for value, exact in zip(b, EXACT_B, strict=True):
        assert value == pytest.approx(float(exact), abs=EXACT_TOLERANCE)
    assert b[1] == pytest.approx(0.366667, abs=SIX_DECIMALS)


# --- transition matrix ----------------------------------------------------------------------

def test_the_transition_matrix_matches_the_worked_example() -> None:
    rows = evaluate_example().transitions
    # Rows are "from", in acquisition order A, B, E, C, D (positions 0..4).
    assert rows == [[(2, 0.25), (3, 0.25)], [(4, 0.5)], [(0, 0.5)], [(0, 0.5)], [(1, 0.5)]]
    assert sum(len(row) for row in rows) == 6


# --- activation -----------------------------------------------------------------------------

def test_the_exact_activation_matches_the_worked_example() -> None:
    a = exact_activation(EXACT_B, evaluate_example().transitions)
    assert a == EXACT_A
    assert sum(a) == Fraction(17, 5)
    assert [value / sum(a) for value in a] == EXACT_SCORES
    for value, printed in zip(a, PRINTED_A, strict=True):
        assert float(value) == pytest.approx(printed, abs=SIX_DECIMALS)
    for value, printed in zip(EXACT_SCORES, PRINTED_SCORES, strict=True):
        assert float(value) == pytest.approx(printed, abs=SIX_DECIMALS)


def test_the_use_boost_raises_b_and_d_by_exactly_one_tenth() -> None:
    rows = evaluate_example().transitions
    without_use = exact_activation([Fraction(1), Fraction(1, 3), Fraction(1, 3), 0, 0], rows)
    assert without_use == [EXACT_A[0], Fraction(4, 9), EXACT_A[2], EXACT_A[3], Fraction(2, 9)]
    ratios = [with_use / base for with_use, base in zip(EXACT_A, without_use, strict=True)]
    assert ratios == [1, Fraction(11, 10), 1, 1, Fraction(11, 10)]
    assert all(ratio <= 1 + Fraction(3, 10) for ratio in ratios)


def test_the_solver_converges_like_the_worked_example() -> None:
    evaluation = evaluate_example()
    solution = evaluation.solution
    assert (solution.converged, solution.stop, solution.pushes, solution.work) == (True, "completed", 55, 138)
    assert solution.numeric_error_l1_upper == pytest.approx(8.488652e-07, abs=5e-14)
    for value, exact in zip(evaluation.activations, EXACT_A, strict=True):
        assert value == pytest.approx(float(exact), abs=SOLVER_TOLERANCE)
    for score, printed in zip(evaluation.scores, PRINTED_SCORES, strict=True):
        assert score == pytest.approx(printed, abs=SIX_DECIMALS)
    assert l1_to_exact(evaluation.scores, EXACT_SCORES) <= solution.numeric_error_l1_upper


def test_a_budget_one_push_short_stops_on_numeric_budget() -> None:
    solution = evaluate_example(max_work=137).solution
    assert (solution.converged, solution.stop, solution.pushes, solution.work) == (False, "numeric-budget", 54, 136)
    assert solution.numeric_error_l1_upper == pytest.approx(1.054560e-06, abs=5e-13)


def test_a_budget_that_only_covers_initialization_scores_nothing() -> None:
    evaluation = evaluate_example(max_work=11)
    solution = evaluation.solution
    assert (solution.converged, solution.stop, solution.pushes, solution.work) == (False, "numeric-budget", 0, 11)
    assert solution.numeric_error_l1_upper == 2
    assert evaluation.scores == [0.0] * 5
    assert evaluation.ranking == []


def test_it_raises_budget_exhausted_when_initialization_exceeds_the_budget() -> None:
    with pytest.raises(BudgetExhausted) as raised:
        evaluate_example(max_work=10)
    assert (raised.value.needed, raised.value.budget) == (11, 10)
    assert raised.value.code == "BUDGET_EXHAUSTED"


def test_a_deadline_stops_the_solver_before_the_next_push() -> None:
    calls = iter([False, False, True])
    b = [1.0, 0.0]
    solution = solve(b, [[(1, 0.5)], [(0, 0.5)]], 0.5, 1000, deadline_passed=lambda: next(calls))
    assert (solution.converged, solution.stop, solution.pushes) == (False, "deadline", 2)


# --- ordering -------------------------------------------------------------------------------

def test_the_ranking_is_a_e_b_c_d() -> None:
    graph = example_graph()
    evaluation = evaluate(graph, beta=0.3, p=0.5, relations={}, max_work=500_000)
    assert names(graph, evaluation.ranking) == ["A", "E", "B", "C", "D"]
    exact_order = sorted(range(5), key=lambda i: -EXACT_SCORES[i])
    assert names(graph, exact_order) == ["A", "E", "B", "C", "D"]


def test_ranking_breaks_score_ties_by_body_bytes_then_atom_id() -> None:
    nodes = [
        GraphNode("atom:3", 1.0, 0.0, 10),
        GraphNode("atom:2", 1.0, 0.0, 10),
        GraphNode("atom:1", 1.0, 0.0, 12),
        GraphNode("atom:0", 0.0, 0.0, 1),
        GraphNode("atom:4", 1.0, 0.0, 99),
    ]
    assert rank(nodes, [0.2, 0.2, 0.2, 0.0, 0.4]) == [4, 1, 0, 2]


# --- edge cases -----------------------------------------------------------------------------

def test_a_zero_seed_vector_scores_every_node_zero() -> None:
    rows = [[(1, 0.5)], [(0, 0.5)], []]
    solution = solve([0.0, 0.0, 0.0], rows, 0.5, 100)
    assert (solution.converged, solution.stop, solution.pushes, solution.work) == (True, "completed", 0, 5)
    assert solution.numeric_error_l1_upper == 0
    assert normalize(solution.x) == [0.0, 0.0, 0.0]


def test_without_propagation_scores_are_proportional_to_the_seed_vector() -> None:
    graph = example_graph()
    evaluation = evaluate(graph, beta=0.3, p=0.0, relations={}, max_work=500_000)
    assert evaluation.transitions == [[]] * 5
    assert evaluation.solution.work == 5 + evaluation.solution.pushes
    total = sum(EXACT_B)
    for score, exact in zip(evaluation.scores, EXACT_B, strict=True):
        assert score == pytest.approx(float(exact / total), abs=EXACT_TOLERANCE)


def test_ten_uses_with_max_boost_2_give_ratio_1_plus_20_over_11() -> None:
    class CountingModel:
        """The counting model: update counts from 1, value is the state."""

        id = "counting"

        def update(self, previous: int | None, accepted_at: int) -> int:
            return 1 if previous is None else previous + 1

        def value(self, state: int | None, now: int) -> float:
            return 0 if state is None else state

    model = CountingModel()

    def scores(state_a: int | None, state_b: int | None) -> list[float]:
        graph = ActivationGraph()
        # "needle" is found in both "needle a" and "needle b": m = 1 each; body bytes 8 each.
        graph.add_node(GraphNode("atom:a", 1.0, float(model.value(state_a, 0)), 8))
        graph.add_node(GraphNode("atom:b", 1.0, float(model.value(state_b, 0)), 8))
        return evaluate(graph, beta=2.0, p=0.0, relations={}, max_work=500_000).scores

    assert scores(None, None) == [0.5, 0.5]
    state = None
    for accepted_at in range(10):
        state = model.update(state, accepted_at)
    assert state == 10
    score_a, score_b = scores(state, None)
    assert score_a / score_b == pytest.approx(1 + 20 / 11, abs=1e-10)
    assert score_a / score_b < 3
    assert score_a == pytest.approx(31 / 42, abs=EXACT_TOLERANCE)
    assert score_b == pytest.approx(11 / 42, abs=EXACT_TOLERANCE)


def test_duplicate_edges_collapse_into_one() -> None:
    graph = ActivationGraph()
    for atom_id in ("atom:x", "atom:y", "atom:z"):
        graph.add_node(GraphNode(atom_id, 1.0, 0.0, 1))
    assert graph.add_edge("atom:x", "atom:y", "r")
    assert not graph.add_edge("atom:x", "atom:y", "r")
    assert graph.add_edge("atom:x", "atom:y", "s")
    assert graph.add_edge("atom:x", "atom:z", "r")
    assert graph.edges == [Edge(0, 1, "r"), Edge(0, 1, "s"), Edge(0, 2, "r")]
    # Two roles to y against one to z: y gets 2/3 of x's propagation.
    rows = transition_rows(3, graph.edges, {}, 0.6)
    assert rows[0] == [(1, pytest.approx(0.4)), (2, pytest.approx(0.2))]


def test_an_atom_is_a_node_only_once() -> None:
    graph = ActivationGraph()
    graph.add_node(GraphNode("atom:x", 1.0, 0.0, 1))
    with pytest.raises(ValueError, match="already"):
        graph.add_node(GraphNode("atom:x", 0.5, 0.0, 1))
    assert "atom:x" in graph and graph.position("atom:x") == 0


def test_relation_weights_default_to_one_and_zero_both_ways_is_not_traversed() -> None:
    relations = {"off": RelationWeight(0.0, 0.0), "down": (2.0, 0.0)}
    assert relation_weight("other", relations) == (1.0, 1.0)
    assert relation_weight("down", relations) == RelationWeight(forward=2.0, reverse=0.0)
    assert not is_traversed("off", relations)
    assert is_traversed("down", relations) and is_traversed("other", relations)
    edges = [Edge(0, 1, "down"), Edge(1, 2, "off"), Edge(2, 0, "other")]
    rows = transition_rows(3, edges, relations, 0.5)
    # 0→1 (down, 2) and 0→2 (other reversed, 1); nothing leaves 1; 2→0 (other, 1).
    assert rows == [[(1, 0.5 * 2 / 3), (2, 0.5 / 3)], [], [(0, 0.5)]]


def test_a_self_loop_feeds_back_into_the_node() -> None:
    rows = transition_rows(2, [Edge(0, 0, "again"), Edge(0, 1, "next")], {}, 0.5)
    # The loop adds forward and reverse (2) to 0→0; the other edge adds 1 each way.
    assert rows == [[(0, pytest.approx(1 / 3)), (1, pytest.approx(1 / 6))], [(0, 0.5)]]
    solution = solve([1.0, 0.0], rows, 0.5, 10_000)
    exact = exact_activation([1, 0], rows)
    for value, expected in zip(solution.x, exact, strict=True):
        assert value == pytest.approx(float(expected), abs=SOLVER_TOLERANCE)


@pytest.mark.parametrize("p", [-0.1, 1.0, math.nan, math.inf])
def test_it_rejects_a_propagation_outside_zero_to_one(p: float) -> None:
    with pytest.raises(ValueError, match="propagation"):
        transition_rows(1, [], {}, p)
    with pytest.raises(ValueError, match="propagation"):
        solve([1.0], [[]], p, 10)


@pytest.mark.parametrize("u", [-1.0, math.inf, math.nan])
def test_it_rejects_a_use_value_that_is_not_finite_and_non_negative(u: float) -> None:
    with pytest.raises(ValueError, match="u must be"):
        seed_vector([1.0], [u], 0.3)


# --- properties -----------------------------------------------------------------------------

def reference_solve(b: list[float], rows: list[TransitionRow], p: float, max_work: int):
    """The residual-push solver transcribed literally, summing and scanning every node each push."""

    def ordered_sum(values: list[float]) -> float:
        total = 0.0
        for value in values:
            total += value
        return total

    def bound(r: list[float], x: list[float]) -> float:
        residual = ordered_sum(r)
        return 0.0 if residual == 0 else 2 * residual / ((1 - p) * ordered_sum(x) + residual)

    x, r = [0.0] * len(b), list(b)
    work = len(b) + sum(len(row) for row in rows)
    pushes, converged = 0, True
    epsilon = bound(r, x)
    while epsilon > TOLERANCE:
        i = max(range(len(r)), key=lambda k: (r[k], -k))
        if work + 1 + len(rows[i]) > max_work:
            converged = False
            break
        work += 1 + len(rows[i])
        rho, r[i] = r[i], 0.0
        x[i] += rho
        for j, t in rows[i]:
            r[j] += t * rho
        pushes += 1
        epsilon = bound(r, x)
    return tuple(x), converged, work, pushes, epsilon


@st.composite
def graphs(draw: st.DrawFn, max_nodes: int) -> tuple[list[float], list[TransitionRow], float]:
    size = draw(st.integers(1, max_nodes))
    # Repeated values make residual ties, which must go to the node acquired first.
    seed = st.one_of(st.just(0.0), st.sampled_from([0.5, 1.0]), st.floats(1e-3, 1e3))
    b = draw(st.lists(seed, min_size=size, max_size=size))
    node = st.integers(0, size - 1)
    edges = draw(st.lists(st.builds(Edge, node, node, st.sampled_from(["r", "s", "t"])), max_size=3 * size))
    weight = st.sampled_from([0.0, 0.5, 1.0, 2.5])
    relations = {role: RelationWeight(draw(weight), draw(weight)) for role in ("r", "s")}
    p = draw(st.one_of(st.just(0.0), st.floats(0.0, 0.97, allow_subnormal=False)))
    return b, transition_rows(size, edges, relations, p), p


@settings(max_examples=150, deadline=None)
@given(graph=graphs(max_nodes=7), extra_work=st.one_of(st.integers(0, 60), st.just(500_000)))
def test_the_certified_bound_covers_the_distance_to_the_exact_scores(
    graph: tuple[list[float], list[TransitionRow], float], extra_work: int
) -> None:
    b, rows, p = graph
    initialization = len(b) + sum(len(row) for row in rows)
    solution = solve(b, rows, p, initialization + extra_work)
    exact = exact_activation(b, rows)
    total = sum(exact)
    if total == 0:
        assert normalize(solution.x) == [0.0] * len(b)
        return
    if sum(solution.x) == 0:
        assert solution.numeric_error_l1_upper == 2  # nothing pushed yet
        return
    distance = l1_to_exact(normalize(solution.x), [value / total for value in exact])
    assert distance <= Fraction(solution.numeric_error_l1_upper) + Fraction(1, 10**12)
    if extra_work == 500_000:
        assert solution.converged and solution.numeric_error_l1_upper <= TOLERANCE


@settings(max_examples=150, deadline=None)
@given(graph=graphs(max_nodes=40), extra_work=st.one_of(st.integers(0, 400), st.just(500_000)))
def test_the_solver_matches_a_literal_transcription_bit_for_bit(
    graph: tuple[list[float], list[TransitionRow], float], extra_work: int
) -> None:
    b, rows, p = graph
    max_work = len(b) + sum(len(row) for row in rows) + extra_work
    solution = solve(b, rows, p, max_work)
    expected = reference_solve(b, rows, p, max_work)
    actual = (solution.x, solution.converged, solution.work, solution.pushes, solution.numeric_error_l1_upper)
    assert actual == expected


def random_graph(size: int, p: float, salt: int) -> tuple[list[float], list[TransitionRow]]:
    rnd = random.Random(salt)
    b = [rnd.choice([0.0, 1.0, rnd.random() * 10 ** rnd.randint(-3, 3)]) for _ in range(size)]
    edges = [Edge(rnd.randrange(size), rnd.randrange(size), "r") for _ in range(3 * size)]
    return b, transition_rows(size, edges, {}, p)


@pytest.mark.parametrize(
    ("b", "rows", "p"),
    [
        pytest.param([2.0**-k for k in range(60)], [[] for _ in range(60)], 0.5, id="geometric-isolated"),
        pytest.param([1e3] + [1e-3] * 50, [[] for _ in range(51)], 0.9, id="one-dominant-seed"),
        pytest.param(*random_graph(150, 0.5, salt=1), 0.5, id="random-150-p0.5"),
        pytest.param(*random_graph(150, 0.95, salt=2), 0.95, id="random-150-p0.95"),
    ],
)
@pytest.mark.parametrize("extra_work", [0, 500, 500_000])
def test_larger_graphs_match_the_literal_transcription_bit_for_bit(
    b: list[float], rows: list[TransitionRow], p: float, extra_work: int
) -> None:
    max_work = len(b) + sum(len(row) for row in rows) + extra_work
    solution = solve(b, rows, p, max_work)
    expected = reference_solve(b, rows, p, max_work)
    assert (solution.x, solution.converged, solution.work, solution.pushes, solution.numeric_error_l1_upper) == expected
