"""uses and uses/reset: accepted uses, tokens, failing and changed models, AdaptiveUse state and who may record
uses (docs/atoms.md "Decisions")."""

from __future__ import annotations

import math
import warnings
from typing import Any

import pytest

from atoms.config import ConfigError, validate_config
from atoms.models import AtomStore, InputToken, Ref, UseMarker, UseState
from memoryhub.digests import digest_of
from memoryhub.models import AuditEvent
from tests.atoms.api.helpers import AtomsClient, create
from tests.atoms.api.observing import inspect_receipt, manifest, obs, own_ref, search_receipt, token
from tests.atoms.models_for_tests import MODELS, model_config
from tests.conftest import error_of

DAY = 86_400_000


@pytest.fixture(autouse=True)
def test_models(settings: Any) -> None:
    settings.ATOMS_AVAILABILITY_MODELS = MODELS


def code(response: Any) -> str:
    return error_of(response)["code"]


def uses(host: AtomsClient, agent: AtomsClient, refs: list[str], event_id: str = "event", **extra: Any) -> Any:
    return host.post("uses", {"binding": {"key": agent.key.public_id}, "refs": refs, "eventId": event_id, **extra})


def ok_uses(host: AtomsClient, agent: AtomsClient, refs: list[str], event_id: str = "event",
            **extra: Any) -> dict[str, Any]:
    response = uses(host, agent, refs, event_id, **extra)
    assert response.status_code == 200, response.content
    return response.json()


def reset(host: AtomsClient, agent: AtomsClient, **binding: Any) -> Any:
    return host.post("uses/reset", {"binding": {"key": agent.key.public_id, **binding}})


def configure(tenant: Any, config: dict[str, Any]) -> None:
    AtomStore.objects.filter(tenant=tenant).update(config=config)


def states(agent: AtomsClient) -> dict[str, Any]:
    return {row.revision_id: row.state for row in UseState.objects.filter(subject=agent.key.effective_subject)}


def revision_of(ref: str) -> str:
    return Ref.objects.get(id=ref).revision_id


def pin(ref: str) -> dict[str, str]:
    row = Ref.objects.get(id=ref)
    return {"kind": "pinned", "atomId": row.atom_id, "revisionId": row.revision_id}


@pytest.fixture
def A(I, W) -> str:
    return own_ref(W, I.ref(create("a", "needle a")))


@pytest.fixture
def B(I, W) -> str:
    return own_ref(W, I.ref(create("b", "needle b")))


@pytest.fixture
def counting(acme) -> None:
    AtomStore.get_or_create_for(acme)
    configure(acme, model_config("CountingModel"))


# --- Recording ----------------------------------------------------------------------------

def test_a_host_records_uses_for_an_agent_under_the_agents_subject(X, W, A, B, counting, frozen_clock):
    frozen_clock.set_now(5_000)
    assert ok_uses(X, W, [A, B, A], "response-1") == {"acceptedAt": 5_000, "recorded": 2, "repeated": 0}
    assert states(W) == {revision_of(A): 1, revision_of(B): 1}
    rows = UseState.objects.all()
    assert {(r.subject, r.policy, r.model_id, r.updated_at) for r in rows} == {
        (W.key.effective_subject, "default", "counting-v1", 5_000)}
    assert UseMarker.objects.filter(event_id="response-1", accepted_at=5_000).count() == 2


def test_accepted_at_never_goes_before_a_stored_update(X, W, A, B, counting, frozen_clock):
    frozen_clock.set_now(10_000)
    ok_uses(X, W, [A], "first")
    frozen_clock.set_now(4_000)  # the clock moved backwards
    assert ok_uses(X, W, [B], "second")["acceptedAt"] == 10_000
    assert UseState.objects.get(revision_id=revision_of(B)).updated_at == 10_000


def test_an_event_counts_once_and_is_acknowledged_on_the_token(X, W, A, counting):
    """An event id counts once per revision; the uses recorded with a token are acknowledged in its manifest."""
    t = obs(X, W, A)
    assert ok_uses(X, W, [A, A], "request", input=t) == {"acceptedAt": 0, "recorded": 1, "repeated": 0}
    assert ok_uses(X, W, [A, A], "request", input=t) == {"acceptedAt": 0, "recorded": 0, "repeated": 1}
    assert ok_uses(X, W, [A], "next", input=t) == {"acceptedAt": 0, "recorded": 1, "repeated": 0}
    assert states(W) == {revision_of(A): 2}
    response = manifest(X, W, input=t)
    assert response.status_code == 200, response.content
    assert response.json()["acknowledgement"] == [
        {"eventId": "request", "acceptedAt": 0, "revisions": [pin(A)]},
        {"eventId": "next", "acceptedAt": 0, "revisions": [pin(A)]},
    ]


def test_reset_keeps_markers_and_a_new_revision_starts_fresh(X, W, I, A, counting):
    """A reset deletes use state but keeps event markers; a new revision starts with no uses."""
    assert ok_uses(X, W, [A], "request")["recorded"] == 1
    assert reset(X, W).json() == {"deleted": 1}
    assert ok_uses(X, W, [A], "request") == {"acceptedAt": 0, "recorded": 0, "repeated": 1}
    assert UseState.objects.count() == 0
    revised = I.ok_write({"id": "v", "op": "revise", "target": own_ref(I, A), "content": {"text": "needle a2", "links": []},
                          "sources": []})["changes"]["v"]["ref"]
    assert ok_uses(X, W, [own_ref(W, revised)], "request") == {"acceptedAt": 0, "recorded": 1, "repeated": 0}
    assert states(W) == {revision_of(revised): 1}


def test_with_input_every_ref_must_be_a_unit_the_token_presented(X, W, A, B, counting):
    """With a token, every ref must be a unit it presented; without one, the host vouches for the refs."""
    receipt = search_receipt(W, "needle", [A, B])
    t = token(X, W, presentations=[{"receipt": receipt, "refs": [A]}])
    response = uses(X, W, [B], "request", input=t)
    assert response.status_code == 400 and code(response) == "INVALID_INPUT"
    assert error_of(response)["details"]["path"] == "refs[0]"
    assert ok_uses(X, W, [A], "request", input=t)["recorded"] == 1
    m = manifest(X, W, input=t).json()
    assert m["acquisition"]["reads"] == [pin(A), pin(B)]
    assert [a["revisions"] for a in m["acknowledgement"]] == [[pin(A)]]
    # Without a token the host vouches for the refs itself.
    assert ok_uses(X, W, [B], "request")["recorded"] == 1


def test_a_bad_or_expired_token_is_refused(X, W, A, counting, frozen_clock):
    for bad in ("", "input:fake", 0, None):
        response = uses(X, W, [A], input=bad)
        assert response.status_code == 400 and code(response) == "INVALID_INPUT", bad
    t = obs(X, W, A)
    frozen_clock.advance(300_001)
    assert code(uses(X, W, [A], input=t)) == "CURSOR_EXPIRED"
    assert UseState.objects.count() == UseMarker.objects.count() == 0


def test_inspect_adds_no_use_rows(X, W, A, counting):
    """inspect records no use."""
    ok_uses(X, W, [A])
    before = list(UseState.objects.values_list("revision_id", "state", "updated_at"))
    inspect_receipt(W, A)
    assert list(UseState.objects.values_list("revision_id", "state", "updated_at")) == before
    assert UseMarker.objects.count() == 1


def test_keys_sharing_a_subject_share_state_and_markers(X, W, A, acme, make_key, client_for, counting):
    key, raw = make_key(acme, "agent", subject=W.key.effective_subject)
    rotated = AtomsClient(client_for(raw), key)
    ok_uses(X, W, [A], "request")
    assert ok_uses(X, rotated, [own_ref(rotated, A)], "request")["repeated"] == 1
    assert ok_uses(X, rotated, [own_ref(rotated, A)], "next")["recorded"] == 1
    assert states(W) == {revision_of(A): 2}


# --- Failing models -----------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["coroutine", "long", "raise", "set", "nan"])
def test_a_failing_update_is_invalid_input_and_writes_nothing(X, W, A, acme, mode):
    """An update that fails or returns no valid state is INVALID_INPUT, and nothing is recorded."""
    configure(acme, model_config("BrokenUpdateModel", update=mode))
    t = obs(X, W, A)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an unclosed coroutine would warn "never awaited"
        response = uses(X, W, [A], input=t)
    assert response.status_code == 400 and code(response) == "INVALID_INPUT"
    assert UseState.objects.count() == UseMarker.objects.count() == 0
    assert InputToken.objects.get(id=t).manifest["acknowledgement"] == []


def test_a_failing_update_on_one_revision_stores_none_of_the_others(X, W, A, B, acme):
    configure(acme, model_config("CountingModel", limit=1))
    ok_uses(X, W, [A], "first")
    response = uses(X, W, [B, A], "second")
    assert code(response) == "INVALID_INPUT"
    assert states(W) == {revision_of(A): 1}
    assert not UseMarker.objects.filter(event_id="second").exists()


# --- AdaptiveUse --------------------------------------------------------------------------

def test_adaptive_use_state_follows_the_worked_example(X, W, A, B, frozen_clock):
    """AdaptiveUse: uses a week apart lengthen the half-life and decay the mass; a burst adds up undecayed."""
    for day, event in [(0, "d0"), (7, "d7"), (14, "d14")]:
        frozen_clock.set_now(day * DAY)
        ok_uses(X, W, [A], event)
    for event in ("b1", "b2", "b3"):  # a burst at t = 0 would need the clock back: use B at day 14
        ok_uses(X, W, [B], event)
    row = UseState.objects.get(revision_id=revision_of(A))
    assert row.model_id == 'adaptive-use-v1:{"initialHalfLifeMs":604800000,"maxHalfLifeMs":31536000000}'
    assert row.state == {"halfLifeMs": 1130999874.5117903, "mass": 1.9449407874211548, "updatedAt": 14 * DAY}
    assert UseState.objects.get(revision_id=revision_of(B)).state == {
        "halfLifeMs": 604800000, "mass": 3, "updatedAt": 14 * DAY}


def test_adaptive_use_options_set_through_the_tenant_api(X, W, Z, A, frozen_clock):
    """AdaptiveUse's half-lives can be set through PATCH /api/v1/tenant."""
    config = {"activation": {"model": {"class": "atoms.core.availability.AdaptiveUse",
                                       "options": {"initialHalfLifeMs": 1000, "maxHalfLifeMs": 1500}}}}
    assert Z.client.patch("/api/v1/tenant", {"atoms_config": config}, format="json").status_code == 200
    seen = []
    for at in (0, 1000, 2500):
        frozen_clock.set_now(at)
        ok_uses(X, W, [A], f"at-{at}")
        seen.append(UseState.objects.get().state)
    assert [(s["halfLifeMs"], s["mass"]) for s in seen] == [(1000, 1), (1500, 1.5), (1500, 1.75)]


@pytest.mark.parametrize("options", [
    {"initialHalfLifeMs": 0}, {"initialHalfLifeMs": 2, "maxHalfLifeMs": 1}, {"foo": 1}, {"maxHalfLifeMs": "NaN"},
])
def test_bad_adaptive_use_options_are_refused_by_the_tenant_api(Z, acme, options):
    """AdaptiveUse options out of range are refused by PATCH /api/v1/tenant, and nothing is saved."""
    config = {"activation": {"model": {"class": "atoms.core.availability.AdaptiveUse", "options": options}}}
    response = Z.client.patch("/api/v1/tenant", {"atoms_config": config}, format="json")
    assert response.status_code == 400 and code(response) == "INVALID_INPUT"
    assert AtomStore.get_or_create_for(acme).config == {}


# --- Model changes ------------------------------------------------------------------------

def test_another_model_id_is_state_invalidated_until_reset(X, W, Z, A, acme, counting):
    """Use state of another model id is STATE_INVALIDATED until uses/reset clears it."""
    ok_uses(X, W, [A], "first")
    changed = Z.client.patch("/api/v1/tenant", {"atoms_config": model_config("CountingModel", version=2)},
                             format="json")
    assert changed.status_code == 200, changed.content
    response = uses(X, W, [A], "second")
    assert response.status_code == 409 and code(response) == "STATE_INVALIDATED"
    assert states(W) == {revision_of(A): 1} and not UseMarker.objects.filter(event_id="second").exists()
    assert reset(X, W).json() == {"deleted": 1}
    assert ok_uses(X, W, [A], "second")["recorded"] == 1
    assert UseState.objects.get().model_id == "counting-v2"


def test_reset_and_invalidation_cover_only_the_bindings_read_policies(X, I, acme, make_key, client_for, counting):
    key, raw = make_key(acme, "agent", read_policies=["default", "private"], write_policies=["default"])
    agent = AtomsClient(client_for(raw), key)
    private_writer = _client(make_key, client_for, acme, ["private"])
    shared = own_ref(agent, I.ref(create("d", "needle default")))
    private = own_ref(agent, private_writer.ref(create("p", "needle private")))
    ok_uses(X, agent, [shared, private])
    configure(acme, model_config("CountingModel", version=2))
    body = {"key": key.public_id, "readPolicies": ["private"]}
    assert code(X.post("uses", {"binding": body, "refs": [private], "eventId": "e"})) == "STATE_INVALIDATED"
    assert X.post("uses/reset", {"binding": body}).json() == {"deleted": 1}
    assert X.post("uses", {"binding": body, "refs": [private], "eventId": "e"}).status_code == 200
    assert code(uses(X, agent, [shared], "e")) == "STATE_INVALIDATED"  # default still holds v1 state


def _client(make_key: Any, client_for: Any, tenant: Any, policies: list[str]) -> AtomsClient:
    key, raw = make_key(tenant, "ingest", read_policies=policies, write_policies=policies)
    return AtomsClient(client_for(raw), key)


# --- Access and shape ---------------------------------------------------------------------

def test_only_writable_host_and_admin_keys_record_or_reset(keys, W, A, acme, make_key, client_for, counting):
    for name in ("I", "W", "R"):
        for response in (uses(keys[name], W, [A]), reset(keys[name], W)):
            assert response.status_code == 403 and code(response) == "ACCESS_DENIED", name
    readonly = AtomsClient(client_for(make_key(acme, "host", read_only=True)[1]), W.key)
    for response in (uses(readonly, W, [A]), reset(readonly, W)):
        assert response.status_code == 403 and code(response) == "ACCESS_DENIED"
    assert ok_uses(keys["Z"], W, [A])["recorded"] == 1
    assert UseState.objects.count() == 1


def test_refs_resolve_for_the_bound_key_only(X, W, A, acme, globex, make_key, client_for, counting):
    """Refs resolve for the bound key only: another tenant's is INVALID_REF, another key's ACCESS_DENIED."""
    other_tenant = AtomsClient(client_for(make_key(globex, "host")[1]), W.key)
    response = other_tenant.post("uses", {"binding": {}, "refs": [A], "eventId": "e"})
    assert response.status_code == 400 and code(response) == "INVALID_REF"
    key, raw = make_key(acme, "agent")
    assert code(uses(X, AtomsClient(client_for(raw), key), [A])) == "ACCESS_DENIED"
    response = X.post("uses", {"binding": {"key": "k_missing"}, "refs": [A], "eventId": "e"})
    assert code(response) == "ACCESS_DENIED"
    assert code(uses(X, W, ["ref:00000000-0000-4000-8000-000000000000"])) == "INVALID_REF"
    assert UseState.objects.count() == 0


@pytest.mark.parametrize(("body", "expected"), [
    ({"refs": ["A"], "eventId": "e", "extra": 1}, "INVALID_INPUT"),
    ({"refs": ["A"], "eventId": "e", "binding": None}, "INVALID_INPUT"),
    ({"refs": [], "eventId": "e"}, "INVALID_INPUT"),
    ({"refs": "A", "eventId": "e"}, "INVALID_INPUT"),
    ({"refs": [1], "eventId": "e"}, "INVALID_INPUT"),
    ({"refs": ["A"] * 257, "eventId": "e"}, "LIMIT_EXCEEDED"),
    ({"refs": ["A"]}, "INVALID_INPUT"),
    ({"refs": ["A"], "eventId": ""}, "INVALID_SCHEMA"),
    ({"refs": ["A"], "eventId": "é" * 257}, "INVALID_SCHEMA"),
    ({"refs": ["A"], "eventId": 7}, "INVALID_SCHEMA"),
])
def test_a_malformed_uses_body_is_refused(X, W, A, counting, body, expected):
    body = {"binding": {"key": W.key.public_id}, **body}
    if isinstance(body["refs"], list):
        body["refs"] = [A if r == "A" else r for r in body["refs"]]
    if body.get("binding", 0) is None:
        del body["binding"]
    response = X.post("uses", body)
    assert code(response) == expected
    assert UseState.objects.count() == UseMarker.objects.count() == 0


def test_an_event_id_of_512_bytes_is_accepted(X, W, A, counting):
    assert ok_uses(X, W, [A], "é" * 256)["recorded"] == 1


def test_a_malformed_reset_body_is_refused(X, W):
    assert code(X.post("uses/reset", {})) == "INVALID_INPUT"
    assert code(X.post("uses/reset", {"binding": {}, "refs": []})) == "INVALID_INPUT"
    assert code(X.post("uses/reset", {"binding": {"readPolicies": []}})) == "INVALID_INPUT"
    assert code(X.post("uses/reset", {"binding": {"readPolicies": ["other"]}})) == "ACCESS_DENIED"


def test_a_pending_purge_closes_uses_and_reset(X, W, A, acme, counting):
    AtomStore.objects.filter(tenant=acme).update(purge_barrier={"atomId": "atom:x"})
    for response in (uses(X, W, [A]), reset(X, W), X.post("uses", {})):
        assert response.status_code == 403 and code(response) == "ACCESS_DENIED"
        assert error_of(response)["details"]["reason"] == "erasure-incomplete"


def test_uses_and_resets_are_audited_by_digest(X, W, A, counting):
    result = ok_uses(X, W, [A], "request")
    reset(X, W)
    recorded, cleared = AuditEvent.objects.filter(action__startswith="atoms.uses").order_by("id")
    assert (recorded.action, recorded.object_type, recorded.object_id) == (
        "atoms.uses", "subject", W.key.effective_subject)
    assert recorded.actor_key_id == X.key.id
    assert recorded.after_digest == digest_of({"eventId": "request", "key": W.key.public_id,
                                            "revisions": [revision_of(A)], **result})
    assert (cleared.action, cleared.object_id) == ("atoms.uses.reset", W.key.effective_subject)


def test_a_state_of_json_null_is_stored(X, W, A, acme):
    configure(acme, model_config("BrokenUpdateModel", update="null"))
    assert ok_uses(X, W, [A], "first")["recorded"] == 1
    assert ok_uses(X, W, [A], "second")["recorded"] == 1
    assert UseState.objects.get().state is None



def test_a_nan_option_is_refused_by_the_config_check():
    # JSON has no NaN, so the tenant API refuses it before the config check; a config
    # built in Python (the UI, a migration) still meets the model's own rule.
    """A NaN option is refused by the config check."""
    config = {"activation": {"model": {"class": "atoms.core.availability.AdaptiveUse",
                                       "options": {"maxHalfLifeMs": math.nan}}}}
    with pytest.raises(ConfigError):
        validate_config(config)
