"""Currency and staleness (docs/atoms.md "Decisions"): which outputs go stale when an input is revised, and when a
watched query is a revision conflict.

Some of these tests inspect where a search would do as well (they predate search): inspect
shows stale atoms and lists them in `stale`. Query observations come from receipts built
directly (`search_receipt`), the way search will record them.
"""

from __future__ import annotations

from typing import Any

import pytest

from atoms.models import Atom, AtomStore, InputToken, Ref
from atoms.services.review import atoms_approve
from memoryhub.actors import Actor
from tests.atoms.api.helpers import AtomsClient, create
from tests.atoms.api.observing import atom_of, manifest, obs, own_ref, search_receipt, token
from tests.conftest import error_of


def code(response: Any) -> str:
    return error_of(response)["code"]


def revise(ref: str, text: str) -> dict[str, Any]:
    return {"id": "v", "op": "revise", "target": ref, "content": {"text": text, "links": []}, "sources": []}


def stale(client: AtomsClient, ref: str) -> list[str]:
    response = client.post("inspect", {"ref": ref})
    assert response.status_code == 200, response.content
    return response.json()["stale"]


@pytest.fixture
def sources(I: AtomsClient, W: AtomsClient) -> dict[str, str]:
    """Source atoms A and B: I's refs as A, B and W's refs as wA, wB."""
    a = I.ref(create("a", "Alice takes her coffee black."))
    b = I.ref(create("b", "Bob drinks green tea."))
    return {"A": a, "B": b, "wA": own_ref(W, a), "wB": own_ref(W, b)}


def test_only_the_output_of_the_revised_input_goes_stale(X, W, I, Z, sources):
    """Revising an input makes only the outputs of tokens that read it stale; inspect shows stale neighbours
    and lists them; purging the input erases only its outputs."""
    a, b = obs(X, W, sources["wA"]), obs(X, W, sources["wB"])
    outcome = W.ok_write(create("ao", "a output", input=a), create("bo", "b output", input=b))
    a_out, b_out = outcome["changes"]["ao"]["ref"], outcome["changes"]["bo"]["ref"]
    I.ok_write(revise(sources["A"], "Alice now takes milk."))
    assert stale(W, a_out) == [a_out] and stale(W, b_out) == []
    # Stale neighbours are shown, and listed too.
    hub = I.ref(create("hub", "outputs", links={"member": [own_ref(I, a_out), own_ref(I, b_out)]}))
    result = I.post("inspect", {"ref": hub}).json()
    assert [n["atom"]["text"] for n in result["neighbors"]] == ["a output", "b output"]
    assert result["stale"] == [own_ref(I, a_out)]
    purged = Z.post("purge", {"atomId": atom_of(sources["A"])}).json()
    assert purged["erasedAtomIds"] == sorted([atom_of(sources["A"]), atom_of(a_out)])
    assert Atom.objects.filter(id=atom_of(b_out)).exists()
    assert not InputToken.objects.filter(id=a).exists() and InputToken.objects.filter(id=b).exists()


def test_one_token_over_two_sources_makes_both_outputs_stale(X, W, I, sources):
    """One token over two sources: revising one source makes both outputs stale."""
    t = token(X, W, sources=[{"ref": sources["wA"]}, {"ref": sources["wB"]}])
    outcome = W.ok_write(create("x", "cites A", sources=[{"ref": sources["wA"]}], input=t),
                         create("y", "cites B", sources=[{"ref": sources["wB"]}], input=t))
    assert len(manifest(X, W, input=t).json()["generation"]["outputs"]) == 2
    I.ok_write(revise(sources["A"], "Alice now takes milk."))
    for change in ("x", "y"):
        ref = outcome["changes"][change]["ref"]
        assert stale(W, ref) == [ref]


def test_historical_reads_never_cause_staleness(X, W, I, sources):
    """Reads on a historical basis never make an output stale."""
    t = obs(X, W, sources["wA"], basis="historical")
    I.ok_write(revise(sources["A"], "Alice now takes milk."))
    output = W.ok_write(create("o", "Alice used to take it black.", input=t))["changes"]["o"]["ref"]
    assert stale(W, output) == []


def test_a_watched_query_that_changes_is_a_revision_conflict(X, W, I):
    """A watched query that would now return something new makes a write with the token REVISION_CONFLICT."""
    empty = search_receipt(W, "missing", [])
    t = token(X, W, presentations=[{"receipt": empty}])
    I.ok_write(create("unrelated", "nothing to see"))
    t2 = token(X, W, presentations=[{"receipt": empty}])
    assert W.write(create("o", "nothing found yet", input=t2)).status_code == 200
    I.ok_write(create("m", "missing inserted"))
    response = W.write(create("p", "nothing found", input=t))
    assert response.status_code == 409 and code(response) == "REVISION_CONFLICT"


def test_a_query_change_after_the_write_makes_the_output_stale(X, W, I):
    t = token(X, W, presentations=[{"receipt": search_receipt(W, "missing", [])}])
    output = W.ok_write(create("o", "the missing piece", input=t))["changes"]["o"]["ref"]
    assert stale(W, output) == []  # its own operation's match does not count
    I.ok_write(create("m", "missing inserted"))
    assert stale(W, output) == [output]


def test_a_returned_revision_that_stops_being_head_changes_the_query(X, W, I, sources):
    t = token(X, W, presentations=[{"receipt": search_receipt(W, "coffee", [sources["wA"]])}])
    output = W.ok_write(create("o", "coffee summary", input=t))["changes"]["o"]["ref"]
    I.ok_write(revise(sources["A"], "Alice now takes milk."))
    assert stale(W, output) == [output]


def test_a_full_observation_ignores_matches_below_its_floor(X, W, I, sources):
    receipt = search_receipt(W, "alice coffee", [sources["wA"]], full=True, m_floor=1.0)
    t = token(X, W, presentations=[{"receipt": receipt}])
    I.ok_write(create("half", "coffee only"))  # m = 0.5 < mFloor
    assert W.write(create("o", "x", input=t)).status_code == 200
    I.ok_write(create("both", "alice and coffee"))  # m = 1
    assert code(W.write(create("p", "y", input=t))) == "REVISION_CONFLICT"


def test_a_head_counts_once_approval_makes_it_visible(X, W, I, sources, acme):
    AtomStore.objects.filter(tenant=acme).update(require_approval=True)
    t = token(X, W, presentations=[{"receipt": search_receipt(W, "missing", [])}])
    hidden = W.ok_write(create("h", "missing link", input=obs(X, W, sources["wA"])))["changes"]["h"]["ref"]
    assert W.write(create("o", "x", input=t)).status_code == 200
    atoms_approve(tenant=acme, atom_id=atom_of(hidden), actor=Actor.system("test"))
    assert code(W.write(create("p", "y", input=t))) == "REVISION_CONFLICT"


def test_queries_are_not_watched_on_a_historical_basis_unless_watched(X, W, I):
    receipt = search_receipt(W, "missing", [])
    historical = token(X, W, presentations=[{"receipt": receipt}], basis="historical")
    watching = token(X, W, watches=[receipt], basis="historical")
    I.ok_write(create("m", "missing inserted"))
    assert W.write(create("o", "x", input=historical)).status_code == 200
    assert code(W.write(create("p", "y", input=watching))) == "REVISION_CONFLICT"


def test_inherited_watches_survive_a_historical_basis(X, W, I, sources):
    """Watches a token inherits survive its own historical basis: the inherited read still makes it stale."""
    t1 = obs(X, W, sources["wA"])
    o1 = W.ok_write(create("o1", "first output", input=t1))["changes"]["o1"]["ref"]
    t2 = obs(X, W, sources["wB"], inherit=[t1], basis="historical")
    o2 = W.ok_write(create("o2", "second output", input=t2))["changes"]["o2"]["ref"]
    assert stale(W, o2) == []
    I.ok_write(revise(sources["A"], "Alice now takes milk."))
    assert stale(W, o1) == [o1] and stale(W, o2) == [o2]


def test_a_stale_generated_current_read_makes_its_readers_stale(X, W, I, sources):
    o1 = W.ok_write(create("o1", "first output", input=obs(X, W, sources["wA"])))["changes"]["o1"]["ref"]
    o2 = W.ok_write(create("o2", "built on o1", input=obs(X, W, o1)))["changes"]["o2"]["ref"]
    o3 = W.ok_write(create("o3", "o1, as it was", input=obs(X, W, o1, basis="historical")))["changes"]["o3"]["ref"]
    I.ok_write(revise(sources["A"], "Alice now takes milk."))
    # o1 is still its atom's head; o2 is stale through it, o3 (historical) is not.
    assert stale(W, o1) == [o1] and stale(W, o2) == [o2] and stale(W, o3) == []


def test_source_and_tokenless_revisions_are_never_stale(X, I, sources):
    x_a = own_ref(X, sources["A"])
    t = token(X, X, sources=[{"ref": x_a}])
    hosted = X.ok_write(create("h", "host note", input=t))["changes"]["h"]["ref"]
    plain = I.ref(create("p", "plain note", sources=[{"ref": sources["A"]}]))
    I.ok_write(revise(sources["A"], "Alice now takes milk."))
    assert stale(X, hosted) == [] and stale(I, plain) == []
    assert Ref.objects.filter(id=hosted).exists()


def test_purging_an_atom_only_watched_leaves_the_output_stale(X, W, Z, sources):
    watched = W.post("inspect", {"ref": sources["wB"], "options": {"limit": 0}}).json()["receipt"]["id"]
    t = obs(X, W, sources["wA"], watches=[watched])
    output = W.ok_write(create("o", "about A, watching B", input=t))["changes"]["o"]["ref"]
    result = Z.post("purge", {"atomId": atom_of(sources["B"])}).json()
    # Watching is not reading: the output survives, but what it watched is gone.
    assert result["erasedAtomIds"] == [atom_of(sources["B"])]
    assert not InputToken.objects.filter(id=t).exists()
    assert stale(W, output) == [output]


def test_a_reviewer_edit_of_an_agent_atom_is_an_approved_source_head_and_stales_watchers(X, W, I, keys, sources):
    """A reviewer's edit of an agent atom is an approved source head, audited, and makes its watchers stale."""
    from memoryhub.models import AuditEvent

    reviewer = keys["R"]
    t = obs(X, W, sources["wA"])
    derived = W.ok_write(create("d", "Alice likes black coffee.", input=t))["changes"]["d"]["ref"]
    watcher_token = obs(X, W, derived)
    watcher = W.ok_write(create("w", "Suggest an espresso.", input=watcher_token))["changes"]["w"]["ref"]
    edited = reviewer.ok_write(revise(own_ref(reviewer, derived), "Alice likes black coffee, no sugar."))
    view = edited["changes"]["v"]
    assert edited["review"] == {"v": "approved"}
    assert view["provenance"] == {"origin": "source", "producer": f"key:{reviewer.key.public_id}"}
    assert stale(W, watcher) == [watcher]
    assert AuditEvent.objects.filter(action="atoms.write", object_id=edited["operationId"]).exists()
