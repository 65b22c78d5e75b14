"""The tenant's Atom configuration (docs/atoms.md "Defaults" "Tenant config", docs/atoms.md "Decisions" and "Semantic index")."""

from __future__ import annotations

import math
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string

from atoms.core.availability import AdaptiveUse, construct_model
from atoms.core.errors import AtomsCoreError
from atoms.core.ids import is_label

DEFAULT_MODEL = "atoms.core.availability.AdaptiveUse"
RETRIEVAL = {"depth": (1, 0, 32), "maxSeeds": (32, 1, 10_000), "maxNodes": (512, 1, 10_000),
             "maxEdges": (4096, 1, 100_000), "maxScan": (10_000, 1, 10_000),
             "lexicalCandidates": (200, 0, 10_000), "semanticCandidates": (200, 0, 10_000)}
# The match weights (docs/atoms.md "Match"): chosen by measurement on the LoCoMo dev set,
# the figures are in docs/benchmarks.md.
DEFAULT_WEIGHTS = {"semantic": 0.3, "lexical": 0.7}
MAX_WEIGHT = 1e6  # only their ratio matters; the bound keeps their sum finite


class ConfigError(ValueError):
    """An invalid atoms_config (the API answers INVALID_INPUT and saves nothing)."""


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigError(f"{name} must be a finite number")
    return float(value)


def _weights(raw: Any) -> dict[str, float]:
    if not isinstance(raw, dict) or set(raw) != {"semantic", "lexical"}:
        raise ConfigError("retrieval.weights must be exactly {semantic, lexical}")
    values = {name: _number(value, f"retrieval.weights.{name}") for name, value in raw.items()}
    if any(v < 0 or v > MAX_WEIGHT for v in values.values()) or not any(values.values()):
        raise ConfigError(f"retrieval.weights must be from 0 to {MAX_WEIGHT:g} and not both 0")
    return dict(raw)


def _retrieval(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ConfigError("retrieval must be an object")
    for name, value in raw.items():
        if name == "weights":
            _weights(value)
            continue
        if name not in RETRIEVAL:
            raise ConfigError(f"unknown retrieval key {name!r}")
        _, low, high = RETRIEVAL[name]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ConfigError(f"retrieval.{name} must be an integer from {low} to {high}")
    if raw.get("lexicalCandidates", 1) == 0 and raw.get("semanticCandidates", 1) == 0:
        raise ConfigError("retrieval.lexicalCandidates and retrieval.semanticCandidates may not both be 0")
    return dict(raw)


def _model(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict) or set(raw) - {"class", "options"} or "class" not in raw:
        raise ConfigError("activation.model must be {class, options?}")
    allowed = getattr(settings, "ATOMS_AVAILABILITY_MODELS", [DEFAULT_MODEL])
    if raw["class"] not in allowed:
        raise ConfigError(f"activation.model.class must be one of {allowed}")
    options = raw.get("options", {})
    try:
        construct_model(import_string(raw["class"]), options)
    except (AtomsCoreError, ImportError) as exc:
        raise ConfigError(f"activation.model: {exc}") from exc
    return {"class": raw["class"], "options": options}


def _activation(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ConfigError("activation must be an object")
    out: dict[str, Any] = {}
    for name, value in raw.items():
        if name == "model":
            out[name] = _model(value)
        elif name == "maxBoost":
            if _number(value, "activation.maxBoost") < 0:
                raise ConfigError("activation.maxBoost must be >= 0")
            out[name] = value
        elif name == "propagation":
            if not 0 <= _number(value, "activation.propagation") < 1:
                raise ConfigError("activation.propagation must be >= 0 and < 1")
            out[name] = value
        elif name == "relations":
            if not isinstance(value, dict):
                raise ConfigError("activation.relations must be an object")
            for role, weights in value.items():
                if not is_label(role) or not isinstance(weights, dict) or set(weights) - {"forward", "reverse"}:
                    raise ConfigError("activation.relations maps roles to {forward, reverse}")
                for direction, weight in weights.items():
                    if _number(weight, f"activation.relations.{direction}") < 0:
                        raise ConfigError("relation weights must be >= 0")
            out[name] = value
        else:
            raise ConfigError(f"unknown activation key {name!r}")
    return out


def validate_config(raw: Any) -> dict[str, Any]:
    """The config as stored; raises ConfigError for anything outside the contract."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError("atoms_config must be an object")
    out: dict[str, Any] = {}
    for name, value in raw.items():
        if name == "retrieval":
            out[name] = _retrieval(value)
        elif name == "activation":
            out[name] = _activation(value)
        elif name == "embedding":
            if value is not None and (not isinstance(value, dict) or set(value) - {"class", "options"}
                                      or not isinstance(value.get("options", {}), dict)):
                raise ConfigError("embedding must be {class, options?} or null")
            allowed = getattr(settings, "ATOMS_EMBEDDING_PROVIDERS", [])
            if value is not None and value.get("class") not in allowed:
                raise ConfigError(f"embedding.class must be one of {allowed}")
            out[name] = value
        else:
            raise ConfigError(f"unknown atoms_config key {name!r}")
    return out


__all__ = ["DEFAULT_MODEL", "AdaptiveUse", "ConfigError", "validate_config"]
