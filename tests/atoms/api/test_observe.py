"""observe and manifest: tokens from presented receipts, sources and inherited tokens, who may call them, and the
manifests they return (docs/atoms.md "Decisions")."""

from __future__ import annotations

from typing import Any

import pytest
from django.db.models import F

from atoms.core.canonical import sha256_hex
from atoms.models import AtomStore, InputToken, Receipt, Ref
from atoms.principal import Principal, resolve_binding
from atoms.services.receipts import issued_manifest
from tenants.models import ApiKey
from tests.atoms.api.helpers import AtomsClient, create
from tests.atoms.api.observing import (
    PAYLOAD,
    inspect_receipt,
    manifest,
    obs,
    observe,
    ok_observe,
    own_ref,
    token,
)
from tests.conftest import error_of


def code(response: Any) -> str:
    return error_of(response)["code"]


def pin(ref: str) -> dict[str, str]:
    row = Ref.objects.get(id=ref)
    return {"kind": "pinned", "atomId": row.atom_id, "revisionId": row.revision_id}


def token_manifest(t: str) -> dict[str, Any]:
    return InputToken.objects.get(id=t).manifest


@pytest.fixture
def A(I, W) -> str:
    """W's ref to a source atom A written by I."""
    return own_ref(W, I.ref(create("a", "Alice takes her coffee black.")))


def test_observe_issues_a_token_bound_to_the_agents_scope(X, W, A, frozen_clock):
    frozen_clock.set_now(1_000)
    receipt = inspect_receipt(W, A)
    result = ok_observe(X, W, presentations=[{"receipt": receipt}])
    assert set(result) == {"input", "expiresAt", "receipt"} and result["input"].startswith("input:")
    assert result["expiresAt"] == 301_000
    assert set(result["receipt"]) == {"id", "state", "signalDigest"}
    binding = resolve_binding(Principal.for_key(W.key), None)
    m = token_manifest(result["input"])
    assert (m["id"], m["contractVersion"], m["kind"]) == (result["input"], 2, "input")
    assert m["key"] == W.key.public_id and m["subject"] == f"key:{W.key.public_id}"
    assert (m["authGeneration"], m["readPolicies"], m["writePolicy"]) == (1, ["default"], "default")
    assert m["actor"] == {"type": "agent", "generatedOrigin": "derived"} and m["scopeDigest"] == binding.scope_digest
    assert (m["createdAt"], m["expiresAt"]) == (1_000, 301_000)
    units = Receipt.objects.get(id=receipt).manifest["presentation"]["units"]
    assert m["generation"] == {"basis": "current", "presentations": [{"receipt": receipt, "units": units}],
                               "sources": [], "inherit": [], "inheritedOutputs": [], "historicalReads": [],
                               "payloadDigest": PAYLOAD, "outputs": []}
    assert m["reads"] == m["currentReads"] == m["watches"]["heads"] == m["acquisition"]["reads"] == [pin(A)]
    assert m["observations"] == m["watches"]["queries"] == [] and m["acknowledgement"] == []
    assert "presentation" not in m
    observed = Receipt.objects.get(id=result["receipt"]["id"])
    assert observed.kind == "observe" and "presentation" not in observed.manifest
    assert observed.principal == W.key.public_id and issued_manifest(observed.manifest)["reads"] == [pin(A)]


def test_only_host_and_admin_keys_may_observe(keys, W, A, acme, make_key, client_for):
    """Only host and admin keys may observe or fetch a manifest; read-only hosts may too, since neither writes."""
    receipt = inspect_receipt(W, A)
    for name in ("I", "W", "R"):
        response = observe(keys[name], W, presentations=[{"receipt": receipt}])
        assert response.status_code == 403 and code(response) == "ACCESS_DENIED", name
        assert code(manifest(keys[name], W, receipt=receipt)) == "ACCESS_DENIED", name
    assert observe(keys["Z"], W, presentations=[{"receipt": receipt}]).status_code == 200
    # observe and manifest change no memory, so read-only hosts may call them.
    key, raw = make_key(acme, "host", read_only=True)
    host = AtomsClient(client_for(raw), key)
    assert observe(host, W, presentations=[{"receipt": receipt}]).status_code == 200
    assert manifest(host, W, receipt=receipt).status_code == 200


@pytest.mark.parametrize(("input_", "expected"), [
    ({"payloadDigest": None}, "INVALID_INPUT"),
    ({"payloadDigest": "ABC"}, "INVALID_INPUT"),
    ({"payloadDigest": PAYLOAD.upper()}, "INVALID_INPUT"),
    ({"basis": "future"}, "INVALID_INPUT"),
    ({"extra": 1}, "INVALID_INPUT"),
    ({"sources": {}}, "INVALID_INPUT"),
    ({"presentations": [{"receipt": "receipt:00000000-0000-4000-8000-000000000000"}]}, "INVALID_INPUT"),
    ({"presentations": [{"ref": "x"}]}, "INVALID_INPUT"),
    ({"inherit": ["input:00000000-0000-4000-8000-000000000000"]}, "INVALID_INPUT"),
    ({"inherit": ["input:fake"]}, "INVALID_INPUT"),
    ({"watches": ["receipt:00000000-0000-4000-8000-000000000000"]}, "INVALID_INPUT"),
    ({"sources": [{"ref": "ref:00000000-0000-4000-8000-000000000000"}]}, "INVALID_REF"),
])
def test_malformed_input_is_refused(X, W, input_, expected):
    response = observe(X, W, **input_)
    assert response.status_code == 400 and code(response) == expected
    assert not InputToken.objects.exists()


def test_the_body_needs_a_binding_and_an_input(X, W):
    assert code(X.post("observe", {"input": {"payloadDigest": PAYLOAD}})) == "INVALID_INPUT"
    assert code(X.post("observe", {"binding": {"key": W.key.public_id}})) == "INVALID_INPUT"
    assert code(X.post("observe", {"binding": {}, "input": {"payloadDigest": PAYLOAD}, "x": 1})) == "INVALID_INPUT"
    missing = X.post("observe", {"binding": {"key": "k_unknown0000"}, "input": {"payloadDigest": PAYLOAD}})
    assert code(missing) == "ACCESS_DENIED"


def test_lists_over_ten_thousand_entries_are_limit_exceeded(X, W):
    response = observe(X, W, inherit=["input:fake"] * 10_001)
    assert response.status_code == 413 and code(response) == "LIMIT_EXCEEDED"


def test_presented_receipts_must_be_the_bound_keys_and_present_something(X, W, I, A, acme, make_key, client_for):
    mine = inspect_receipt(W, A)
    theirs = inspect_receipt(I, Ref.objects.filter(principal=I.key.public_id).first().id)
    assert code(observe(X, W, presentations=[{"receipt": theirs}])) == "ACCESS_DENIED"
    assert code(observe(X, W, watches=[theirs])) == "ACCESS_DENIED"
    observed = ok_observe(X, W, presentations=[{"receipt": mine}])["receipt"]["id"]
    response = observe(X, W, presentations=[{"receipt": observed}])
    assert response.status_code == 400 and code(response) == "INVALID_INPUT"
    ApiKey.objects.filter(pk=W.key.pk).update(generation=F("generation") + 1)
    assert code(observe(X, W, presentations=[{"receipt": mine}])) == "ACCESS_DENIED"


def test_refs_narrow_a_presentation_to_the_units_sent(X, W, I):
    outcome = I.ok_write(create("root", "root", links={"about": {"local": "n"}}), create("n", "neighbour"))
    root, neighbour = (own_ref(W, outcome["changes"][c]["ref"]) for c in ("root", "n"))
    receipt = W.post("inspect", {"ref": root}).json()["receipt"]["id"]
    outside = observe(X, W, presentations=[{"receipt": receipt, "refs": [root, A_OUTSIDE]}])
    assert outside.status_code == 400 and code(outside) == "INVALID_REF"
    m = token_manifest(token(X, W, presentations=[{"receipt": receipt, "refs": [root]}]))
    assert [u["ref"] for u in m["generation"]["presentations"][0]["units"]] == [root]
    assert m["currentReads"] == [pin(root)]
    # Acquisition reads are kept either way: the neighbour stays an erase dependency.
    assert m["reads"] == [pin(root), pin(neighbour)]


A_OUTSIDE = "ref:00000000-0000-4000-8000-000000000000"


def test_sources_must_be_source_atoms_with_valid_spans(X, W, A):
    derived = W.ok_write(create("d", "derived", input=obs(X, W, A)))["changes"]["d"]["ref"]
    assert code(observe(X, W, sources=[{"ref": derived}])) == "ACCESS_DENIED"
    assert code(observe(X, W, sources=[{"ref": A, "start": 5, "end": 2}])) == "INVALID_SOURCE_SPAN"
    assert code(observe(X, W, sources=[{"ref": A, "extra": 1}])) == "INVALID_INPUT"
    m = token_manifest(token(X, W, sources=[{"ref": A, "start": 0, "end": 5}]))
    assert m["generation"]["sources"] == [{**pin(A), "start": 0, "end": 5}]
    assert m["reads"] == m["currentReads"] == [pin(A)]


def test_a_historical_basis_freezes_presented_units_and_sources(X, W, A, I):
    b = own_ref(W, I.ref(create("b", "Bob drinks tea.")))
    m = token_manifest(obs(X, W, A, basis="historical", sources=[{"ref": b}]))
    assert m["generation"]["basis"] == "historical"
    assert m["generation"]["historicalReads"] == [pin(A), pin(b)]
    assert m["reads"] == [pin(A), pin(b)]
    assert m["currentReads"] == m["watches"]["heads"] == []


def test_watches_keep_a_receipts_units_watched_under_both_bases(X, W, A):
    receipt = inspect_receipt(W, A)
    m = token_manifest(token(X, W, watches=[receipt], basis="historical"))
    assert m["watches"]["heads"] == m["currentReads"] == [pin(A)]
    assert m["reads"] == []  # watching is not reading: no erase dependency


def test_inherit_carries_reads_watches_and_outputs_over(X, W, A, I, frozen_clock):
    first = obs(X, W, A)
    output = W.ok_write(create("o", "derived from A", input=first))["changes"]["o"]["ref"]
    frozen_clock.advance(400_000)  # expiry is not checked for inherited tokens
    b = own_ref(W, I.ref(create("b", "Bob drinks tea.")))
    m = token_manifest(obs(X, W, b, basis="historical", inherit=[first]))
    assert m["generation"]["inherit"] == [first] and m["generation"]["inheritedOutputs"] == [pin(output)]
    assert m["reads"] == [pin(b), pin(A), pin(output)]
    assert m["watches"]["heads"] == [pin(A)] and m["generation"]["historicalReads"] == [pin(b)]


def test_inherit_refuses_another_subjects_token_and_a_purged_read(X, W, Z, A, I, acme, make_key, client_for):
    key, raw = make_key(acme, "agent")
    other = AtomsClient(client_for(raw), key)
    theirs = obs(X, other, own_ref(other, A))
    assert code(observe(X, W, inherit=[theirs])) == "ACCESS_DENIED"
    key2, raw2 = make_key(acme, "agent", subject=W.key.effective_subject)
    rotated = AtomsClient(client_for(raw2), key2)
    assert observe(X, rotated, inherit=[obs(X, W, A)]).status_code == 200  # same subject, another key
    doomed = obs(X, W, A)
    assert Z.post("purge", {"atomId": Ref.objects.get(id=A).atom_id}).json()["complete"] is True
    response = observe(X, W, inherit=[doomed])
    assert response.status_code == 403 and code(response) == "ACCESS_DENIED"


def test_a_manifest_needs_a_binding_matching_its_scope(X, W, A, acme, make_key):
    """A token's manifest needs a binding naming its key, write policy and origin; any other is ACCESS_DENIED."""
    t = obs(X, W, A)
    fetched = manifest(X, W, input=t)
    assert fetched.status_code == 200 and fetched.json() == token_manifest(t)
    other, _ = make_key(acme, "agent")
    denied = X.post("manifest", {"binding": {"key": other.public_id}, "input": t})
    assert denied.status_code == 403 and code(denied) == "ACCESS_DENIED"
    wrong_policy = X.post("manifest", {"binding": {"key": W.key.public_id, "writePolicy": "other"}, "input": t})
    assert code(wrong_policy) == "ACCESS_DENIED"
    wrong_origin = X.post("manifest", {"binding": {"key": W.key.public_id, "generatedOrigin": "hypothesis"},
                                       "input": t})
    assert code(wrong_origin) == "ACCESS_DENIED"
    assert code(X.post("manifest", {"binding": {}, "input": t})) == "ACCESS_DENIED"


def test_a_receipts_manifest_is_fetched_the_same_way(X, W, A):
    receipt = inspect_receipt(W, A)
    body = manifest(X, W, receipt=receipt).json()
    assert body["kind"] == "inspect" and body["presentation"]["units"][0]["ref"] == A
    assert "generation" not in body and body["reads"] == [pin(A)]
    assert body["presentation"]["units"][0]["digest"] == sha256_hex("Alice takes her coffee black.")


@pytest.mark.parametrize("body", [
    {}, {"receipt": "receipt:00000000-0000-4000-8000-000000000000", "input": "input:fake"},
    {"receipt": "receipt:00000000-0000-4000-8000-000000000000"}, {"input": "input:fake"}, {"input": 7},
])
def test_manifest_wants_exactly_one_known_receipt_or_input(X, W, body):
    response = manifest(X, W, **body)
    assert response.status_code == 400 and code(response) == "INVALID_INPUT"


def test_an_erased_manifest_answers_access_denied(X, W, Z, A):
    t = obs(X, W, A)
    Z.post("purge", {"atomId": Ref.objects.get(id=A).atom_id})
    assert code(manifest(X, W, input=t)) == "ACCESS_DENIED"


def test_a_pending_purge_closes_observe_and_manifest(X, W, A, acme):
    t = obs(X, W, A)
    AtomStore.objects.filter(tenant=acme).update(purge_barrier={"atomId": "atom:x"})
    for response in (observe(X, W), manifest(X, W, input=t)):
        assert response.status_code == 403 and error_of(response)["details"]["reason"] == "erasure-incomplete"
