"""index/update and index/prioritize as typed services (docs/architecture.md "Typed services"), and the
purge barrier on the index endpoints: update and prioritize close while a purge is pending, status answers."""

from __future__ import annotations

from typing import Any

import pytest

from atoms.api.index import answer_index_prioritize, answer_index_update, parse_index_prioritize, parse_index_update
from atoms.errors import AtomError
from atoms.models import AtomStore, IndexCheckpoint, IndexEntry
from atoms.principal import Principal, resolve_binding
from atoms.services.index_api import IndexUpdateCommand, atoms_index_prioritize, atoms_index_update
from tests.atoms.api.helpers import AtomsClient, create
from tests.conftest import error_of


def _purge_pending(tenant: Any) -> None:
    AtomStore.objects.filter(tenant=tenant).update(purge_barrier={"atomId": "atom:x"})


def test_index_status_answers_during_a_pending_purge_and_the_other_index_calls_do_not(acme, I, X):
    I.ok_write(create("a", "A note."))
    _purge_pending(acme)
    status = X.post("index/status", {})
    assert status.status_code == 200 and status.json()["ready"] is False
    for response in (X.post("index/update", {}), X.post("index/prioritize", {"refs": []})):
        assert response.status_code == 403
        assert error_of(response)["details"]["reason"] == "erasure-incomplete"


def test_a_purge_raised_after_parsing_stops_the_services(acme, I, X):
    I.ok_write(create("a", "A note."))
    caller = Principal.for_key(X.key)
    ref = X.post("search", {"query": "note"}).json()["items"][0]["ref"]
    update, prioritize = parse_index_update(caller, {}), parse_index_prioritize(caller, {"refs": [ref]})
    _purge_pending(acme)
    for run in (lambda: atoms_index_update(update), lambda: atoms_index_prioritize(prioritize)):
        with pytest.raises(AtomError) as raised:
            run()
        assert (raised.value.code, raised.value.details["reason"]) == ("ACCESS_DENIED", "erasure-incomplete")
    assert not IndexEntry.objects.exists()


def test_a_command_built_in_code_consumes_the_feed_like_the_api(I, X):
    I.ok_write(*[create(f"a{i}", f"Note number {i}.") for i in range(3)])
    caller = Principal.for_key(X.key)
    result = atoms_index_update(IndexUpdateCommand(binding=resolve_binding(caller, None), limit=2))
    assert (result.indexed, result.processed, result.pending) == (2, 2, True)
    assert IndexCheckpoint.objects.get(policy="default").seq == 1
    assert list(answer_index_update(caller, {})) == ["indexed", "processed", "pending"]
    assert IndexEntry.objects.count() == 3


def test_answers_without_http_equal_the_api_answers(I, X: AtomsClient):
    I.ok_write(create("a", "First note."), create("b", "Second note."))
    caller = Principal.for_key(X.key)
    first, second = (item["ref"] for item in X.post("search", {"query": "note"}).json()["items"][:2])
    assert answer_index_prioritize(caller, {"refs": [first]}) == {"indexed": 1}
    assert X.post("index/prioritize", {"refs": [first, second]}).json() == {"indexed": 1}
    with pytest.raises(AtomError) as raised:
        answer_index_prioritize(caller, {"refs": [first], "options": {"limit": 0}})
    assert raised.value.code == "INVALID_SCHEMA"
