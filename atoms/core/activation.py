"""Graph activation for read (docs/atoms.md "Defaults"): seed vector, transitions, residual-push solver, ranking.

Pure Python, no Django: the read service acquires the graph and the use values, this module does
the arithmetic. Nodes are addressed by their position in acquisition order, because ties in the
solver and every sum follow that order (docs/atoms.md "Worked example (search)" reproduces figures only that way).
"""

from __future__ import annotations

import heapq
import math
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import reduce
from typing import Literal, NamedTuple

from atoms.core.errors import AtomsCoreError

# The solver stops once the certified L1 bound is at most this.
TOLERANCE = 1e-6
_UNIT = 2.0**-53  # unit roundoff of a double
_RESYNC = 1e-10  # relative drift of the solver's running sums at which they are recomputed

SolverStop = Literal["completed", "numeric-budget", "deadline"]
# One sparse row of T: (target position, T[i][j]) with T[i][j] > 0, targets ascending.
TransitionRow = list[tuple[int, float]]


class BudgetExhausted(AtomsCoreError):
    """Initialization alone costs more than `maxEvaluationWork` (docs/atoms.md "Defaults")."""

    default_code = "BUDGET_EXHAUSTED"

    def __init__(self, *, needed: int, budget: int) -> None:
        super().__init__(f"activation needs {needed} work units to start, the budget is {budget}",
                         details={"maxEvaluationWork": budget, "needed": needed})
        self.needed = needed
        self.budget = budget


class RelationWeight(NamedTuple):
    forward: float = 1.0
    reverse: float = 1.0


# The contract's weight of a role the config does not name: 1 each way. The service passes
# its own measured default instead (docs/atoms.md "Defaults"); the core's formulas and their
# worked examples keep this one.
DEFAULT_RELATION_WEIGHT = RelationWeight(1.0, 1.0)
RelationWeights = Mapping[str, RelationWeight | tuple[float, float]]


def relation_weight(role: str, relations: RelationWeights,
                    default: RelationWeight = DEFAULT_RELATION_WEIGHT) -> RelationWeight:
    """The (forward, reverse) weights of `role`; a role the config does not name weighs `default`."""
    weight = relations.get(role)
    return default if weight is None else RelationWeight(*weight)


def is_traversed(role: str, relations: RelationWeights, default: RelationWeight = DEFAULT_RELATION_WEIGHT) -> bool:
    """False when both weights of `role` are 0: acquisition must not follow such links at all."""
    forward, reverse = relation_weight(role, relations, default)
    return forward != 0 or reverse != 0


# --- graph ----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class GraphNode:
    """One acquired head. `m` is its seed match (0 for link-only nodes), `u` its use value ≥ 0."""

    atom_id: str
    m: float
    u: float
    body_bytes: int


@dataclass(frozen=True, slots=True)
class Edge:
    """A link `source → target` named by `role`, with both ends as positions in acquisition order."""

    source: int
    target: int
    role: str


@dataclass(slots=True)
class ActivationGraph:
    """Nodes in acquisition order and the collapsed edge set between them.

    The graph builder appends nodes as breadth-first acquisition reaches them and records edges
    as it expands; a repeated `(from, to, role)` is collapsed here so that it can never double
    a transition weight.
    """

    nodes: list[GraphNode] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    _positions: dict[str, int] = field(default_factory=dict)
    _edge_keys: set[tuple[int, int, str]] = field(default_factory=set)

    def __len__(self) -> int:
        return len(self.nodes)

    def __contains__(self, atom_id: object) -> bool:
        return atom_id in self._positions

    def position(self, atom_id: str) -> int:
        return self._positions[atom_id]

    def add_node(self, node: GraphNode) -> int:
        """Append `node` and return its position; an atom is a node at most once."""
        if node.atom_id in self._positions:
            raise ValueError(f"{node.atom_id} is already a node")
        _check_non_negative("m", node.m)
        _check_non_negative("u", node.u)
        self._positions[node.atom_id] = len(self.nodes)
        self.nodes.append(node)
        return len(self.nodes) - 1

    def add_edge(self, source_id: str, target_id: str, role: str) -> bool:
        """Record a link between two nodes; False (and nothing recorded) for a duplicate."""
        key = (self._positions[source_id], self._positions[target_id], role)
        if key in self._edge_keys:
            return False
        self._edge_keys.add(key)
        self.edges.append(Edge(*key))
        return True


# --- seed vector and transitions ----------------------------------------------------------

def seed_value(m: float, u: float, beta: float) -> float:
    """b = m·(1 + β·u/(1+u)): use can raise a match by at most the factor 1 + β, never create one."""
    _check_non_negative("m", m)
    _check_non_negative("u", u)
    _check_non_negative("maxBoost", beta)
    return m * (1.0 + beta * u / (1.0 + u))


def seed_vector(m: Sequence[float], u: Sequence[float], beta: float) -> list[float]:
    """The seed vector b over the nodes, in acquisition order."""
    if len(m) != len(u):
        raise ValueError("m and u must have one entry per node")
    return [seed_value(m_i, u_i, beta) for m_i, u_i in zip(m, u, strict=True)]


def transition_rows(size: int, edges: Sequence[Edge], relations: RelationWeights, p: float,
                    default: RelationWeight = DEFAULT_RELATION_WEIGHT) -> list[TransitionRow]:
    """Sparse rows of T: T[i][j] = p·w(i→j)/Σ_k w(i→k).

    Each edge adds `forward` to f→t and `reverse` to t→f; weights between the same pair add up
    (a self-loop gets both). A row without outgoing weight stays empty: its mass is not spread
    elsewhere, which is what keeps every row sum ≤ p and the system solvable.
    """
    _check_propagation(p)
    weights: list[dict[int, float]] = [{} for _ in range(size)]
    for edge in edges:
        forward, reverse = relation_weight(edge.role, relations, default)
        _check_non_negative(f"relations.{edge.role}.forward", forward)
        _check_non_negative(f"relations.{edge.role}.reverse", reverse)
        if forward:
            out = weights[edge.source]
            out[edge.target] = out.get(edge.target, 0.0) + forward
        if reverse:
            out = weights[edge.target]
            out[edge.source] = out.get(edge.source, 0.0) + reverse
    rows: list[TransitionRow] = []
    for out in weights:
        targets = sorted(out)
        total = _sum_in_order(out[j] for j in targets)
        entries = [(j, p * out[j] / total) for j in targets] if total else []
        # With p = 0 every entry is 0, and a zero entry is no transition (it costs no work either).
        rows.append([(j, t) for j, t in entries if t > 0.0])
    return rows


# --- solver ---------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Solution:
    """The solver's activations `x` (≈ a) and how far it got.

    `numeric_error_l1_upper` bounds the L1 distance between x/Σx and a/Σa.
    """

    x: tuple[float, ...]
    converged: bool
    stop: SolverStop
    work: int
    pushes: int
    numeric_error_l1_upper: float


def error_bound(r: Sequence[float], x: Sequence[float], p: float) -> float:
    """ε = 2R/((1-p)·X + R), with R and X summed in acquisition order; 0 when nothing is left."""
    return _bound(_sum_in_order(r), _sum_in_order(x), p)


def solve(
    b: Sequence[float],
    transitions: Sequence[TransitionRow],
    p: float,
    max_work: int,
    *,
    deadline_passed: Callable[[], bool] | None = None,
) -> Solution:
    """Solve a = b + Tᵀa by residual push (docs/atoms.md "Defaults"), charging `maxEvaluationWork`.

    Raises BudgetExhausted when `nodes + nonzero transitions` exceeds `max_work`. Otherwise it
    pushes the largest residual (ties → first acquired) until ε ≤ 1e-6; a push that would exceed
    the budget is not made and the result is `converged=False, stop="numeric-budget"`.
    `deadline_passed`, checked before each push, lets the caller stop on its deadline.

    The result is bit for bit that of recomputing ε = error_bound(r, x, p) after every push and
    taking the first largest residual; only the bookkeeping is cheaper (a heap and running sums).
    """
    size = len(b)
    if len(transitions) != size:
        raise ValueError("transitions must have one row per node")
    _check_propagation(p)
    for value in b:
        _check_non_negative("b", value)
    work = size + sum(len(row) for row in transitions)
    if work > max_work:
        raise BudgetExhausted(needed=work, budget=max_work)
    x = [0.0] * size
    r = [float(value) for value in b]
    # Max-heap of (-r_j, j): the smallest j wins a tie. Entries go stale when r_j changes and are
    # dropped when they surface; r_j only grows between its own pushes, so the live one is on top.
    heap = [(-value, j) for j, value in enumerate(r) if value > 0.0]
    heapq.heapify(heap)
    sums = _RunningSums(r, x, p)
    epsilon: float | None = sums.resync()  # None: certainly above TOLERANCE, not computed exactly
    pushes = 0
    stop: SolverStop = "completed"
    while epsilon is None or epsilon > TOLERANCE:
        if deadline_passed is not None and deadline_passed():
            stop = "deadline"
            break
        while -heap[0][0] != r[heap[0][1]]:
            heapq.heappop(heap)
        i = heap[0][1]
        row = transitions[i]
        cost = 1 + len(row)
        if work + cost > max_work:
            stop = "numeric-budget"
            break
        work += cost
        heapq.heappop(heap)
        rho = r[i]
        r[i] = 0.0
        x[i] += rho
        moved = 0.0
        for j, t in row:
            share = t * rho
            r[j] += share  # j == i for a self-loop, which feeds back into the cleared residual
            moved += share
            if r[j] > 0.0:
                heapq.heappush(heap, (-r[j], j))
        sums.record_push(rho, moved, len(row))
        pushes += 1
        epsilon = sums.epsilon()
    if epsilon is None:
        epsilon = sums.resync()
    return Solution(
        x=tuple(x), converged=stop == "completed", stop=stop, work=work, pushes=pushes,
        numeric_error_l1_upper=epsilon,
    )


class _RunningSums:
    """R = Σr and X = Σx kept up to date per push, with a rigorous bound on their drift.

    ε and the stop test must use R and X summed in acquisition order (the figures of
    docs/atoms.md "Worked example (search)" depend on it), but summing every node after each push makes a push cost
    O(nodes). The running sums settle the common case "ε is certainly above the tolerance"; when
    they cannot, the ordered sums are recomputed and decide, so the outcome never changes.
    """

    def __init__(self, r: list[float], x: list[float], p: float) -> None:
        self.r, self.x, self.p = r, x, p
        # How far an ordered sum of n values ≥ 0 can be from their exact sum, plus rounding margin.
        self.slack = 1.01 * len(r) * _UNIT + 16 * _UNIT
        self.residual = self.mass = self.residual_drift = self.mass_drift = 0.0

    def resync(self) -> float:
        """Recompute both sums in acquisition order and return the exact ε."""
        self.residual = _sum_in_order(self.r)
        self.mass = _sum_in_order(self.x)
        self.residual_drift = self.slack * self.residual
        self.mass_drift = self.slack * self.mass
        return _bound(self.residual, self.mass, self.p)

    def record_push(self, rho: float, moved: float, degree: int) -> None:
        # Per push the running sums make a few roundings and the residual updates `degree` more,
        # each at most one unit roundoff of a value ≤ R (resp. X); 4·(degree + 3) covers them.
        self.residual_drift += 4 * _UNIT * (degree + 3) * (self.residual + self.residual_drift)
        self.residual = (self.residual - rho) + moved
        self.mass += rho
        self.mass_drift += 4 * _UNIT * (self.mass + self.mass_drift)

    def epsilon(self) -> float | None:
        """None when ε certainly exceeds TOLERANCE; otherwise the exact ε (after a resync)."""
        residual_low = (self.residual - self.residual_drift) * (1 - self.slack)
        mass_high = (self.mass + self.mass_drift) * (1 + self.slack)
        drifted = self.residual_drift > _RESYNC * self.residual or self.mass_drift > _RESYNC * self.mass
        # ε grows with R and falls with X, so this is a lower bound on the exact ε.
        if not drifted and residual_low > 0 and _bound(residual_low, mass_high, self.p) * (1 - self.slack) > TOLERANCE:
            return None
        return self.resync()


def normalize(x: Sequence[float]) -> list[float]:
    """score_i = x_i/Σx; all zero when x is (a zero b gives a zero x)."""
    total = _sum_in_order(x)
    if total == 0.0:
        return [0.0] * len(x)
    return [value / total for value in x]


def rank(nodes: Sequence[GraphNode], scores: Sequence[float]) -> list[int]:
    """Positions of nodes with score > 0: score descending, body bytes ascending, atom id."""
    return sorted(
        (i for i, score in enumerate(scores) if score > 0.0),
        key=lambda i: (-scores[i], nodes[i].body_bytes, nodes[i].atom_id),
    )


@dataclass(frozen=True, slots=True)
class Evaluation:
    b: list[float]
    transitions: list[TransitionRow]
    solution: Solution
    scores: list[float]
    ranking: list[int]

    @property
    def activations(self) -> tuple[float, ...]:
        """Unnormalized activations, the weights `w(x)` of selection (docs/atoms.md "Selection utility (read)")."""
        return self.solution.x


def evaluate(
    graph: ActivationGraph,
    *,
    beta: float,
    p: float,
    relations: RelationWeights,
    max_work: int,
    deadline_passed: Callable[[], bool] | None = None,
    default_relation: RelationWeight = DEFAULT_RELATION_WEIGHT,
) -> Evaluation:
    """Steps 3-6 of docs/atoms.md "Defaults" and the ranking, over an acquired graph. May raise BudgetExhausted."""
    b = seed_vector([node.m for node in graph.nodes], [node.u for node in graph.nodes], beta)
    transitions = transition_rows(len(graph.nodes), graph.edges, relations, p, default_relation)
    solution = solve(b, transitions, p, max_work, deadline_passed=deadline_passed)
    scores = normalize(solution.x)
    return Evaluation(b=b, transitions=transitions, solution=solution, scores=scores,
                      ranking=rank(graph.nodes, scores))


# --- exact reference ------------------------------------------------------------------------

def exact_activation(
    b: Sequence[Fraction | float | int], transitions: Sequence[Sequence[tuple[int, Fraction | float]]]
) -> list[Fraction]:
    """The exact a of a = b + Tᵀa, by Gauss-Jordan elimination over fractions.

    Floats are taken at their exact binary value. Meant for small graphs (cubic cost): tests
    check the solver against it within the certified bound.
    """
    size = len(b)
    if len(transitions) != size:
        raise ValueError("transitions must have one row per node")
    # Row j of (I - Tᵀ)a = b reads a_j - Σ_i T[i][j]·a_i = b_j; the last column is b.
    system = [[Fraction(int(i == j)) for i in range(size)] + [Fraction(b[j])] for j in range(size)]
    for i, row in enumerate(transitions):
        for j, t in row:
            system[j][i] -= Fraction(t)
    for col in range(size):
        pivot = next((k for k in range(col, size) if system[k][col] != 0), None)
        if pivot is None:
            raise ValueError("singular system: some row of T sums to 1 or more")
        system[col], system[pivot] = system[pivot], system[col]
        lead = system[col][col]
        system[col] = [value / lead for value in system[col]]
        for k in range(size):
            factor = system[k][col]
            if k != col and factor != 0:
                system[k] = [value - factor * top for value, top in zip(system[k], system[col], strict=True)]
    return [system[j][size] for j in range(size)]


# --- helpers --------------------------------------------------------------------------------

def _sum_in_order(values: Iterable[float]) -> float:
    # Plain left-to-right addition on purpose: the worked example's ε figures depend on it, and
    # builtins.sum switched to compensated summation for floats in Python 3.12.
    return reduce(operator.add, values, 0.0)


def _bound(residual: float, mass: float, p: float) -> float:
    if residual == 0.0:
        return 0.0
    return 2.0 * residual / ((1.0 - p) * mass + residual)


def _check_non_negative(name: str, value: float) -> None:
    if isinstance(value, bool) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number ≥ 0, got {value!r}")


def _check_propagation(p: float) -> None:
    if isinstance(p, bool) or not math.isfinite(p) or not 0 <= p < 1:
        raise ValueError(f"propagation must satisfy 0 ≤ p < 1, got {p!r}")
