"""search and inspect as typed services (docs/architecture.md "Typed services"): commands built in
code, the checks the services make again after parsing, and the error order of the parsers."""

from __future__ import annotations

from typing import Any

import pytest

from atoms.api.inspect import answer_inspect, inspect_json, parse_inspect
from atoms.api.search import answer_search, parse_search, search_json
from atoms.errors import AtomError
from atoms.models import AtomStore, Receipt
from atoms.principal import Principal, resolve_binding
from atoms.services.inspect import InspectCommand, InspectOptions, atoms_inspect
from atoms.services.search import SearchCommand, SearchOptions, atoms_search
from tests.atoms.api.helpers import AtomsClient, create
from tests.atoms.models_for_tests import MODELS


@pytest.fixture(autouse=True)
def test_models(settings: Any) -> None:
    settings.ATOMS_AVAILABILITY_MODELS = MODELS


def _code(call: Any) -> str:
    with pytest.raises(AtomError) as caught:
        call()
    return caught.value.code


def _needles(I: AtomsClient, count: int) -> None:
    I.ok_write(*(create(f"n{i}", "needle " + "x" * i) for i in range(count)))


def test_a_search_command_built_in_code_answers_as_the_same_body_does(I, frozen_clock):
    _needles(I, 3)
    caller = Principal.for_key(I.key)
    command = SearchCommand(binding=resolve_binding(caller, None), query="needle", options=SearchOptions(limit=2))
    typed = search_json(atoms_search(command))
    sent = answer_search(caller, {"query": "needle", "options": {"limit": 2}})
    assert typed["receipt"]["signalDigest"] == sent["receipt"]["signalDigest"]
    assert [i["ref"] for i in typed["items"]] == [i["ref"] for i in sent["items"]] and len(typed["items"]) == 2
    # The cursor is bound to the options as a form would send them: the body's cursor opens
    # with the command's options, and the command's cursor with the body's.
    rest = atoms_search(SearchCommand(binding=command.binding, query="needle",
                                      options=SearchOptions(limit=2, cursor=sent["cursor"])))
    assert len(rest.items) == 1 and rest.cursor is None
    body_rest = answer_search(caller, {"query": "needle", "options": {"limit": 2, "cursor": typed["cursor"]}})
    assert body_rest["items"] == search_json(rest)["items"]
    # Other options: the cursor does not open.
    assert _code(lambda: answer_search(caller, {"query": "needle", "options": {"limit": 3,
                                                                             "cursor": typed["cursor"]}})) \
        == "CURSOR_EXPIRED"


def test_an_inspect_command_built_in_code_hashes_what_a_body_would_send(I, frozen_clock):
    root = I.ok_write(create("r", "root", links={"m": [{"local": "a"}, {"local": "b"}]}), create("a", "alpha"),
                      create("b", "beta"))["changes"]["r"]["ref"]
    caller = Principal.for_key(I.key)
    binding = resolve_binding(caller, None)
    plain = inspect_json(atoms_inspect(InspectCommand(binding=binding, ref=root)))
    # Every option at its default: no options object, as a body without one.
    assert plain["receipt"]["signalDigest"] == answer_inspect(caller, {"ref": root})["receipt"]["signalDigest"]
    assert plain["receipt"]["signalDigest"] != \
        answer_inspect(caller, {"ref": root, "options": {}})["receipt"]["signalDigest"]
    paged = atoms_inspect(InspectCommand(binding=binding, ref=root, options=InspectOptions(limit=1)))
    sent = answer_inspect(caller, {"ref": root, "options": {"limit": 1}})
    assert Receipt.objects.get(id=paged.receipt.id).signal_digest == sent["receipt"]["signalDigest"]
    assert paged.cursor is not None and len(paged.neighbours) == 1
    following = answer_inspect(caller, {"ref": root, "options": {"limit": 1, "cursor": paged.cursor}})
    assert [n["atom"]["text"] for n in following["neighbors"]] == ["beta"]


def test_a_purge_raised_after_parsing_stops_search_and_inspect(acme, I, frozen_clock):
    root = I.ref(create("a", "needle a"))
    caller = Principal.for_key(I.key)
    search = parse_search(caller, {"query": "needle"})
    inspect = parse_inspect(caller, {"ref": root})
    AtomStore.objects.filter(tenant=acme).update(purge_barrier={"atomId": "atom:x"})
    receipts = Receipt.objects.count()
    assert _code(lambda: atoms_search(search)) == "ACCESS_DENIED"
    assert _code(lambda: atoms_inspect(inspect)) == "ACCESS_DENIED"
    assert Receipt.objects.count() == receipts


def test_a_deadline_passing_after_parsing_stops_search_and_inspect(I, frozen_clock):
    root = I.ref(create("a", "needle a"))
    caller = Principal.for_key(I.key)
    frozen_clock.set_now(1000)
    search = parse_search(caller, {"query": "needle", "options": {"deadline": 1000}})
    inspect = parse_inspect(caller, {"ref": root, "options": {"deadline": 1000}})
    frozen_clock.set_now(1001)
    assert _code(lambda: atoms_search(search)) == "BUDGET_EXHAUSTED"
    assert _code(lambda: atoms_inspect(inspect)) == "BUDGET_EXHAUSTED"


def test_a_past_deadline_is_reported_before_a_bad_query_or_ref(I, frozen_clock):
    caller = Principal.for_key(I.key)
    frozen_clock.set_now(1000)
    late = {"deadline": 999}
    assert _code(lambda: answer_search(caller, {"query": " ", "options": late})) == "BUDGET_EXHAUSTED"
    assert _code(lambda: answer_inspect(caller, {"ref": 5, "options": late})) == "BUDGET_EXHAUSTED"
    assert _code(lambda: answer_search(caller, {"query": " ", "options": {"deadline": 1000}})) == "INVALID_INPUT"
    assert _code(lambda: answer_inspect(caller, {"ref": 5, "options": {"deadline": 1000}})) == "INVALID_INPUT"
