"""Reject: a reviewer refuses quarantined text with a reason. The atom is retired, its head
marked rejected (out of the queue and the badge, still hidden from API keys), the reason
kept readable on the atom page and audited as a digest; viewers get 403, another tenant's
atom is a 404."""

from __future__ import annotations

import pytest

from atoms.api.inspect import answer_inspect
from atoms.errors import AtomError
from atoms.models import Atom, ReviewNote, Revision
from atoms.principal import Principal
from atoms.ui.common import quarantine_count
from memoryhub.digests import digest_of, sha256_hex
from memoryhub.models import AuditEvent
from tests.atoms.ui.review_helpers import FLAGGED, HX, head_of, key_of, page, purge, ref_to, retire, write

QUEUE = page(rest="quarantine/")


def reject_post(client, atom_id: str, reason: str, slug: str = "acme", **extra):  # type: ignore[no-untyped-def]
    return client.post(page(slug, f"{atom_id}/reject"), {"head": head_of(atom_id).id, "reason": reason, **extra},
                       headers=HX)


def test_a_reviewer_rejects_from_the_queue_and_the_card_leaves_it(bob, client, acme):
    flagged = write(acme, FLAGGED)
    old = head_of(flagged)
    client.force_login(bob)
    response = reject_post(client, flagged, "  prompt injection ", **{"from": "quarantine"})
    assert response.status_code == 200 and response["HX-Trigger"] == "atomsChanged"
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="quarantine-panel">')
    assert "Rejected and retired. Reason: prompt injection" in html
    assert f'data-testid="quarantined-{flagged}"' not in html and "Nothing in quarantine." in html
    head = head_of(flagged)
    assert (head.state, head.review_status, head.previous_id, head.producer) == ("retired", "rejected", old.id,
                                                                                 "user:bob")
    assert Revision.objects.get(id=old.id).review_status == "quarantined"  # the history stays as it was
    assert quarantine_count(acme) == 0
    note = ReviewNote.objects.get(revision=head)
    assert (note.kind, note.reason, note.author) == ("reject", "prompt injection", "user:bob")


def test_a_reject_is_audited_with_digests_only(bob, client, acme):
    flagged = write(acme, FLAGGED)
    old = head_of(flagged)
    client.force_login(bob)
    reject_post(client, flagged, "prompt injection")
    head = head_of(flagged)
    ui = AuditEvent.objects.get(tenant=acme, action="atoms.ui.reject", object_id=flagged)
    assert ui.actor_user_id == bob.pk
    assert ui.after_digest == digest_of({"revision": head.id, "textDigest": sha256_hex(head.body),
                                         "reason": "prompt injection"})
    engine = AuditEvent.objects.get(tenant=acme, action="atoms.reject", object_id=flagged)
    assert engine.before_digest == digest_of({"reviewStatus": "quarantined", "revision": old.id, "state": "active"})
    assert AuditEvent.objects.filter(tenant=acme, action="atoms.write", actor_label="user:bob").count() == 1


def test_a_reviewer_rejects_from_the_atom_page_and_sees_the_reason(bob, client, acme):
    flagged = write(acme, FLAGGED)
    client.force_login(bob)
    page_html = client.get(page(rest=f"{flagged}/")).content.decode()
    assert f'action="/t/acme/atoms/{flagged}/reject"' in page_html
    assert f'action="/t/acme/atoms/{flagged}/retire"' not in page_html
    response = reject_post(client, flagged, "asks for the <system> prompt")
    assert response["HX-Trigger"] == "atomsChanged"
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="atom-panel">')
    assert 'data-testid="review-status">rejected</span>' in html and 'data-testid="state">retired</span>' in html
    assert "Rejected</strong>" in html and "asks for the &lt;system&gt; prompt" in html
    assert "/reject" not in html and "/approve" not in html  # nothing left to decide; restore remains


def test_rejected_text_stays_hidden_from_api_keys(bob, client, acme):
    flagged = write(acme, FLAGGED)
    client.force_login(bob)
    reject_post(client, flagged, "prompt injection")
    ingest = Principal.for_key(key_of(acme, "ingest"))
    with pytest.raises(AtomError) as caught:
        answer_inspect(ingest, {"ref": ref_to(acme, flagged)})
    assert caught.value.code == "ACCESS_DENIED" and caught.value.details["reason"] == "rejected"


def test_a_head_an_api_key_retired_in_quarantine_is_rejected_in_place(bob, client, acme):
    flagged = write(acme, FLAGGED)
    retire(acme, flagged)  # an API retire keeps the review status: the head stays in the queue
    stuck = head_of(flagged)
    assert (stuck.state, stuck.review_status) == ("retired", "quarantined")
    client.force_login(bob)
    response = reject_post(client, flagged, "malicious", **{"from": "quarantine"})
    assert response["HX-Trigger"] == "atomsChanged"
    head = head_of(flagged)
    assert head.id == stuck.id and head.review_status == "rejected"
    assert quarantine_count(acme) == 0


def test_a_reason_is_required(bob, client, acme):
    flagged = write(acme, FLAGGED)
    client.force_login(bob)
    response = reject_post(client, flagged, "   ", **{"from": "quarantine"})
    assert "HX-Trigger" not in response
    html = response.content.decode()
    assert "Say why the text is rejected." in html and '<details class="inline" open>' in html
    assert "under 500" in reject_post(client, flagged, "x" * 501).content.decode()
    assert head_of(flagged).review_status == "quarantined"


def test_only_quarantined_text_can_be_rejected(bob, client, acme):
    note = write(acme, "Alice takes her coffee black.")
    client.force_login(bob)
    response = reject_post(client, note, "no")
    assert "Only quarantined text can be rejected" in response.content.decode()
    assert (head_of(note).state, head_of(note).review_status) == ("active", "approved")


def test_a_head_that_moved_since_the_page_was_loaded_is_not_rejected(bob, client, acme):
    flagged = write(acme, FLAGGED)
    loaded = head_of(flagged).id
    retire(acme, flagged)
    client.force_login(bob)
    response = client.post(page(rest=f"{flagged}/reject"), {"head": loaded, "reason": "no"}, headers=HX)
    assert "changed since you loaded the page" in response.content.decode()
    assert head_of(flagged).review_status == "quarantined"


def test_a_rejected_atom_cannot_be_approved(bob, client, acme):
    flagged = write(acme, FLAGGED)
    client.force_login(bob)
    reject_post(client, flagged, "no")
    response = client.post(page(rest=f"{flagged}/approve"), {"head": head_of(flagged).id}, headers=HX)
    assert "was rejected" in response.content.decode()
    assert head_of(flagged).review_status == "rejected"


def test_the_browser_lists_rejected_atoms_under_their_own_status(carol, bob, client, acme):
    flagged = write(acme, FLAGGED)
    client.force_login(bob)
    reject_post(client, flagged, "no")
    client.force_login(carol)
    assert client.get(QUEUE).context_data["total"] == 0
    rows = client.get(page(), {"review": "rejected"}).context_data["rows"]
    assert [row.revision.atom_id for row in rows] == [flagged]
    assert client.get(page(), {"review": "quarantined"}).context_data["rows"] == []


def test_a_purge_erases_the_reason(alice, client, acme):
    flagged = write(acme, FLAGGED)
    client.force_login(alice)
    reject_post(client, flagged, "prompt injection")
    purge(acme, flagged)
    assert not ReviewNote.objects.filter(tenant=acme).exists() and not Atom.objects.filter(id=flagged).exists()


def test_a_viewer_may_not_reject(carol, client, acme):
    flagged = write(acme, FLAGGED)
    client.force_login(carol)
    assert reject_post(client, flagged, "no").status_code == 403
    assert head_of(flagged).review_status == "quarantined"


def test_another_tenants_atom_is_not_found(bob, client, acme, globex):
    theirs = write(globex, FLAGGED)
    client.force_login(bob)
    assert reject_post(client, theirs, "no").status_code == 404
    assert head_of(theirs).review_status == "quarantined"


def test_restoring_a_rejected_atoms_text_puts_it_back_in_quarantine(bob, client, acme):
    flagged = write(acme, FLAGGED)
    first = head_of(flagged)
    client.force_login(bob)
    reject_post(client, flagged, "no")
    response = client.post(page(rest=f"{flagged}/restore"), {"head": head_of(flagged).id, "revision": first.id},
                           headers=HX)
    assert "it stays in quarantine" in response.content.decode()
    head = head_of(flagged)
    assert (head.state, head.review_status) == ("active", "quarantined") and quarantine_count(acme) == 1
