"""A write over the store's cap on the Memory page (docs/memory-files.md "Review UI"): people
read how many characters are too many and what to do, with a link to the settings for admins;
the API and the tool keep the text written for models."""

from __future__ import annotations

from tests.tenants.memory.helpers import Mem
from tests.tenants.ui.memory_helpers import HX, entries_of, page_url, seed, set_volume

ADD = page_url(rest="memory/add")
EDIT = page_url(rest="memory/edit")
SETTINGS = page_url(rest="settings/")
FOR_MODELS = "In this turn, merge or shorten entries with &#x27;replace&#x27;"


def full_store(tenant) -> None:  # type: ignore[no-untyped-def]
    seed(tenant, "memory", ["a" * 20])  # version 1
    set_volume(tenant, memory_limit=50)


def test_a_reviewer_reads_how_many_characters_are_too_many_and_what_to_do(bob, client, acme):
    full_store(acme)
    client.force_login(bob)
    response = client.post(ADD, {"version": "1", "content": "b" * 31}, headers=HX)
    html = response.content.decode()
    assert ("Not added: with this entry, MEMORY.md would hold 54 of its 50 characters, 4 too many. "
            "Shorten the entry, or remove or shorten another entry first. "
            "An admin can raise the cap in the memory settings.</p>") in html
    assert FOR_MODELS not in html and "current_entries" not in html
    assert SETTINGS not in html  # a reviewer would get 403 there
    assert "b" * 31 + "</textarea>" in html  # the draft is kept
    assert entries_of(acme) == ["a" * 20]


def test_an_admin_gets_a_link_to_raise_the_cap(alice, client, acme):
    full_store(acme)
    client.force_login(alice)
    html = client.post(ADD, {"version": "1", "content": "b" * 31}, headers=HX).content.decode()
    assert "4 too many. Shorten the entry, or remove or shorten another entry first. " in html
    assert (f'Or <a href="{SETTINGS}" data-testid="raise-cap">raise the cap in the memory settings</a>.'
            in html)
    assert client.get(SETTINGS).status_code == 200


def test_an_entry_longer_than_the_whole_cap_says_only_shortening_helps(bob, client, acme):
    full_store(acme)
    client.force_login(bob)
    html = client.post(ADD, {"version": "1", "content": "c" * 51}, headers=HX).content.decode()
    assert ("Not added: this entry alone has 51 characters, more than the 50 that MEMORY.md may hold in total. "
            "Shorten the entry. An admin can raise the cap") in html
    assert "Freeing space cannot help" not in html


def test_an_edit_over_the_cap_is_explained_the_same_way(alice, client, acme):
    seed(acme, "memory", ["a" * 20, "short"])
    set_volume(acme, memory_limit=50)
    client.force_login(alice)
    response = client.post(EDIT, {"version": "1", "index": "1", "content": "d" * 40}, headers=HX)
    html = response.content.decode()
    assert ("Not saved: with this text, MEMORY.md would hold 63 of its 50 characters, 13 too many. "
            "Shorten the text, or remove or shorten another entry first. Or <a href=") in html
    assert "The result would hold" not in html
    assert entries_of(acme) == ["a" * 20, "short"]


def test_other_refusals_keep_the_services_message(bob, client, acme):
    full_store(acme)
    client.force_login(bob)
    html = client.post(ADD, {"version": "1", "content": "   "}, headers=HX).content.decode()
    assert "Nothing to save: content is missing or blank." in html and "raise the cap" not in html


def test_the_api_and_the_tool_keep_the_text_written_for_models(acme, make_key, client_for):
    full_store(acme)
    mem = Mem(client_for(make_key(acme, "reviewer")[1]))
    rest = mem.add("memory", "b" * 31)
    assert rest.status_code == 422
    message = rest.json()["error"]["message"]
    assert message.startswith("The memory store holds 20/50 chars; this 31-char entry does not fit.")
    assert "In this turn, merge or shorten entries with 'replace'" in message and "(see current_entries)" in message
    tool = mem.tool({"action": "add", "target": "memory", "content": "b" * 31})
    assert tool.status_code == 200 and tool.json()["success"] is False
    assert "In this turn, merge or shorten entries with 'replace'" in tool.json()["error"]
    assert entries_of(acme) == ["a" * 20]
