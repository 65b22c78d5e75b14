"""Approve: reviewers and admins mark a head approved through atoms_approve (audited);
viewers get 403; another tenant's atom is a 404; a head that moved is not approved."""

from __future__ import annotations

from django.test import Client

from atoms.models import AtomStore, Revision
from memoryhub.models import AuditEvent
from tests.atoms.ui.review_helpers import FLAGGED, HX, agent_write, head_of, page, revise, write


def approve(client, atom_id: str, head: str | None = None, slug: str = "acme", **extra):  # type: ignore[no-untyped-def]
    return client.post(page(slug, f"{atom_id}/approve"), {"head": head or head_of(atom_id).id, **extra}, headers=HX)


def test_a_reviewer_approves_an_unreviewed_atom(bob, client, acme):
    note = agent_write(acme, "agent guess")
    seq = AtomStore.objects.get(tenant=acme).seq
    client.force_login(bob)
    response = approve(client, note)
    assert response.status_code == 200
    assert response["HX-Trigger"] == "atomsChanged"
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="atom-panel">')
    assert 'data-testid="atom-notice">Approved.</p>' in html and 'data-testid="review-status">approved</span>' in html
    head = head_of(note)
    assert (head.review_status, head.visible_seq) == ("approved", seq + 1)
    event = AuditEvent.objects.get(tenant=acme, action="atoms.approve", object_id=note)
    assert (event.actor_kind, event.actor_label, event.actor_user_id) == ("user", "user:bob", bob.pk)


def test_an_admin_approves_from_the_quarantine_queue(alice, client, acme):
    flagged = write(acme, FLAGGED)
    client.force_login(alice)
    response = approve(client, flagged, **{"from": "quarantine"})
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="quarantine-panel">')
    assert 'data-testid="quarantine-notice">Approved.</p>' in html and 'data-testid="quarantine-empty"' in html
    assert head_of(flagged).review_status == "approved"


def test_a_plain_post_renders_the_whole_page(bob, client, acme):
    note = agent_write(acme, "x")
    client.force_login(bob)
    response = client.post(page(rest=f"{note}/approve"), {"head": head_of(note).id})
    assert response.status_code == 200 and b"<html" in response.content


def test_approving_an_approved_head_changes_nothing(bob, client, acme):
    note = write(acme, "already fine")
    client.force_login(bob)
    response = approve(client, note)
    assert "already approved" in response.content.decode()
    assert not AuditEvent.objects.filter(action="atoms.approve").exists()


def test_a_head_that_moved_since_the_page_loaded_is_not_approved(bob, client, acme):
    note = agent_write(acme, "first guess")
    seen = head_of(note).id
    revise(acme, note, "an ingest rewrite")
    Revision.objects.filter(id=head_of(note).id).update(review_status="unreviewed")
    client.force_login(bob)
    response = approve(client, note, head=seen)
    assert response.status_code == 200 and "HX-Trigger" not in response
    assert "changed since you loaded the page" in response.content.decode()
    assert head_of(note).review_status == "unreviewed"


def test_a_viewer_may_not_approve(carol, client, acme):
    note = agent_write(acme, "agent guess")
    client.force_login(carol)
    assert approve(client, note).status_code == 403
    assert head_of(note).review_status == "unreviewed"


def test_approving_needs_a_post(bob, client, acme):
    note = agent_write(acme, "agent guess")
    client.force_login(bob)
    assert client.get(page(rest=f"{note}/approve")).status_code == 405


def test_another_tenants_atom_is_not_found(erin, client, acme, globex):
    theirs = agent_write(globex, "globex guess")
    client.force_login(erin)  # reviewer of acme, viewer of globex
    assert approve(client, theirs).status_code == 404
    assert approve(client, theirs, slug="globex").status_code == 403
    assert head_of(theirs).review_status == "unreviewed"


def test_nothing_is_approved_while_a_purge_is_pending(bob, client, acme):
    note = agent_write(acme, "agent guess")
    AtomStore.objects.filter(tenant=acme).update(purge_barrier={"atomId": "atom:x"})
    client.force_login(bob)
    assert approve(client, note).status_code == 403
    assert head_of(note).review_status == "unreviewed"


def test_a_post_without_the_csrf_token_is_refused(bob, acme):
    note = agent_write(acme, "agent guess")
    client = Client(enforce_csrf_checks=True)
    client.force_login(bob)
    assert approve(client, note).status_code == 403
    assert head_of(note).review_status == "unreviewed"
