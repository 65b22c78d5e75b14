"""The availability model at evaluation time (docs/atoms.md "Decisions"): the use values read and search take
from the tenant's model, checked below the API: boosts, state of another model, misbehaving values."""

from __future__ import annotations

import math
import warnings
from typing import Any

import pytest

from atoms.core.availability import AdaptiveUse
from atoms.errors import AtomError
from atoms.models import AtomStore, UseState
from atoms.services.availability import evaluated_at, model_for, use_values
from memoryhub.api.codes import status_for
from tests.atoms.models_for_tests import MODELS, CountingModel, model_config

SUBJECT = "key:k_agent"


@pytest.fixture(autouse=True)
def test_models(settings: Any) -> None:
    settings.ATOMS_AVAILABILITY_MODELS = MODELS


@pytest.fixture
def store(acme) -> AtomStore:
    store = AtomStore.get_or_create_for(acme)
    store.config = model_config("CountingModel")
    store.save()
    return store


def put(tenant: Any, revision: str, state: Any, updated_at: int, *, policy: str = "default",
        subject: str = SUBJECT, model_id: str = "counting-v1") -> None:
    UseState.objects.create(tenant=tenant, subject=subject, policy=policy, revision_id=revision,
                            model_id=model_id, state=state, updated_at=updated_at)


def code_of(excinfo: pytest.ExceptionInfo[AtomError]) -> str:
    return excinfo.value.code


def test_the_default_model_is_adaptive_use_with_default_options(acme):
    model = model_for(acme)
    assert isinstance(model, AdaptiveUse) and model.id == AdaptiveUse().id


def test_the_configured_model_is_built_from_its_options(acme, store):
    store.config = model_config("CountingModel", version=3)
    store.save()
    model = model_for(acme)
    assert isinstance(model, CountingModel) and model.id == "counting-v3"


def test_a_configured_model_no_longer_listed_or_no_longer_building_is_invalid_input(acme, store, settings):
    settings.ATOMS_AVAILABILITY_MODELS = ["atoms.core.availability.AdaptiveUse"]
    with pytest.raises(AtomError) as excinfo:
        model_for(acme)
    assert code_of(excinfo) == "INVALID_INPUT"
    settings.ATOMS_AVAILABILITY_MODELS = MODELS
    store.config = model_config("BrokenValueModel")  # the constructor needs options["value"]
    store.save()
    with pytest.raises(AtomError) as excinfo:
        model_for(acme)
    assert code_of(excinfo) == "INVALID_INPUT"


def test_values_come_from_stored_state_and_missing_state_is_none(acme, store):
    put(acme, "revision:a", 10, 0)
    values = use_values(acme, SUBJECT, ["default"], ["revision:a", "revision:b", "revision:a"], 0)
    assert values == {"revision:a": 10.0, "revision:b": 0.0}


def test_state_is_the_subjects_own_in_the_given_policies(acme, globex, store):
    put(acme, "revision:a", 4, 0, subject="key:k_other")
    put(acme, "revision:b", 5, 0, policy="private")
    AtomStore.get_or_create_for(globex)
    put(globex, "revision:a", 6, 0)
    assert use_values(acme, SUBJECT, ["default"], ["revision:a", "revision:b"], 0) == {
        "revision:a": 0.0, "revision:b": 0.0}
    assert use_values(acme, SUBJECT, ["default", "private"], ["revision:b"], 0) == {"revision:b": 5.0}


def test_the_worked_example_gives_the_boost_inputs(acme, store):
    """Ten uses under the counting model and maxBoost 2 give a boost ratio of 1 + 20/11 over an unused atom."""
    put(acme, "revision:a", 10, 0)
    values = use_values(acme, SUBJECT, ["default"], ["revision:a", "revision:b"], 0)
    boost = {r: 1 + 2 * u / (1 + u) for r, u in values.items()}  # maxBoost 2
    assert boost["revision:a"] / boost["revision:b"] == pytest.approx(1 + 20 / 11, abs=1e-10)


def test_state_of_another_model_id_is_state_invalidated(acme, store):
    """Stored state of another model id is 409 STATE_INVALIDATED for the policies holding it, asked for or not."""
    put(acme, "revision:old", 3, 0, model_id="counting-v0")
    with pytest.raises(AtomError) as excinfo:
        use_values(acme, SUBJECT, ["default"], ["revision:a"], 0)  # even when that revision is not asked for
    assert code_of(excinfo) == "STATE_INVALIDATED" and status_for(excinfo.value) == 409
    assert use_values(acme, SUBJECT, ["private"], ["revision:a"], 0) == {"revision:a": 0.0}


@pytest.mark.parametrize("mode", ["negative", "nan", "inf", "bool", "coroutine", "raise"])
def test_a_bad_value_is_invalid_input_never_zero(acme, store, mode):
    """A value that is negative, NaN, infinite, a bool, a coroutine or raises is INVALID_INPUT, never taken as 0."""
    store.config = model_config("BrokenValueModel", value=mode)
    store.save()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an unclosed coroutine would warn "never awaited"
        with pytest.raises(AtomError) as excinfo:
            use_values(acme, SUBJECT, ["default"], ["revision:a"], 0)
    assert code_of(excinfo) == "INVALID_INPUT"


def test_adaptive_use_values_decay_from_the_stored_state(acme):
    AtomStore.get_or_create_for(acme)
    put(acme, "revision:a", {"halfLifeMs": 604800000, "mass": 1, "updatedAt": 0}, 0, model_id=AdaptiveUse().id)
    assert use_values(acme, SUBJECT, ["default"], ["revision:a"], 1_209_600_000) == {"revision:a": 0.25}
    assert use_values(acme, SUBJECT, ["default"], ["revision:a"], -5) == {"revision:a": 1.0}
    assert math.isclose(use_values(acme, SUBJECT, ["default"], ["revision:a"], 604_800_000)["revision:a"], 0.5)


def test_evaluated_at_is_now_or_the_latest_stored_update(acme, store):
    assert evaluated_at(acme, SUBJECT, ["default"], 100) == 100
    put(acme, "revision:a", 1, 500)
    put(acme, "revision:b", 1, 900, policy="private")
    put(acme, "revision:c", 1, 2_000, subject="key:k_other")
    assert evaluated_at(acme, SUBJECT, ["default"], 100) == 500
    assert evaluated_at(acme, SUBJECT, ["default", "private"], 100) == 900
    assert evaluated_at(acme, SUBJECT, ["default", "private"], 1_000) == 1_000
