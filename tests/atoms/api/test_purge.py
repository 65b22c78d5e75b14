"""purge: dry runs, the dependency closure, the barrier, resumable work, the erasure receipt and what refs to
erased atoms answer (docs/atoms.md "Decisions")."""

from __future__ import annotations

from typing import Any

import pytest
from django.apps import apps
from django.db import DatabaseError

from atoms.core.canonical import digest
from atoms.errors import AtomError
from atoms.models import (
    Atom,
    AtomStore,
    EraseDependency,
    ErasureReceipt,
    InputToken,
    Origin,
    PurgedAtom,
    Receipt,
    Ref,
    ReplayRecord,
    Revision,
    Slot,
    Tombstone,
)
from atoms.principal import Principal
from atoms.services import purge as purge_service
from atoms.services.purge_steps import Checkpoint
from atoms.services.refs import issue_ref
from memoryhub.digests import digest_of
from memoryhub.models import AuditEvent
from tests.atoms.api.helpers import AtomsClient, create
from tests.conftest import error_of

SECRET = "The vault code is 4-8-15-16."


def code(response: Any) -> str:
    return error_of(response)["code"]


def purge(Z: AtomsClient, target: str, **options: Any) -> Any:
    body: dict[str, Any] = {"ref" if target.startswith("ref:") else "atomId": target}
    if options:
        body["options"] = options
    return Z.post("purge", body)


def ok_purge(Z: AtomsClient, target: str, **options: Any) -> dict[str, Any]:
    response = purge(Z, target, **options)
    assert response.status_code == 200, response.content
    return response.json()


def atom_of(ref: str) -> str:
    return Ref.objects.get(id=ref).atom_id


def revise(ref: str, text: str, links: Any = None) -> dict[str, Any]:
    return {"id": "v", "op": "revise", "target": ref, "content": {"text": text, "links": links or []}, "sources": []}


def own_ref(client: AtomsClient, ref: str) -> str:
    """The client's own ref for the revision another key's ref names (refs are per key)."""
    return issue_ref(Principal.for_key(client.key), Revision.objects.get(id=Ref.objects.get(id=ref).revision_id))


@pytest.fixture
def cited(I, Z) -> dict[str, str]:
    """Source S holding SECRET, D citing S (an erase dependency), U unrelated; I's refs,
    and Z's refs to S and D as zS and zD."""
    s = I.ref(create("s", SECRET))
    d = I.ref(create("d", "A quote of the vault code.", sources=[{"ref": s, "start": 0, "end": 14}]))
    u = I.ref(create("u", "Unrelated note."))
    return {"S": s, "D": d, "U": u, "zS": own_ref(Z, s), "zD": own_ref(Z, d)}


def snapshot() -> dict[str, list[str]]:
    """Every row of every atoms table, and the audit log."""
    models = [*apps.get_app_config("atoms").get_models(), AuditEvent]
    return {m._meta.label: sorted(map(str, m.objects.values())) for m in models}


def test_a_dry_run_reports_the_closure_and_changes_nothing(Z, cited):
    before = snapshot()
    result = ok_purge(Z, atom_of(cited["S"]), dryRun=True)
    assert result["complete"] is True and result["dryRun"] is True
    assert result["affectedAtomIds"] == sorted([atom_of(cited["S"]), atom_of(cited["D"])])
    assert result["erasedAtomIds"] == [] and result["legacyDependencies"] is False
    assert result["physicalStorageReclaimed"] is False and "erasureReceipt" not in result
    assert result["work"] > 0 and snapshot() == before
    assert AtomStore.objects.get().purge_barrier is None


def test_a_dry_run_out_of_work_says_how_much_it_needs_and_raises_no_barrier(Z, cited):
    before = snapshot()
    result = ok_purge(Z, atom_of(cited["S"]), dryRun=True, maxWork=1)
    assert (result["complete"], result["reason"], result["work"]) == (False, "budget", 1)
    assert result["minimumWork"] > 1 and snapshot() == before
    full = ok_purge(Z, atom_of(cited["S"]), dryRun=True)
    assert ok_purge(Z, atom_of(cited["S"]), dryRun=True, maxWork=full["work"])["complete"] is True


def test_a_stale_checkpoint_is_a_revision_conflict(Z, cited):
    ok_purge(Z, atom_of(cited["S"]), maxWork=0)
    stale = AtomStore.objects.get().purge_barrier
    ok_purge(Z, atom_of(cited["S"]), maxWork=1)  # another call moved the checkpoint on
    with pytest.raises(AtomError) as raised:
        purge_service._save(Z.key.tenant, stale, Checkpoint.from_json(stale["checkpoint"]))
    assert raised.value.code == "REVISION_CONFLICT"


def test_purging_a_source_erases_its_citers_and_nothing_else(Z, I, cited):
    s, d = atom_of(cited["S"]), atom_of(cited["D"])
    result = ok_purge(Z, cited["zS"])
    assert result["complete"] is True and result["dryRun"] is False and "reason" not in result
    assert result["affectedAtomIds"] == result["erasedAtomIds"] == sorted([s, d])
    assert result["erasureReceipt"]["atomIds"] == sorted([s, d])
    assert not Atom.objects.filter(id__in=[s, d]).exists() and not Revision.objects.filter(atom_id__in=[s, d])
    assert set(PurgedAtom.objects.values_list("atom_id", flat=True)) == {s, d}
    assert not EraseDependency.objects.exists()
    assert I.ok_write(revise(cited["U"], "still here"))["changes"]["v"]["text"] == "still here"


def test_refs_to_purged_atoms_keep_answering_access_denied(Z, I, cited):
    ok_purge(Z, atom_of(cited["S"]))
    for ref in (cited["S"], cited["D"]):
        row = Ref.objects.get(id=ref)
        assert row.revision_id == "" and row.atom_id
        response = I.write(revise(ref, "resurrect"))
        assert response.status_code == 403 and code(response) == "ACCESS_DENIED"
    assert code(purge(Z, cited["zD"])) == "ACCESS_DENIED"
    assert code(purge(Z, atom_of(cited["S"]))) == "ACCESS_DENIED"


def test_an_ordinary_link_target_is_erased_alone(Z, I):
    """Purging an ordinary link target erases it alone; the linker stays, its link unavailable."""
    target = I.ref(create("t", "link target"))
    linker = I.ref(create("l", "linker", links={"about": target}))
    result = ok_purge(Z, atom_of(target))
    assert result["erasedAtomIds"] == [atom_of(target)]
    view = I.post("inspect", {"ref": linker}).json()["atom"]
    assert view["text"] == "linker"
    assert view["links"] == [{"role": "about", "at": "logical", "required": False, "orderKey": "0",
                              "unavailable": True}]
    retired = I.ok_write({"id": "r", "op": "retire", "target": linker})["changes"]["r"]
    assert retired["links"][0]["unavailable"] is True and "ref" not in retired["links"][0]


def test_a_root_requiring_a_purged_atom_is_blocked(Z, I):
    """A root whose required target was purged is still shown, and blocked."""
    condition = I.ref(create("c", "condition"))
    root = I.ref(create("r", "root", links={"when": {"ref": condition, "required": True}}))
    ok_purge(Z, atom_of(condition))
    result = I.post("inspect", {"ref": root}).json()
    assert result["atom"]["text"] == "root" and result["readEligibility"] == "blocked"


def test_replaying_a_write_whose_output_was_purged_is_denied(Z, I):
    """Replaying a write whose output was purged is ACCESS_DENIED; the replay record keeps ids only."""
    options = {"idempotencyKey": "request-42"}
    outcome = I.ok_write(create("out", "generated output"), options=options)
    result = ok_purge(Z, atom_of(outcome["changes"]["out"]["ref"]))
    assert result["erasureReceipt"]["counts"]["replayRecords"] == 1
    replay = I.write(create("out", "generated output"), options=options)
    assert replay.status_code == 403 and code(replay) == "ACCESS_DENIED"
    record = ReplayRecord.objects.get()
    assert set(record.changes["out"]) == {"kind", "atomId", "revisionId"}


def test_token_reads_close_transitively_and_weights_do_not_matter(Z, I, acme):
    """Token-read dependencies close transitively: purging b erases what read it, and what read that."""
    b, d, child = (I.ref(create(name, f"{name} text")) for name in ("b", "d", "child"))
    for dependent, dependency in ((d, b), (child, d)):
        EraseDependency.objects.create(tenant=acme, dependent_atom_id=atom_of(dependent),
                                       dependency_atom_id=atom_of(dependency), kind="token-read")
    expected = sorted(atom_of(r) for r in (b, d, child))
    assert ok_purge(Z, atom_of(b), dryRun=True)["affectedAtomIds"] == expected
    result = ok_purge(Z, atom_of(b))
    assert result["affectedAtomIds"] == result["erasedAtomIds"] == expected
    assert code(I.post("inspect", {"ref": child})) == "ACCESS_DENIED"


def test_slots_cascade_only_when_legacy(Z, I, acme):
    target, legacy, modern = (I.ref(create(name, name)) for name in ("target", "legacy", "modern"))
    EraseDependency.objects.create(tenant=acme, dependent_atom_id=atom_of(legacy),
                                   dependency_atom_id=atom_of(target), kind="legacy-slot", legacy=True)
    EraseDependency.objects.create(tenant=acme, dependent_atom_id=atom_of(modern),
                                   dependency_atom_id=atom_of(target), kind="legacy-slot", legacy=False)
    result = ok_purge(Z, atom_of(target), dryRun=True)
    assert result["affectedAtomIds"] == sorted([atom_of(target), atom_of(legacy)])
    assert result["legacyDependencies"] is True


def test_receipts_and_tokens_that_read_an_erased_atom_are_tombstoned(Z, I, W, acme, cited):
    s_atom, s_revision = atom_of(cited["S"]), Ref.objects.get(id=cited["S"]).revision_id
    read_s = I.post("inspect", {"ref": cited["S"]}).json()["receipt"]["id"]
    read_u = I.post("inspect", {"ref": cited["U"]}).json()["receipt"]["id"]
    pin = {"kind": "pinned", "atomId": s_atom, "revisionId": s_revision}
    token = InputToken.objects.create(id="input:00000000-0000-4000-8000-000000000001", tenant=acme, principal="x",
                                      manifest={"reads": [pin]}, created_at=0, expires_at=10**9)
    producer = InputToken.objects.create(id="input:00000000-0000-4000-8000-000000000002", tenant=acme,
                                         principal="x", manifest={"generation": {"outputs": [pin]}, "reads": []},
                                         created_at=0, expires_at=10**9)
    counts = ok_purge(Z, atom_of(cited["S"]))["erasureReceipt"]["counts"]
    assert (counts["receipts"], counts["inputTokens"]) == (1, 1)
    assert set(Receipt.objects.values_list("id", flat=True)) == {read_u}
    assert list(InputToken.objects.values_list("id", flat=True)) == [producer.id]
    erasure = ErasureReceipt.objects.get().id
    assert set(Tombstone.objects.values_list("id", "erasure_id")) == {(read_s, erasure), (token.id, erasure)}
    denied = W.write(create("a", "x", input=token.id))
    assert denied.status_code == 403 and code(denied) == "ACCESS_DENIED"


def test_the_erasure_receipt_counts_what_was_deleted(Z, I, cited, acme):
    """The erasure receipt counts every deleted row; audit entries keep their ids and digests."""
    s, d = atom_of(cited["S"]), atom_of(cited["D"])
    I.ok_write(revise(cited["D"], "revised quote", links={"see": cited["U"]}))
    I.post("inspect", {"ref": cited["S"]})
    atom_revisions = Revision.objects.filter(atom_id__in=[s, d])
    operations = set(atom_revisions.values_list("operation_id", flat=True))
    ids = {s, d, *atom_revisions.values_list("id", flat=True), *operations}
    audit_before = {(a.id, a.object_id, a.before_digest, a.after_digest, a.actor_label)
                    for a in AuditEvent.objects.filter(object_id__in=ids)}
    expected = {
        "atoms": 2, "revisions": atom_revisions.count(), "slots": Slot.objects.filter(revision__atom_id=d).count(),
        "origins": Origin.objects.filter(revision__atom_id__in=[s, d]).count(), "indexEntries": 0, "vectors": 0,
        "useStates": 0, "useEvents": 0, "receipts": Receipt.objects.count(), "inputTokens": 0, "cursors": 0,
        "replayRecords": 0, "refsReduced": Ref.objects.filter(atom_id__in=[s, d]).count(), "reviewRecords": 0,
        "auditEntriesRedacted": len(audit_before),
    }
    assert expected["slots"] == 1 and expected["origins"] == 1 and expected["auditEntriesRedacted"] == 3
    generation, seq = AtomStore.objects.values_list("index_generation", "seq").get()
    result = ok_purge(Z, cited["zS"])
    receipt = result["erasureReceipt"]
    assert receipt["counts"] == expected
    assert receipt["digest"] == digest({k: v for k, v in receipt.items() if k != "digest"})
    assert ErasureReceipt.objects.get(id=receipt["id"]).receipt == receipt
    assert receipt["id"].startswith("erasure:") and receipt["requestedBy"] == f"key:{Z.key.public_id}"
    assert receipt["startedAt"] <= receipt["completedAt"]
    assert AtomStore.objects.values_list("index_generation", "seq").get() == (generation + 1, seq + 1)
    # Audit rows keep ids, digests, actor and time; nothing in them names the erased text.
    assert {(a.id, a.object_id, a.before_digest, a.after_digest, a.actor_label)
            for a in AuditEvent.objects.filter(object_id__in=ids)} == audit_before
    own = AuditEvent.objects.get(action="atoms.purge")
    assert (own.object_type, own.object_id, own.after_digest) == ("erasure", receipt["id"], digest_of(receipt))
    assert own.actor_label == f"key:{Z.key.public_id}"
    for label, rows in snapshot().items():
        assert not any(SECRET in row or "revised quote" in row for row in rows), label


def test_the_barrier_holds_until_the_purge_completes(Z, I, cited, frozen_clock):
    """Until the purge completes, its barrier refuses writes, inspects and other purges."""
    first = ok_purge(Z, cited["zS"], maxWork=0)
    assert (first["complete"], first["reason"], first["work"]) == (False, "budget", 0)
    assert first["minimumWork"] > 0 and first["erasedAtomIds"] == []
    assert AtomStore.objects.get().purge_barrier["atomId"] == atom_of(cited["S"])
    for response in (I.write(create("new", "blocked")), I.post("inspect", {"ref": cited["U"]})):
        assert response.status_code == 403 and code(response) == "ACCESS_DENIED"
        assert error_of(response)["details"]["reason"] == "erasure-incomplete"
    other = purge(Z, atom_of(cited["U"]))
    assert other.status_code == 400 and code(other) == "INVALID_INPUT"
    frozen_clock.advance(5)
    done = ok_purge(Z, atom_of(cited["S"]))
    assert done["complete"] is True and done["erasedAtomIds"] == sorted([atom_of(cited["S"]), atom_of(cited["D"])])
    assert done["erasureReceipt"]["startedAt"] == 0 and done["erasureReceipt"]["completedAt"] == 5
    assert AtomStore.objects.get().purge_barrier is None
    I.ok_write(create("new", "open again"))


def test_a_purge_advances_step_by_step_with_minimum_work(Z, cited):
    """Each call given exactly `minimumWork` makes progress; resuming by ref works even
    after the ref's revision is gone."""
    s = atom_of(cited["S"])
    result = ok_purge(Z, cited["zS"], maxWork=0)
    calls = 1
    while not result["complete"]:
        assert result["reason"] == "budget" and result["minimumWork"] > 0
        needed = result["minimumWork"]
        result = ok_purge(Z, cited["zS"] if calls % 2 else s, maxWork=needed)
        assert result["work"] >= needed
        calls += 1
        assert calls < 50
    assert result["erasedAtomIds"] == sorted([s, atom_of(cited["D"])])
    assert calls > 4 and ErasureReceipt.objects.count() == 1


def test_a_storage_error_leaves_the_barrier_up_and_resuming_completes(Z, I, cited, monkeypatch):
    real = purge_service.erase_next

    def failing(*args: Any, **kwargs: Any) -> None:
        real(*args, **kwargs)  # delete, then fail: the step's transaction must roll back
        raise DatabaseError("disk went away")

    monkeypatch.setattr(purge_service, "erase_next", failing)
    failed = ok_purge(Z, atom_of(cited["S"]))
    assert (failed["complete"], failed["reason"], failed["erasedAtomIds"]) == (False, "storage-error", [])
    assert "minimumWork" not in failed and AtomStore.objects.get().purge_barrier is not None
    assert Atom.objects.filter(id=atom_of(cited["S"])).exists() and not PurgedAtom.objects.exists()
    assert code(I.post("inspect", {"ref": cited["U"]})) == "ACCESS_DENIED"
    monkeypatch.undo()
    done = ok_purge(Z, atom_of(cited["S"]))
    assert done["complete"] is True and len(done["erasedAtomIds"]) == 2
    assert done["erasureReceipt"]["counts"]["atoms"] == 2 and done["erasureReceipt"]["counts"]["origins"] == 1


def test_only_admin_keys_may_purge(keys, acme, make_key, client_for, cited):
    """Only a writable admin key may purge; every other kind, and a read-only admin key, is ACCESS_DENIED."""
    for name in ("I", "W", "X", "R"):
        response = purge(keys[name], atom_of(cited["U"]))
        assert response.status_code == 403 and code(response) == "ACCESS_DENIED", name
    key, raw = make_key(acme, "admin", read_only=True)
    assert code(purge(AtomsClient(client_for(raw), key), atom_of(cited["U"]))) == "ACCESS_DENIED"
    assert AtomStore.objects.get().purge_barrier is None and not PurgedAtom.objects.exists()


def test_another_tenants_atom_is_unknown_and_untouched(Z, globex, make_key, client_for):
    key, raw = make_key(globex, "ingest")
    theirs = AtomsClient(client_for(raw), key).ref(create("g", "globex only"))
    atom_id = atom_of(theirs)
    for target in (atom_id, theirs):
        response = purge(Z, target)
        assert response.status_code == 400 and code(response) == "INVALID_REF", target
    assert Atom.objects.filter(id=atom_id).exists() and not AtomStore.objects.get(tenant=globex).purge_barrier
    assert AtomStore.objects.get(tenant=Z.key.tenant).purge_barrier is None


def test_max_work_is_an_integer_in_any_json_spelling(Z, cited):
    result = ok_purge(Z, atom_of(cited["S"]), dryRun=True, maxWork=1e6)
    assert result["complete"] is True


@pytest.mark.parametrize(("body", "expected"), [
    ({}, "INVALID_INPUT"),
    ({"atomId": "atom:x", "ref": "ref:x"}, "INVALID_INPUT"),
    ({"atomId": 7}, "INVALID_INPUT"),
    ({"atomId": "atom:not-a-uuid"}, "INVALID_REF"),
    ({"atomId": "atom:00000000-0000-4000-8000-000000000000"}, "INVALID_REF"),
    ({"ref": "ref:00000000-0000-4000-8000-000000000000"}, "INVALID_REF"),
    ({"atomId": "A", "extra": 1}, "INVALID_INPUT"),
    ({"atomId": "A", "options": {"force": True}}, "INVALID_INPUT"),
    ({"atomId": "A", "options": {"dryRun": "yes"}}, "INVALID_INPUT"),
    ({"atomId": "A", "options": {"maxWork": "all"}}, "INVALID_INPUT"),
    ({"atomId": "A", "options": {"maxWork": -1}}, "INVALID_SCHEMA"),
    ({"atomId": "A", "options": {"maxWork": 1.5}}, "INVALID_SCHEMA"),
    ({"atomId": "A", "options": []}, "INVALID_INPUT"),
])
def test_malformed_requests_are_refused(Z, cited, body, expected):
    if body.get("atomId") == "A":
        body = {**body, "atomId": atom_of(cited["S"])}
    response = Z.post("purge", body)
    assert response.status_code == 400 and code(response) == expected
    assert AtomStore.objects.get().purge_barrier is None


def test_a_completed_purge_expires_inspect_cursors(I, Z):
    from tests.atoms.api.helpers import create as make

    root = I.ref(make("root", "root"))
    for i in range(3):
        I.ok_write(make(f"p{i}", f"page {i}", links={"page": root}))
    victim = I.ok_write(make("victim", "to purge"))["changes"]["victim"]["ref"]
    first = I.post("inspect", {"ref": root, "options": {"direction": "incoming", "limit": 1}}).json()
    assert first.get("cursor")
    from atoms.models import Ref

    purged = Z.post("purge", {"atomId": Ref.objects.get(id=victim).atom_id})
    assert purged.json()["complete"] is True
    again = I.post("inspect", {"ref": root, "options": {"direction": "incoming", "limit": 1, "cursor": first["cursor"]}})
    assert again.status_code == 410 and again.json()["error"]["code"] == "CURSOR_EXPIRED"


def test_purge_erases_use_states_and_markers_with_counts(acme, I, Z):
    from atoms.models import Ref, Revision, UseMarker, UseState

    ref = I.ref(create("used", "used atom"))
    revision = Revision.objects.get(id=Ref.objects.get(id=ref).revision_id)
    UseState.objects.create(tenant=acme, subject="key:x", policy="default", revision_id=revision.id,
                            model_id="m", state={"mass": 1}, updated_at=0)
    UseMarker.objects.create(tenant=acme, subject="key:x", policy="default", revision_id=revision.id,
                             event_id="e1", accepted_at=0)
    result = Z.post("purge", {"atomId": revision.atom_id}).json()
    counts = result["erasureReceipt"]["counts"]
    assert (counts["useStates"], counts["useEvents"]) == (1, 1)
    assert not UseState.objects.exists() and not UseMarker.objects.exists()
