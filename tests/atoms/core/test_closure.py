"""Required closures C(r): a root with every atom it requires, transitively. read packs whole closures
(docs/atoms.md "Selection utility (read)")."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from atoms.core.closure import BLOCK_REASONS, AtomNode, Slot, StoreResolver, closure, closures
from tests.atoms.core.worked_example import (
    EXAMPLE,
    EXAMPLE_CLOSURES,
    NAME_OF,
    atom_id,
    make_node,
    resolver,
    revision_id,
)


def names(ids: tuple[str, ...]) -> list[str]:
    return [NAME_OF[key] for key in ids]


def test_it_reproduces_the_closures_of_the_worked_example() -> None:
    found = {NAME_OF[root]: names(found.ids) for root, found in EXAMPLE_CLOSURES.items()}
    assert found == {"A": ["A"], "E": ["E"], "B": ["B", "D"], "C": ["C"], "D": ["D"]}
    assert not any(found.is_blocked for found in EXAMPLE_CLOSURES.values())


def test_it_follows_required_links_breadth_first_in_slot_order() -> None:
    root = make_node(1, "root", links=[("x", 2, True), ("ordinary", 5, False), ("y", 3, True)])
    second = make_node(2, "second", links=[("z", 4, True)])
    third = make_node(3, "third", links=[("back", 1, True)])
    fourth = make_node(4, "fourth")
    fifth = make_node(5, "fifth")
    found = closure(root, resolver([root, second, third, fourth, fifth]))
    assert found.ids == (revision_id(1), revision_id(2), revision_id(3), revision_id(4))
    assert len(found) == 4
    assert found.blocked is None


def test_a_cycle_of_nine_required_links_terminates_with_every_member_once() -> None:
    ring = [make_node(n, f"member {n}", links=[("next", n % 9 + 1, True)]) for n in range(1, 10)]
    found = closure(ring[0], resolver(ring))
    assert found.ids == tuple(revision_id(n) for n in range(1, 10))
    assert not found.is_blocked


def test_a_logical_member_is_the_head_and_an_observed_member_the_pinned_revision() -> None:
    old = make_node(20, "old condition")
    head = dataclasses.replace(make_node(21, "new condition"), atom_id=old.atom_id)
    logical = AtomNode(revision_id=revision_id(1), atom_id=atom_id(1), ref="ref:root", text="root",
                       origin="source", producer="user:rita",
                       slots=(Slot(role="condition", target_atom_id=old.atom_id, required=True),))
    observed = dataclasses.replace(logical, slots=(
        Slot(role="condition", target_atom_id=old.atom_id, target_revision_id=old.revision_id, required=True),))
    lookup = StoreResolver(heads={old.atom_id: head.revision_id},
                           nodes={old.revision_id: old, head.revision_id: head})
    assert closure(logical, lookup).ids == (logical.revision_id, head.revision_id)
    assert closure(observed, lookup).ids == (observed.revision_id, old.revision_id)
    assert observed.slots[0].at == "observed" and logical.slots[0].at == "logical"


def test_a_legacy_include_slot_counts_as_required() -> None:
    target = make_node(2, "included")
    root = AtomNode(revision_id=revision_id(1), atom_id=atom_id(1), ref="ref:root", text="root", origin="source",
                    producer="user:rita", slots=(Slot(role="part", target_atom_id=target.atom_id,
                                                      target_revision_id=target.revision_id, mode="include"),))
    assert closure(root, resolver([root, target])).ids == (root.revision_id, target.revision_id)


@pytest.mark.parametrize(("flags", "reason"), [
    ({"state": "retired"}, "retired"),
    ({"stale": True}, "stale"),
    ({"readable": False}, "unreadable"),
    ({"hidden": True}, "hidden"),
    ({"readable": False, "state": "retired"}, "unreadable"),
])
def test_an_unavailable_member_two_links_away_blocks_the_root(flags: dict[str, Any], reason: str) -> None:
    root = make_node(1, "root", links=[("condition", 2, True)])
    middle = make_node(2, "middle", links=[("condition", 3, True)])
    bad = make_node(3, "bad", **flags)
    found = closure(root, resolver([root, middle, bad]))
    assert found.blocked == reason
    assert found.blocker == bad.atom_id
    assert reason in BLOCK_REASONS


def test_a_missing_or_purged_target_blocks_the_root() -> None:
    root = make_node(1, "root", links=[("condition", 2, True)])
    assert closure(root, resolver([root])).blocked == "missing"
    gone = make_node(2, "gone")
    assert closure(root, resolver([root, gone], purged=[gone.atom_id])).blocked == "purged"


def test_a_pinned_revision_of_another_atom_is_missing() -> None:
    other = make_node(2, "other")
    root = AtomNode(revision_id=revision_id(1), atom_id=atom_id(1), ref="ref:root", text="root", origin="source",
                    producer="user:rita", slots=(Slot(role="c", target_atom_id=atom_id(3),
                                                      target_revision_id=other.revision_id, required=True),))
    assert closure(root, resolver([root, other])).blocked == "missing"


def test_an_unavailable_root_is_blocked_by_itself() -> None:
    root = make_node(1, "root", state="retired")
    found = closure(root, resolver([root]))
    assert (found.blocked, found.blocker) == ("retired", root.atom_id)


def test_an_ordinary_link_to_an_unavailable_target_does_not_block() -> None:
    root = make_node(1, "root", links=[("see", 2, False)])
    found = closure(root, resolver([root, make_node(2, "retired", state="retired")]))
    assert found.ids == (root.revision_id,) and not found.is_blocked


def test_closures_resolve_each_link_target_once() -> None:
    shared = make_node(9, "shared condition")
    roots = [make_node(n, f"root {n}", links=[("condition", 9, True)]) for n in range(1, 4)]
    base = resolver([*roots, shared])
    calls: list[tuple[str, str | None]] = []

    def counting(target_atom: str, target_revision: str | None) -> AtomNode | str:
        calls.append((target_atom, target_revision))
        return base(target_atom, target_revision)

    found = closures(roots, counting)  # type: ignore[arg-type]
    assert [found[root.revision_id].ids for root in roots] == [(root.revision_id, shared.revision_id) for root in roots]
    assert calls == [(shared.atom_id, None)]


def test_a_node_encodes_its_body_once_as_utf8() -> None:
    node = make_node(1, "日本語 needle")
    assert node.body == "日本語 needle".encode() and node.body_bytes == 16
    assert EXAMPLE["A"].body_bytes == 37


# --- properties ---------------------------------------------------------------------------

@st.composite
def graphs(draw: st.DrawFn) -> list[AtomNode]:
    size = draw(st.integers(1, 8))
    nodes = []
    for n in range(1, size + 1):
        links = draw(st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(1, size + 1), st.booleans()),
                              max_size=4))
        flags = draw(st.sampled_from([{}, {}, {}, {"state": "retired"}, {"stale": True}, {"hidden": True}]))
        nodes.append(make_node(n, f"node {n}", links=links, **flags))
    return nodes  # atom size + 1 is never written: links to it are missing


@given(graphs(), st.data())
def test_a_closure_is_closed_under_required_links_or_blocked(nodes: list[AtomNode], data: st.DataObject) -> None:
    lookup = resolver(nodes)
    root = data.draw(st.sampled_from(nodes))
    found = closure(root, lookup)
    ids = found.ids
    assert len(set(ids)) == len(ids) and ids[0] == root.revision_id
    if found.is_blocked:
        return
    for member in found.members:
        assert member.unavailable() is None
        for slot in member.slots:
            if slot.required:
                target = lookup(slot.target_atom_id, slot.target_revision_id)
                assert isinstance(target, AtomNode) and target.revision_id in ids
    # Deterministic, and a member's closure lies inside its root's.
    assert closure(root, lookup) == found
    for member in found.members:
        assert set(closure(member, lookup).ids) <= set(ids)
