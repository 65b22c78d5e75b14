"""The atom page's write commands (`WriteCommand.revise`, `WriteCommand.retire`): built from
revisions instead of refs, they plan and refuse exactly what the same batch sent to the API
with refs plans and refuses (docs/architecture.md "Typed services")."""

from __future__ import annotations

from typing import Any

import pytest

from atoms.api.write import parse_write
from atoms.errors import AtomError
from atoms.models import Revision
from atoms.principal import Principal
from atoms.services.refs import issue_refs
from atoms.services.write import WriteCommand, atoms_write, writing_binding
from atoms.services.write_plan import LinkSpec, SourceSpec
from tests.atoms.ui.review_helpers import head_of, retire, write


def _error(call: Any) -> tuple[str, str, dict[str, Any]]:
    with pytest.raises(AtomError) as caught:
        call()
    return caught.value.code, caught.value.message, caught.value.details or {}


def _revise_body(person: Principal, head: Revision, text: str, links: list[LinkSpec],
                 sources: list[SourceSpec]) -> dict[str, Any]:
    refs = issue_refs(person, [head, *(link.target for link in links), *(cited.source for cited in sources)])
    specs = [{"role": link.role, "target": {"ref": refs[link.target.id], "at": link.at, "required": link.required,
                                            **({"orderKey": link.order_key} if link.order_key else {})}}
             for link in links]
    cited = [{"ref": refs[s.source.id], "start": s.start, "end": s.end} for s in sources]
    return {"binding": {"writePolicy": head.policy}, "changes": [{
        "id": "edit", "op": "revise", "target": refs[head.id], "content": {"text": text, "links": specs},
        "sources": cited}]}


def test_a_revise_built_from_revisions_plans_what_the_same_batch_with_refs_plans(acme):
    source = write(acme, "Alice takes her coffee black.")
    other = write(acme, "Alice works nights.")
    atom = write(acme, "coffee", sources=[{"atom": source, "start": 0, "end": 5}])
    person = Principal.for_person(acme, "bob")
    head = head_of(atom)
    links = [LinkSpec(role="follows", target=head_of(other)),
             LinkSpec(role="requires", target=head_of(other), at="observed", required=True, order_key="k")]
    sources = [SourceSpec(source=head_of(source), start=0, end=5)]
    command = WriteCommand.revise(writing_binding(person, head.policy), head, "Coffee: black.", tuple(links),
                                  tuple(sources))
    parsed = parse_write(person, _revise_body(person, head, "Coffee: black.", links, sources))
    assert command.fingerprint == parsed.fingerprint
    assert command.binding == parsed.binding
    result = atoms_write(command)
    assert result.review == {"edit": "approved"} and not result.repeated
    view = result.changes["edit"]
    assert [(link["role"], link["at"], link["required"], link["orderKey"]) for link in view["links"]] == [
        ("follows", "logical", False, "0"), ("requires", "observed", True, "k")]
    assert [(s["start"], s["end"]) for s in view["sources"]] == [(0, 5)]


def test_a_link_role_is_refused_as_the_api_refuses_it(acme):
    other = write(acme, "Alice works nights.")
    head = head_of(write(acme, "coffee"))
    person = Principal.for_person(acme, "bob")
    links = [LinkSpec(role="see\nalso", target=head_of(other))]
    built = _error(lambda: WriteCommand.revise(writing_binding(person, head.policy), head, "text", tuple(links)))
    assert built[2]["path"] == "changes[0].content.links[0]"
    assert built == _error(lambda: parse_write(person, _revise_body(person, head, "text", links, [])))


def test_a_retire_of_an_atom_already_retired_is_refused_as_the_api_refuses_it(acme):
    atom = write(acme, "coffee")
    retire(acme, atom)
    head = head_of(atom)
    person = Principal.for_person(acme, "bob")
    built = _error(lambda: WriteCommand.retire(writing_binding(person, head.policy), head))
    ref = issue_refs(person, [head])[head.id]
    sent = _error(lambda: parse_write(person, {"binding": {"writePolicy": head.policy},
                                               "changes": [{"id": "retire", "op": "retire", "target": ref}]}))
    assert built == sent == ("INVALID_INPUT", "The atom is already retired.",
                             {"path": "changes[0].target", "changeId": "retire"})


def test_a_person_binds_only_the_policies_they_write(acme):
    person = Principal.for_person(acme, "bob")
    assert _error(lambda: writing_binding(person, "private"))[:2] == (
        "ACCESS_DENIED", "The write policy is not granted to this key.")
