"""A namespace's key list (paged, prefix filter) and clearing it after typed confirmation."""

from __future__ import annotations

import re

import pytest

from tenants.kv.store import kv_get
from tenants.models import KvEntry

HX = {"HX-Request": "true"}
URL = "/t/acme/agents/support/ns/default/"


def keys_of(response) -> list[str]:
    return [entry.key for entry, _url in response.context_data["rows"]]


def test_it_lists_keys_in_code_point_order_with_links_that_carry_any_key(carol, client, support, put):
    for key in ["b", "a", "C", "user_10", "user_2", "", "a/b", "50%"]:
        put(support, key, {"k": key})
    client.force_login(carol)
    response = client.get(URL)
    assert response.status_code == 200
    assert keys_of(response) == ["", "50%", "C", "a", "a/b", "b", "user_10", "user_2"]
    content = response.content.decode()
    assert 'href="/t/acme/agents/support/ns/default/entry?key="' in content
    assert 'href="/t/acme/agents/support/ns/default/entry?key=a%2Fb"' in content
    assert 'href="/t/acme/agents/support/ns/default/entry?key=50%25"' in content
    assert "(empty key)" in content


def test_it_shows_versions_and_a_summary(carol, client, support, put):
    put(support, "k", "v")
    put(support, "k", "w")
    client.force_login(carol)
    response = client.get(URL)
    (entry, _), = response.context_data["rows"]
    assert entry.version == 2
    assert response.context_data["summary"]["keys"] == 1 and response.context_data["summary"]["bytes"] == 4
    assert "1 key, 4 bytes" in response.content.decode()


def test_it_pages_fifty_keys_at_a_time_without_duplicates(carol, client, support, put):
    for i in range(120):
        put(support, f"k{i:03}", i)
    client.force_login(carol)
    seen: list[str] = []
    url = URL
    pages = 0
    while url:
        response = client.get(url, headers={**HX, "HX-Target": "key-list"})
        assert b'id="key-list"' in response.content and b'id="ns-panel"' not in response.content
        seen += keys_of(response)
        url = response.context_data["next_url"]
        pages += 1
    assert pages == 3
    assert seen == [f"k{i:03}" for i in range(120)]


def test_the_next_page_link_is_a_real_href(carol, client, support, put):
    for i in range(51):
        put(support, f"k{i:03}", i)
    client.force_login(carol)
    content = client.get(URL).content.decode()
    href = re.search(r'href="([^"]*cursor=[^"]*)"', content).group(1).replace("&amp;", "&")
    second = client.get(href)
    assert second.status_code == 200 and keys_of(second) == ["k050"]
    assert b"First page" in second.content and b"<html" in second.content


def test_the_prefix_filter_is_literal_and_case_sensitive(carol, client, support, put):
    for key in ["ab", "a_b", "a%", "User_x", "user_1", "user_2"]:
        put(support, key, 1)
    client.force_login(carol)
    assert keys_of(client.get(URL, {"prefix": "a_"})) == ["a_b"]
    assert keys_of(client.get(URL, {"prefix": "a%"})) == ["a%"]
    assert keys_of(client.get(URL, {"prefix": "user_"}, headers={**HX, "HX-Target": "key-list"})) == ["user_1", "user_2"]
    empty = client.get(URL, {"prefix": "zzz"})
    assert keys_of(empty) == [] and b"No keys start with this prefix." in empty.content


def test_a_cursor_keeps_its_prefix_and_a_foreign_cursor_shows_the_first_page(carol, client, support, put):
    for i in range(55):
        put(support, f"p{i:03}", i)
        put(support, f"q{i:03}", i)
    client.force_login(carol)
    first = client.get(URL, {"prefix": "q"})
    second = client.get(first.context_data["next_url"])
    assert keys_of(second) == [f"q{i:03}" for i in range(50, 55)]
    cursor = first.context_data["next_url"].split("cursor=")[1]
    mixed = client.get(URL, {"prefix": "p", "cursor": cursor})
    assert mixed.status_code == 200
    assert b"no longer valid" in mixed.content and keys_of(mixed)[0] == "p000"
    garbage = client.get(URL, {"cursor": "not-a-cursor"})
    assert garbage.status_code == 200 and keys_of(garbage)[0] == "p000"


def test_a_never_used_namespace_is_an_empty_list(carol, client, support):
    client.force_login(carol)
    response = client.get("/t/acme/agents/support/ns/never/")
    assert response.status_code == 200 and keys_of(response) == [] and b"No keys." in response.content


def test_stored_keys_and_values_are_escaped(carol, client, support, put):
    put(support, "<img src=x onerror=alert(1)>", "</td><script>alert(2)</script>")
    client.force_login(carol)
    content = client.get(URL).content.decode()
    assert "<img src=x" not in content and "<script>alert(2)" not in content
    assert "&lt;img src=x onerror=alert(1)&gt;" in content and "&lt;script&gt;alert(2)" in content


def test_a_reviewer_clears_a_namespace_after_typing_its_name(bob, client, support, put):
    put(support, "a", 1)
    put(support, "b", 2)
    put(support, "kept", 3, namespace="other")
    client.force_login(bob)
    response = client.post(f"{URL}clear", {"confirm": "default"}, headers=HX)
    assert response.status_code == 200
    assert b'id="ns-panel"' in response.content and b"<html" not in response.content
    assert b"Cleared default: 2 keys deleted." in response.content
    assert keys_of(response) == []
    assert list(KvEntry.objects.values_list("namespace", "key")) == [("other", "kept")]


def test_a_plain_clear_redirects_to_the_agent_with_a_message(alice, client, support, put):
    put(support, "a", 1)
    client.force_login(alice)
    response = client.post(f"{URL}clear", {"confirm": "default"})
    assert response.status_code == 302 and response["Location"] == "/t/acme/agents/support/"
    assert b"Cleared default: 1 key deleted." in client.get(response["Location"]).content


@pytest.mark.parametrize("typed", ["", "Default", "other", "defaul"])
def test_a_wrong_confirmation_deletes_nothing(bob, client, support, put, typed):
    put(support, "a", 1)
    client.force_login(bob)
    response = client.post(f"{URL}clear", {"confirm": typed}, headers=HX)
    assert response.status_code == 200
    assert b'data-testid="clear-error"' in response.content and b"Nothing was deleted." in response.content
    assert kv_get(agent=support, namespace="default", key="a") is not None


def test_spaces_around_the_typed_name_are_ignored(bob, client, support, put):
    put(support, "a", 1)
    client.force_login(bob)
    response = client.post(f"{URL}clear", {"confirm": "  default\n"}, headers=HX)
    assert b"Cleared default: 1 key deleted." in response.content
    assert kv_get(agent=support, namespace="default", key="a") is None


def test_viewers_see_no_clear_form_and_get_403_when_clearing(carol, client, support, put):
    put(support, "a", 1)
    client.force_login(carol)
    assert b"Clear namespace" not in client.get(URL).content
    assert client.post(f"{URL}clear", {"confirm": "default"}).status_code == 403
    assert client.post(f"{URL}clear", {"confirm": "default"}, headers=HX).status_code == 403
    assert KvEntry.objects.count() == 1


def test_clearing_needs_post(bob, client, support):
    client.force_login(bob)
    assert client.get(f"{URL}clear").status_code == 405


def test_another_tenants_namespace_is_404(alice, dave, client, support, make_agent, globex, put):
    foreign = make_agent(globex, "globex-only")
    put(foreign, "secret", 1)
    put(support, "mine", 1)
    client.force_login(alice)
    assert client.get("/t/acme/agents/globex-only/ns/default/").status_code == 404
    assert client.post("/t/acme/agents/globex-only/ns/default/clear", {"confirm": "default"}).status_code == 404
    client.force_login(dave)
    assert client.get(URL).status_code == 404
    assert client.post(f"{URL}clear", {"confirm": "default"}).status_code == 404
    assert KvEntry.objects.count() == 2


def test_the_writer_column_names_keys_and_asks_once_for_the_page(carol, client, support, make_key):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from memoryhub.actors import Actor
    from tenants.kv.rules import canonical
    from tenants.kv.store import kv_set, limits_for

    def write(n: int) -> None:
        for i in range(n):
            key, _ = make_key(support.tenant, name=f"bot-{i}")
            kv_set(agent=support, limits=limits_for(support.tenant), namespace="default", key=f"k{i:02}",
                   value=canonical(i), actor=Actor.for_key(key))

    def page() -> tuple[int, str]:
        with CaptureQueriesContext(connection) as queries:
            html = client.get("/t/acme/agents/support/ns/default/").content.decode()
        return len(queries), html

    client.force_login(carol)
    write(1)
    page()  # the first visit creates the tenant's memory store (the nav badge counts its queue)
    few, _ = page()
    write(10)
    many, html = page()
    assert ">key bot-9 (agent)</span>" in html
    assert many == few


def test_paging_puts_the_page_in_the_address_bar(carol, client, support, put):
    # htmx swaps the list in place; hx-push-url puts the page's URL in the address bar, so
    # reload and back show the same page (the full page renders from the cursor alone).
    for i in range(51):
        put(support, f"k{i:03}", i)
    client.force_login(carol)
    content = client.get(URL).content.decode()
    link = re.search(r'<a [^>]*data-testid="next-page"[^>]*>', content).group(0)
    href = re.search(r'href="([^"]*)"', link).group(1)
    assert f'hx-get="{href}"' in link and 'hx-push-url="true"' in link
    second = client.get(href.replace("&amp;", "&"), headers={**HX, "HX-Target": "key-list"})
    first_link = re.search(r'<a [^>]*data-testid="first-page"[^>]*>', second.content.decode()).group(0)
    assert 'hx-push-url="true"' in first_link and keys_of(second) == ["k050"]
