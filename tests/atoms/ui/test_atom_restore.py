"""Restore: an earlier revision's text (or a retired atom's) comes back as a new human
revision through atoms_write; the head's links and sources are kept."""

from __future__ import annotations

from atoms.models import Revision, Slot
from memoryhub.models import AuditEvent
from tests.atoms.ui.review_helpers import HX, head_of, page, retire, revise, write


def restore(client, atom_id: str, revision: str, slug: str = "acme"):  # type: ignore[no-untyped-def]
    return client.post(page(slug, f"{atom_id}/restore"), {"head": head_of(atom_id).id, "revision": revision},
                       headers=HX)


def first_revision(atom_id: str) -> Revision:
    return Revision.objects.filter(atom_id=atom_id).order_by("seq").first()  # type: ignore[return-value]


def test_a_reviewer_restores_an_older_text_as_a_new_revision(bob, client, acme):
    target = write(acme, "weekdays")
    note = write(acme, "I like coffee.", links=[{"role": "condition", "atom": target}])
    original = first_revision(note)
    revise(acme, note, "I like tea.")  # drops the link
    client.force_login(bob)
    response = restore(client, note, original.id)
    assert response.status_code == 200 and response["HX-Trigger"] == "atomsChanged"
    assert "Restored the text as a new revision." in response.content.decode()
    head = head_of(note)
    assert (head.body, head.producer, head.review_status, head.origin) == ("I like coffee.", "user:bob", "approved",
                                                                            "source")
    assert not Slot.objects.filter(revision=head).exists()  # the head's (empty) links were kept
    assert Revision.objects.filter(atom_id=note).count() == 3
    assert AuditEvent.objects.filter(tenant=acme, action="atoms.ui.restore", actor_user_id=bob.pk).count() == 1


def test_restoring_a_retired_atom_reactivates_it(bob, client, acme):
    note = write(acme, "back again")
    retire(acme, note)
    client.force_login(bob)
    restore(client, note, head_of(note).id)
    head = head_of(note)
    assert (head.state, head.body) == ("active", "back again")


def test_restoring_the_current_text_is_refused(bob, client, acme):
    note = write(acme, "same")
    client.force_login(bob)
    response = restore(client, note, head_of(note).id)
    assert response.status_code == 200 and "HX-Trigger" not in response
    assert "already the current text" in response.content.decode()
    assert Revision.objects.filter(atom_id=note).count() == 1


def test_a_revision_of_another_atom_is_refused(bob, client, acme):
    note = write(acme, "mine")
    revise(acme, note, "mine 2")
    other = write(acme, "other")
    client.force_login(bob)
    response = restore(client, note, head_of(other).id)
    assert "not part of this atom&#x27;s history" in response.content.decode()
    assert head_of(note).body == "mine 2"


def test_a_viewer_may_not_restore(carol, client, acme):
    note = write(acme, "one")
    revise(acme, note, "two")
    client.force_login(carol)
    assert restore(client, note, first_revision(note).id).status_code == 403
    assert head_of(note).body == "two"


def test_another_tenants_atom_is_not_found(bob, client, acme, globex):
    theirs = write(globex, "one")
    revise(globex, theirs, "two")
    client.force_login(bob)
    assert restore(client, theirs, first_revision(theirs).id).status_code == 404
