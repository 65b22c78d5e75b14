"""read's inputs (docs/atoms.md "Recall"): the agent state and the options."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from atoms.core.text import is_blank
from atoms.errors import AtomError, invalid
from atoms.services.budget import Budget, is_int, paging_as_sent, parse_paging

STATE_KEYS = ("query", "context", "thought", "observations", "signal")
OPTION_KEYS = {"limit", "tokens", "depth", "cursor", "budget", "deadline"}
MAX_OBSERVATIONS = 256
MAX_TEXT_BYTES = 65_536
DEFAULT_LIMIT, MAX_LIMIT = 24, 10_000
DEFAULT_TOKENS, MAX_TOKENS = 4096, 1_000_000
MAX_DEPTH = 32


@dataclass(frozen=True)
class ReadOptions:
    limit: int = DEFAULT_LIMIT
    tokens: int = DEFAULT_TOKENS
    depth: int | None = None  # None: the tenant's retrieval.depth (2 by default)
    cursor: str | None = None
    budget: Budget = field(default_factory=Budget)


def _text(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise invalid(f"{path} must be a string.", path=path)
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > MAX_TEXT_BYTES:
        raise AtomError("LIMIT_EXCEEDED", f"{path} exceeds {MAX_TEXT_BYTES} bytes.",
                        {"path": path, "limit": MAX_TEXT_BYTES, "actual": size})
    return value


def parse_state(raw: Any) -> dict[str, Any]:
    """The state as given (kinds in the order of STATE_KEYS). Keys ⊆ the five kinds; strings,
    `observations` a list of at most 256; each text ≤ 65,536 bytes; one non-blank at least."""
    if not isinstance(raw, dict):
        raise invalid("state must be an object.", path="state")
    unknown = sorted(set(raw) - set(STATE_KEYS))
    if unknown:
        raise invalid(f"Unknown state key {unknown[0]!r}.", path=f"state.{unknown[0]}")
    state: dict[str, Any] = {}
    for kind in STATE_KEYS:
        if kind not in raw:
            continue
        value = raw[kind]
        if kind == "observations":
            if not isinstance(value, list):
                raise invalid("state.observations must be a list of strings.", path="state.observations")
            if len(value) > MAX_OBSERVATIONS:
                raise AtomError("LIMIT_EXCEEDED", f"state.observations holds more than {MAX_OBSERVATIONS} texts.",
                                {"path": "state.observations", "limit": MAX_OBSERVATIONS, "actual": len(value)})
            state[kind] = [_text(text, f"state.observations[{i}]") for i, text in enumerate(value)]
        else:
            state[kind] = _text(value, f"state.{kind}")
    texts = [t for value in state.values() for t in (value if isinstance(value, list) else [value])]
    if all(is_blank(text) for text in texts):
        raise invalid("state needs at least one non-blank text.", path="state")
    return state


def parse_options(raw: Any) -> ReadOptions:
    raw, paging = parse_paging(raw, keys=OPTION_KEYS, default_limit=DEFAULT_LIMIT, max_limit=MAX_LIMIT,
                               max_depth=MAX_DEPTH)
    tokens = raw.get("tokens", DEFAULT_TOKENS)
    if not is_int(tokens) or not 1 <= tokens <= MAX_TOKENS:
        raise invalid(f"tokens must be an integer from 1 to {MAX_TOKENS}.", path="options.tokens")
    return ReadOptions(limit=paging.limit, tokens=tokens, depth=paging.depth, cursor=paging.cursor,
                       budget=paging.budget)


def options_as_sent(options: ReadOptions) -> dict[str, Any]:
    """The options object a form would send for `options`: the page size, the token budget and
    what differs from the defaults (a cursor is bound to the options as sent, less the cursor)."""
    return {"tokens": options.tokens,
            **paging_as_sent(limit=options.limit, depth=options.depth, cursor=options.cursor, budget=options.budget)}
