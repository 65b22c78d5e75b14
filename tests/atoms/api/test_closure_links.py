"""The closure statement of read (atoms.services.links `load_closure_links`, docs/atoms.md "Read
path costs") walks this tenant's revisions only."""

from __future__ import annotations

from typing import Any

from atoms.models import Revision, Slot
from atoms.services.links import load_closure_links
from tests.atoms.api.helpers import AtomsClient, create


def test_the_closure_walk_never_follows_a_link_into_another_tenant(
        I: AtomsClient, globex: Any, make_key: Any, client_for: Any) -> None:
    """No write can pin another tenant's revision, so the slot is stored directly: the walk
    must neither list that revision as a member nor read its links."""
    I.ok_write(create("r", "acme root", {"needs": {"local": "c", "required": True}}), create("c", "acme condition"))
    key, raw = make_key(globex, "ingest")
    AtomsClient(client_for(raw), key).ok_write(
        create("g", "globex root", {"needs": {"local": "h", "required": True}}), create("h", "globex detail"))
    root = Revision.objects.get(body="acme root")
    condition = Revision.objects.get(body="acme condition")
    foreign = Revision.objects.get(body="globex root")
    Slot.objects.create(revision=root, tenant_id=root.tenant_id, position=1, role="needs", mode="refer",
                        target_atom_id=foreign.atom_id, target_revision_id=foreign.id, required=True, order_key="z")

    links = load_closure_links(root.tenant_id, [root.id])

    assert set(links.members) == {root.id, condition.id}
    assert {slot.revision_id for slot in links.slots} == {root.id}
    assert foreign.id not in links.rows


def test_the_with_tables_of_a_link_statement_name_every_column_once() -> None:
    """The linking slots' WITH table holds slot and revision columns side by side, and the
    level's holds slot columns and the target's head id: a revision field named like a slot
    column would make the statement ambiguous on PostgreSQL."""
    from atoms.services.links import _SLOT_COLUMNS
    from atoms.services.rows import ATTNAMES

    columns = [*_SLOT_COLUMNS, *ATTNAMES]
    assert len(set(columns)) == len(columns)
    assert "head_id" not in _SLOT_COLUMNS
