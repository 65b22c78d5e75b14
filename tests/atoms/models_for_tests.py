"""Availability models for tests: a counting model and models that misbehave on purpose.

Tests list them in settings.ATOMS_AVAILABILITY_MODELS (see `MODELS`; docs/atoms.md "Decisions",
Settings) and configure them through `atoms_config.activation.model`.
"""

from __future__ import annotations

import math
from typing import Any

from atoms.core.availability import Json

MODELS = [
    "atoms.core.availability.AdaptiveUse",
    "tests.atoms.models_for_tests.CountingModel",
    "tests.atoms.models_for_tests.BrokenUpdateModel",
    "tests.atoms.models_for_tests.BrokenValueModel",
]


def model_config(name: str, **options: Any) -> dict[str, Any]:
    """An atoms_config that selects one of these models."""
    return {"activation": {"model": {"class": f"tests.atoms.models_for_tests.{name}", "options": options}}}


class CountingModel:
    """The counting model: update = (previous or 0) + 1, value = state.

    Options: `version` changes the id (same code, another configuration identity: stored state
    becomes STATE_INVALIDATED); `limit` makes an update of a state already at the limit raise,
    so one call can fail after another revision's update succeeded (atomicity).
    """

    def __init__(self, options: dict[str, Any]) -> None:
        self.version = options.get("version", 1)
        self.limit = options.get("limit")
        self.id = f"counting-v{self.version}"

    def update(self, previous: Json | None, accepted_at: int) -> Json:
        count = previous if isinstance(previous, int) else 0
        if self.limit is not None and count >= self.limit:
            raise RuntimeError("the test model's limit was reached")
        return count + 1

    def value(self, state: Json | None, now: int) -> float:
        return float(state) if isinstance(state, int | float) else 0.0


async def _later() -> int:
    return 1


class BrokenUpdateModel:
    """`update` misbehaves as `options["update"]` says (uses must refuse it), or returns JSON null
    (`"null"`, valid); `value` is fine."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.mode = options["update"]
        self.id = f"broken-update:{self.mode}"

    def update(self, previous: Json | None, accepted_at: int) -> Any:
        if self.mode == "coroutine":
            return _later()
        if self.mode == "long":
            return "x" * 2000
        if self.mode == "set":
            return {1, 2}
        if self.mode == "nan":
            return {"mass": math.nan}
        if self.mode == "null":  # valid JSON: stored as JSON null, read back as no state
            return None
        raise RuntimeError("the test model's update failed")

    def value(self, state: Json | None, now: int) -> float:
        return 0.0


class BrokenValueModel:
    """`value` misbehaves as `options["value"]` says (read and search must refuse it); `update`
    counts."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.mode = options["value"]
        self.id = f"broken-value:{self.mode}"

    def update(self, previous: Json | None, accepted_at: int) -> Json:
        return (previous if isinstance(previous, int) else 0) + 1

    def value(self, state: Json | None, now: int) -> Any:
        answers: dict[str, Any] = {"negative": -1, "nan": math.nan, "inf": math.inf, "bool": True}
        if self.mode == "coroutine":
            return _later()
        if self.mode in answers:
            return answers[self.mode]
        raise RuntimeError("the test model's value failed")
