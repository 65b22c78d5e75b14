"""Canonical JSON and digests (docs/api.md "Conventions").

The reference library hashes `JSON.stringify` output with sorted keys, so every digest we
publish (scope, fingerprint, quote, receipt, index config) must match byte for byte what
JavaScript would print. Python's `json.dumps` differs on numbers (`1.0`, `1e-07`, `1e+16`
vs JavaScript's `1`, `1e-7`, `10000000000000000`), hence this small serializer.

Contract of `canonical(value)`:

- dict → object with keys sorted by code point (Python's str order; UTF-16 order would
  differ for astral characters, and the spec says code point). Keys must be str.
- A None value inside a dict is kept as `null`, unless `omit_none=True`, which drops the
  key ("absent fields omitted"). None at the top level or inside a list is always `null`.
- list / tuple → array. bool → `true` / `false`. None → `null`.
- str → raw UTF-8, escaping only what JSON.stringify escapes: `"`, `\\`, `\\b \\f \\n \\r \\t`
  as short escapes, other code points below U+0020 as `\\u00xx`, and lone surrogates as
  `\\udxxx` (lowercase hex). A surrogate pair spelled as two code points is one character in
  JavaScript, so it is joined first and printed raw.
- int / float → ECMAScript Number::toString. Integers are printed as the double they round to
  (JavaScript has no other number), so `2**53 + 1` prints `9007199254740992`; an int beyond
  the double range raises ValueError. NaN and ±Infinity raise ValueError.
- Anything else raises TypeError; a cycle or extreme nesting raises ValueError.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

_MAX_EXACT_INT = 2**53

# Everything JSON.stringify escapes in a string: quote, backslash, C0 controls, surrogates.
_NEEDS_ESCAPE = re.compile("[\"\\\\\x00-\x1f\ud800-\udfff]")
_SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _join_pair(match: re.Match[str]) -> str:
    high, low = match.group()[0], match.group()[1]
    return chr(0x10000 + ((ord(high) - 0xD800) << 10) + (ord(low) - 0xDC00))


def _escape_char(match: re.Match[str]) -> str:
    char = match.group()
    return _SHORT_ESCAPES.get(char) or f"\\u{ord(char):04x}"


def _join_pairs(text: str) -> str:
    return _SURROGATE_PAIR.sub(_join_pair, text) if _SURROGATE_PAIR.search(text) else text


def canonical_string(text: str) -> str:
    """`text` as a JSON string literal, exactly as JSON.stringify prints it."""
    if _NEEDS_ESCAPE.search(text) is None:  # most strings: nothing to escape, no surrogate to join
        return '"' + text + '"'
    text = _join_pairs(text)
    return '"' + _NEEDS_ESCAPE.sub(_escape_char, text) + '"'


def canonical_number(number: int | float) -> str:
    """ECMAScript Number::toString of `number` (ints first rounded to the nearest double)."""
    if isinstance(number, bool):
        raise TypeError("a bool is not a number here")
    if isinstance(number, int):
        if -_MAX_EXACT_INT <= number <= _MAX_EXACT_INT:
            return str(number)  # exact as a double and below 1e21: plain digits
        try:
            number = float(number)
        except OverflowError as exc:
            raise ValueError("integer is beyond the double range") from exc
    if not math.isfinite(number):
        raise ValueError(f"{number!r} has no JSON form")
    if number == 0:
        return "0"  # also -0.0: JavaScript prints "0"
    sign = "-" if number < 0 else ""
    digits, point = _shortest_digits(abs(number))
    return sign + _format_ecmascript(digits, point)


def _shortest_digits(value: float) -> tuple[str, int]:
    """Shortest round-trip digits of a positive double and n, so that value = 0.digits * 10**n.

    Python's repr already picks the shortest digits that round-trip, and the nearest of them
    to the exact value, which is what ECMAScript asks for; only the layout differs.
    """
    text = repr(value)
    mantissa, _, exponent = text.partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    point = len(whole) + (int(exponent) if exponent else 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    return stripped.rstrip("0"), point


def _format_ecmascript(digits: str, n: int) -> str:
    """Number::toString steps 6-10 for s = digits (k of them) and exponent n."""
    k = len(digits)
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return "0." + "0" * (-n) + digits
    exponent = n - 1
    sign = "+" if exponent >= 0 else "-"
    head = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{head}e{sign}{abs(exponent)}"


def _write(value: Any, out: list[str], omit_none: bool, path: set[int]) -> None:
    kind = type(value)
    if kind is str:  # the common cases first, by exact type (a bool is an int)
        out.append(canonical_string(value))
    elif kind is dict or kind is list:
        _write_container(value, out, omit_none, path)
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, str):
        out.append(canonical_string(value))
    elif isinstance(value, int | float):
        out.append(canonical_number(value))
    elif isinstance(value, dict | list | tuple):
        _write_container(value, out, omit_none, path)
    else:
        raise TypeError(f"{type(value).__name__} has no canonical JSON form")


def _entries(value: dict[Any, Any], omit_none: bool) -> dict[str, Any]:
    """The members of an object as printed: keys checked and joined, None dropped on request."""
    if all(type(key) is str and key.isascii() for key in value):
        # Distinct ASCII keys stay distinct and need no joining.
        return value if not omit_none else {key: item for key, item in value.items() if item is not None}
    entries: dict[str, Any] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise TypeError(f"object keys must be str, not {type(key).__name__}")
        if item is None and omit_none:
            continue
        # A surrogate pair spelled as two code points is one JavaScript character, so
        # joining them can make two Python keys one JavaScript key (an ASCII key has none).
        joined = key if key.isascii() else _join_pairs(key)
        if joined in entries:
            raise ValueError(f"two keys print as {canonical_string(joined)}")
        entries[joined] = item
    return entries


def _write_container(value: dict[Any, Any] | list[Any] | tuple[Any, ...], out: list[str], omit_none: bool,
                     path: set[int]) -> None:
    # Only the containers on the current path count: a shared (acyclic) sub-object is fine.
    marker = id(value)
    if marker in path:
        raise ValueError("canonical JSON cannot contain a cycle")
    path.add(marker)
    if isinstance(value, dict):
        entries = _entries(value, omit_none)
        out.append("{")
        first = True
        for key in sorted(entries):  # str order is code point order
            if not first:
                out.append(",")
            first = False
            out.append(canonical_string(key))
            out.append(":")
            _write(entries[key], out, omit_none, path)
        out.append("}")
    else:
        out.append("[")
        first = True
        for item in value:
            if not first:
                out.append(",")
            first = False
            _write(item, out, omit_none, path)
        out.append("]")
    path.discard(marker)


def canonical(value: Any, *, omit_none: bool = False) -> str:
    """The canonical JSON text of `value` (see the module docstring for the exact contract)."""
    out: list[str] = []
    try:
        _write(value, out, omit_none, set())
    except RecursionError as exc:
        raise ValueError("value nests too deeply for canonical JSON") from exc
    return "".join(out)


def canonical_scalar(value: Any) -> str | None:
    """The canonical form of a JSON scalar, or None for anything else."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return canonical_string(value)
    if isinstance(value, int | float):
        return canonical_number(value)
    return None


def canonical_flat(value: Mapping[str, Any]) -> str:
    """canonical() of a dict of scalars (a link, a citation, provenance, a quote) without the
    generic walk; anything else (a nested value, a key that is not a plain ASCII str, a
    mapping that is not a dict) goes through canonical, errors included."""
    return _object(value, canonical_scalar)


def canonical_record(value: Mapping[str, Any]) -> str:
    """canonical() of a dict whose members are scalars, dicts of scalars, or lists of either (an
    AtomView, a manifest unit), member by member with `canonical_flat` instead of the generic walk,
    which hashing a view per presented unit made a read's largest serializing cost; anything
    else goes through canonical, as `canonical_flat` says."""
    return _object(value, _member)


def _object(value: Mapping[str, Any], member: Callable[[Any], str | None]) -> str:
    """An object whose keys are ASCII strs (they print as themselves and need no joining), each
    member printed by `member`; canonical(value) when a key or a member (None) is not that."""
    if type(value) is not dict or not all(type(key) is str and key.isascii() for key in value):
        return canonical(value)
    parts: list[str] = []
    for key in sorted(value):
        text = member(value[key])
        if text is None:
            return canonical(value)
        parts.append(f'"{key}":{text}' if key.isidentifier() else f"{canonical_string(key)}:{text}")
    return "{" + ",".join(parts) + "}"


def _member(value: Any) -> str | None:
    kind = type(value)
    if kind is dict:
        return canonical_flat(value)
    if kind is list:
        items = []
        for item in value:
            text = canonical_flat(item) if type(item) is dict else canonical_scalar(item)
            if text is None:
                return None
            items.append(text)
        return "[" + ",".join(items) + "]"
    return canonical_scalar(value)


def canonical_bytes(value: Any, *, omit_none: bool = False) -> bytes:
    """`canonical(value)` as UTF-8. Never fails on encoding: lone surrogates are escaped."""
    return canonical(value, omit_none=omit_none).encode("utf-8")


def sha256_hex(data: bytes | str) -> str:
    """Lowercase hex SHA-256 of `data`; a str is hashed as its UTF-8 bytes."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def digest(value: Any, *, omit_none: bool = False) -> str:
    """sha256_hex(canonical_bytes(value)): the digest form every atoms hash uses."""
    return sha256_hex(canonical_bytes(value, omit_none=omit_none))
