"""Purge, observe and manifest commands built in code answer as the same bodies sent to the API
(docs/architecture.md "Typed services"): a receipt signs the input a caller would have sent."""

from __future__ import annotations

import pytest

from atoms.api.observe import manifest_json
from atoms.api.purge import purge_json
from atoms.core.canonical import digest
from atoms.errors import AtomError
from atoms.models import AtomStore
from atoms.principal import Binding, Principal, resolve_binding
from atoms.services.manifests import ManifestCommand, atoms_manifest
from atoms.services.observe import ObserveCommand, atoms_observe
from atoms.services.purge import PurgeCommand, atoms_purge
from tests.atoms.api.helpers import AtomsClient, create
from tests.atoms.api.observing import PAYLOAD, inspect_receipt, ok_observe, own_ref


@pytest.fixture
def A(I, W) -> str:
    """W's ref to a source atom written by I."""
    return own_ref(W, I.ref(create("a", "Alice takes her coffee black.")))


def agent_binding(host: AtomsClient, agent: AtomsClient) -> Binding:
    return resolve_binding(Principal.for_key(host.key), {"key": agent.key.public_id}, may_name_others=True)


def test_an_observe_built_in_code_signs_the_input_a_caller_would_send(X, W, A):
    receipt = inspect_receipt(W, A)
    sent = ok_observe(X, W, basis="historical", presentations=[{"receipt": receipt}])
    command = ObserveCommand(binding=agent_binding(X, W), payload_digest=PAYLOAD, basis="historical",
                             presentations=({"receipt": receipt},))
    result = atoms_observe(command)
    assert result.receipt.signal_digest == sent["receipt"]["signalDigest"]
    assert result.receipt.signal_digest == digest(
        {"basis": "historical", "presentations": [{"receipt": receipt}], "payloadDigest": PAYLOAD})
    assert result.token.manifest["generation"]["basis"] == "historical"


def test_an_observe_command_still_checks_the_purge_barrier(X, W, A):
    AtomStore.objects.filter(tenant=X.key.tenant).update(purge_barrier={"atomId": "atom:x"})
    with pytest.raises(AtomError) as caught:
        atoms_observe(ObserveCommand(binding=agent_binding(X, W), payload_digest=PAYLOAD))
    assert caught.value.code == "ACCESS_DENIED"


def test_a_manifest_command_returns_the_manifest_the_api_returns(X, W, A):
    token = ok_observe(X, W, sources=[{"ref": A}])["input"]
    result = atoms_manifest(ManifestCommand(binding=agent_binding(X, W), kind="input", id=token))
    response = X.post("manifest", {"binding": {"key": W.key.public_id}, "input": token})
    assert response.status_code == 200 and response.json() == manifest_json(result)


def test_a_purge_command_names_exactly_one_atom(Z):
    caller = Principal.for_key(Z.key)
    with pytest.raises(ValueError):
        PurgeCommand(caller=caller)
    with pytest.raises(ValueError):
        PurgeCommand(caller=caller, atom_id="atom:a", ref="ref:b")


def test_a_dry_run_by_ref_built_in_code_answers_as_the_api(I, Z):
    ref = own_ref(Z, I.ref(create("s", "A note to erase.")))
    api = Z.post("purge", {"ref": ref, "options": {"dryRun": True}})
    result = atoms_purge(PurgeCommand(caller=Principal.for_key(Z.key), ref=ref, dry_run=True))
    assert api.status_code == 200 and purge_json(result) == api.json()
    assert not AtomStore.get_or_create_for(Z.key.tenant).purge_barrier
