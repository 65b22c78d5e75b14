"""The read playground: the real atoms_read as the signed-in person, shown as returned."""

from __future__ import annotations

import html
import json

import pytest

from atoms.api.purge import answer_purge
from atoms.api.read import answer_read
from atoms.models import Receipt, UseMarker, UseState
from atoms.principal import Principal
from tests.atoms.ui.tools_helpers import HX, write

URL = "/t/acme/atoms/playground/"
COFFEE = "Alice takes her coffee black."


def run(client, hx: bool = False, **fields):  # type: ignore[no-untyped-def]
    data = {"context": "", "query": "", "tokens": "4096", "limit": "24", **fields}
    return client.post(URL, data, **({"headers": HX} if hx else {}))


@pytest.mark.parametrize("who", ["alice", "bob", "carol"])
def test_every_role_may_open_and_run_the_playground(request, client, acme, who):
    write(acme, COFFEE)
    client.force_login(request.getfixturevalue(who))
    page = client.get(URL)
    assert page.status_code == 200
    assert b'data-testid="playground-form"' in page.content and b"Run read" in page.content
    response = run(client, context="Suggest a coffee I would enjoy.")
    assert response.status_code == 200
    assert COFFEE.encode() in response.content


def test_another_tenants_member_gets_404_and_visitors_must_log_in(client, acme, dave):
    client.force_login(dave)
    assert client.get(URL).status_code == 404
    assert run(client, context="coffee").status_code == 404
    client.logout()
    response = client.get(URL)
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_it_shows_exactly_what_read_returns_for_the_person(client, acme, carol):
    write(acme, COFFEE)
    client.force_login(carol)
    content = run(client, context="Suggest a coffee I would enjoy.", tokens="2048").content.decode()
    # Refs are stable per (principal, revision): the same read by the same person returns
    # the same text, so the page must hold it byte for byte (escaped for HTML).
    same = answer_read(Principal.for_person(acme, "carol"),
                       {"state": {"context": "Suggest a coffee I would enjoy."}, "options": {"tokens": 2048, "limit": 24}})
    assert f'data-testid="rendered-text" tabindex="0" aria-label="Rendered text">{html.escape(same["text"])}</pre>' \
        in content
    assert same["items"][0]["ref"] in content
    assert html.escape(json.dumps(same["diagnostics"]["selection"]["method"])) in content
    assert '"method": "graph-activation"' in html.unescape(content)
    assert f"1 item, {same['tokenCount']} of 2048 bytes" in content
    assert Receipt.objects.filter(tenant=acme, principal="user:carol", kind="read").exists()


def test_each_item_links_to_its_atom_page(client, acme, carol):
    atom_id, _ = write(acme, COFFEE)
    client.force_login(carol)
    content = run(client, query="coffee").content.decode()
    assert f'<a href="/t/acme/atoms/{atom_id}/" data-testid="item-link">{html.escape(COFFEE)}</a>' in content


def test_running_it_records_no_use(client, acme, alice):
    write(acme, COFFEE)
    client.force_login(alice)
    for _ in range(3):
        assert COFFEE.encode() in run(client, query="coffee").content
    assert UseState.objects.count() == 0 and UseMarker.objects.count() == 0


def test_an_htmx_run_gets_the_panel(client, acme, bob):
    write(acme, COFFEE)
    client.force_login(bob)
    response = run(client, query="coffee", hx=True)
    assert response.status_code == 200
    assert b"<html" not in response.content and b'id="playground-panel"' in response.content
    assert COFFEE.encode() in response.content


def test_a_plain_get_with_htmx_gets_the_empty_panel(client, acme, carol):
    client.force_login(carol)
    response = client.get(URL, headers=HX)
    assert response.status_code == 200 and b"<html" not in response.content
    assert b'data-testid="result-empty"' in response.content


def test_an_empty_state_is_refused_with_200_and_nothing_runs(client, acme, carol):
    client.force_login(carol)
    response = run(client, context="   ", hx=True)
    assert response.status_code == 200
    assert b"Enter a context or a query." in response.content
    assert not Receipt.objects.exists()


def test_out_of_range_budgets_are_refused_per_field(client, acme, carol):
    client.force_login(carol)
    response = run(client, query="coffee", tokens="0", limit="abc")
    assert response.status_code == 200
    content = response.content.decode()
    assert 'data-testid="error-tokens"' in content and 'data-testid="error-limit"' in content
    assert not Receipt.objects.exists()


def test_an_engine_error_is_shown_with_its_code(client, acme, alice):
    atom_id, _ = write(acme, COFFEE)
    # A pending purge closes read (docs/atoms.md "Decisions", Purge): the engine says ACCESS_DENIED.
    answer_purge(Principal.for_person(acme, "alice"), {"atomId": atom_id, "options": {"maxWork": 0}})
    client.force_login(alice)
    response = run(client, query="coffee")
    assert response.status_code == 200
    content = response.content.decode()
    assert 'data-testid="read-error"' in content and "ACCESS_DENIED" in content
    assert "erasure-incomplete" in html.unescape(content)


def test_stale_and_blocked_figures_are_shown(client, acme, carol):
    write(acme, COFFEE)
    client.force_login(carol)
    content = run(client, query="coffee").content.decode()
    assert '<dd data-testid="blocked-count">0</dd>' in content
    assert "Stale refs" in content


def test_a_cursor_pages_through_the_same_ranking(client, acme, carol):
    for i in range(3):
        write(acme, f"needle {i}")
    client.force_login(carol)
    first = run(client, query="needle", limit="1").content.decode()
    assert "Next page" in first and first.count('data-testid="item"') == 1
    cursor = first.split('name="cursor" value="', 1)[1].split('"', 1)[0]
    assert cursor
    second = run(client, query="needle", limit="1", cursor=html.unescape(cursor)).content.decode()
    assert second.count('data-testid="item"') == 1
    shown = [text.split("</td>")[0] for text in (first.split('class="entry-text">')[1], second.split('class="entry-text">')[1])]
    assert shown[0] != shown[1]
