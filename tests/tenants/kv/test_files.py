"""The namespace file reader (tenants.kv.files), without a database."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tenants.kv.files import FileFormatError, parse_namespace_text, read_namespace_file
from tenants.kv.rules import canonical

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=20,
)
top_level = st.dictionaries(st.text().filter(lambda k: "\x00" not in k), json_values.filter(lambda v: v is not None),
                            max_size=6)


@given(top_level)
def test_an_exported_file_reads_back_as_the_same_canonical_values(obj: dict[str, Any]) -> None:
    text = json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False)
    read, warnings = parse_namespace_text(text.encode("utf-8"))
    assert warnings == []
    assert {k: canonical(v) for k, v in read.items()} == {k: canonical(v) for k, v in obj.items()}


@pytest.mark.parametrize("content", [b"", b" ", b"\n\t\r\n  "])
def test_a_blank_file_is_an_empty_object(content: bytes) -> None:
    assert parse_namespace_text(content) == ({}, [])


@pytest.mark.parametrize(("content", "kind"), [
    (b"[1,2]", "an array"), (b'"text"', "a string"), (b"42", "a number"), (b"1.5", "a number"),
    (b"true", "a boolean"), (b"null", "null"),
])
def test_valid_json_that_is_not_an_object_reads_as_empty_with_a_warning(content: bytes, kind: str) -> None:
    assert parse_namespace_text(content) == ({}, [f"the file holds {kind}, not an object; read as {{}}"])


def test_a_repeated_key_keeps_its_last_value() -> None:
    assert parse_namespace_text(b'{"k": 1, "k": 2}') == ({"k": 2}, [])


def test_numbers_keep_their_spelling() -> None:
    obj, _ = parse_namespace_text(b'{"a": 3.0, "b": 12345678901234567890, "c": 1.10, "d": 1e21}')
    assert canonical(obj) == '{"a":3.0,"b":12345678901234567890,"c":1.1,"d":1e+21}'


@pytest.mark.parametrize(("content", "where"), [
    (b'{"a": 1', "line 1, column 8"),
    (b'{\n  "a": 1,\n}', "line 3, column 1"),
    (b'{"s": "NaN", "t": "Infinity",\n "n": NaN}', "line 2, column 7"),
    (b'{"s": "a\\"b", "n": Infinity}', "line 1, column 20"),
    (b'{"ok": 1e308, "bad": -1e309}', "line 1, column 22"),
])
def test_errors_say_where(content: bytes, where: str) -> None:
    with pytest.raises(FileFormatError, match=f"at {where}"):
        parse_namespace_text(content)


def test_an_integer_longer_than_the_interpreter_converts_is_an_error_with_a_position() -> None:
    with pytest.raises(FileFormatError, match=r"line 2, column 7: an integer of 5000 digits"):
        parse_namespace_text(b'{"a": 1,\n "b": ' + b"7" * 5000 + b"}")


def test_a_file_nested_too_deeply_is_an_error() -> None:
    with pytest.raises(FileFormatError, match="nested too deeply"):
        parse_namespace_text(b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")


def test_a_lone_surrogate_in_a_nested_key_is_an_error() -> None:
    with pytest.raises(FileFormatError, match="line 1, column 8: a string with a lone surrogate"):
        parse_namespace_text(b'{"a": {"\\udc00": 1}}')


def test_reading_a_file_names_its_namespace_and_sorts_items(tmp_path: Path) -> None:
    path = tmp_path / "per-user.json"
    path.write_text('{"b": {"y": 1, "x": 2}, "a": "日本"}', encoding="utf-8")
    read = read_namespace_file(path)
    assert (read.name, read.namespace, read.status, read.error) == ("per-user.json", "per-user", "ok", None)
    assert read.items == [("a", '"日本"'), ("b", '{"x":2,"y":1}')]


def test_an_unreadable_entry_is_an_error_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "dir.json").mkdir()
    read = read_namespace_file(tmp_path / "dir.json")
    assert read.status == "error" and read.error is not None and read.error.startswith("cannot read the file")
