"""The API's one reading of JSON text (docs/api.md "Input boundary").

Pure functions, no Django: `loads` turns request bytes into Python values or raises
`JsonRefused` naming what was wrong. Everything the API accepts as JSON passes here, through
the DRF parser (memoryhub/api/parsers.py) or the key-value store's own reader
(tenants/kv/rules.py), so every endpoint refuses the same things:

- text that is not UTF-8, not JSON, or uses NaN / Infinity / numbers beyond double range;
- integers over 4,300 digits (Python's guard against quadratic-time conversion);
- objects that repeat a key: JSON leaves the meaning open (RFC 8259, section 4; docs/api.md "Input boundary"), so two readers
  of one body could disagree about it, and "last one wins" hides client bugs;
- nesting deeper than `MAX_DEPTH` containers;
- U+0000 and lone surrogates (U+D800-U+DFFF on their own) in any string or object key:
  database text holds neither (PostgreSQL refuses both), and a surrogate is not even a
  character. A caller may allow U+0000 below named top-level members whose content is
  kept as escaped JSON text (key-value values), never a lone surrogate.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection
from typing import Any, Literal

# Why 128: deep enough for any realistic document (configuration files and tool-call
# arguments rarely pass 20 levels; serde_json stops at 128, .NET at 64, Ruby at 100), and
# shallow enough that every recursive walk of a stored value (canonical JSON, the JSON
# encoder, serializers) stays far below Python's recursion limit of 1,000 frames with the
# request's own ~150 frames of middleware and views above it.
MAX_DEPTH = 128

Problem = Literal["syntax", "depth", "duplicate", "nul", "surrogate"]


class JsonRefused(ValueError):
    """Why a body was refused. `problem` picks the error code; `message` is for people and
    never quotes the body (it may hold stored content or key-value names)."""

    def __init__(self, problem: Problem, message: str) -> None:
        super().__init__(message)
        self.problem: Problem = problem
        self.message = message


class _DuplicateKey(ValueError):
    pass


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _DuplicateKey
    return obj


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError("number out of double range")
    return value


def _character_message(problem: Literal["nul", "surrogate"], where: str) -> str:
    if problem == "nul":
        return f"The body has U+0000 in {where}, which stored text cannot hold."
    return f"The body is not valid JSON: a lone surrogate in {where}."


def bad_text(text: str, *, nul_ok: bool = False) -> Literal["nul", "surrogate"] | None:
    """What is wrong with `text` as stored text: "nul", "surrogate" or None."""
    if not nul_ok and "\x00" in text:
        return "nul"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "surrogate"
    return None


def check_value(value: Any, *, max_depth: int = MAX_DEPTH, nul_allowed_in: Collection[str] | bool = ()) -> None:
    """The depth and character rules on a parsed value, iteratively (no recursion limit).
    `nul_allowed_in`: top-level member names below which U+0000 may appear, or True for
    anywhere."""
    stack: list[tuple[Any, int, bool]] = [(value, 0, nul_allowed_in is True)]
    while stack:
        item, depth, nul_ok = stack.pop()
        if isinstance(item, str):
            if (found := bad_text(item, nul_ok=nul_ok)) is not None:
                raise JsonRefused(found, _character_message(found, "a string"))
        elif isinstance(item, dict):
            if depth + 1 > max_depth:
                raise JsonRefused("depth", f"The body nests deeper than {max_depth} levels.")
            for key, sub in item.items():
                sub_ok = nul_ok or (depth == 0 and not isinstance(nul_allowed_in, bool) and key in nul_allowed_in)
                if (found := bad_text(key, nul_ok=nul_ok)) is not None:
                    raise JsonRefused(found, _character_message(found, "an object key"))
                stack.append((sub, depth + 1, sub_ok))
        elif isinstance(item, list):
            if depth + 1 > max_depth:
                raise JsonRefused("depth", f"The body nests deeper than {max_depth} levels.")
            stack.extend((sub, depth + 1, nul_ok) for sub in item)


def loads(data: bytes, *, max_depth: int = MAX_DEPTH, nul_allowed_in: Collection[str] | bool = ()) -> Any:
    """Parse a request body under the rules in the module docstring."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JsonRefused("syntax", f"The body is not valid UTF-8 (byte {exc.start}).") from exc
    try:
        value = json.loads(text, object_pairs_hook=_object, parse_constant=_reject_constant,
                           parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise JsonRefused("syntax", f"The body is not valid JSON: {exc.msg} at line {exc.lineno} "
                                    f"column {exc.colno}.") from exc
    except _DuplicateKey as exc:
        raise JsonRefused("duplicate", "The body is not valid JSON: an object repeats a key.") from exc
    except RecursionError as exc:
        raise JsonRefused("depth", f"The body nests deeper than {max_depth} levels.") from exc
    except ValueError as exc:
        if "integer string conversion" in str(exc):
            raise JsonRefused("syntax", "An integer in the body has more than 4,300 digits.") from exc
        raise JsonRefused("syntax", f"The body is not valid JSON: {exc}.") from exc
    check_value(value, max_depth=max_depth, nul_allowed_in=nul_allowed_in)
    return value
