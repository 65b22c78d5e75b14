"""uses and uses/reset as typed services (docs/architecture.md "Typed services"): commands built in code,
the checks the services make again after parsing, and the answers without HTTP."""

from __future__ import annotations

from typing import Any

import pytest

from atoms.api.uses import answer_uses, answer_uses_reset, parse_uses, parse_uses_reset
from atoms.errors import AtomError
from atoms.models import AtomStore, Ref, Revision, UseMarker, UseState
from atoms.principal import Principal, resolve_binding
from atoms.services.uses import UsesCommand, UsesResetCommand, atoms_uses, atoms_uses_reset
from memoryhub.models import AuditEvent
from tests.atoms.api.helpers import AtomsClient, create
from tests.atoms.api.observing import own_ref
from tests.atoms.models_for_tests import MODELS, model_config


@pytest.fixture(autouse=True)
def counting(settings: Any, acme: Any) -> None:
    settings.ATOMS_AVAILABILITY_MODELS = MODELS
    AtomStore.get_or_create_for(acme)
    AtomStore.objects.filter(tenant=acme).update(config=model_config("CountingModel"))


@pytest.fixture
def A(I: AtomsClient, W: AtomsClient) -> str:
    return own_ref(W, I.ref(create("a", "needle a")))


def _body(agent: AtomsClient, refs: list[str], event_id: str = "event") -> dict[str, Any]:
    return {"binding": {"key": agent.key.public_id}, "refs": refs, "eventId": event_id}


def test_a_purge_raised_after_parsing_stops_uses_and_reset(acme, X, W, A):
    caller = Principal.for_key(X.key)
    uses, reset = parse_uses(caller, _body(W, [A])), parse_uses_reset(caller, {"binding": {"key": W.key.public_id}})
    AtomStore.objects.filter(tenant=acme).update(purge_barrier={"atomId": "atom:x"})
    for run in (lambda: atoms_uses(uses), lambda: atoms_uses_reset(reset)):
        with pytest.raises(AtomError) as raised:
            run()
        assert (raised.value.code, raised.value.details["reason"]) == ("ACCESS_DENIED", "erasure-incomplete")
    assert not UseState.objects.exists() and not UseMarker.objects.exists()
    assert not AuditEvent.objects.filter(action__startswith="atoms.uses").exists()


def test_a_command_built_in_code_counts_a_revision_named_twice_once(X, W, A):
    caller = Principal.for_key(X.key)
    binding = resolve_binding(caller, {"key": W.key.public_id}, may_name_others=True)
    revision = Revision.objects.get(id=Ref.objects.get(id=A).revision_id)
    result = atoms_uses(UsesCommand(caller=caller, binding=binding, revisions=(revision, revision), event_id="e"))
    assert (result.recorded, result.repeated) == (1, 0)
    assert UseState.objects.get().subject == W.key.effective_subject
    # The audit row names the host that reported the uses, not the agent whose state grew.
    assert AuditEvent.objects.get(action="atoms.uses").actor_key_id == X.key.id
    assert atoms_uses_reset(UsesResetCommand(caller=caller, binding=binding)).deleted == 1


def test_answers_without_http_equal_the_api_answers_key_for_key(X, W, A):
    caller = Principal.for_key(X.key)
    answer = answer_uses(caller, _body(W, [A], "first"))
    assert list(answer) == ["acceptedAt", "recorded", "repeated"] and answer["recorded"] == 1
    response = X.post("uses", _body(W, [A], "first"))
    assert list(response.json().items()) == [("acceptedAt", answer["acceptedAt"]), ("recorded", 0), ("repeated", 1)]
    assert answer_uses_reset(caller, {"binding": {"key": W.key.public_id}}) == {"deleted": 1}
    with pytest.raises(AtomError) as raised:
        answer_uses(caller, {**_body(W, [A]), "other": 1})
    assert (raised.value.code, raised.value.details) == ("INVALID_INPUT", {"path": "other"})
