"""The API's one reading of JSON text (memoryhub/api/strict_json.py), as pure functions."""

from __future__ import annotations

import pytest

from memoryhub.api.strict_json import MAX_DEPTH, JsonRefused, loads


def refused(data: bytes, **options: object) -> str:
    with pytest.raises(JsonRefused) as caught:
        loads(data, **options)  # type: ignore[arg-type]
    return caught.value.problem


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def test_it_reads_ordinary_json() -> None:
    assert loads(b'{"a": [1, 2.5, "x", null, true], "b": {"c": "\\u00e9"}}') == {
        "a": [1, 2.5, "x", None, True], "b": {"c": "é"}}


def test_it_refuses_a_repeated_key_at_any_level() -> None:
    assert refused(b'{"a": 1, "a": 1}') == "duplicate"
    assert refused(b'{"a": [{"b": 1, "c": 2, "b": 3}]}') == "duplicate"


def test_keys_that_differ_only_in_escapes_are_the_same_key() -> None:
    assert refused(b'{"a": 1, "\\u0061": 2}') == "duplicate"


def test_it_takes_exactly_the_maximum_depth() -> None:
    assert loads(nested(MAX_DEPTH)) is not None
    assert loads(b'{"a":' * (MAX_DEPTH - 1) + b"{}" + b"}" * (MAX_DEPTH - 1)) is not None


def test_it_refuses_one_level_more_than_the_maximum() -> None:
    assert refused(nested(MAX_DEPTH + 1)) == "depth"
    assert refused(b'{"a":' * MAX_DEPTH + b"{}" + b"}" * MAX_DEPTH) == "depth"


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_it_refuses_nesting_past_the_interpreter_s_recursion_limit(depth: int) -> None:
    assert refused(nested(depth)) == "depth"


def test_the_depth_limit_can_be_narrowed() -> None:
    assert loads(nested(3), max_depth=3) == [[[]]]
    assert refused(nested(4), max_depth=3) == "depth"


@pytest.mark.parametrize("data", [b'{"a": "x\\u0000y"}', b'{"x\\u0000": 1}', b'["\\u0000"]', b'"\\u0000"',
                                  b'{"a": {"b": ["\\u0000"]}}'])
def test_it_refuses_u0000_in_any_string_or_key(data: bytes) -> None:
    assert refused(data) == "nul"


@pytest.mark.parametrize("data", [b'{"a": "\\ud800"}', b'{"\\udc00": 1}', b'["x\\udbff"]', b'"\\ude00x"'])
def test_it_refuses_lone_surrogates_in_any_string_or_key(data: bytes) -> None:
    assert refused(data) == "surrogate"


def test_a_surrogate_pair_is_one_character_and_welcome() -> None:
    assert loads(b'{"a": "\\ud83d\\ude00"}') == {"a": "😀"}


def test_u0000_may_be_allowed_below_named_top_level_members() -> None:
    value = loads(b'{"value": {"\\u0000": ["\\u0000"]}, "key": "a\\u0000"}', nul_allowed_in={"value", "key"})
    assert value == {"value": {"\x00": ["\x00"]}, "key": "a\x00"}
    assert refused(b'{"value": "ok", "prefix": "\\u0000"}', nul_allowed_in={"value"}) == "nul"
    # Only top-level members name an allowance: a nested "value" is no exception.
    assert refused(b'{"outer": {"value": "\\u0000"}}', nul_allowed_in={"value"}) == "nul"


def test_u0000_may_be_allowed_in_the_whole_body_but_a_lone_surrogate_never() -> None:
    assert loads(b'{"\\u0000": "\\u0000"}', nul_allowed_in=True) == {"\x00": "\x00"}
    assert refused(b'{"value": "\\ud800"}', nul_allowed_in=True) == "surrogate"
    assert refused(b'{"value": "\\ud800"}', nul_allowed_in={"value"}) == "surrogate"


@pytest.mark.parametrize("data", [b"{", b"NaN", b'{"a": Infinity}', b'{"a": -Infinity}', b"1e400", b"\xff",
                                  b"[1] [2]", b"", b"7" * 5000])
def test_it_refuses_what_is_not_json(data: bytes) -> None:
    assert refused(data) == "syntax"


def test_its_messages_never_quote_the_body() -> None:
    for data in [b'{"secret-name": 1, "secret-name": 2}', b'{"secret-name": "\\u0000"}', b'{"secret-name": ']:
        with pytest.raises(JsonRefused) as caught:
            loads(data)
        assert "secret" not in caught.value.message
