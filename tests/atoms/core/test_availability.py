"""The availability model contract and AdaptiveUse, checked against the worked example's one use of B
(docs/atoms.md "Worked example (search)")."""

from __future__ import annotations

import math
import warnings
from typing import Any

import pytest

from atoms.core.availability import (
    AdaptiveUse,
    AvailabilityModel,
    Json,
    call_update,
    call_value,
    construct_model,
    validate_state,
    validate_value,
)
from atoms.core.errors import ModelError

DAY = 86_400_000
WEEK = 7 * DAY
T0 = 1_767_225_600_000  # B's accepted use in the worked example


# --- AdaptiveUse ------------------------------------------------------------------------------

def test_the_default_id_spells_out_both_options_in_canonical_order() -> None:
    expected = 'adaptive-use-v1:{"initialHalfLifeMs":604800000,"maxHalfLifeMs":31536000000}'
    assert AdaptiveUse().id == expected
    assert AdaptiveUse({}).id == expected
    assert AdaptiveUse({"maxHalfLifeMs": 31_536_000_000, "initialHalfLifeMs": 604_800_000}).id == expected
    assert AdaptiveUse({"initialHalfLifeMs": 604_800_000.0}).id == expected
    assert AdaptiveUse({"initialHalfLifeMs": 1000, "maxHalfLifeMs": 1500}).id == (
        'adaptive-use-v1:{"initialHalfLifeMs":1000,"maxHalfLifeMs":1500}'
    )


def test_rows_2_to_4_a_first_use_halves_every_week_and_never_exceeds_its_mass() -> None:
    model = AdaptiveUse()
    s1 = model.update(None, 0)
    assert s1 == {"halfLifeMs": 604_800_000, "mass": 1, "updatedAt": 0}
    assert model.value(s1, 0) == 1
    assert model.value(s1, WEEK) == 0.5
    assert model.value(s1, 2 * WEEK) == 0.25
    assert model.value(s1, -5) == 1


def test_rows_5_to_7_a_use_a_week_later_lengthens_the_half_life() -> None:
    model = AdaptiveUse()
    s2 = model.update(model.update(None, 0), WEEK)
    assert s2 == {"halfLifeMs": 907_200_000, "mass": 1.5, "updatedAt": 604_800_000}
    assert s2["halfLifeMs"] == 10.5 * DAY
    assert model.value(s2, 1_512_000_000) == pytest.approx(0.75, abs=1e-12)
    with pytest.raises(ModelError) as caught:
        model.update(s2, 0)
    assert caught.value.code == "INVALID_INPUT"


def test_rows_8_to_10_spaced_uses_retain_more_than_a_burst() -> None:
    model = AdaptiveUse()
    s3 = model.update(model.update(model.update(None, 0), WEEK), 2 * WEEK)
    assert isinstance(s3, dict)
    assert s3["mass"] == pytest.approx(1.9449407874211548, rel=1e-12)
    assert s3["halfLifeMs"] == pytest.approx(1130999874.5117903, rel=1e-12)
    assert s3["halfLifeMs"] / DAY == pytest.approx(13.090276, abs=5e-7)
    spaced = model.value(s3, 30 * DAY)
    assert spaced == pytest.approx(0.833610, abs=5e-7)

    burst = model.update(model.update(model.update(None, 0), 0), 0)
    assert burst == {"halfLifeMs": 604_800_000, "mass": 3, "updatedAt": 0}
    assert model.value(burst, 30 * DAY) == pytest.approx(0.153813, abs=5e-7)
    assert model.value(burst, 30 * DAY) < spaced


def test_mass_is_capped_at_a_million() -> None:
    state = AdaptiveUse().update({"halfLifeMs": 604_800_000, "mass": 1_000_000, "updatedAt": 0}, 0)
    assert isinstance(state, dict)
    assert state["mass"] == 1_000_000


def test_the_half_life_stops_at_the_maximum() -> None:
    model = AdaptiveUse({"initialHalfLifeMs": 1000, "maxHalfLifeMs": 1500})
    states = [model.update(None, 0)]
    for t in (1000, 2500):
        states.append(model.update(states[-1], t))
    assert [s["halfLifeMs"] for s in states] == [1000, 1500, 1500]  # type: ignore[index]
    assert [s["mass"] for s in states] == [1, 1.5, 1.75]  # type: ignore[index]


def test_a_stored_half_life_above_the_maximum_is_kept() -> None:
    model = AdaptiveUse({"initialHalfLifeMs": 1000, "maxHalfLifeMs": 1500})
    assert model.update({"halfLifeMs": 2000, "mass": 1, "updatedAt": 0}, 0) == {
        "halfLifeMs": 2000, "mass": 2, "updatedAt": 0,
    }


@pytest.mark.parametrize("options", [
    {"initialHalfLifeMs": 0},
    {"maxHalfLifeMs": math.nan},
    {"initialHalfLifeMs": 2, "maxHalfLifeMs": 1},
    {"foo": 1},
    {"initialHalfLifeMs": -1},
    {"initialHalfLifeMs": math.inf},
    {"maxHalfLifeMs": True},
    {"maxHalfLifeMs": "1000"},
    ["initialHalfLifeMs"],
])
def test_bad_options_are_invalid_input(options: Any) -> None:
    with pytest.raises(ModelError) as caught:
        AdaptiveUse(options)
    assert caught.value.code == "INVALID_INPUT"


@pytest.mark.parametrize("state", [
    {"halfLifeMs": 1000, "mass": 1},
    {"halfLifeMs": 0, "mass": 1, "updatedAt": 0},
    {"halfLifeMs": 1000, "mass": -1, "updatedAt": 0},
    {"halfLifeMs": 1000, "mass": "1", "updatedAt": 0},
    {"halfLifeMs": 1000, "mass": 1, "updatedAt": 0, "extra": 1},
    [1000, 1, 0],
    7,
])
def test_it_rejects_states_it_did_not_write(state: Any) -> None:
    with pytest.raises(ModelError):
        AdaptiveUse().value(state, 0)
    with pytest.raises(ModelError):
        AdaptiveUse().update(state, 0)


def test_the_worked_examples_b_state_is_worth_half_a_week_later() -> None:
    model = AdaptiveUse()
    state, text = call_update(model, None, T0)
    assert text == '{"halfLifeMs":604800000,"mass":1,"updatedAt":1767225600000}'
    assert call_value(model, state, T0 + WEEK) == 0.5
    assert call_value(model, None, T0 + WEEK) == 0
    # The seed value: b_B = m·(1 + β·u/(1+u)) with m = 1/3, β = 0.3, u = 0.5 is 11/30.
    u = call_value(model, state, T0 + WEEK)
    assert (1 / 3) * (1 + 0.3 * u / (1 + u)) == pytest.approx(11 / 30, abs=1e-12)


def test_adaptive_use_satisfies_the_model_protocol() -> None:
    assert isinstance(AdaptiveUse(), AvailabilityModel)
    assert construct_model(AdaptiveUse, {"initialHalfLifeMs": 1000}).id.startswith("adaptive-use-v1:")


# --- The contract's checks ------------------------------------------------------------------

class CountingModel:
    """The counting test model: update previous+1 from 1, value state."""

    id = "test-counting-v1"

    def __init__(self, options: Any = None) -> None:
        self.options = options

    def update(self, previous: Json | None, accepted_at: int) -> Json:
        return (previous or 0) + 1  # type: ignore[operator]

    def value(self, state: Json | None, now: int) -> float:
        return 0.0 if state is None else float(state)  # type: ignore[arg-type]


def test_case_28_ten_uses_boost_a_by_31_over_11() -> None:
    model = CountingModel()
    state: Json | None = None
    for _ in range(10):
        state, _text = call_update(model, state, 0)
    assert state == 10
    beta = 2.0
    b = {name: 1.0 * (1 + beta * u / (1 + u)) for name, u in
         (("a", call_value(model, state, 0)), ("b", call_value(model, None, 0)))}
    # propagation 0: activation equals b, so scores are b normalized.
    total = b["a"] + b["b"]
    assert b["a"] == pytest.approx(31 / 11, abs=1e-12)
    assert b["a"] / total == pytest.approx(0.738095, abs=5e-7)
    assert b["b"] / total == pytest.approx(0.261905, abs=5e-7)
    assert b["a"] / b["b"] == pytest.approx(1 + 20 / 11, abs=1e-10)
    assert b["a"] / b["b"] < 3


class ScriptedModel:
    id = "test-scripted-v1"

    def __init__(self, update_result: Any = None, value_result: Any = 0.0, error: Exception | None = None) -> None:
        self.update_result = update_result
        self.value_result = value_result
        self.error = error
        self.seen: list[Any] = []

    def update(self, previous: Json | None, accepted_at: int) -> Json:
        self.seen.append(previous)
        if self.error:
            raise self.error
        return self.update_result  # type: ignore[no-any-return]

    def value(self, state: Json | None, now: int) -> float:
        self.seen.append(state)
        if self.error:
            raise self.error
        return self.value_result  # type: ignore[no-any-return]


async def _coroutine() -> float:
    return 1.0


@pytest.mark.parametrize("result", [-1, math.nan, math.inf, True, "1", None, [1]])
def test_case_31_bad_values_are_invalid_input(result: Any) -> None:
    with pytest.raises(ModelError) as caught:
        call_value(ScriptedModel(value_result=result), {"x": 1}, 0)
    assert caught.value.code == "INVALID_INPUT"


def test_case_31_a_raising_value_is_invalid_input_never_zero() -> None:
    with pytest.raises(ModelError):
        call_value(ScriptedModel(error=RuntimeError("boom")), None, 0)


def test_coroutines_are_closed_before_they_are_rejected() -> None:
    coroutine = _coroutine()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "never awaited" would surface as an error here
        with pytest.raises(ModelError):
            call_value(ScriptedModel(value_result=coroutine), None, 0)
        with pytest.raises(ModelError):
            call_update(ScriptedModel(update_result=_coroutine()), None, 0)
    assert coroutine.cr_frame is None  # closed


@pytest.mark.parametrize("result", ["x" * 2000, {"a": math.nan}, {1: "a"}, (1, 2), {"s": {1, 2}}, b"raw"])
def test_case_32_bad_or_oversized_states_are_invalid_input(result: Any) -> None:
    with pytest.raises(ModelError) as caught:
        call_update(ScriptedModel(update_result=result), None, 0)
    assert caught.value.code == "INVALID_INPUT"


def test_case_32_a_raising_update_is_invalid_input() -> None:
    with pytest.raises(ModelError):
        call_update(ScriptedModel(error=ValueError("nope")), None, 0)


def test_states_up_to_1024_canonical_bytes_are_accepted() -> None:
    assert len(validate_state("x" * 1022)) == 1024
    with pytest.raises(ModelError) as caught:
        validate_state("x" * 1023)
    assert caught.value.details == {"limit": 1024, "actual": 1025}
    assert validate_state({"b": [1.0, None, True], "a": "é"}) == '{"a":"é","b":[1,null,true]}'


def test_cyclic_states_are_rejected() -> None:
    looped: dict[str, Any] = {}
    looped["self"] = looped
    with pytest.raises(ModelError):
        validate_state(looped)


def test_models_see_deep_copies_and_cannot_keep_a_handle_on_the_stored_state() -> None:
    stored = {"nested": {"count": 1}}
    returned = {"nested": {"count": 2}}
    model = ScriptedModel(update_result=returned)
    state, _text = call_update(model, stored, 0)
    assert model.seen[0] == stored and model.seen[0] is not stored
    assert model.seen[0]["nested"] is not stored["nested"]
    returned["nested"]["count"] = 99
    assert state == {"nested": {"count": 2}}


@pytest.mark.parametrize(("value", "expected"), [(0, 0.0), (3, 3.0), (0.25, 0.25), (-0.0, 0.0)])
def test_it_accepts_finite_non_negative_values(value: Any, expected: float) -> None:
    assert validate_value(value) == expected


class AsyncModel:
    id = "test-async-v1"

    def __init__(self, options: Any) -> None:
        pass

    async def update(self, previous: Json | None, accepted_at: int) -> Json:
        return 1

    def value(self, state: Json | None, now: int) -> float:
        return 0.0


class BadIdModel(CountingModel):
    id = ""


class NoValueModel:
    id = "test-no-value-v1"
    value = None

    def __init__(self, options: Any) -> None:
        pass

    def update(self, previous: Json | None, accepted_at: int) -> Json:
        return 1


class FailingConstructor:
    def __init__(self, options: Any) -> None:
        raise RuntimeError("no")


@pytest.mark.parametrize("cls", [AsyncModel, BadIdModel, NoValueModel, FailingConstructor])
def test_construction_rejects_async_callbacks_bad_ids_and_failures(cls: type) -> None:
    with pytest.raises(ModelError) as caught:
        construct_model(cls, {})
    assert caught.value.code == "INVALID_INPUT"


def test_construction_passes_a_copy_of_the_options() -> None:
    options = {"nested": [1]}
    model = construct_model(CountingModel, options)
    assert model.options == options and model.options is not options  # type: ignore[attr-defined]
