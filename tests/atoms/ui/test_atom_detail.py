"""The atom page: text, links out and in, sources, history, diff, staleness, review status
and the neighbourhood SVG. Viewers may read it; another tenant's atom is a 404."""

from __future__ import annotations

import re

from atoms.models import AtomStore, ErasureReceipt
from atoms.ui.graph import MAX_PER_SIDE
from tests.atoms.ui.review_helpers import FLAGGED, HX, agent_write, page, purge, retire, revise, write


def url(atom_id: str, slug: str = "acme") -> str:
    return page(slug, f"{atom_id}/")


def test_a_viewer_reads_the_text_links_sources_and_history(carol, client, acme):
    source = write(acme, "Alice takes her coffee black.")
    condition = write(acme, "Only on weekdays.")
    note = write(acme, "Alice's coffee order", links=[{"role": "condition", "atom": condition, "required": True},
                                                       {"role": "about", "atom": source}],
                 sources=[{"atom": source, "start": 0, "end": 5}])
    linker = write(acme, "Breakfast plan", links=[{"role": "uses", "atom": note}])
    revise(acme, note, "Alice's coffee order, black")
    client.force_login(carol)
    response = client.get(url(note))
    assert response.status_code == 200
    detail = response.context_data["detail"]
    assert detail.head.body == "Alice's coffee order, black"
    html = response.content.decode()
    assert '<pre class="entry-text atom-text" data-testid="atom-text">Alice&#x27;s coffee order, black</pre>' in html
    # The revise dropped the links: history keeps both revisions, newest first, with writers.
    assert [(r.number, r.operation, r.revision.producer.startswith("key:")) for r in detail.history] == [
        (1, "create", True), (2, "revise", True)]
    assert html.index('data-testid="revision-2"') < html.index('data-testid="revision-1"')
    assert detail.links_out == [] and [link.linker.atom_id for link in detail.links_in] == [linker]
    older = client.get(url(source))
    assert [link.slot.role for link in older.context_data["detail"].links_in] == []  # the revise dropped them
    first = client.get(url(condition))
    assert "No current revision of any atom links here." in first.content.decode()


def test_links_show_roles_required_marks_and_unavailable_targets(carol, client, acme):
    kept = write(acme, "Only on weekdays.")
    doomed = write(acme, "A doomed target")
    note = write(acme, "The order", links=[{"role": "condition", "atom": kept, "required": True},
                                           {"role": "about", "atom": doomed}])
    purge(acme, doomed)
    client.force_login(carol)
    response = client.get(url(note))
    detail = response.context_data["detail"]
    assert [(link.slot.role, link.slot.required, link.unavailable) for link in detail.links_out] == [
        ("condition", True, False), ("about", False, True)]
    html = response.content.decode()
    assert '<span class="status unavailable">unavailable</span>' in html
    assert "<strong>required</strong>" in html
    svg = re.search(r"<svg.*?</svg>", html, re.DOTALL).group(0)
    assert '<g class="edge required"><title>condition (required)</title>' in svg
    assert '<g class="edge ordinary"><title>about</title>' in svg
    assert f'<a href="/t/acme/atoms/{kept}/" class="node active"' in svg
    assert '<g class="node unavailable"' in svg and '<g class="node center"' in svg


def test_sources_show_their_quoted_spans(carol, client, acme):
    source = write(acme, "AAAABBBBCCCC")
    cited = write(acme, "About B", sources=[{"atom": source, "start": 4, "end": 8}])
    client.force_login(carol)
    html = client.get(url(cited)).content.decode()
    assert '<blockquote class="entry-text">BBBB</blockquote>' in html and "bytes 4\u20138 of" in html


def test_staleness_and_review_status_are_shown(carol, client, acme):
    watched = write(acme, "The plan is A.")
    output = agent_write(acme, "Summary: plan A", watching=watched)
    client.force_login(carol)
    fresh = client.get(url(output))
    assert fresh.context_data["detail"].stale is False
    assert 'data-testid="review-status">unreviewed</span>' in fresh.content.decode()
    assert 'data-testid="staleness">current</dd>' in fresh.content.decode()
    revise(acme, watched, "The plan is B.")
    stale = client.get(url(output))
    assert stale.context_data["detail"].stale is True
    assert '<span class="status stale" data-testid="stale">stale</span>' in stale.content.decode()


def test_a_quarantined_atom_shows_the_scanner_findings(carol, client, acme):
    flagged = write(acme, FLAGGED)
    client.force_login(carol)
    html = client.get(url(flagged)).content.decode()
    assert 'data-testid="quarantine-findings"' in html and '<code class="pattern" data-testid="pattern">prompt_injection</code>' in html


def test_the_diff_compares_any_two_revisions(carol, client, acme):
    note = write(acme, "I like coffee.")
    revise(acme, note, "I like tea.")
    revise(acme, note, "I like tea a lot.")
    client.force_login(carol)
    default = client.get(url(note))
    assert (default.context_data["diff_old"].number, default.context_data["diff_new"].number) == (2, 3)
    history = default.context_data["detail"].history
    chosen = client.get(url(note), {"a": history[0].revision.id, "b": history[2].revision.id},
                        headers={**HX, "HX-Target": "diff-panel"})
    html = chosen.content.decode()
    assert html.lstrip().startswith('<section class="card" id="diff-panel"') and "<html" not in html
    assert '<td class="del">I like <del>coffee</del>.</td>' in html
    assert '<td class="ins">I like <ins>tea a lot</ins>.</td>' in html
    assert "Revision 1 → revision 3: 1 line added, 1 removed" in html


def test_an_unknown_revision_in_the_diff_falls_back_to_the_latest_change(carol, client, acme):
    note = write(acme, "one")
    other = write(acme, "other atom")
    revise(acme, note, "two")
    client.force_login(carol)
    foreign = client.get(url(other)).context_data["detail"].head.id
    response = client.get(url(note), {"a": foreign, "b": "revision:nope"})
    assert response.context_data["diff_error"] and response.context_data["diff_old"].number == 1


def test_an_htmx_request_gets_the_atom_panel(carol, client, acme):
    note = write(acme, "x")
    client.force_login(carol)
    html = client.get(url(note), headers=HX).content.decode()
    assert html.lstrip().startswith('<div id="atom-panel">') and "<html" not in html


def test_a_viewer_sees_no_review_actions_but_a_reviewer_does(carol, bob, client, acme):
    note = agent_write(acme, "agent guess")
    revise(acme, write(acme, "filler"), "filler 2")
    client.force_login(carol)
    html = client.get(url(note)).content.decode()
    assert "/approve" not in html and "/edit" not in html and "/retire" not in html and "Restore text" not in html
    client.force_login(bob)
    html = client.get(url(note)).content.decode()
    assert f'action="/t/acme/atoms/{note}/approve"' in html and f'action="/t/acme/atoms/{note}/edit"' in html
    assert f'action="/t/acme/atoms/{note}/retire"' in html


def test_a_retired_atom_offers_restore_on_its_current_revision(bob, client, acme):
    note = write(acme, "to retire")
    retire(acme, note)
    client.force_login(bob)
    html = client.get(url(note)).content.decode()
    assert 'data-testid="state">retired</span>' in html and "Restore the text of revision 2" in html
    assert "Retire…" not in html


def test_another_tenants_atom_or_an_unknown_one_is_not_found(carol, client, acme, globex):
    theirs = write(globex, "globex only")
    client.force_login(carol)
    assert client.get(url(theirs)).status_code == 404
    assert client.get(url("atom:00000000-0000-4000-8000-000000000000")).status_code == 404
    assert client.get(url(theirs, "globex")).status_code == 404  # carol is not a member of globex


def test_a_purged_atom_is_gone_with_its_purge_date_and_receipt(carol, client, acme):
    gone = write(acme, "to purge")
    purge(acme, gone)
    receipt = ErasureReceipt.objects.get(tenant=acme)
    client.force_login(carol)
    response = client.get(url(gone))
    assert response.status_code == 410
    html = response.content.decode()
    assert f'data-testid="purged-receipt">{receipt.id}</code>' in html and "Purged on " in html
    assert "to purge" not in html
    assert 'data-testid="receipt-link"' not in html  # the receipt page is for admins


def test_an_admin_gets_a_link_to_the_receipt_of_a_purged_atom(alice, client, acme):
    gone = write(acme, "to purge")
    purge(acme, gone)
    client.force_login(alice)
    html = client.get(url(gone)).content.decode()
    assert f'href="/t/acme/atoms/{gone}/purge/progress" data-testid="receipt-link"' in html


def test_another_tenants_purged_atom_is_not_found(carol, client, acme, globex):
    gone = write(globex, "to purge")
    purge(globex, gone)
    client.force_login(carol)
    assert client.get(url(gone)).status_code == 404
    assert client.get(url("atom:00000000-0000-4000-8000-000000000000")).status_code == 404


def test_the_page_closes_while_a_purge_is_pending(carol, client, acme):
    note = write(acme, "x")
    AtomStore.objects.filter(tenant=acme).update(purge_barrier={"atomId": note})
    client.force_login(carol)
    assert client.get(url(note)).status_code == 403


def test_a_crowded_neighbourhood_draws_the_first_links_and_counts_the_rest(carol, client, acme):
    targets = [write(acme, f"target {i}") for i in range(MAX_PER_SIDE + 2)]
    hub = write(acme, "hub", links=[{"role": "member", "atom": t} for t in targets])
    client.force_login(carol)
    response = client.get(url(hub))
    assert response.context_data["graph_hidden"] == 2
    svg = re.search(r"<svg.*?</svg>", response.content.decode(), re.DOTALL).group(0)
    assert svg.count('<a href="/t/acme/atoms/') == MAX_PER_SIDE
    assert '<a href="#out-h" class="node more"' in svg and ">+2 more</text>" in svg  # to the links-out table
    assert "2 more neighbours in the tables below" in response.content.decode()
    assert len(response.context_data["detail"].links_out) == MAX_PER_SIDE + 2


def test_a_single_revision_atom_offers_no_compare(carol, client, acme):
    once = write(acme, "written once")
    client.force_login(carol)
    html = client.get(url(once)).content.decode()
    assert 'data-testid="diff-single"' in html and 'name="a"' not in html
    revise(acme, once, "written twice")
    html = client.get(url(once)).content.decode()
    assert 'data-testid="diff-single"' not in html and 'name="a"' in html


def test_only_admins_get_the_purge_link(alice, bob, client, acme):
    note = write(acme, "x")
    link = f'href="/t/acme/atoms/{note}/purge" data-testid="purge-link"'
    client.force_login(alice)
    assert link in client.get(url(note)).content.decode()
    client.force_login(bob)
    assert 'data-testid="purge-link"' not in client.get(url(note)).content.decode()
