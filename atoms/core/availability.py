"""The availability model contract (docs/atoms.md "Decisions") and the default AdaptiveUse (docs/atoms.md "Decisions").

A model turns accepted-use history into a value u ≥ 0 that boosts a seed (docs/atoms.md "Defaults"). Models are
host code listed in settings, but they are still called defensively: they see deep copies
only, and anything but a valid answer is a ModelError (INVALID_INPUT), never a silent 0,
because a quietly broken model would skew every ranking without anyone noticing.
"""

from __future__ import annotations

import copy
import inspect
import json
import math
from collections.abc import Mapping
from typing import Any, Final, Protocol, runtime_checkable

from atoms.core.canonical import canonical
from atoms.core.errors import ModelError
from atoms.core.ids import is_valid_id

Json = None | bool | int | float | str | list["Json"] | dict[str, "Json"]

MAX_STATE_BYTES: Final = 1024


@runtime_checkable
class AvailabilityModel(Protocol):
    id: str

    def update(self, previous: Json | None, accepted_at: int) -> Json: ...

    def value(self, state: Json | None, now: int) -> float: ...


# --- Validation ------------------------------------------------------------------------------

def _check_json(value: Any, path: set[int]) -> None:
    if value is None or isinstance(value, bool | str):
        return
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise ModelError("The model state holds a non-finite number.")
        return
    if isinstance(value, dict | list):
        if id(value) in path:
            raise ModelError("The model state contains a cycle.")
        path.add(id(value))
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise ModelError("The model state has a non-string object key.")
                _check_json(item, path)
        else:
            for item in value:
                _check_json(item, path)
        path.discard(id(value))
        return
    raise ModelError(f"The model state holds a {type(value).__name__}, which is not JSON.")


def validate_state(state: Any) -> str:
    """Check a state returned by `update` and return its canonical text.

    JSON only (dicts with str keys, lists, str, finite int/float, bool, None; tuples are not
    JSON), no cycles, and at most 1,024 UTF-8 bytes in canonical form. The text is what
    gets stored, so the size limit applies to exactly what is kept.
    """
    try:
        _check_json(state, set())
        text = canonical(state)
    except RecursionError as exc:
        raise ModelError("The model state nests too deeply.") from exc
    except (TypeError, ValueError) as exc:
        if isinstance(exc, ModelError):
            raise
        raise ModelError(f"The model state is not JSON: {exc}.") from exc
    size = len(text.encode("utf-8"))
    if size > MAX_STATE_BYTES:
        raise ModelError(f"The model state is {size} bytes in canonical form; the limit is {MAX_STATE_BYTES}.",
                         details={"limit": MAX_STATE_BYTES, "actual": size})
    return text


def validate_value(value: Any) -> float:
    """A value returned by `value`: a finite int or float ≥ 0 (a bool is not a number here)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ModelError(f"The model value must be a number, not {type(value).__name__}.")
    try:
        number = float(value)
    except OverflowError as exc:
        raise ModelError("The model value is beyond the double range.") from exc
    if not math.isfinite(number) or number < 0:
        raise ModelError(f"The model value must be finite and at least 0, not {value!r}.")
    return number


def _reject_awaitable(result: Any, what: str) -> None:
    if inspect.isawaitable(result):
        close = getattr(result, "close", None)
        if callable(close):
            close()  # otherwise Python warns "coroutine was never awaited"
        raise ModelError(f"The model's {what} returned an awaitable; it must be synchronous.")


# --- Safe calls -----------------------------------------------------------------------------

def construct_model(cls: Any, options: Any) -> AvailabilityModel:
    """`cls(options)`, checked: a failing constructor, a bad id, or a non-callable or async
    `update`/`value` is a ModelError. Resolving the dotted path and the settings allowlist
    is the caller's job."""
    try:
        model = cls(copy.deepcopy(options))
    except Exception as exc:  # any constructor failure is the caller's INVALID_INPUT
        if isinstance(exc, ModelError):
            raise
        raise ModelError(f"The availability model could not be built: {exc}.") from exc
    if not is_valid_id(getattr(model, "id", None)):
        raise ModelError("The availability model id must be a string of 1..512 UTF-8 bytes.")
    for name in ("update", "value"):
        method = getattr(model, name, None)
        if not callable(method) or inspect.iscoroutinefunction(method):
            raise ModelError(f"The availability model's {name} must be a synchronous callable.")
    return model


def call_update(model: AvailabilityModel, previous: Json | None, accepted_at: int) -> tuple[Json, str]:
    """Run `model.update` on a deep copy and return `(state, canonical text)`.

    The returned state is re-read from its canonical text, so the caller holds exactly what
    will be stored (a float like 1.0 comes back as 1, as JavaScript would store it), and the
    model cannot mutate it afterwards.
    """
    try:
        result = model.update(copy.deepcopy(previous), accepted_at)
    except Exception as exc:  # a failing model aborts `uses`; the caller maps the code
        if isinstance(exc, ModelError):
            raise
        raise ModelError(f"The availability model's update failed: {exc}.") from exc
    _reject_awaitable(result, "update")
    text = validate_state(result)
    return json.loads(text), text


def call_value(model: AvailabilityModel, state: Json | None, now: int) -> float:
    """Run `model.value` on a deep copy of `state` and return the checked value."""
    try:
        result = model.value(copy.deepcopy(state), now)
    except Exception as exc:  # a failing model aborts read or search; the caller maps the code
        if isinstance(exc, ModelError):
            raise
        raise ModelError(f"The availability model's value failed: {exc}.") from exc
    _reject_awaitable(result, "value")
    return validate_value(result)


# --- AdaptiveUse ----------------------------------------------------------------------------

DEFAULT_INITIAL_HALF_LIFE_MS: Final = 604_800_000  # 7 days
DEFAULT_MAX_HALF_LIFE_MS: Final = 31_536_000_000  # 365 days
MAX_MASS: Final = 1e6
_STATE_KEYS: Final = frozenset({"halfLifeMs", "mass", "updatedAt"})


def _positive_number(options: Mapping[str, Any], key: str, default: int) -> int | float:
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise ModelError(f"AdaptiveUse option {key} must be a finite number above 0.", details={"path": key})
    return value


class AdaptiveUse:
    """Use mass that decays with a half-life; spaced uses lengthen the half-life, bursts do not.

    Options: `initialHalfLifeMs` (default 7 d) and `maxHalfLifeMs` (default 365 d). The id is
    `"adaptive-use-v1:" + canonical(options with defaults filled in)`, so option order and
    spelled-out defaults do not change it.
    """

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        options = {} if options is None else options
        if not isinstance(options, Mapping):
            raise ModelError("AdaptiveUse options must be an object.")
        unknown = sorted(set(options) - {"initialHalfLifeMs", "maxHalfLifeMs"})
        if unknown:
            raise ModelError(f"Unknown AdaptiveUse option {unknown[0]}.", details={"path": str(unknown[0])})
        self.initial = _positive_number(options, "initialHalfLifeMs", DEFAULT_INITIAL_HALF_LIFE_MS)
        self.maximum = _positive_number(options, "maxHalfLifeMs", DEFAULT_MAX_HALF_LIFE_MS)
        if self.maximum < self.initial:
            raise ModelError("AdaptiveUse maxHalfLifeMs must be at least initialHalfLifeMs.")
        self.id = "adaptive-use-v1:" + canonical({"initialHalfLifeMs": self.initial, "maxHalfLifeMs": self.maximum})

    @staticmethod
    def _read(state: Any) -> tuple[float, float, float]:
        """(halfLifeMs, mass, updatedAt) of a stored state; anything else is a ModelError."""
        if not isinstance(state, dict) or set(state) != _STATE_KEYS:
            raise ModelError("AdaptiveUse state must be {halfLifeMs, mass, updatedAt}.")
        numbers = [state["halfLifeMs"], state["mass"], state["updatedAt"]]
        if any(isinstance(n, bool) or not isinstance(n, int | float) or not math.isfinite(n) for n in numbers):
            raise ModelError("AdaptiveUse state fields must be finite numbers.")
        half_life, mass, updated_at = numbers
        if half_life <= 0 or mass < 0:
            raise ModelError("AdaptiveUse state needs halfLifeMs > 0 and mass ≥ 0.")
        return half_life, mass, updated_at

    def update(self, previous: Json | None, accepted_at: int) -> Json:
        if previous is None:
            return {"halfLifeMs": self.initial, "mass": 1, "updatedAt": accepted_at}
        half_life, mass, updated_at = self._read(previous)
        if accepted_at < updated_at:
            raise ModelError("An accepted use cannot precede the state's updatedAt.")
        retained = 2.0 ** (-(accepted_at - updated_at) / half_life)
        # max(half_life, …) keeps a stored half-life that is already above the maximum (it
        # came from older options); below the maximum it changes nothing, as the sum only grows.
        grown = min(self.maximum, half_life + self.initial * (1 - retained))
        return {
            "halfLifeMs": max(half_life, grown),
            "mass": min(MAX_MASS, mass * retained + 1),
            "updatedAt": accepted_at,
        }

    def value(self, state: Json | None, now: int) -> float:
        if state is None:
            return 0.0
        half_life, mass, updated_at = self._read(state)
        # A clock that reads before updatedAt (rollback) gives the undecayed mass.
        return mass * 2.0 ** (-max(0, now - updated_at) / half_life)
