"""The id rule, policy names, roles and orderKeys, and the opaque ids we issue."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from atoms.core.errors import IdError
from atoms.core.ids import (
    check_id,
    check_order_key,
    check_policy_name,
    check_role,
    is_id_of,
    is_label,
    is_policy_name,
    is_valid_id,
    new_atom_id,
    new_erasure_id,
    new_id,
    new_input_token,
    new_operation_id,
    new_receipt_id,
    new_ref,
    new_revision_id,
    parse_atom_id,
    parse_id,
    parse_input_token,
    parse_operation_id,
    parse_ref,
    parse_revision_id,
)


@pytest.mark.parametrize("value", ["a", "__proto__", "x" * 512, "é" * 256, "日" * 170, "change 1", "a\x00b"])
def test_it_accepts_ids_of_one_to_512_utf8_bytes(value: str) -> None:
    assert is_valid_id(value)
    assert check_id(value) == value


@pytest.mark.parametrize("value", ["", "x" * 513, "é" * 257, "\ud800", None, 7, ["a"], b"a"])
def test_it_rejects_ids_that_break_the_rule_as_invalid_schema(value: Any) -> None:
    assert not is_valid_id(value)
    with pytest.raises(IdError) as caught:
        check_id(value, field="changes[0].id")
    assert caught.value.code == "INVALID_SCHEMA"
    assert caught.value.details == {"path": "changes[0].id"}


@pytest.mark.parametrize("value", ["default", "user:alice", "team.a_b-c", "A" * 128, "0"])
def test_it_accepts_policy_names(value: str) -> None:
    assert is_policy_name(value)
    assert check_policy_name(value) == value


@pytest.mark.parametrize("value", ["", "A" * 129, "user alice", "a/b", "é", "default\n", None, 1])
def test_it_rejects_other_policy_names(value: Any) -> None:
    assert not is_policy_name(value)
    with pytest.raises(IdError):
        check_policy_name(value)


@pytest.mark.parametrize("value", ["condition", "0", "part of", "日本", "x" * 512])
def test_it_accepts_roles_and_order_keys(value: str) -> None:
    assert is_label(value)
    assert check_role(value) == value
    assert check_order_key(value) == value


@pytest.mark.parametrize("value", ["", "x" * 513, "a\nb", "tab\t", "\x7f", "c1\x85", "\ud800", 0, None])
def test_it_rejects_roles_and_order_keys_with_control_characters_or_bad_length(value: Any) -> None:
    assert not is_label(value)
    with pytest.raises(IdError) as caught:
        check_role(value)
    assert caught.value.code == "INVALID_SCHEMA"
    with pytest.raises(IdError):
        check_order_key(value)


GENERATORS: list[tuple[str, Callable[[], str]]] = [
    ("atom", new_atom_id),
    ("revision", new_revision_id),
    ("ref", new_ref),
    ("operation", new_operation_id),
    ("input", new_input_token),
    ("receipt", new_receipt_id),
    ("erasure", new_erasure_id),
]


@pytest.mark.parametrize(("kind", "generate"), GENERATORS)
def test_it_issues_fresh_prefixed_uuid4s(kind: str, generate: Callable[[], str]) -> None:
    first, second = generate(), generate()
    assert first != second
    assert re.fullmatch(rf"{kind}:[0-9a-f]{{8}}-[0-9a-f]{{4}}-4[0-9a-f]{{3}}-[89ab][0-9a-f]{{3}}-[0-9a-f]{{12}}", first)
    assert is_id_of(first, kind)
    assert parse_id(first, kind) == first
    assert len(new_id(kind)) == len(kind) + 37


def test_issued_refs_are_40_bytes_like_the_worked_example() -> None:
    assert len(new_ref().encode()) == 40
    assert is_id_of("ref:00000000-0000-4000-8000-000000000001", "ref")


def test_the_named_parsers_accept_their_own_kind_only() -> None:
    atom, revision, ref = new_atom_id(), new_revision_id(), new_ref()
    operation, token = new_operation_id(), new_input_token()
    assert parse_atom_id(atom) == atom
    assert parse_revision_id(revision) == revision
    assert parse_ref(ref) == ref
    assert parse_operation_id(operation) == operation
    assert parse_input_token(token) == token
    with pytest.raises(IdError):
        parse_ref(atom)
    with pytest.raises(IdError):
        parse_atom_id(ref)


@pytest.mark.parametrize("value", [
    "ref:fake",
    "ref:",
    "REF:00000000-0000-4000-8000-000000000001",
    "ref:00000000-0000-4000-8000-00000000000A",
    "ref:00000000-0000-1000-8000-000000000001",
    "ref:00000000-0000-4000-c000-000000000001",
    "ref:00000000000040008000000000000001",
    "ref:00000000-0000-4000-8000-000000000001 ",
    " ref:00000000-0000-4000-8000-000000000001",
    None,
    {"ref": "ref:00000000-0000-4000-8000-000000000001"},
])
def test_it_rejects_malformed_refs_as_invalid_ref(value: Any) -> None:
    assert not is_id_of(value, "ref")
    with pytest.raises(IdError) as caught:
        parse_ref(value, field="ref")
    assert caught.value.code == "INVALID_REF"


@pytest.mark.parametrize("value", ["", "input:fake", 0, False, None, {}, {"id": "input:x"}])
def test_it_rejects_malformed_input_tokens_as_invalid_input(value: Any) -> None:
    with pytest.raises(IdError) as caught:
        parse_input_token(value)
    assert caught.value.code == "INVALID_INPUT"


def test_it_refuses_unknown_id_kinds() -> None:
    with pytest.raises(ValueError):
        new_id("cursor")
    with pytest.raises(ValueError):
        is_id_of("cursor:x", "cursor")
