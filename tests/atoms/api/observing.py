"""Helpers for tests of observe, input tokens and staleness (docs/atoms.md "Decisions"); `obs(R)` makes the
token most tests use."""

from __future__ import annotations

from typing import Any

from atoms.core.canonical import sha256_hex
from atoms.models import AtomStore, Ref, Revision
from atoms.principal import Principal, resolve_binding
from atoms.services.receipts import create_receipt
from atoms.services.refs import issue_ref
from tests.atoms.api.helpers import AtomsClient

PAYLOAD = sha256_hex("the model payload")


def own_ref(client: AtomsClient, ref: str) -> str:
    """The client's own ref for the revision another key's ref names. search and read
    will hand agents their refs; until they exist, tests issue them directly."""
    return issue_ref(Principal.for_key(client.key), Revision.objects.get(id=Ref.objects.get(id=ref).revision_id))


def atom_of(ref: str) -> str:
    return Ref.objects.get(id=ref).atom_id


def inspect_receipt(client: AtomsClient, ref: str) -> str:
    """The agent inspects one atom alone (limit 0) and gets a receipt presenting it."""
    response = client.post("inspect", {"ref": ref, "options": {"limit": 0}})
    assert response.status_code == 200, response.content
    return response.json()["receipt"]["id"]


def observe(host: AtomsClient, agent: AtomsClient, **input_: Any) -> Any:
    body = {"binding": {"key": agent.key.public_id}, "input": {"payloadDigest": PAYLOAD, **input_}}
    return host.post("observe", body)


def ok_observe(host: AtomsClient, agent: AtomsClient, **input_: Any) -> dict[str, Any]:
    response = observe(host, agent, **input_)
    assert response.status_code == 200, response.content
    return response.json()


def token(host: AtomsClient, agent: AtomsClient, **input_: Any) -> str:
    return ok_observe(host, agent, **input_)["input"]


def obs(host: AtomsClient, agent: AtomsClient, ref: str, **input_: Any) -> str:
    """obs(R): the agent inspects R (its own ref), the host observes that receipt, and the token comes back."""
    return token(host, agent, presentations=[{"receipt": inspect_receipt(agent, ref)}], **input_)


def manifest(host: AtomsClient, agent: AtomsClient, **body: Any) -> Any:
    return host.post("manifest", {"binding": {"key": agent.key.public_id}, **body})


def search_receipt(agent: AtomsClient, query: str, returned: list[str], *, full: bool = False,
                   m_floor: float = 0) -> str:
    """A receipt carrying one search observation, in the stored form of docs/atoms.md "Decisions", over the agent's
    refs `returned`.
    search will produce these; until it exists, tests build them with create_receipt."""
    binding = resolve_binding(Principal.for_key(agent.key), None)
    revisions = [Revision.objects.get(id=Ref.objects.get(id=r).revision_id) for r in returned]
    seq = AtomStore.get_or_create_for(agent.key.tenant).seq
    observation = {"kind": "search", "signals": {"query": [query]}, "readPolicies": ["default"], "seq": seq,
                   "revisions": [{"kind": "pinned", "atomId": r.atom_id, "revisionId": r.id} for r in revisions],
                   "full": full, "mFloor": m_floor}
    units = [{"revision": r, "view": {"ref": ref, "text": r.body}, "display": "body"}
             for r, ref in zip(revisions, returned, strict=True)]
    receipt = create_receipt(binding=binding, kind="search", signal=query, reads=revisions, units=units,
                             observations=[observation], state_seq=seq)
    return receipt.id
