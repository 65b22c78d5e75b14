"""Canonical JSON must print exactly what JavaScript's JSON.stringify prints, ECMAScript numbers
included (docs/atoms.md "Status", the pure core)."""

from __future__ import annotations

import hashlib
import json
import math
import types
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from atoms.core.canonical import (
    canonical,
    canonical_bytes,
    canonical_flat,
    canonical_number,
    canonical_record,
    digest,
    sha256_hex,
)

# (Python value, what JavaScript prints for the same double)
JAVASCRIPT_NUMBERS: list[tuple[int | float, str]] = [
    (5e-324, "5e-324"),
    (1.7976931348623157e308, "1.7976931348623157e+308"),
    (0.1 + 0.2, "0.30000000000000004"),
    (100, "100"),
    (100.0, "100"),
    (1.0, "1"),
    (-0.0, "0"),
    (0, "0"),
    (-7, "-7"),
    (1e20, "100000000000000000000"),
    (123e-20, "1.23e-18"),
    (1e21, "1e+21"),
    (1.5e21, "1.5e+21"),
    (1e100, "1e+100"),
    (0.000001, "0.000001"),
    (0.0000015, "0.0000015"),
    (0.0000123, "0.0000123"),
    (1e-7, "1e-7"),
    (-1e-7, "-1e-7"),
    (5e-7, "5e-7"),
    (1.2345e-7, "1.2345e-7"),
    (123456789012345680000, "123456789012345680000"),
    (123456789012345680000.0, "123456789012345680000"),
    (1e16, "10000000000000000"),
    (0.1, "0.1"),
    (0.5, "0.5"),
    (-1.5, "-1.5"),
    (4.35, "4.35"),
    (1234.5678, "1234.5678"),
    (1 / 3, "0.3333333333333333"),
    (2 / 3, "0.6666666666666666"),
    (9007199254740991, "9007199254740991"),
    (2**53, "9007199254740992"),
    (2**53 + 1, "9007199254740992"),
    (2**64, "18446744073709552000"),
    (-(2**64), "-18446744073709552000"),
    (10**21, "1e+21"),
    (1130999874.5117903, "1130999874.5117903"),
    (1.9449407874211548, "1.9449407874211548"),
]


@pytest.mark.parametrize(("value", "expected"), JAVASCRIPT_NUMBERS)
def test_it_prints_numbers_as_javascript_does(value: int | float, expected: str) -> None:
    assert canonical(value) == expected
    assert canonical_number(value) == expected


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, 10**400])
def test_it_refuses_numbers_without_a_json_form(value: int | float) -> None:
    with pytest.raises(ValueError):
        canonical(value)


JAVASCRIPT_STRINGS: list[tuple[str, str]] = [
    ("plain", '"plain"'),
    ('say "hi"', '"say \\"hi\\""'),
    ("back\\slash", '"back\\\\slash"'),
    ("\b\f\n\r\t", '"\\b\\f\\n\\r\\t"'),
    ("\x00\x01\x1f", '"\\u0000\\u0001\\u001f"'),
    ("\x7f", '"\x7f"'),
    ("/", '"/"'),
    ("café 日本語", '"café 日本語"'),
    ("\u2028\u2029", '"\u2028\u2029"'),
    ("😀", '"😀"'),
    ("\ud800", '"\\ud800"'),
    ("a\udfffb", '"a\\udfffb"'),
    ("\ude00\ud83d", '"\\ude00\\ud83d"'),
    ("\ud83d\ude00", '"😀"'),
]


@pytest.mark.parametrize(("value", "expected"), JAVASCRIPT_STRINGS)
def test_it_escapes_strings_as_javascript_does(value: str, expected: str) -> None:
    assert canonical(value) == expected


def test_it_sorts_keys_by_code_point_at_every_level_without_whitespace() -> None:
    value = {"b": 1, "a": {"z": [1, 2], "B": True}, "B": None, "\uffff": 0, "😀": 0}
    # Code point order puts U+FFFF before U+1F600; UTF-16 order would not.
    assert canonical(value) == '{"B":null,"a":{"B":true,"z":[1,2]},"b":1,"\uffff":0,"😀":0}'


def test_it_keeps_null_in_objects_unless_asked_to_omit_it() -> None:
    value = {"a": None, "b": [None, {"c": None}], "d": 1}
    assert canonical(value) == '{"a":null,"b":[null,{"c":null}],"d":1}'
    assert canonical(value, omit_none=True) == '{"b":[null,{}],"d":1}'


def test_it_prints_booleans_and_tuples() -> None:
    assert canonical([True, False, None, (1, "x")]) == '[true,false,null,[1,"x"]]'


def test_it_allows_shared_objects_but_refuses_cycles() -> None:
    shared = {"x": 1}
    assert canonical([shared, shared]) == '[{"x":1},{"x":1}]'
    looped: list[Any] = []
    looped.append(looped)
    with pytest.raises(ValueError):
        canonical(looped)


@pytest.mark.parametrize("value", [{1: "a"}, {"a": {1, 2}}, b"bytes", object()])
def test_it_refuses_values_that_are_not_json(value: Any) -> None:
    with pytest.raises(TypeError):
        canonical(value)


def test_it_refuses_two_keys_that_are_one_javascript_string() -> None:
    with pytest.raises(ValueError):
        canonical({"\ud83d\ude00": 1, "😀": 2})


def test_it_encodes_utf8_and_digests_the_canonical_bytes() -> None:
    value = {"z": "é", "a": 1}
    assert canonical_bytes(value) == '{"a":1,"z":"é"}'.encode()
    assert digest(value) == hashlib.sha256('{"a":1,"z":"é"}'.encode()).hexdigest()
    assert canonical_bytes("\ud800") == b'"\\ud800"'


def test_it_hashes_strings_as_utf8() -> None:
    # The quote digests of the worked example's two extractions (tests/atoms/core/worked_example.py).
    assert sha256_hex("AAAABBBB") == "7bf52afd1d2eb936aaa7e54e67ae18b8fb24efb51e7edea259e6571b85614c96"
    assert sha256_hex(b"BBBBCCCC") == "259e7f1ad88e897370e6bc8269764a17289fb80012f8684bffecab7d02179a93"


def _unit(ref: int, text: str, links: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "text": text, "sources": [], "ref": f"ref:00000000-0000-4000-8000-{ref:012d}",
        "provenance": {"producer": "user:rita", "origin": "source"}, "links": links,
    }


def _link(role: str, ref: int, required: bool) -> dict[str, Any]:
    return {"role": role, "ref": f"ref:00000000-0000-4000-8000-{ref:012d}", "required": required,
            "orderKey": "0", "at": "logical"}


def test_it_renders_the_worked_example_at_1071_bytes() -> None:
    memory = [
        _unit(1, "Brewing temperature for coffee: 93 C.", [_link("detail", 3, False)]),
        _unit(5, "Cold brew steeps for 12 hours.", [_link("related", 1, False)]),
        _unit(2, "Alice takes her coffee black.", [_link("condition", 4, True)]),
        _unit(4, "Applies on weekdays only.", []),
    ]
    text = canonical({"memory": memory, "formatVersion": 2, "evidence": []})
    assert len(text.encode()) == 1071
    assert text.startswith('{"evidence":[],"formatVersion":2,"memory":[{"links":[{"at":"logical","orderKey":"0",')
    assert '"ref":"ref:00000000-0000-4000-8000-000000000004","sources":[],"text":"Applies on weekdays only."}]}' in text
    assert len(canonical({"evidence": [], "formatVersion": 2, "memory": []})) == 45


# --- Properties ------------------------------------------------------------------------------

_json_scalars = (
    st.none() | st.booleans() | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text()
)
_json_values = st.recursive(
    _json_scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


def _as_doubles(value: Any) -> Any:
    """JavaScript's view of a value: every number is a double (so 67211897619443070 parses
    back to the double it names, not to a Python int that differs in the last digits)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, list):
        return [_as_doubles(item) for item in value]
    return {key: _as_doubles(item) for key, item in value.items()}


@given(_json_values)
def test_canonical_text_parses_back_to_an_equal_value(value: Any) -> None:
    assert _as_doubles(json.loads(canonical(value))) == _as_doubles(value)


@given(_json_values)
def test_canonical_text_is_stable_under_a_round_trip(value: Any) -> None:
    text = canonical(value)
    assert canonical(json.loads(text)) == text


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_printed_doubles_round_trip_with_no_more_digits_than_python_needs(value: float) -> None:
    printed = canonical_number(value)
    assert float(printed) == value
    significant = printed.lstrip("-").split("e")[0].replace(".", "").strip("0")
    python_digits = repr(abs(value)).split("e")[0].replace(".", "").strip("0")
    assert len(significant) <= max(1, len(python_digits))


_no_float_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**53), max_value=2**53) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@given(_no_float_values)
def test_without_floats_it_matches_pythons_sorted_compact_json(value: Any) -> None:
    expected = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical(value) == expected


# Keys with everything a key can need: escapes, non-ASCII, surrogates, identifiers.
_keys = st.text(alphabet=st.sampled_from(['"', "\\", "\n", "a", "b", "_", "1", "é", "\ud83d", "😀", " "]), max_size=4)
_flat_dicts = st.dictionaries(_keys, _json_scalars, max_size=4)
_records = st.dictionaries(_keys, _json_scalars | _flat_dicts | st.lists(_json_scalars | _flat_dicts, max_size=3)
                           | _json_values, max_size=6)


@given(_flat_dicts | st.dictionaries(_keys, _json_values, max_size=4))
def test_the_flat_writer_prints_exactly_what_canonical_prints(value: dict[str, Any]) -> None:
    assert canonical_flat(value) == canonical(value)


@given(_records)
def test_the_record_writer_prints_exactly_what_canonical_prints(value: dict[str, Any]) -> None:
    assert canonical_record(value) == canonical(value)


class _Key(str):
    """A str subclass that formats as something else (as a `(str, Enum)` member does)."""

    def __format__(self, spec: str) -> str:
        return "_Key.A"


def test_the_writers_still_refuse_what_canonical_refuses_and_print_what_it_prints() -> None:
    looped: dict[str, Any] = {"a": []}
    looped["a"].append(looped)
    with pytest.raises(ValueError, match="cycle"):
        canonical_record(looped)
    for writer in (canonical_flat, canonical_record):
        with pytest.raises(TypeError, match="keys must be str"):
            writer({1: "x", "b": 2})
        with pytest.raises(TypeError, match="mappingproxy"):
            writer(types.MappingProxyType({"a": 1}))
        # A str subclass prints as its value, as canonical prints it, never as its repr.
        assert writer({_Key("a"): 1}) == canonical({_Key("a"): 1}) == '{"a":1}'
