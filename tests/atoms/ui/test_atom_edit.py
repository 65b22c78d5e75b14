"""Edit: a human revise through atoms_write (origin source, approved), links and sources
kept unless the form changes them; audited; conflicts and bad input re-render with 200."""

from __future__ import annotations

from atoms.models import Origin, Slot
from atoms.services.staleness import is_stale
from memoryhub.models import AuditEvent
from tests.atoms.ui.review_helpers import FLAGGED, HX, agent_write, head_of, page, revise, write


def edit(client, atom_id: str, text: str, head: str | None = None, slug: str = "acme", **fields):  # type: ignore[no-untyped-def]
    data = {"head": head or head_of(atom_id).id, "text": text, **fields}
    return client.post(page(slug, f"{atom_id}/edit"), data, headers=HX)


def linked_note(acme) -> tuple[str, str, str, str]:  # type: ignore[no-untyped-def]
    source = write(acme, "Alice takes her coffee black.")
    condition = write(acme, "Only on weekdays.")
    about = write(acme, "Alice")
    note = write(acme, "Alice likes coffee", links=[{"role": "condition", "atom": condition, "required": True},
                                                     {"role": "about", "atom": about, "at": "observed"}],
                 sources=[{"atom": source, "start": 0, "end": 5}])
    return note, source, condition, about


def test_a_reviewer_edits_an_agent_atom_into_an_approved_human_revision(bob, client, acme):
    watched = write(acme, "The plan is A.")
    output = agent_write(acme, "Summary: plan A", watching=watched)
    generated = agent_write(acme, "Summary of the summary", watching=output)
    old_head = head_of(output)
    client.force_login(bob)
    response = edit(client, output, "Summary: plan A (checked)")
    assert response.status_code == 200 and response["HX-Trigger"] == "atomsChanged"
    assert 'data-testid="atom-notice">Saved as a new revision.</p>' in response.content.decode()
    head = head_of(output)
    assert head.id != old_head.id and head.previous_id == old_head.id
    assert (head.body, head.review_status, head.origin, head.producer, head.dependency_contract) == (
        "Summary: plan A (checked)", "approved", "source", "user:bob", "source-v2")
    assert is_stale(head_of(generated))  # it watched the old head, and an edit is a new head
    write_event = AuditEvent.objects.get(tenant=acme, action="atoms.write", actor_label="user:bob")
    ui_event = AuditEvent.objects.get(tenant=acme, action="atoms.ui.edit", object_id=output)
    assert ui_event.actor_user_id == bob.pk and ui_event.before_digest and ui_event.after_digest
    assert write_event.object_id == head.operation_id


def test_links_and_sources_are_kept_as_they_were(bob, client, acme):
    note, source, _, about = linked_note(acme)
    before = [(s.role, s.target_atom_id, s.target_revision_id, s.required, s.order_key)
              for s in Slot.objects.filter(revision=head_of(note)).order_by("position")]
    client.force_login(bob)
    edit(client, note, "Alice likes coffee a lot", keep_link_shown="1", keep_link=["0", "1"],
         keep_source_shown="1", keep_source=["0"])
    head = head_of(note)
    after = [(s.role, s.target_atom_id, s.target_revision_id, s.required, s.order_key)
             for s in Slot.objects.filter(revision=head).order_by("position")]
    assert after == before and after[1][2] == head_of(about).id  # the observed link still pins its revision
    assert [(o.source_atom_id, o.start, o.end) for o in Origin.objects.filter(revision=head)] == [(source, 0, 5)]


def test_a_form_without_the_lists_keeps_everything(bob, client, acme):
    note, *_ = linked_note(acme)
    client.force_login(bob)
    edit(client, note, "only the text changes")
    assert Slot.objects.filter(revision=head_of(note)).count() == 2
    assert Origin.objects.filter(revision=head_of(note)).count() == 1


def test_the_form_drops_a_link_and_a_source_and_adds_a_link(bob, client, acme):
    note, _, _, about = linked_note(acme)
    extra = write(acme, "Weekends too")
    client.force_login(bob)
    response = edit(client, note, "Alice likes coffee", keep_link_shown="1", keep_link=["1"], keep_source_shown="1",
                    new_role="see-also", new_target=extra, new_required="on")
    assert response["HX-Trigger"] == "atomsChanged"
    head = head_of(note)
    assert [(s.role, s.target_atom_id, s.required) for s in Slot.objects.filter(revision=head).order_by("position")] == [
        ("about", about, False), ("see-also", extra, True)]
    assert not Origin.objects.filter(revision=head).exists()


def test_garbled_keep_positions_are_ignored_and_line_ends_are_unix(bob, client, acme):
    note, _, condition, about = linked_note(acme)
    extra = write(acme, "Weekends too")
    client.force_login(bob)
    response = edit(client, note, "Alice likes\r\ncoffee", keep_link_shown="1", keep_link=["0", "one", "-1", "1.0"],
                    keep_source_shown="1", keep_source=["x"], new_role=" see-also ", new_target=f" {extra} ",
                    new_at="observed")
    assert response["HX-Trigger"] == "atomsChanged"
    head = head_of(note)
    assert head.body == "Alice likes\ncoffee"
    assert [(s.role, s.target_atom_id, s.target_revision_id, s.required)
            for s in Slot.objects.filter(revision=head).order_by("position")] == [
        ("condition", condition, "", True), ("see-also", extra, head_of(extra).id, False)]
    assert about not in {s.target_atom_id for s in Slot.objects.filter(revision=head)}
    assert not Origin.objects.filter(revision=head).exists()


def test_a_new_link_to_an_unknown_or_foreign_atom_is_refused(bob, client, acme, globex):
    note = write(acme, "note")
    theirs = write(globex, "globex")
    client.force_login(bob)
    for target in (theirs, "atom:nope"):
        response = edit(client, note, "note 2", new_role="about", new_target=target)
        assert response.status_code == 200 and "HX-Trigger" not in response
        assert f"No atom {target} in this tenant." in response.content.decode()
    half = edit(client, note, "note 2", new_role="about")
    assert "needs both a role and a target" in half.content.decode()
    assert head_of(note).body == "note"


def test_a_conflicting_edit_keeps_the_draft_and_writes_nothing(bob, client, acme):
    note = write(acme, "v1")
    seen = head_of(note).id
    revise(acme, note, "v2 by someone else")
    client.force_login(bob)
    response = edit(client, note, "my careful edit", head=seen)
    assert response.status_code == 200 and "HX-Trigger" not in response
    html = response.content.decode()
    assert "changed since you loaded the page" in html
    assert "my careful edit</textarea>" in html and '<details class="edit" open>' in html
    assert head_of(note).body == "v2 by someone else"


def test_an_empty_text_is_refused(bob, client, acme):
    note = write(acme, "v1")
    client.force_login(bob)
    response = edit(client, note, "   ")
    assert response.status_code == 200 and "cannot be empty" in response.content.decode()
    assert head_of(note).body == "v1"


def test_an_engine_refusal_is_shown_with_its_code(bob, client, acme):
    note = write(acme, "v1")
    client.force_login(bob)
    response = edit(client, note, "x" * 70_000)
    assert response.status_code == 200 and "(LIMIT_EXCEEDED)" in response.content.decode()
    assert head_of(note).body == "v1"


def test_flagged_text_stays_quarantined(bob, client, acme):
    flagged = write(acme, FLAGGED)
    client.force_login(bob)
    response = edit(client, flagged, FLAGGED + " Still.")
    assert "it stays in quarantine" in response.content.decode()
    assert head_of(flagged).review_status == "quarantined"
    cleaned = edit(client, flagged, "A harmless sentence.")
    assert cleaned["HX-Trigger"] == "atomsChanged" and head_of(flagged).review_status == "approved"


def test_a_viewer_may_not_edit(carol, client, acme):
    note = write(acme, "v1")
    client.force_login(carol)
    assert edit(client, note, "v2").status_code == 403
    assert head_of(note).body == "v1"


def test_another_tenants_atom_is_not_found(bob, client, acme, globex):
    theirs = write(globex, "v1")
    client.force_login(bob)
    assert edit(client, theirs, "v2").status_code == 404
    assert head_of(theirs).body == "v1"
