"""Budgets (atoms.md §6.2): per-request ceilings and their usage counters."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from atoms.errors import AtomError, invalid

CEILINGS: dict[str, int] = {
    "maxAtoms": 128, "maxCandidates": 10_000, "maxBytes": 4_194_304, "maxContextTokens": 4096,
    "maxEvaluationWork": 500_000, "maxPackingWork": 2_000_000,
}


@dataclass
class Budget:
    limits: dict[str, int] = field(default_factory=lambda: dict(CEILINGS))
    deadline: int | None = None

    def charge_write(self, atoms: int, text_bytes: int) -> None:
        """A write charges 1 atom per change and the text bytes (§4.4)."""
        if atoms > self.limits["maxAtoms"] or text_bytes > self.limits["maxBytes"]:
            raise AtomError("BUDGET_EXHAUSTED", "The write exceeds its budget.",
                            {"maxAtoms": self.limits["maxAtoms"], "maxBytes": self.limits["maxBytes"],
                             "atoms": atoms, "bytes": text_bytes})


def parse_budget(raw: Any, deadline: Any) -> Budget:
    """Unknown key → INVALID_INPUT; negative or non-integer → INVALID_SCHEMA; above its
    ceiling → lowered to the ceiling. `deadline` is epoch milliseconds."""
    budget = Budget()
    if raw is not None:
        if not isinstance(raw, dict):
            raise invalid("budget must be an object.", path="options.budget")
        for name, value in raw.items():
            if name not in CEILINGS:
                raise invalid(f"Unknown budget key {name!r}.", path=f"options.budget.{name}")
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise AtomError("INVALID_SCHEMA", f"{name} must be a non-negative integer.",
                                {"path": f"options.budget.{name}"})
            budget.limits[name] = min(value, CEILINGS[name])
    if deadline is not None:
        if not isinstance(deadline, int) or isinstance(deadline, bool):
            raise AtomError("INVALID_SCHEMA", "deadline must be epoch milliseconds.", {"path": "options.deadline"})
        budget.deadline = deadline
    return budget
