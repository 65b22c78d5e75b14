"""UTF-8 byte spans: citations, quote digests, merged `sources`, inspect ranges.

Spans are half-open byte offsets `[start, end)` into a body's UTF-8 encoding (docs/atoms.md "Layout"
invariant 7, docs/atoms.md "Decisions" `sources`, docs/atoms.md "Read path costs" and "Decisions" `range`). Byte offsets, not code points, because
that is what the reference library hashes and what every other language can index.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from atoms.core.canonical import sha256_hex
from atoms.core.errors import SpanError

K = TypeVar("K", bound=Hashable)


def _as_bytes(body: str | bytes) -> bytes:
    return body.encode("utf-8") if isinstance(body, str) else body


def is_boundary(data: bytes, offset: int) -> bool:
    """True when `offset` does not fall inside a UTF-8 sequence (the ends count)."""
    if offset <= 0 or offset >= len(data):
        return offset in (0, len(data))
    return (data[offset] & 0xC0) != 0x80  # 10xxxxxx is a continuation byte


def _offset(value: Any, default: int, name: str) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpanError(f"{name} must be an integer.", details={"reason": f"{name}-type"})
    return value


def validate_span(body: str | bytes, start: int | None = None, end: int | None = None) -> tuple[int, int]:
    """The span `[start, end)` of `body`, with defaults 0 and the byte length.

    Raises SpanError unless 0 ≤ start ≤ end ≤ len(bytes) and both ends are on character
    boundaries.
    """
    data = _as_bytes(body)
    first = _offset(start, 0, "start")
    last = _offset(end, len(data), "end")
    if not 0 <= first <= last <= len(data):
        raise SpanError(f"The span [{first}, {last}) is outside 0..{len(data)} or reversed.",
                        details={"reason": "out-of-range", "start": first, "end": last, "bytes": len(data)})
    if not (is_boundary(data, first) and is_boundary(data, last)):
        raise SpanError(f"The span [{first}, {last}) cuts a UTF-8 character.",
                        details={"reason": "not-a-character-boundary", "start": first, "end": last})
    return first, last


def quote_digest(body: str | bytes, start: int | None = None, end: int | None = None) -> str:
    """SHA-256 hex of the cited bytes, after validate_span."""
    data = _as_bytes(body)
    first, last = validate_span(data, start, end)
    return sha256_hex(data[first:last])


def cited_text(body: str | bytes, start: int, end: int) -> str:
    """The text of a validated span."""
    data = _as_bytes(body)
    first, last = validate_span(data, start, end)
    return data[first:last].decode("utf-8")


def merge_spans(spans: Iterable[tuple[K, int, int]]) -> list[tuple[K, int, int]]:
    """Merge overlapping or touching spans per source (read's `sources`, docs/atoms.md "Read path costs").

    Sources keep the order of their first appearance; each source's merged spans are
    ordered by start. `[0,4)` and `[4,8)` touch and become `[0,8)`.
    """
    by_source: dict[K, list[tuple[int, int]]] = {}
    for source, start, end in spans:
        by_source.setdefault(source, []).append((start, end))
    merged: list[tuple[K, int, int]] = []
    for source, ranges in by_source.items():
        ranges.sort()
        current_start, current_end = ranges[0]
        for start, end in ranges[1:]:
            if start <= current_end:
                current_end = max(current_end, end)
            else:
                merged.append((source, current_start, current_end))
                current_start, current_end = start, end
        merged.append((source, current_start, current_end))
    return merged


def trim_to_boundary(data: bytes, end: int) -> int:
    """`end`, clamped to 0..len(data) and moved back to the nearest character boundary."""
    end = max(0, min(end, len(data)))
    while not is_boundary(data, end):
        end -= 1
    return end


@dataclass(frozen=True)
class ByteRange:
    """inspect's `range` (docs/atoms.md "Decisions"): `end = min(start + bytes, totalBytes)` trimmed back."""

    start: int
    end: int
    total_bytes: int
    text: str


def byte_range(body: str | bytes, start: int, size: int) -> ByteRange:
    """The `range: {start, bytes}` window of `body`.

    A start outside the body or inside a character is a SpanError (INVALID_SOURCE_SPAN);
    the end is trimmed back, so the window may be shorter than `size`, even empty.
    """
    data = _as_bytes(body)
    first = _offset(start, 0, "start")
    count = _offset(size, 0, "bytes")
    if count < 0:
        raise SpanError("bytes must not be negative.", details={"reason": "out-of-range"})
    if not 0 <= first <= len(data) or not is_boundary(data, first):
        raise SpanError(f"The range start {first} is outside the body or inside a character.",
                        details={"reason": "not-a-character-boundary", "start": first})
    last = trim_to_boundary(data, first + count)
    return ByteRange(start=first, end=last, total_bytes=len(data), text=data[first:last].decode("utf-8"))
