"""Budgets (docs/atoms.md "Recall"): per-request ceilings and their usage counters."""

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
        """A write charges 1 atom per change and the text bytes (docs/atoms.md "Decisions")."""
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


def budget_as_sent(budget: Budget) -> dict[str, Any]:
    """The `budget` and `deadline` options a caller would send for `budget`: the limits it
    lowers below their ceilings, and the deadline if any (for a command built in code)."""
    sent: dict[str, Any] = {}
    lowered = {name: value for name, value in budget.limits.items() if value != CEILINGS[name]}
    if lowered:
        sent["budget"] = lowered
    if budget.deadline is not None:
        sent["deadline"] = budget.deadline
    return sent


def paging_as_sent(*, limit: int, depth: int | None, cursor: str | None, budget: Budget) -> dict[str, Any]:
    """The paging options search and read send: the page size, the depth and cursor when given,
    the lowered budget and the deadline."""
    sent: dict[str, Any] = {"limit": limit}
    if depth is not None:
        sent["depth"] = depth
    sent.update(budget_as_sent(budget))
    if cursor is not None:
        sent["cursor"] = cursor
    return sent


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class PagingOptions:
    """The options search and read share: a page size, the graph depth, a cursor, a budget."""

    limit: int
    depth: int | None  # None: the tenant's retrieval.depth (2 by default)
    cursor: str | None
    budget: Budget


def parse_paging(raw: Any, *, keys: set[str], default_limit: int, max_limit: int = 10_000,
                 max_depth: int = 32) -> tuple[dict[str, Any], PagingOptions]:
    """Validate an options object whose keys must be ⊆ `keys` (anything else, e.g.
    `historical`, is INVALID_INPUT); returns it with the shared options parsed."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise invalid("options must be an object.", path="options")
    unknown = sorted(set(raw) - keys)
    if unknown:
        raise invalid(f"Unknown option {unknown[0]!r}.", path=f"options.{unknown[0]}")
    limit = raw.get("limit", default_limit)
    if not is_int(limit) or not 1 <= limit <= max_limit:
        raise invalid(f"limit must be an integer from 1 to {max_limit}.", path="options.limit")
    depth = raw.get("depth")
    if depth is not None and (not is_int(depth) or not 0 <= depth <= max_depth):
        raise invalid(f"depth must be an integer from 0 to {max_depth}.", path="options.depth")
    cursor = raw.get("cursor")
    if cursor is not None and not isinstance(cursor, str):
        raise invalid("cursor must be a string.", path="options.cursor")
    return raw, PagingOptions(limit=limit, depth=depth, cursor=cursor,
                              budget=parse_budget(raw.get("budget"), raw.get("deadline")))


def check_deadline(budget: Budget, now: int) -> None:
    """A deadline already past is BUDGET_EXHAUSTED before any work (docs/atoms.md "Recall")."""
    if budget.deadline is not None and budget.deadline < now:
        raise AtomError("BUDGET_EXHAUSTED", "The deadline has passed.", {"reason": "deadline"})
