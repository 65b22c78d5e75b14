"""Principal.for_person: a signed-in member as the engine's writer and reader."""

from __future__ import annotations

from atoms.api.write import answer_write
from atoms.models import Ref
from atoms.principal import Principal
from tests.atoms.ui.review_helpers import grant_private, head_of, write


def test_a_person_reads_and_writes_every_policy_the_tenant_holds(acme, globex):
    grant_private(acme)
    write(acme, "private note", policy="private")
    write(globex, "elsewhere")
    person = Principal.for_person(acme, "bob")
    assert (person.subject, person.principal_id, person.kind, person.actor_type) == (
        "user:bob", "user:bob", "ui", "human")
    assert person.read_policies == person.write_policies == ("default", "private")
    assert Principal.for_person(globex, "bob").read_policies == ("default",)
    assert person.can_ingest_source and person.key is None


def test_a_persons_write_is_an_approved_human_source(acme):
    person = Principal.for_person(acme, "bob")
    outcome = answer_write(person, {"changes": [
        {"id": "c", "op": "create", "content": {"text": "by hand", "links": []}, "sources": []}]})
    assert outcome["review"] == {"c": "approved"}
    head = head_of(Ref.objects.get(id=outcome["changes"]["c"]["ref"]).atom_id)
    assert (head.origin, head.producer, head.dependency_contract, head.schema) == (
        "source", "user:bob", "source-v2", "source")
