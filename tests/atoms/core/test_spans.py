"""UTF-8 byte spans: validation, quote digests, merging and inspect ranges."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from atoms.core.errors import SpanError
from atoms.core.spans import (
    byte_range,
    cited_text,
    is_boundary,
    merge_spans,
    quote_digest,
    trim_to_boundary,
    validate_span,
)

SOURCE = "AAAABBBBCCCC"
MIXED = "aé日😀"  # 1 + 2 + 3 + 4 bytes: boundaries at 0, 1, 3, 6, 10


def test_it_defaults_to_the_whole_body() -> None:
    assert validate_span(SOURCE, None, None) == (0, 12)
    assert validate_span(SOURCE) == (0, 12)
    assert validate_span(MIXED, 3, None) == (3, 10)
    assert validate_span("", None, None) == (0, 0)


@pytest.mark.parametrize(("start", "end"), [(0, 0), (0, 1), (1, 3), (3, 6), (6, 10), (10, 10), (0, 10)])
def test_it_accepts_spans_on_character_boundaries(start: int, end: int) -> None:
    assert validate_span(MIXED, start, end) == (start, end)


@pytest.mark.parametrize(("start", "end", "reason"), [
    (2, 3, "not-a-character-boundary"),
    (0, 4, "not-a-character-boundary"),
    (7, 10, "not-a-character-boundary"),
    (-1, 3, "out-of-range"),
    (0, 11, "out-of-range"),
    (6, 3, "out-of-range"),
])
def test_it_rejects_spans_outside_the_body_or_inside_a_character(start: int, end: int, reason: str) -> None:
    with pytest.raises(SpanError) as caught:
        validate_span(MIXED, start, end)
    assert caught.value.code == "INVALID_SOURCE_SPAN"
    assert caught.value.details["reason"] == reason


@pytest.mark.parametrize(("start", "end"), [(True, 3), (0, 1.0), ("0", 3), (0, [3])])
def test_it_rejects_offsets_that_are_not_integers(start: Any, end: Any) -> None:
    with pytest.raises(SpanError):
        validate_span(SOURCE, start, end)


def test_it_digests_the_cited_bytes_as_in_the_worked_example() -> None:
    assert quote_digest(SOURCE, 0, 8) == "7bf52afd1d2eb936aaa7e54e67ae18b8fb24efb51e7edea259e6571b85614c96"
    assert quote_digest(SOURCE, 4, 12) == "259e7f1ad88e897370e6bc8269764a17289fb80012f8684bffecab7d02179a93"
    assert quote_digest(SOURCE.encode(), 4, None) == quote_digest("BBBBCCCC")
    with pytest.raises(SpanError):
        quote_digest(MIXED, 0, 2)


def test_it_returns_the_cited_text() -> None:
    assert cited_text(MIXED, 1, 6) == "é日"


def test_it_merges_overlapping_and_touching_spans_per_source_in_first_seen_order() -> None:
    spans = [("s2", 10, 12), ("s1", 4, 12), ("s1", 0, 8), ("s2", 0, 3), ("s2", 3, 5), ("s3", 2, 2), ("s2", 6, 7)]
    assert merge_spans(spans) == [
        ("s2", 0, 5), ("s2", 6, 7), ("s2", 10, 12),
        ("s1", 0, 12),
        ("s3", 2, 2),
    ]


def test_it_merges_the_quote_example_into_one_source_span() -> None:
    assert merge_spans([("ref:11", 0, 8), ("ref:11", 4, 12), ("ref:11", 0, 12)]) == [("ref:11", 0, 12)]
    assert merge_spans([]) == []


def test_it_trims_an_end_back_to_a_character_boundary() -> None:
    data = MIXED.encode()
    assert [trim_to_boundary(data, end) for end in range(12)] == [0, 1, 1, 3, 3, 3, 6, 6, 6, 6, 10, 10]
    assert trim_to_boundary(data, -4) == 0


def test_it_cuts_inspect_ranges_at_whole_characters() -> None:
    window = byte_range(MIXED, 1, 4)
    assert (window.start, window.end, window.total_bytes, window.text) == (1, 3, 10, "é")
    assert byte_range(MIXED, 3, 100).text == "日😀"
    assert byte_range(MIXED, 10, 5).text == ""
    assert byte_range(MIXED, 6, 3).end == 6  # a window shorter than the next character is empty
    assert byte_range(SOURCE, 0, 8).text == "AAAABBBB"


@pytest.mark.parametrize(("start", "size"), [(2, 4), (11, 1), (-1, 4), (0, -1)])
def test_it_rejects_ranges_that_start_inside_a_character_or_outside_the_body(start: int, size: int) -> None:
    with pytest.raises(SpanError) as caught:
        byte_range(MIXED, start, size)
    assert caught.value.code == "INVALID_SOURCE_SPAN"


@given(st.text(max_size=30), st.integers(min_value=-5, max_value=130), st.integers(min_value=0, max_value=130))
def test_ranges_and_trims_always_land_on_boundaries(text: str, start: int, size: int) -> None:
    data = text.encode()
    end = trim_to_boundary(data, start + size)
    assert is_boundary(data, end)
    assert 0 <= end <= len(data)
    if 0 <= start <= len(data) and is_boundary(data, start):
        window = byte_range(text, start, size)
        assert window.text.encode() == data[window.start:window.end]
        assert window.end - window.start <= size


@given(st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 40), st.integers(0, 10)), max_size=12))
def test_merged_spans_cover_exactly_the_same_bytes_and_never_touch(raw: list[tuple[str, int, int]]) -> None:
    spans = [(source, start, start + length) for source, start, length in raw]
    merged = merge_spans(spans)
    for source in "ab":
        covered = {i for s, start, end in spans if s == source for i in range(start, end)}
        merged_covered = {i for s, start, end in merged if s == source for i in range(start, end)}
        assert covered == merged_covered
        ordered = [(start, end) for s, start, end in merged if s == source]
        assert all(previous[1] < following[0] for previous, following in itertools.pairwise(ordered))
