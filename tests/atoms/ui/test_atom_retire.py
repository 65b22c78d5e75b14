"""Retire: a human retire through atoms_write, with a required reason that is audited (as
a digest); viewers get 403; another tenant's atom is a 404."""

from __future__ import annotations

from memoryhub.digests import digest_of, sha256_hex
from memoryhub.models import AuditEvent
from tests.atoms.ui.review_helpers import FLAGGED, HX, head_of, page, retire, write


def retire_post(client, atom_id: str, reason: str, slug: str = "acme", **extra):  # type: ignore[no-untyped-def]
    return client.post(page(slug, f"{atom_id}/retire"), {"head": head_of(atom_id).id, "reason": reason, **extra},
                       headers=HX)


def test_a_reviewer_retires_with_a_reason_and_it_is_audited(bob, client, acme):
    target = write(acme, "Only on weekdays.")
    note = write(acme, "Alice's order", links=[{"role": "condition", "atom": target, "required": True}])
    old = head_of(note)
    client.force_login(bob)
    response = retire_post(client, note, "  duplicate of another note ")
    assert response.status_code == 200 and response["HX-Trigger"] == "atomsChanged"
    assert "Retired. Reason: duplicate of another note" in response.content.decode()
    head = head_of(note)
    assert (head.state, head.body, head.producer, head.previous_id) == ("retired", old.body, "user:bob", old.id)
    assert head.slots.get().target_atom_id == target  # a retire copies the links (invariant 3)
    event = AuditEvent.objects.get(tenant=acme, action="atoms.ui.retire", object_id=note)
    expected = {"revision": head.id, "operation": head.operation_id, "textDigest": sha256_hex(head.body),
                "reason": "duplicate of another note"}
    assert event.after_digest == digest_of(expected) and event.actor_user_id == bob.pk
    assert AuditEvent.objects.filter(tenant=acme, action="atoms.write", actor_label="user:bob").count() == 1


def test_a_reason_is_required(bob, client, acme):
    note = write(acme, "keep me")
    client.force_login(bob)
    response = retire_post(client, note, "   ")
    assert response.status_code == 200 and "HX-Trigger" not in response
    html = response.content.decode()
    assert "Say why the atom is retired." in html and '<details class="retire" open>' in html
    assert head_of(note).state == "active"
    assert "under 500" in retire_post(client, note, "x" * 501).content.decode()


def test_an_already_retired_atom_is_not_retired_again(bob, client, acme):
    note = write(acme, "gone")
    retire(acme, note)
    client.force_login(bob)
    response = retire_post(client, note, "again")
    assert "already retired" in response.content.decode()
    assert head_of(note).producer.startswith("key:")


def test_quarantined_text_is_rejected_not_retired(bob, client, acme):
    flagged = write(acme, FLAGGED)
    client.force_login(bob)
    response = retire_post(client, flagged, "prompt injection", **{"from": "quarantine"})
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="quarantine-panel">') and "use Reject" in html
    assert "HX-Trigger" not in response
    assert head_of(flagged).state == "active" and head_of(flagged).review_status == "quarantined"


def test_the_reason_is_shown_on_the_atom_page_afterwards(bob, carol, client, acme):
    note = write(acme, "Alice takes her coffee black.")
    client.force_login(bob)
    retire_post(client, note, "she switched to <tea>")
    client.force_login(carol)
    html = client.get(page(rest=f"{note}/")).content.decode()
    assert 'data-testid="review-note"' in html and "Retired</strong>" in html
    assert '<span class="who"><span class="actor actor-user" title="user:bob">bob</span></span>' in html
    assert "she switched to &lt;tea&gt;" in html


def test_a_viewer_may_not_retire(carol, client, acme):
    note = write(acme, "keep me")
    client.force_login(carol)
    assert retire_post(client, note, "no").status_code == 403
    assert head_of(note).state == "active"


def test_another_tenants_atom_is_not_found(bob, client, acme, globex):
    theirs = write(globex, "keep me")
    client.force_login(bob)
    assert retire_post(client, theirs, "no").status_code == 404
    assert head_of(theirs).state == "active"
