"""The worked example of docs/atoms.md "Worked example (search)" (its five atoms under the
BM25 match), end to end through write, uses and search."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from atoms.api.write import answer_write
from atoms.models import AtomStore, UseState
from atoms.principal import Principal
from tests.atoms.api.helpers import AtomsClient, create
from tests.atoms.api.observing import own_ref
from tests.conftest import error_of

T0 = 1_767_225_600_000
HALF_LIFE = 604_800_000
TOLERANCE = 2e-6
TEXTS = {
    "A": "Brewing temperature for coffee: 93 C.",
    "B": "Alice takes her coffee black.",
    "C": "Water above 96 C scorches the grounds.",
    "D": "Applies on weekdays only.",
    "E": "Cold brew steeps for 12 hours.",
}
QUERY = "coffee brew temperature"
# The worked example's settings (docs/atoms.md "Worked example (search)"): its activation
# figures, not the defaults measured for recall v2 (docs/atoms.md "Defaults").
WORKED_CONFIG = {"retrieval": {"depth": 2, "maxSeeds": 64},
                 "activation": {"propagation": 0.5, "relations": {
                     role: {"forward": 1, "reverse": 1} for role in ("detail", "condition", "related")}}}


def use_worked_config(tenant: Any) -> None:
    store = AtomStore.get_or_create_for(tenant)
    store.config = WORKED_CONFIG
    store.save(update_fields=["config"])


def expected_scores() -> dict[str, float]:
    """The worked example of docs/atoms.md "Worked example (search)", computed here independently of
    the service: BM25 m by hand, b = m·(1 + β·u/(1+u)), then a = b + Tᵀa solved directly
    (not by the push solver), score = a / Σa."""
    activation = expected_activations()
    total = sum(activation.values())
    return {x: value / total for x, value in activation.items()}


def expected_activations() -> dict[str, float]:
    """The unnormalized activations a of `expected_scores` (read's selection weighs them)."""
    terms = {"A": ["brewing", "temperature", "for", "coffee", "93", "c"], "B": ["alice", "takes", "her", "coffee", "black"],
             "C": ["water", "above", "96", "c", "scorches", "the", "grounds"], "D": ["applies", "on", "weekdays", "only"],
             "E": ["cold", "brew", "steeps", "for", "12", "hours"]}
    k1, b_, docs = 1.2, 0.75, 5
    avgdl = sum(len(t) for t in terms.values()) / docs  # 28 / 5
    df = {q: sum(q in t for t in terms.values()) for q in QUERY.split()}
    idf = {q: math.log(1 + (docs - n + 0.5) / (n + 0.5)) for q, n in df.items()}
    ceiling = sum(idf.values()) * (k1 + 1)
    m = {letter: sum(idf[q] * t.count(q) * (k1 + 1) / (t.count(q) + k1 * (1 - b_ + b_ * len(t) / avgdl))
                     for q in QUERY.split()) / ceiling for letter, t in terms.items()}
    u = {"B": 0.5}
    seed = {x: m[x] * (1 + 0.3 * u.get(x, 0) / (1 + u.get(x, 0))) for x in "ABCDE"}
    order = "ABCDE"
    edges = [("A", "C"), ("E", "A"), ("B", "D")]
    transitions = np.zeros((5, 5))
    neighbours = {x: [y for a, c in edges for y in ((c,) if a == x else (a,) if c == x else ())] for x in order}
    for x, ys in neighbours.items():
        for y in ys:
            transitions[order.index(x), order.index(y)] = 0.5 / len(ys)
    activation = np.linalg.solve(np.eye(5) - transitions.T, np.array([seed[x] for x in order]))
    return {x: float(activation[i]) for i, x in enumerate(order)}


@pytest.fixture
def example(acme: Any, X: AtomsClient, W: AtomsClient, frozen_clock: Any) -> dict[str, str]:
    """Rita writes the five atoms through the UI; W gets one accepted use of B at t0.
    Returns W's refs by atom letter."""
    use_worked_config(acme)
    changes = [
        create("A", TEXTS["A"], links={"detail": {"local": "C"}}),
        create("B", TEXTS["B"], links={"condition": {"local": "D", "required": True}}),
        create("C", TEXTS["C"]), create("D", TEXTS["D"]),
        create("E", TEXTS["E"], links={"related": {"local": "A"}}),
    ]
    outcome = answer_write(Principal.for_user(acme, "rita"), {"changes": changes})
    assert all(view["provenance"] == {"origin": "source", "producer": "user:rita"}
               for view in outcome["changes"].values())
    assert set(outcome["review"].values()) == {"approved"}
    refs = {letter: own_ref(W, view["ref"]) for letter, view in outcome["changes"].items()}
    frozen_clock.set_now(T0)
    response = X.post("uses", {"binding": {"key": W.key.public_id}, "refs": [refs["B"]], "eventId": "t0"})
    assert response.status_code == 200, response.content
    assert UseState.objects.get().state == {"halfLifeMs": HALF_LIFE, "mass": 1, "updatedAt": T0}
    frozen_clock.set_now(T0 + HALF_LIFE)
    return refs


def search(client: AtomsClient, **options: Any) -> Any:
    return client.post("search", {"query": "coffee brew temperature", "options": options})


def letters(result: dict[str, Any], refs: dict[str, str]) -> list[str]:
    by_ref = {ref: letter for letter, ref in refs.items()}
    return [by_ref[item["ref"]] for item in result["items"]]


def test_search_reproduces_the_worked_example(W, example):
    response = search(W)
    assert response.status_code == 200, response.content
    result = response.json()
    scores = expected_scores()
    assert letters(result, example) == sorted("ABCDE", key=lambda x: -scores[x]) == ["A", "E", "B", "C", "D"]
    for item, letter in zip(result["items"], "AEBCD", strict=True):
        assert abs(item["score"] - scores[letter]) <= TOLERANCE, letter
        assert item["text"] == TEXTS[letter]
    diagnostics = result["diagnostics"]
    assert diagnostics["evaluatedAt"] == T0 + HALF_LIFE
    evaluation = diagnostics["evaluation"]
    assert evaluation["converged"] is True and evaluation["scope"] == "acquired-graph"
    assert 0 < evaluation["numericErrorL1Upper"] <= 1e-6
    assert diagnostics["acquisition"] == {"partial": False, "scanned": 3, "index": "ready"}
    assert (diagnostics["stop"], diagnostics["approximate"], diagnostics["scanned"]) == ("completed", False, 3)
    assert result["usage"] == {"maxAtoms": 5, "maxCandidates": 3, "maxBytes": 159, "maxContextTokens": 0,
                               "maxEvaluationWork": evaluation["work"], "maxPackingWork": 0}
    assert result["stale"] == [] and "cursor" not in result


def test_the_use_boost_stays_within_one_plus_beta(W, example):
    with_use = {letter: item["score"] for letter, item in zip("AEBCD", search(W).json()["items"], strict=True)}
    UseState.objects.all().delete()
    without = {letter: item["score"] for letter, item in zip("AEBCD", search(W).json()["items"], strict=True)}
    # B's seed is larger by exactly 1 + 0.3·0.5/1.5 = 1.1, and D, fed only by B, by the same factor;
    # A, E and C get nothing from B (compare unnormalized activations: score * Σa).
    boost = with_use["A"] / without["A"]  # the normalization alone
    for letter in "BD":
        assert with_use[letter] / without[letter] / boost == pytest.approx(1.1, abs=1e-5)
    for letter in "EC":
        assert with_use[letter] / without[letter] / boost == pytest.approx(1.0, abs=1e-5)


def test_an_evaluation_budget_one_short_stops_one_push_short(W, example):
    work = search(W).json()["diagnostics"]["evaluation"]["work"]
    result = search(W, budget={"maxEvaluationWork": work - 1}).json()
    evaluation = result["diagnostics"]["evaluation"]
    assert evaluation["converged"] is False and evaluation["work"] < work
    assert evaluation["numericErrorL1Upper"] > search(W).json()["diagnostics"]["evaluation"]["numericErrorL1Upper"]
    assert result["diagnostics"]["stop"] == "numeric-budget"


def test_an_evaluation_budget_of_11_only_initializes_and_10_is_exhausted(W, example):
    result = search(W, budget={"maxEvaluationWork": 11}).json()
    assert result["items"] == [] and result["diagnostics"]["numericErrorL1Upper"] == 2
    response = search(W, budget={"maxEvaluationWork": 10})
    assert response.status_code == 422 and error_of(response)["code"] == "BUDGET_EXHAUSTED"
