"""The atom browser: heads newest first with filters and a (seq, atom id) cursor, or the
real search service when a query is given. Viewers may browse."""

from __future__ import annotations

from atoms.models import AtomStore, Receipt, Revision
from atoms.ui.browser import PAGE_SIZE
from tests.atoms.ui.review_helpers import FLAGGED, HX, agent_write, grant_private, page, retire, revise, write

BROWSE = page()


def texts(response) -> list[str]:  # type: ignore[no-untyped-def]
    return [row.revision.body for row in response.context_data["rows"]]


def test_a_viewer_sees_the_heads_newest_first(carol, client, acme):
    first = write(acme, "first note")
    write(acme, "second note")
    revise(acme, first, "first note, revised")
    client.force_login(carol)
    response = client.get(BROWSE)
    assert response.status_code == 200
    assert texts(response) == ["first note, revised", "second note"]
    html = response.content.decode()
    assert "<html" in html and f'href="/t/acme/atoms/{first}/"' in html
    assert '<label>Review status' in html and 'name="q"' in html


def test_an_htmx_request_gets_only_the_list(carol, client, acme):
    write(acme, "a note")
    client.force_login(carol)
    response = client.get(BROWSE, headers=HX)
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="atom-list"') and "<html" not in html


def test_the_filters_narrow_by_state_review_policy_and_origin(carol, client, acme):
    retire(acme, write(acme, "retired note"))
    write(acme, FLAGGED)
    agent_write(acme, "agent guess")
    grant_private(acme)
    write(acme, "private note", policy="private")
    client.force_login(carol)
    assert texts(client.get(BROWSE, {"state": "retired"})) == ["retired note"]
    assert texts(client.get(BROWSE, {"review": "quarantined"})) == [FLAGGED]
    assert texts(client.get(BROWSE, {"review": "unreviewed"})) == ["agent guess"]
    assert texts(client.get(BROWSE, {"origin": "derived"})) == ["agent guess"]
    assert texts(client.get(BROWSE, {"policy": "private"})) == ["private note"]
    assert texts(client.get(BROWSE, {"policy": "nope"})) == texts(client.get(BROWSE))  # unknown: ignored
    assert 'value="private" selected' in client.get(BROWSE, {"policy": "private"}).content.decode()


def test_pages_follow_a_cursor_that_new_writes_do_not_shift(carol, client, acme):
    for i in range(PAGE_SIZE + 2):
        write(acme, f"note {i}")
    client.force_login(carol)
    first = client.get(BROWSE)
    assert texts(first) == [f"note {i}" for i in range(PAGE_SIZE + 1, 1, -1)]
    next_url = first.context_data["next_url"]
    assert "cursor=" in next_url and "offset" not in next_url
    write(acme, "written between the pages")
    second = client.get(next_url, headers=HX)
    assert texts(second) == ["note 1", "note 0"]
    assert second.context_data["next_url"] == "" and 'data-testid="next-page"' not in second.content.decode()
    assert "First page" in second.content.decode()


def test_a_cursor_made_for_other_filters_or_forged_starts_over(carol, client, acme):
    for i in range(PAGE_SIZE + 1):
        write(acme, f"note {i}")
    client.force_login(carol)
    cursor = client.get(BROWSE).context_data["next_url"].split("cursor=")[1]
    other = client.get(BROWSE, {"state": "active", "cursor": cursor})
    assert other.context_data["page_error"] and len(texts(other)) == PAGE_SIZE
    forged = client.get(BROWSE, {"cursor": "not-a-cursor"})
    assert "no longer valid" in forged.content.decode()


def test_a_query_runs_the_search_service_as_the_person(carol, client, acme):
    write(acme, "Alice takes her coffee black.")
    write(acme, "Bob drinks tea.")
    write(acme, "Coffee is " + FLAGGED)  # quarantined: search never returns it
    client.force_login(carol)
    response = client.get(BROWSE, {"q": "coffee"})
    assert texts(response) == ["Alice takes her coffee black."]
    assert response.context_data["rows"][0].score > 0
    # The real service ran: it recorded a search receipt for the person.
    receipt = Receipt.objects.get(tenant=acme, principal="user:carol")
    assert receipt.kind == "search"
    assert "Ranked by the search service" in response.content.decode()


def test_a_query_within_one_policy_binds_the_read_policies(carol, client, acme):
    grant_private(acme)
    write(acme, "coffee in default")
    write(acme, "coffee in private", policy="private")
    client.force_login(carol)
    assert sorted(texts(client.get(BROWSE, {"q": "coffee"}))) == ["coffee in default", "coffee in private"]
    assert texts(client.get(BROWSE, {"q": "coffee", "policy": "private"})) == ["coffee in private"]


def test_a_query_with_a_filter_search_cannot_meet_says_so(carol, client, acme):
    write(acme, "coffee")
    client.force_login(carol)
    response = client.get(BROWSE, {"q": "coffee", "review": "quarantined"})
    assert texts(response) == [] and "Search never returns quarantined atoms" in response.content.decode()
    assert not Receipt.objects.filter(tenant=acme).exists()


def test_search_pages_continue_with_the_services_cursor(carol, client, acme):
    for i in range(PAGE_SIZE + 3):
        write(acme, f"needle {i}")
    client.force_login(carol)
    first = client.get(BROWSE, {"q": "needle"})
    assert len(texts(first)) == PAGE_SIZE
    second = client.get(first.context_data["next_url"])
    assert len(texts(second)) == 3
    assert not set(texts(first)) & set(texts(second))
    forged = client.get(BROWSE, {"q": "needle", "cursor": "garbage"})
    assert len(texts(forged)) == PAGE_SIZE and "expired; showing the first page" in forged.content.decode()


def test_another_tenants_atoms_never_show(carol, dave, client, acme, globex):
    write(globex, "globex secret")
    write(acme, "acme note")
    client.force_login(carol)
    assert texts(client.get(BROWSE)) == ["acme note"]
    assert texts(client.get(BROWSE, {"q": "secret"})) == []
    assert client.get(page("globex")).status_code == 404


def test_strangers_are_sent_to_log_in(client, acme):
    response = client.get(BROWSE)
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_the_pages_close_while_a_purge_is_pending(carol, client, acme):
    write(acme, "a note")
    AtomStore.objects.filter(tenant=acme).update(purge_barrier={"atomId": "atom:x"})
    client.force_login(carol)
    response = client.get(BROWSE)
    assert response.status_code == 403 and b"A purge is in progress" in response.content
    assert Revision.objects.filter(tenant=acme).count() == 1
