"""The worked example of atoms-scoring.md §1-§6, end to end through write, uses and search."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from atoms.models import UseState
from atoms.principal import Principal
from atoms.services.write import atoms_write
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
# §5: score = a/Σa with Σa = 17/5; §6: ranking A, E, B, C, D.
SCORES = {"A": Fraction(70, 153), "E": Fraction(65, 306), "B": Fraction(22, 153), "C": Fraction(35, 306),
          "D": Fraction(11, 153)}


@pytest.fixture
def example(acme: Any, X: AtomsClient, W: AtomsClient, frozen_clock: Any) -> dict[str, str]:
    """Rita writes the five atoms through the UI; W gets one accepted use of B at t0.
    Returns W's refs by atom letter."""
    changes = [
        create("A", TEXTS["A"], links={"detail": {"local": "C"}}),
        create("B", TEXTS["B"], links={"condition": {"local": "D", "required": True}}),
        create("C", TEXTS["C"]), create("D", TEXTS["D"]),
        create("E", TEXTS["E"], links={"related": {"local": "A"}}),
    ]
    outcome = atoms_write(caller=Principal.for_user(acme, "rita"), body={"changes": changes})
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
    assert letters(result, example) == ["A", "E", "B", "C", "D"]
    for item, letter in zip(result["items"], "AEBCD", strict=True):
        assert abs(item["score"] - float(SCORES[letter])) <= TOLERANCE, letter
        assert item["text"] == TEXTS[letter]
    diagnostics = result["diagnostics"]
    assert diagnostics["evaluatedAt"] == T0 + HALF_LIFE
    assert diagnostics["evaluation"] == {"converged": True, "numericErrorL1Upper": pytest.approx(8.488652e-07, rel=1e-6),
                                         "scope": "acquired-graph", "work": 138}
    assert diagnostics["acquisition"] == {"partial": False, "scanned": 3, "index": "ready"}
    assert (diagnostics["stop"], diagnostics["approximate"], diagnostics["scanned"]) == ("completed", False, 3)
    assert result["usage"] == {"maxAtoms": 5, "maxCandidates": 3, "maxBytes": 159, "maxContextTokens": 0,
                               "maxEvaluationWork": 138, "maxPackingWork": 0}
    assert result["stale"] == [] and "cursor" not in result


def test_the_use_boost_stays_within_one_plus_beta(W, example):
    scores = {letter: item["score"] for letter, item in zip("AEBCD", search(W).json()["items"], strict=True)}
    # Without the use a_B = 4/9 and a_D = 2/9; with it both are larger by exactly 1.1 (Σa = 17/5).
    for letter, base in (("B", Fraction(4, 9)), ("D", Fraction(2, 9))):
        assert abs(scores[letter] * 17 / 5 / float(base) - 1.1) <= 1e-5


def test_an_evaluation_budget_of_137_stops_one_push_short(W, example):
    result = search(W, budget={"maxEvaluationWork": 137}).json()
    evaluation = result["diagnostics"]["evaluation"]
    assert (evaluation["converged"], evaluation["work"]) == (False, 136)
    assert evaluation["numericErrorL1Upper"] == pytest.approx(1.054560e-06, rel=1e-6)
    assert result["diagnostics"]["stop"] == "numeric-budget"


def test_an_evaluation_budget_of_11_only_initializes_and_10_is_exhausted(W, example):
    result = search(W, budget={"maxEvaluationWork": 11}).json()
    assert result["items"] == [] and result["diagnostics"]["numericErrorL1Upper"] == 2
    response = search(W, budget={"maxEvaluationWork": 10})
    assert response.status_code == 422 and error_of(response)["code"] == "BUDGET_EXHAUSTED"
