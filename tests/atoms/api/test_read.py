"""read: the result's shape, receipts, required closures, quotes, budgets, cursors, review and the state it takes
(docs/atoms.md "Recall", "Selection utility (read)" and "Read path costs").
The worked example (docs/atoms.md "Worked example (search)") is in test_read_scoring.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from atoms.core.canonical import digest, sha256_hex
from atoms.models import AtomStore, Receipt, Revision, UseMarker, UseState
from atoms.services.review import atoms_approve
from memoryhub.actors import Actor
from tests.atoms.api.helpers import AtomsClient, create
from tests.atoms.api.observing import PAYLOAD, atom_of, manifest, own_ref, token
from tests.conftest import error_of


def code(response: Any) -> str:
    return error_of(response)["code"]


def read(client: AtomsClient, state: Any, **options: Any) -> Any:
    body: dict[str, Any] = {"state": state}
    if options:
        body["options"] = options
    return client.post("read", body)


def ok_read(client: AtomsClient, state: Any, **options: Any) -> dict[str, Any]:
    response = read(client, state, **options)
    assert response.status_code == 200, response.content
    return response.json()


def texts(result: dict[str, Any]) -> list[str]:
    return [item["text"] for item in result["items"]]


def required(ref: str, role: str = "condition") -> dict[str, Any]:
    return {role: {"ref": ref, "required": True}}


# --- A single atom and the result's shape --------------------------------------------------

def test_a_single_atom_is_read_back_in_format_2(I, W):
    """One atom is read back in render format 2, with its ref, provenance and diagnostics."""
    I.ok_write(create("atom", "I like my coffee black."))
    result = ok_read(W, {"context": "Suggest a coffee I would enjoy."})
    assert result["items"][0]["text"] == "I like my coffee black."
    assert result["formatVersion"] == 2 and result["tokenCount"] == len(result["text"].encode())
    assert result["refs"] == [result["items"][0]["ref"]]
    memory = json.loads(result["text"])["memory"]
    assert memory == [{"links": [], "provenance": {"origin": "source", "producer": I.key.effective_subject},
                       "ref": result["refs"][0], "sources": [], "text": "I like my coffee black."}]
    diagnostics = result["diagnostics"]
    assert (diagnostics["method"], diagnostics["traversal"], diagnostics["stop"]) == (
        "graph-activation", "bounded-bfs", "completed")
    assert diagnostics["validation"] == {"stale": 0, "blocked": 0}
    assert diagnostics["selection"]["method"] == "bounded-marginal-gain"
    assert diagnostics["coverageCertified"] is False and "cursor" not in result
    assert result["usage"]["maxAtoms"] == 1 and result["usage"]["maxContextTokens"] == result["tokenCount"]
    assert result["usage"]["maxBytes"] == len(b"I like my coffee black.")


def test_an_empty_read_has_empty_text_and_no_tokens(W):
    result = ok_read(W, {"query": "nothing here"})
    assert (result["items"], result["text"], result["tokenCount"], result["refs"]) == ([], "", 0, [])


def test_read_adds_no_revisions_and_touches_no_use_state(X, W, I, acme):
    """read only reads: no revision, no seq, no change to use states or markers."""
    a = own_ref(W, I.ref(create("a", "needle a")))
    response = X.post("uses", {"binding": {"key": W.key.public_id}, "refs": [a], "eventId": "e"})
    assert response.status_code == 200
    store = AtomStore.get_or_create_for(acme)
    before = (Revision.objects.count(), store.seq, list(UseState.objects.values()), UseMarker.objects.count())
    ok_read(W, {"query": "needle"})
    store.refresh_from_db()
    assert (Revision.objects.count(), store.seq, list(UseState.objects.values()), UseMarker.objects.count()) == before


# --- Receipts ----------------------------------------------------------------------------------

def test_every_candidate_is_an_acquisition_read_but_one_unit_is_shown(X, W, I):
    """Every candidate is an acquisition read of the receipt, though only one unit is presented."""
    I.ok_write(*[create(f"n{i}", f"needle {i}") for i in range(12)])
    result = ok_read(W, {"query": "needle"}, limit=1)
    assert len(result["items"]) == 1 and "cursor" in result
    response = manifest(X, W, receipt=result["receipt"]["id"])
    assert response.status_code == 200, response.content
    body = response.json()
    assert len(body["acquisition"]["reads"]) == 12 and len(body["presentation"]["units"]) == 1
    assert "generation" not in body and body["kind"] == "read"


def test_the_receipt_hashes_the_render_and_records_a_read_observation(W, I):
    I.ok_write(create("a", "needle a"), create("b", "needle b"), create("c", "thread only"))
    result = ok_read(W, {"query": "needle", "observations": ["thread"]}, limit=1, depth=0)
    receipt = Receipt.objects.get(id=result["receipt"]["id"])
    assert receipt.kind == "read"
    presentation = receipt.manifest["presentation"]
    assert presentation["digest"] == sha256_hex(result["text"])
    assert result["receipt"]["signalDigest"] == digest({"query": "needle", "observations": ["thread"]})
    observation = receipt.manifest["acquisition"]["queries"][0]
    shown = Revision.objects.get(body=result["items"][0]["text"])
    assert observation == {
        "kind": "read", "signals": {"query": "needle", "observations": ["thread"]}, "readPolicies": ["default"],
        "seq": AtomStore.get_or_create_for(W.key.tenant).seq,
        "revisions": [{"kind": "pinned", "atomId": shown.atom_id, "revisionId": shown.id}],
        "full": True, "mFloor": 0.5}


def test_a_read_receipt_can_be_presented_to_observe(X, W, I):
    I.ok_write(create("a", "needle a"))
    result = ok_read(W, {"query": "needle"})
    assert token(X, W, presentations=[{"receipt": result["receipt"]["id"]}]).startswith("input:")


# --- Closures ----------------------------------------------------------------------------------

def spread_both_ways(client: AtomsClient, role: str = "condition") -> None:
    """Activation along `role` both ways (the default is reverse only, docs/atoms.md "Defaults"),
    so that a required condition is a scored graph node."""
    store = AtomStore.get_or_create_for(client.key.tenant)
    store.config = {"activation": {"relations": {role: {"forward": 1, "reverse": 1}}}}
    store.save(update_fields=["config"])


def test_two_roots_share_one_required_condition(W, I):
    """A condition two roots require is shown once."""
    spread_both_ways(I)
    c = I.ref(create("c", "Shared condition C."))
    outcome = I.ok_write(create("a", "needle a", links=required(c)), create("b", "needle b", links=required(c)))
    result = ok_read(W, {"query": "needle"})
    refs = result["refs"]
    a, b, c_own = (own_ref(W, outcome["changes"]["a"]["ref"]), own_ref(W, outcome["changes"]["b"]["ref"]),
                   own_ref(W, c))
    assert a in refs and b in refs and refs.count(c_own) == 1
    assert result["text"].count("Shared condition C.") == 1
    assert {item["ref"]: item["score"] for item in result["items"]}[c_own] > 0  # C is a graph node


def test_a_cycle_of_nine_required_links_is_shown_whole(W, I):
    """A cycle of nine required links is one closure, shown whole."""
    changes = [create(f"n{i}", f"ring {i}", links={"next": {"local": f"n{(i + 1) % 9}", "required": True}})
               for i in range(9)]
    I.ok_write(*changes)
    result = ok_read(W, {"query": "ring"}, tokens=20_000)
    assert len(result["items"]) == 9 and len(set(result["refs"])) == 9


def test_a_root_whose_closure_alone_exceeds_the_budget_is_left_out_unmentioned(W, I):
    """A root whose required closure alone exceeds the budget is left out of the text; minimumTokens says what
    it would need."""
    condition = I.ref(create("c", "x" * 10_000))
    big = I.ok_write(create("r", "needle root", links=required(condition)))["changes"]["r"]["ref"]
    I.ok_write(create("s", "needle small"))
    result = ok_read(W, {"query": "needle"}, tokens=1200)
    assert texts(result) == ["needle small"]
    assert result["diagnostics"]["minimumTokens"] > 1200
    assert result["diagnostics"]["selection"]["minimumTokens"] == result["diagnostics"]["minimumTokens"]
    assert own_ref(W, big) not in result["text"] and "needle root" not in result["text"]


def test_a_purged_required_target_blocks_its_root(Z, W, I):
    """A root whose required target was purged is blocked and not read."""
    target = I.ref(create("t", "the condition"))
    root = I.ok_write(create("r", "needle root", links=required(target)))["changes"]["r"]["ref"]
    response = Z.post("purge", {"ref": own_ref(Z, target)})
    assert response.status_code == 200, response.content
    inspected = W.post("inspect", {"ref": own_ref(W, root)})
    assert inspected.status_code == 200 and inspected.json()["readEligibility"] == "blocked"
    result = ok_read(W, {"query": "needle"})
    assert result["items"] == [] and result["diagnostics"]["validation"]["blocked"] > 0


def test_a_required_target_retired_later_blocks_the_root_from_read_only(W, I):
    """A required target retired after the link blocks its root from read; search still finds the root."""
    target = I.ref(create("t", "the condition"))
    I.ok_write(create("r", "needle root", links=required(target)))
    I.ok_write({"id": "x", "op": "retire", "target": target})
    result = ok_read(W, {"query": "needle"})
    assert result["items"] == [] and result["diagnostics"]["validation"]["blocked"] == 1
    assert [item["text"] for item in W.post("search", {"query": "needle"}).json()["items"]] == ["needle root"]


# --- Quotes --------------------------------------------------------------------------------------

def test_overlapping_extractions_render_their_source_once(X, W, I):
    """Overlapping extractions render as quotes of their source, whose merged range appears once as evidence."""
    source = I.ref(create("s", "AAAA BBBB CCCC"))
    own = own_ref(W, source)
    extractor = {"key": W.key.public_id, "generatedOrigin": "extraction"}
    response = X.post("observe", {"binding": extractor, "input": {"payloadDigest": PAYLOAD, "sources": [{"ref": own}]}})
    assert response.status_code == 200, response.content
    t = response.json()["input"]
    outcome = W.ok_write(create("e1", "AAAA BBBB", sources=[{"ref": own, "start": 0, "end": 9}], input=t),
                         create("e2", "BBBB CCCC", sources=[{"ref": own, "start": 5, "end": 14}], input=t),
                         binding={"generatedOrigin": "extraction"})
    result = ok_read(W, {"query": "BBBB"})
    e1, e2 = outcome["changes"]["e1"]["ref"], outcome["changes"]["e2"]["ref"]
    assert e1 in result["refs"] and e2 in result["refs"] and own in result["refs"]
    assert result["text"].count("BBBB") == 1
    assert result["sources"] == [{"ref": own, "start": 0, "end": 14}]
    rendered = json.loads(result["text"])
    assert rendered["evidence"] == [{"ranges": [{"end": 14, "start": 0, "text": "AAAA BBBB CCCC"}], "ref": own,
                                     "unit": "utf8"}]
    assert all("quote" in unit and "text" not in unit for unit in rendered["memory"])
    assert {item["text"] for item in result["items"]} == {"AAAA BBBB", "BBBB CCCC", "AAAA BBBB CCCC"}
    units = Receipt.objects.get(id=result["receipt"]["id"]).manifest["presentation"]["units"]
    assert {unit["display"] for unit in units} == {"quote"}
    inspected = W.post("inspect", {"ref": e1})
    assert inspected.json()["atom"]["text"] == "AAAA BBBB"


# --- Budgets ---------------------------------------------------------------------------------------

def test_no_packing_work_returns_nothing(W, I):
    """With no packing work allowed, nothing is returned and the selection is incomplete."""
    I.ok_write(create("a", "needle a"))
    result = ok_read(W, {"query": "needle"}, budget={"maxPackingWork": 0})
    selection = result["diagnostics"]["selection"]
    assert (selection["complete"], selection["baselineComplete"]) == (False, False)
    assert result["usage"]["maxPackingWork"] == 0 and result["items"] == []
    assert result["diagnostics"]["stop"] == "budget"


def test_token_count_is_utf8_bytes_and_one_less_stays_within_budget(W, I):
    """The token count is the UTF-8 length of the text; a budget one under it returns less."""
    I.ok_write(create("a", "日本語 needle"))
    first = ok_read(W, {"query": "needle"})
    assert first["tokenCount"] == len(first["text"].encode()) and "日本語" in first["text"]
    second = ok_read(W, {"query": "needle"}, tokens=first["tokenCount"] - 1)
    assert second["tokenCount"] <= first["tokenCount"] - 1
    assert second["diagnostics"]["minimumTokens"] == first["tokenCount"]


def test_the_selection_never_loses_to_the_baseline(X, W, I):
    """At every budget the selection's utility is at least the baseline's (docs/atoms.md "Selection utility (read)")."""
    big = own_ref(W, I.ref(create("big", "needle " * 300)))
    condition = I.ref(create("c", "condition " * 200))
    I.ok_write(create("a", "needle a", links=required(condition)), create("b", "needle b"))
    response = X.post("uses", {"binding": {"key": W.key.public_id}, "refs": [big], "eventId": "e"})
    assert response.status_code == 200, response.content
    for tokens in (800, 1400, 2200, 2500, 3000):
        result = ok_read(W, {"query": "needle"}, tokens=tokens)
        selection = result["diagnostics"]["selection"]
        assert result["tokenCount"] <= tokens and selection["utility"] >= selection["baselineUtility"]


# --- Cursors ---------------------------------------------------------------------------------------

def test_each_page_shows_the_shared_condition_again(W, I):
    """Each cursor page that shows a root shows its required condition again, scored as at the first page."""
    spread_both_ways(I)
    c = I.ref(create("c", "Shared condition C."))
    I.ok_write(*[create(f"n{i}", f"needle {i}", links=required(c)) for i in range(3)])
    c_own = own_ref(W, c)
    pages = [ok_read(W, {"query": "needle"}, limit=2)]
    while "cursor" in pages[-1]:
        pages.append(ok_read(W, {"query": "needle"}, limit=2, cursor=pages[-1]["cursor"]))
    assert [c_own in page["refs"] for page in pages] == [True] * len(pages) and len(pages) == 3
    roots = [ref for page in pages for ref in page["refs"] if ref != c_own]
    assert len(roots) == 3 and len(set(roots)) == 3
    assert len({page["diagnostics"]["evaluatedAt"] for page in pages}) == 1
    scores = {item["score"] for page in pages for item in page["items"] if item["ref"] == c_own}
    assert len(scores) == 1 and scores.pop() > 0
    again = read(W, {"query": "other"}, limit=2, cursor=pages[0]["cursor"])
    assert again.status_code == 410 and code(again) == "CURSOR_EXPIRED"
    other_options = read(W, {"query": "needle"}, limit=3, cursor=pages[0]["cursor"])
    assert code(other_options) == "CURSOR_EXPIRED"


def test_a_cursor_expires_after_its_ttl(W, I, frozen_clock, settings):
    I.ok_write(create("a", "needle a"), create("b", "needle b"))
    first = ok_read(W, {"query": "needle"}, limit=1)
    frozen_clock.set_now(settings.ATOMS_CURSOR_TTL_MS + 1)
    assert code(read(W, {"query": "needle"}, limit=1, cursor=first["cursor"])) == "CURSOR_EXPIRED"


def test_another_key_cannot_continue_a_cursor(W, X, I):
    I.ok_write(create("a", "needle a"), create("b", "needle b"))
    first = ok_read(W, {"query": "needle"}, limit=1)
    assert code(read(X, {"query": "needle"}, limit=1, cursor=first["cursor"])) == "ACCESS_DENIED"


# --- Review -------------------------------------------------------------------------------------

def test_an_unreviewed_atom_is_hidden_under_require_approval_until_approved(X, W, I, acme):
    """While approval is required, an unreviewed atom is not read until approved."""
    t = token(X, W, sources=[])
    ref = W.ok_write(create("a", "needle agent", input=t))["changes"]["a"]["ref"]
    assert texts(ok_read(W, {"query": "needle"})) == ["needle agent"]
    AtomStore.get_or_create_for(acme)
    AtomStore.objects.filter(tenant=acme).update(require_approval=True)
    assert ok_read(W, {"query": "needle"})["items"] == []
    atoms_approve(tenant=acme, atom_id=atom_of(ref), actor=Actor.system("review"))
    assert texts(ok_read(W, {"query": "needle"})) == ["needle agent"]


def test_a_root_requiring_an_unreviewed_atom_is_blocked_until_approval(X, W, I, acme):
    """While approval is required, a root requiring an unreviewed atom is blocked until the atom is approved."""
    t = token(X, W, sources=[])
    condition = W.ok_write(create("c", "agent condition", input=t))["changes"]["c"]["ref"]
    I.ok_write(create("r", "needle root", links=required(own_ref(I, condition))))
    AtomStore.get_or_create_for(acme)
    AtomStore.objects.filter(tenant=acme).update(require_approval=True)
    blocked = ok_read(W, {"query": "needle"})
    assert blocked["items"] == [] and blocked["diagnostics"]["validation"]["blocked"] == 1
    atoms_approve(tenant=acme, atom_id=atom_of(condition), actor=Actor.system("review"))
    assert texts(ok_read(W, {"query": "needle"})) == ["needle root", "agent condition"]


# --- Inputs ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("state", [{}, {"query": "   "}, {"query": "", "observations": [" ", "\n"]},
                                   {"observations": []}])
def test_a_state_without_a_non_blank_text_is_invalid(W, state):
    """A state without a non-blank query or observation is 400 INVALID_INPUT."""
    response = read(W, state)
    assert response.status_code == 400 and code(response) == "INVALID_INPUT"


@pytest.mark.parametrize("state", [None, "needle", {"query": 1}, {"observations": "needle"},
                                   {"observations": ["ok", 2]}, {"query": "needle", "mood": "x"}])
def test_it_rejects_a_malformed_state(W, state):
    assert code(read(W, state)) == "INVALID_INPUT"


@pytest.mark.parametrize("state", [{"query": "a" * 65_537}, {"observations": ["ok"] * 257},
                                   {"observations": ["é" * 32_769]}])
def test_it_rejects_a_state_over_its_limits(W, state):
    response = read(W, state)
    assert response.status_code == 413 and code(response) == "LIMIT_EXCEEDED"


def test_a_text_of_exactly_65536_bytes_is_accepted(W):
    assert read(W, {"query": "a" * 65_536, "observations": ["b"] * 256}).status_code == 200


@pytest.mark.parametrize("options", [
    {"historical": True}, {"limit": 0}, {"limit": 10_001}, {"limit": "3"}, {"tokens": 0},
    {"tokens": 1_000_001}, {"tokens": True}, {"depth": 33}, {"depth": -1}, {"cursor": 5},
    {"budget": {"maxNodes": 3}}, {"budget": []},
])
def test_it_rejects_bad_options(W, options):
    response = read(W, {"query": "needle"}, **options)
    assert response.status_code == 400 and code(response) == "INVALID_INPUT"


def test_a_negative_budget_is_invalid_schema_and_a_past_deadline_exhausts(W, frozen_clock):
    assert code(read(W, {"query": "needle"}, budget={"maxAtoms": -1})) == "INVALID_SCHEMA"
    frozen_clock.set_now(1000)
    assert code(read(W, {"query": "needle"}, deadline=999)) == "BUDGET_EXHAUSTED"


def test_it_rejects_unknown_body_keys_and_foreign_cursors(W):
    assert code(W.post("read", {"state": {"query": "x"}, "extra": 1})) == "INVALID_INPUT"
    assert code(read(W, {"query": "x"}, cursor="forged")) == "INVALID_INPUT"
