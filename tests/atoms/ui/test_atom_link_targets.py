"""The atom picker's endpoint (`t/<slug>/atoms/<atom id>/link-targets?q=`): the tenant's
atoms matching the typed text, best first, for people who may edit; it writes nothing."""

from __future__ import annotations

import re

from atoms.models import AtomStore, Receipt, Ref
from tests.atoms.ui.review_helpers import FLAGGED, HX, page, write


def find(client, atom_id: str, q: str, slug: str = "acme", htmx: bool = True):  # type: ignore[no-untyped-def]
    return client.get(page(slug, f"{atom_id}/link-targets"), {"q": q}, headers=HX if htmx else {})


def picked(response) -> list[str]:  # type: ignore[no-untyped-def]
    """The atom ids the results offer, in order."""
    return re.findall(r'data-pick="(atom:[^"]+)"', response.content.decode())


def test_it_offers_the_atoms_whose_text_matches_as_buttons_best_first(bob, client, acme):
    note = write(acme, "A note to link from")
    espresso = write(acme, "Alice drinks espresso after lunch.")
    double = write(acme, "Espresso, espresso: Bob orders a double espresso.")
    write(acme, "Tea in the afternoon.")
    client.force_login(bob)
    response = find(client, note, "espresso")
    assert response.status_code == 200
    assert set(picked(response)) == {espresso, double}
    html = response.content.decode()
    assert "<html" not in html  # the partial only
    assert f'<button type="button" class="pick" data-pick="{espresso}" data-pick-label="Alice drinks espresso after lunch.">' in html


def test_it_completes_the_word_being_typed(bob, client, acme):
    note = write(acme, "A note to link from")
    espresso = write(acme, "Alice drinks espresso after lunch.")
    client.force_login(bob)
    assert picked(find(client, note, "espr")) == [espresso]
    assert picked(find(client, note, "espr ")) == []  # a finished word is taken as it is


def test_it_leaves_out_the_atom_being_edited_and_stops_at_ten(bob, client, acme):
    note = write(acme, "coffee note to link from")
    others = [write(acme, f"coffee number {i}") for i in range(12)]
    client.force_login(bob)
    found = picked(find(client, note, "coffee"))
    assert len(found) == 10 and note not in found and set(found) <= set(others)
    assert note not in picked(find(client, note, "note"))


def test_an_atom_id_finds_that_atom(bob, client, acme):
    note = write(acme, "A note to link from")
    target = write(acme, "Only on weekdays.")
    client.force_login(bob)
    assert picked(find(client, note, f" {target} ")) == [target]
    assert picked(find(client, note, note)) == []


def test_quarantined_atoms_are_not_offered(bob, client, acme):
    note = write(acme, "A note to link from")
    write(acme, FLAGGED)
    client.force_login(bob)
    response = find(client, note, "instructions")
    assert picked(response) == [] and 'data-testid="picker-none"' in response.content.decode()


def test_a_blank_query_offers_nothing(bob, client, acme):
    note = write(acme, "A note to link from")
    client.force_login(bob)
    response = find(client, note, "   ")
    assert response.status_code == 200 and picked(response) == []


def test_it_writes_no_receipt_and_no_ref(bob, client, acme):
    note = write(acme, "A note to link from")
    write(acme, "Alice drinks espresso after lunch.")
    receipts, refs = Receipt.objects.count(), Ref.objects.count()
    client.force_login(bob)
    for q in ("e", "es", "esp", "espresso", "espresso after"):
        assert find(client, note, q).status_code == 200
    assert (Receipt.objects.count(), Ref.objects.count()) == (receipts, refs)


def test_other_tenants_atoms_never_appear(bob, dave, client, acme, globex):
    note = write(acme, "A note to link from")
    ours = write(acme, "Espresso at the acme office.")
    theirs_note = write(globex, "A globex note")
    theirs = write(globex, "Espresso at the globex office.")
    client.force_login(bob)
    assert picked(find(client, note, "espresso")) == [ours]
    assert picked(find(client, note, "globex")) == []
    assert picked(find(client, note, theirs)) == []  # not even by id
    client.force_login(dave)
    assert picked(find(client, theirs_note, "espr", slug="globex")) == [theirs]


def test_another_tenants_atom_is_not_found(bob, dave, client, acme, globex):
    theirs = write(globex, "A globex note")
    client.force_login(bob)
    assert find(client, theirs, "note").status_code == 404
    assert find(client, "atom:00000000-0000-4000-8000-000000000000", "note").status_code == 404
    client.force_login(dave)
    ours = write(acme, "An acme note")
    assert find(client, ours, "note").status_code == 404  # dave is not a member of acme


def test_a_viewer_is_refused(carol, erin, client, acme, globex):
    note = write(acme, "A note")
    client.force_login(carol)
    assert find(client, note, "note").status_code == 403
    theirs = write(globex, "A globex note")
    client.force_login(erin)  # reviewer in acme, viewer in globex
    assert find(client, note, "note").status_code == 200
    assert find(client, theirs, "note", slug="globex").status_code == 403


def test_it_closes_while_a_purge_is_pending(bob, client, acme):
    note = write(acme, "A note")
    AtomStore.objects.filter(tenant=acme).update(purge_barrier={"atomId": note})
    client.force_login(bob)
    assert find(client, note, "note").status_code == 403


def test_without_htmx_the_page_lists_ids_and_links(bob, client, acme):
    note = write(acme, "A note to link from")
    espresso = write(acme, "Alice drinks espresso after lunch.")
    client.force_login(bob)
    response = find(client, note, "espresso", htmx=False)
    html = response.content.decode()
    assert response.status_code == 200 and "<html" in html and "Find a link target" in html
    assert f'<a href="/t/acme/atoms/{espresso}/">Alice drinks espresso after lunch.</a>' in html
    assert f'<code class="id">{espresso}</code>' in html
    assert "data-pick=" not in html and "style=" not in html


def test_the_edit_form_carries_the_picker_and_the_plain_id_field(bob, client, acme):
    note = write(acme, "A note to link from")
    client.force_login(bob)
    html = client.get(page("acme", f"{note}/")).content.decode()
    assert f'hx-get="/t/acme/atoms/{note}/link-targets"' in html
    assert '<div class="picker" data-picker="new-target" hidden>' in html  # shown by its script only
    assert '<input id="new-target" name="new_target"' in html
    assert "js/atom-picker.js" in html
