"""Input tokens at write: which writes need one, the checks made when one is used (scope, expiry, grants,
sources it read, watched heads), replays and what tokens record (docs/atoms.md "Decisions")."""

from __future__ import annotations

from typing import Any

import pytest
from django.db.models import F

from atoms.models import EraseDependency, InputToken, Ref, Revision
from tenants.models import ApiKey
from tests.atoms.api.helpers import AtomsClient, create
from tests.atoms.api.observing import PAYLOAD, atom_of, manifest, obs, own_ref, token
from tests.conftest import error_of


def code(response: Any) -> str:
    return error_of(response)["code"]


def revise(ref: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"id": "v", "op": "revise", "target": ref, "content": {"text": text, "links": []}, "sources": [], **extra}


@pytest.fixture
def S(I) -> str:
    """I's ref to a source atom."""
    return I.ref(create("s", "Alice takes her coffee black."))


@pytest.fixture
def A(W, S) -> str:
    """W's ref to the same source."""
    return own_ref(W, S)


def agent(acme: Any, make_key: Any, client_for: Any, **kwargs: Any) -> AtomsClient:
    key, raw = make_key(acme, "agent", **kwargs)
    return AtomsClient(client_for(raw), key)


def test_an_agent_retires_only_with_a_token(X, W, A):
    """An agent key may retire only with an input token; the result is a derived, observed-v2 revision."""
    assert code(W.write({"id": "r", "op": "retire", "target": A})) == "INVALID_INPUT"
    t = obs(X, W, A)
    view = W.ok_write({"id": "r", "op": "retire", "target": A, "input": t})["changes"]["r"]
    assert view["state"] == "retired"
    head = Revision.objects.get(is_head=True)
    assert (head.dependency_contract, head.origin, head.input_token) == ("observed-v2", "derived", t)


def test_a_real_token_writes_and_records_its_outputs(X, W, A):
    """A token's outputs are derived and unreviewed, recorded in its manifest and as erase dependencies."""
    t = obs(X, W, A)
    outcome = W.ok_write(create("o", "She likes it black.", sources=[{"ref": A, "start": 0, "end": 5}], input=t))
    view = outcome["changes"]["o"]
    assert view["provenance"]["origin"] == "derived" and outcome["review"] == {"o": "unreviewed"}
    output = Revision.objects.get(id=Ref.objects.get(id=view["ref"]).revision_id)
    assert (output.dependency_contract, output.input_token, output.schema) == ("observed-v2", t, "atom")
    pin = {"kind": "pinned", "atomId": output.atom_id, "revisionId": output.id}
    assert InputToken.objects.get(id=t).outputs == [pin]
    assert manifest(X, W, input=t).json()["generation"]["outputs"] == [pin]
    assert set(EraseDependency.objects.values_list("dependent_atom_id", "dependency_atom_id", "kind")) == {
        (output.atom_id, atom_of(A), "origin"), (output.atom_id, atom_of(A), "token-read")}
    second = W.ok_write(create("p", "Another output.", input=t))["changes"]["p"]["ref"]
    assert len(manifest(X, W, input=t).json()["generation"]["outputs"]) == 2
    assert EraseDependency.objects.filter(dependent_atom_id=atom_of(second), kind="token-read").count() == 1


def test_an_expired_token_is_cursor_expired(X, W, A, frozen_clock):
    """A token past its TTL is 410 CURSOR_EXPIRED."""
    t = obs(X, W, A)
    frozen_clock.advance(300_001)
    response = W.write(create("o", "too late", input=t))
    assert response.status_code == 410 and code(response) == "CURSOR_EXPIRED"


def test_a_replay_skips_token_checks_but_not_a_purge(X, W, Z, S, A, acme, make_key, client_for,
                                                               settings, frozen_clock):
    """A replay of the same idempotency key skips the token checks (even for a rotated key of the same
    subject), but not a purge of its output."""
    settings.ATOMS_CURSOR_TTL_MS = 1_000
    t = obs(X, W, A)
    options = {"idempotencyKey": "request-42"}
    first = W.ok_write(create("o", "She likes it black.", sources=[{"ref": A}], input=t), options=options)
    frozen_clock.advance(10_000)
    rotated = agent(acme, make_key, client_for, subject=W.key.effective_subject)
    their_s = own_ref(rotated, S)
    again = rotated.ok_write(create("o", "She likes it black.", sources=[{"ref": their_s}], input=t), options=options)
    assert again["repeated"] is True and again["operationId"] == first["operationId"]
    assert again["changes"]["o"]["ref"] != first["changes"]["o"]["ref"]
    assert again["changes"]["o"]["text"] == first["changes"]["o"]["text"]
    assert again["changes"]["o"]["sources"] == [{"ref": their_s, "start": 0, "end": 29}]
    fresh = W.write(create("o2", "a new write", input=t))
    assert code(fresh) == "CURSOR_EXPIRED"
    assert Z.post("purge", {"atomId": atom_of(first["changes"]["o"]["ref"])}).json()["complete"] is True
    replay = rotated.write(create("o", "She likes it black.", sources=[{"ref": their_s}], input=t), options=options)
    assert replay.status_code == 403 and code(replay) == "ACCESS_DENIED"


def test_a_source_outside_the_tokens_reads_is_denied(X, W, I, A):
    """A source the token did not read is ACCESS_DENIED."""
    other = own_ref(W, I.ref(create("b", "Bob drinks tea.")))
    t = obs(X, W, A)
    response = W.write(create("o", "tea", sources=[{"ref": other}], input=t))
    assert response.status_code == 403 and code(response) == "ACCESS_DENIED"
    assert W.write(create("o", "coffee", sources=[{"ref": A}], input=t)).status_code == 200


def test_citing_an_agent_derived_atom_needs_a_token_that_read_it(X, W, I, A):
    """An agent-derived atom is no citable source: INVALID_SOURCE_SPAN, or first ACCESS_DENIED when the agent's
    token did not read it."""
    derived = W.ok_write(create("d", "Alice likes black coffee.", input=obs(X, W, A)))["changes"]["d"]["ref"]
    by_ingest = I.write(create("q", "quote", sources=[{"ref": own_ref(I, derived)}]))
    assert by_ingest.status_code == 400 and code(by_ingest) == "INVALID_SOURCE_SPAN"
    by_agent = W.write(create("q", "quote", sources=[{"ref": derived}], input=obs(X, W, A)))
    assert by_agent.status_code == 403 and code(by_agent) == "ACCESS_DENIED"
    # Once the token did read it, the schema check is what refuses the citation.
    read_it = W.write(create("q", "quote", sources=[{"ref": derived}], input=obs(X, W, derived)))
    assert read_it.status_code == 400 and code(read_it) == "INVALID_SOURCE_SPAN"


def test_changed_grants_void_an_old_token(X, W, A):
    """A change of the key's grants (its generation) voids older tokens: ACCESS_DENIED."""
    t = obs(X, W, A)
    ApiKey.objects.filter(pk=W.key.pk).update(generation=F("generation") + 1)
    W.key.refresh_from_db()
    response = W.write(create("o", "x", input=t))
    assert response.status_code == 403 and code(response) == "ACCESS_DENIED"


def test_tokens_belong_to_one_key(X, W, S, A, acme, make_key, client_for):
    t = obs(X, W, A)
    for other in (agent(acme, make_key, client_for), agent(acme, make_key, client_for,
                                                             subject=W.key.effective_subject)):
        response = other.write(create("o", "x", input=t))
        assert response.status_code == 403 and code(response) == "ACCESS_DENIED"
    assert code(W.write(create("o", "x", input=t), binding={"generatedOrigin": "hypothesis"})) == "ACCESS_DENIED"


def test_a_token_with_a_purged_read_is_denied(X, W, Z, I, A):
    t = obs(X, W, A)
    assert Z.post("purge", {"atomId": atom_of(A)}).json()["complete"] is True
    response = W.write(create("o", "x", input=t))
    assert response.status_code == 403 and code(response) == "ACCESS_DENIED"


def test_a_token_must_read_exactly_the_written_policy(X, I, acme, make_key, client_for):
    wide = agent(acme, make_key, client_for, read_policies=["default", "private"])
    t = obs(X, wide, own_ref(wide, I.ref(create("s", "source"))))
    response = wide.write(create("o", "x", input=t))
    assert response.status_code == 403 and code(response) == "ACCESS_DENIED"
    # Narrowed to the written policy, the same agent may write.
    source = own_ref(wide, I.ref(create("s", "source")))
    receipt = wide.post("inspect", {"ref": source, "binding": {"readPolicies": ["default"]}}).json()["receipt"]["id"]
    narrow = X.post("observe", {"binding": {"key": wide.key.public_id, "readPolicies": ["default"]},
                                "input": {"presentations": [{"receipt": receipt}], "payloadDigest": PAYLOAD}})
    assert narrow.status_code == 200, narrow.content
    ok = wide.write(create("o", "x", input=narrow.json()["input"]), binding={"readPolicies": ["default"]})
    assert ok.status_code == 200, ok.content


def test_a_token_without_a_contract_2_manifest_is_denied(X, W, A):
    t = obs(X, W, A)
    row = InputToken.objects.get(id=t)
    InputToken.objects.filter(id=t).update(manifest={**row.manifest, "contractVersion": 1})
    response = W.write(create("o", "x", input=t))
    assert response.status_code == 403 and code(response) == "ACCESS_DENIED"


def test_a_moved_watched_head_is_a_revision_conflict(X, W, I, S, A):
    """A token whose watched head has since moved is 409 REVISION_CONFLICT."""
    t = obs(X, W, A)
    I.ok_write(revise(S, "Alice now takes milk."))
    response = W.write(create("o", "black", input=t))
    assert response.status_code == 409 and code(response) == "REVISION_CONFLICT"


def test_the_batchs_own_expected_heads_count_as_current(X, W, A):
    """Heads the batch itself moves count as current for the token."""
    t = obs(X, W, A)
    outcome = W.ok_write(revise(A, "Alice takes her coffee black, no sugar.", input=t),
                         create("o", "no sugar", input=t))
    assert len(InputToken.objects.get(id=t).outputs) == 2
    # The watched head moved, but by the output's own operation: nothing is stale.
    result = W.post("inspect", {"ref": outcome["changes"]["o"]["ref"]}).json()
    assert result["stale"] == []


def test_a_host_may_write_with_its_own_token_as_a_source(X, I):
    s = own_ref(X, I.ref(create("s", "source text")))
    t = token(X, X, sources=[{"ref": s}])
    view = X.ok_write(create("o", "host note", sources=[{"ref": s}], input=t))["changes"]["o"]
    revision = Revision.objects.get(id=Ref.objects.get(id=view["ref"]).revision_id)
    assert (revision.origin, revision.schema, revision.dependency_contract) == ("source", "source", "observed-v2")
