"""The atom browser: heads newest first with filters and a (seq, atom id) cursor, or, with
a query, search's ranking read-only (no receipt, ref or cursor row) paged by a signed cursor
bound to the tenant, the query and the filters. Viewers may browse."""

from __future__ import annotations

from typing import Any

from django.apps import apps

from atoms.api.search import answer_search
from atoms.models import AtomStore, Receipt, Ref, Revision
from atoms.principal import Principal
from atoms.ui.browser import PAGE_SIZE
from tenants.models import Tenant
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


def _searched(tenant: Tenant, username: str, query: str, policy: str = "") -> list[tuple[str, float]]:
    """(atom id, score) of `atoms_search`'s whole ranking for the person, in order."""
    body: dict[str, Any] = {"query": query, "options": {"limit": 1000}}
    if policy:
        body["binding"] = {"readPolicies": [policy]}
    items = answer_search(Principal.for_person(tenant, username), body)["items"]
    atom_of = dict(Ref.objects.filter(id__in=[i["ref"] for i in items]).values_list("id", "atom_id"))
    return [(atom_of[item["ref"]], item["score"]) for item in items]


def ranked(response) -> list[tuple[str, float]]:  # type: ignore[no-untyped-def]
    return [(row.revision.atom_id, row.score) for row in response.context_data["rows"]]


def row_counts() -> dict[str, int]:
    """Rows of every Atom engine table (receipts, refs, cursors, uses, ...)."""
    return {model.__name__: model.objects.count() for model in apps.get_app_config("atoms").get_models()}


def linked_corpus(tenant: Tenant) -> str:
    """Matches that lend each other activation through links, and one reached by a link only
    (returned): it links to a match, and activation flows from a link's target to the atom
    linking to it (docs/atoms.md "Defaults")."""
    black = write(tenant, "Alice takes her coffee black.")
    milk = write(tenant, "Oat milk in the fridge", links=[{"role": "about", "atom": black}])
    write(tenant, "Coffee beans from the market, coffee grinder on the shelf.")
    write(tenant, "Bob drinks tea, never coffee.", links=[{"role": "see-also", "atom": black}])
    write(tenant, "The coffee machine needs descaling.")
    return milk


def test_a_query_ranks_exactly_like_the_search_service(carol, client, acme):
    milk = linked_corpus(acme)
    write(acme, "Coffee is " + FLAGGED)  # quarantined: search never returns it
    client.force_login(carol)
    response = client.get(BROWSE, {"q": "coffee"})
    expected = _searched(acme, "carol", "coffee")
    assert len(expected) == 5 and milk in [atom for atom, _ in expected]  # the link-only one too
    assert ranked(response) == expected
    assert "Ranked as search ranks" in response.content.decode()


def test_a_query_writes_no_receipt_ref_cursor_or_any_other_row(carol, client, acme):
    linked_corpus(acme)
    for i in range(PAGE_SIZE + 3):
        write(acme, f"coffee cup {i}")
    client.force_login(carol)
    before = row_counts()
    first = client.get(BROWSE, {"q": "coffee"})
    client.get(first.context_data["next_url"], headers=HX)
    client.get(BROWSE, {"q": "coffee", "origin": "source", "policy": "default"})
    assert len(texts(first)) == PAGE_SIZE
    assert row_counts() == before
    assert not Receipt.objects.filter(tenant=acme).exists()
    assert not Ref.objects.filter(tenant=acme, principal="user:carol").exists()


def test_a_tenant_without_atoms_gets_no_row_either(carol, client, acme):
    before = row_counts()
    client.force_login(carol)
    assert texts(client.get(BROWSE, {"q": "coffee"})) == [] and texts(client.get(BROWSE)) == []
    assert row_counts() == before


def test_a_query_within_one_policy_binds_the_read_policies(carol, client, acme):
    grant_private(acme)
    write(acme, "coffee in default")
    write(acme, "coffee in private", policy="private")
    client.force_login(carol)
    assert sorted(texts(client.get(BROWSE, {"q": "coffee"}))) == ["coffee in default", "coffee in private"]
    private = client.get(BROWSE, {"q": "coffee", "policy": "private"})
    assert texts(private) == ["coffee in private"]
    assert ranked(private) == _searched(acme, "carol", "coffee", policy="private")


def test_a_query_with_a_filter_search_cannot_meet_says_so(carol, client, acme):
    write(acme, "coffee")
    client.force_login(carol)
    response = client.get(BROWSE, {"q": "coffee", "review": "quarantined"})
    assert texts(response) == [] and "Search never returns quarantined atoms" in response.content.decode()
    assert not Receipt.objects.filter(tenant=acme).exists()


def test_search_pages_follow_a_signed_cursor_through_the_whole_ranking(carol, client, acme):
    linked_corpus(acme)
    for i in range(PAGE_SIZE + 3):
        write(acme, f"needle {i}" + " coffee" * (i % 4))
    client.force_login(carol)
    first = client.get(BROWSE, {"q": "coffee"})
    next_url = first.context_data["next_url"]
    assert "cursor=" in next_url and "q=coffee" in next_url and "First page" not in first.content.decode()
    second = client.get(next_url, headers=HX)
    html = second.content.decode()
    assert html.lstrip().startswith('<div id="atom-list"') and "First page" in html
    assert ranked(first) + ranked(second) == _searched(acme, "carol", "coffee")
    assert len(ranked(first)) == PAGE_SIZE and second.context_data["next_url"] == ""


def test_a_search_page_continues_after_the_last_atom_shown_when_atoms_are_written_between(carol, client, acme):
    for i in range(PAGE_SIZE + 3):
        write(acme, f"needle {i}")
    client.force_login(carol)
    first = client.get(BROWSE, {"q": "needle"})
    write(acme, "needle needle needle, written between the pages")
    second = client.get(first.context_data["next_url"])
    shown = [atom for atom, _ in ranked(first) + ranked(second)]
    assert len(shown) == len(set(shown))  # nothing shown twice


def test_a_tampered_or_forged_search_cursor_shows_the_first_page_with_a_notice(carol, client, acme):
    for i in range(PAGE_SIZE + 3):
        write(acme, f"needle {i}")
    client.force_login(carol)
    first = client.get(BROWSE, {"q": "needle"})
    cursor = first.context_data["next_url"].split("cursor=")[1]
    tampered = cursor[:-3] + ("AAA" if cursor[-3:] != "AAA" else "BBB")
    for bad in ("garbage", tampered):
        response = client.get(BROWSE, {"q": "needle", "cursor": bad})
        assert ranked(response) == ranked(first)
        assert "no longer valid; showing the first page" in response.content.decode()
    # A genuine cursor of another query or other filters is refused as well.
    for other in ({"q": "needle 1"}, {"q": "needle", "origin": "source"}):
        response = client.get(BROWSE, {**other, "cursor": cursor})
        assert response.context_data["page_error"] and response.context_data["first_page"]


def test_another_tenants_search_cursor_shows_this_tenants_first_page(erin, client, acme, globex):
    for i in range(PAGE_SIZE + 3):
        write(globex, f"needle globex {i}")
        write(acme, f"needle acme {i}")
    client.force_login(erin)  # a member of both: same person, same query, other tenant
    theirs = client.get(page("globex"), {"q": "needle"}).context_data["next_url"].split("cursor=")[1]
    response = client.get(BROWSE, {"q": "needle", "cursor": theirs})
    assert ranked(response) == ranked(client.get(BROWSE, {"q": "needle"}))
    assert all(text.startswith("needle acme") for text in texts(response))
    assert "no longer valid; showing the first page" in response.content.decode()


def test_every_member_may_search_and_a_non_member_is_not_found(alice, bob, carol, dave, client, acme):
    write(acme, "coffee note")
    for person in (alice, bob, carol):
        client.force_login(person)
        assert texts(client.get(BROWSE, {"q": "coffee"})) == ["coffee note"]
    client.force_login(dave)
    assert client.get(BROWSE, {"q": "coffee"}).status_code == 404


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
