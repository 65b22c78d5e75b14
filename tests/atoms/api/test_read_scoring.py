"""The worked example of docs/atoms.md "Selection utility (read)" through write, uses and read."""

from __future__ import annotations

import json
from typing import Any

import pytest

from atoms.api.write import answer_write
from atoms.principal import Principal
from tests.atoms.api.helpers import AtomsClient, create
from tests.atoms.api.observing import own_ref
from tests.atoms.api.test_read import ok_read
from tests.atoms.api.test_search_scoring import (
    HALF_LIFE,
    T0,
    TEXTS,
    TOLERANCE,
    expected_activations,
    expected_scores,
    use_worked_config,
)

RANKING = "AEBCD"


def expected_utility(letters: str) -> float:
    """U of read's selection (docs/atoms.md "Selection utility (read)"): the root at position k of
    the ranking A, E, B, C, D weighs its activation · 2^-(k-1)."""
    activation = expected_activations()
    assert sorted(activation, key=lambda x: -activation[x]) == list(RANKING)
    return sum(activation[x] * 2.0 ** -RANKING.index(x) for x in letters)


@pytest.fixture
def example(acme: Any, X: AtomsClient, W: AtomsClient, frozen_clock: Any) -> dict[str, str]:
    use_worked_config(acme)
    changes = [
        create("A", TEXTS["A"], links={"detail": {"local": "C"}}),
        create("B", TEXTS["B"], links={"condition": {"local": "D", "required": True}}),
        create("C", TEXTS["C"]), create("D", TEXTS["D"]),
        create("E", TEXTS["E"], links={"related": {"local": "A"}}),
    ]
    outcome = answer_write(Principal.for_user(acme, "rita"), {"changes": changes})
    refs = {letter: own_ref(W, view["ref"]) for letter, view in outcome["changes"].items()}
    frozen_clock.set_now(T0)
    response = X.post("uses", {"binding": {"key": W.key.public_id}, "refs": [refs["B"]], "eventId": "t0"})
    assert response.status_code == 200, response.content
    frozen_clock.set_now(T0 + HALF_LIFE)
    return refs


def letters(result: dict[str, Any], refs: dict[str, str]) -> str:
    by_ref = {ref: letter for letter, ref in refs.items()}
    return "".join(by_ref[ref] for ref in result["refs"])


def test_the_worked_example_reads_everything_at_4096_tokens(W, example):
    result = ok_read(W, {"query": "coffee brew temperature"})
    assert letters(result, example) == "AEBDC" and result["tokenCount"] == 1250
    for item, letter in zip(result["items"], "AEBDC", strict=True):
        assert abs(item["score"] - expected_scores()[letter]) <= TOLERANCE and item["text"] == TEXTS[letter]
    selection = result["diagnostics"]["selection"]
    assert selection["utility"] == pytest.approx(expected_utility("AEBDC"), abs=1e-5) and selection["work"] == 28
    assert selection["baselineUtility"] == selection["utility"] and "minimumTokens" not in selection
    assert (selection["complete"], selection["baselineComplete"]) == (True, True)
    assert result["diagnostics"]["stop"] == "completed" and "cursor" not in result
    assert result["diagnostics"]["evaluatedAt"] == T0 + HALF_LIFE
    memory = json.loads(result["text"])["memory"]
    assert memory[2]["links"] == [{"at": "logical", "orderKey": "0", "ref": example["D"], "required": True,
                                   "role": "condition"}]
    assert result["usage"]["maxPackingWork"] == 28 and result["usage"]["maxEvaluationWork"] == 138
    # With the example's placeholder refs (same length as real ones) the text is the example's, byte for byte.
    placeholder = result["text"]
    for n, letter in enumerate("ABCDE", start=1):
        placeholder = placeholder.replace(example[letter], f"ref:00000000-0000-4000-8000-{n:012d}")
    assert placeholder == WORKED_TEXT


WORKED_TEXT = (
    '{"evidence":[],"formatVersion":2,"memory":['
    '{"links":[{"at":"logical","orderKey":"0","ref":"ref:00000000-0000-4000-8000-000000000003","required":false,'
    '"role":"detail"}],"provenance":{"origin":"source","producer":"user:rita"},'
    '"ref":"ref:00000000-0000-4000-8000-000000000001","sources":[],"text":"Brewing temperature for coffee: 93 C."},'
    '{"links":[{"at":"logical","orderKey":"0","ref":"ref:00000000-0000-4000-8000-000000000001","required":false,'
    '"role":"related"}],"provenance":{"origin":"source","producer":"user:rita"},'
    '"ref":"ref:00000000-0000-4000-8000-000000000005","sources":[],"text":"Cold brew steeps for 12 hours."},'
    '{"links":[{"at":"logical","orderKey":"0","ref":"ref:00000000-0000-4000-8000-000000000004","required":true,'
    '"role":"condition"}],"provenance":{"origin":"source","producer":"user:rita"},'
    '"ref":"ref:00000000-0000-4000-8000-000000000002","sources":[],"text":"Alice takes her coffee black."},'
    '{"links":[],"provenance":{"origin":"source","producer":"user:rita"},'
    '"ref":"ref:00000000-0000-4000-8000-000000000004","sources":[],"text":"Applies on weekdays only."},'
    '{"links":[],"provenance":{"origin":"source","producer":"user:rita"},'
    '"ref":"ref:00000000-0000-4000-8000-000000000003","sources":[],"text":"Water above 96 C scorches the grounds."}]}'
)


@pytest.mark.parametrize(("tokens", "limit", "expected", "count", "utility", "work", "stop", "minimum"), [
    (1100, 24, "AEBD", 1071, expected_utility("AEBD"), 28, "budget", None),
    (800, 24, "AEC", 799, expected_utility("AEC"), 30, "budget", None),
    (300, 24, "C", 223, expected_utility("C"), 23, "budget", 329),
    (200, 24, "", 0, 0, 18, "budget", 210),
    (4096, 3, "AEC", 799, expected_utility("AEC"), 30, "page-limit", None),
])
def test_the_worked_example_under_smaller_budgets(W, example, tokens, limit, expected, count, utility, work,
                                                   stop, minimum):
    result = ok_read(W, {"query": "coffee brew temperature"}, tokens=tokens, limit=limit)
    assert letters(result, example) == expected and result["tokenCount"] == count
    selection = result["diagnostics"]["selection"]
    assert selection["utility"] == pytest.approx(utility, abs=1e-5) and selection["work"] == work
    assert result["diagnostics"]["stop"] == stop and selection.get("minimumTokens") == minimum
    assert ("cursor" in result) == (tokens != 200)


def test_the_worked_example_pages_to_the_deferred_atom(W, example):
    first = ok_read(W, {"query": "coffee brew temperature"}, tokens=1100)
    second = ok_read(W, {"query": "coffee brew temperature"}, tokens=1100, cursor=first["cursor"])
    assert letters(second, example) == "C" and "cursor" not in second
    assert second["diagnostics"]["evaluatedAt"] == first["diagnostics"]["evaluatedAt"]
    assert abs(second["items"][0]["score"] - expected_scores()["C"]) <= TOLERANCE
    assert second["usage"]["maxEvaluationWork"] == 0


def test_purging_an_unshown_candidate_erases_the_output_made_from_the_read(X, W, I, Z):
    """Every candidate a read acquired counts as read: purging one it did not show erases the output written
    with a token over that read's receipt."""
    from tests.atoms.api.helpers import create as make
    from tests.atoms.api.observing import token as issue_token

    outcome = I.ok_write(make("one", "needle one"), make("two", "needle two"))
    result = W.post("read", {"state": {"query": "needle"}, "options": {"limit": 1}}).json()
    assert len(result["items"]) == 1
    shown = result["items"][0]["text"]
    unshown = "needle two" if shown == "needle one" else "needle one"
    t = issue_token(X, W, presentations=[{"receipt": result["receipt"]["id"]}])
    output = W.ok_write(make("o", "summary of the needles", input=t))["changes"]["o"]["ref"]
    from atoms.models import Ref

    unshown_ref = outcome["changes"]["one" if unshown == "needle one" else "two"]["ref"]
    purged = Z.post("purge", {"atomId": Ref.objects.get(id=unshown_ref).atom_id}).json()
    assert purged["complete"] is True and len(purged["erasedAtomIds"]) == 2
    response = W.post("inspect", {"ref": output})
    assert response.status_code == 403 and response.json()["error"]["code"] == "ACCESS_DENIED"
