"""Approving a pending write over the store's cap (docs/memory-files.md "Refusals over the
cap"): the queue tells a person how many characters are too many and what to do, on the
item, in the approve-all and selection notices and as the item's last error; the API keeps
the text written for models."""

from __future__ import annotations

import pytest

from tenants.memory.approval import pending_approve
from tenants.memory.rules import MemoryRuleError
from tests.tenants.ui.memory_helpers import AGENT, HX, entries_of, page_url, seed, set_volume, stage

FOR_MODELS = "In this turn"
WHAT_TO_DO = ("Shorten it (Edit, then approve), remove or shorten another entry on the Memory page first, "
              "or reject it. An admin can also raise the cap in the memory settings.")


def approve_url(public_id: str) -> str:
    return page_url(rest=f"pending/{public_id}/approve")


def staged_over_the_cap(tenant):  # type: ignore[no-untyped-def]
    """A 31-character add staged while MEMORY.md holds 20 of its 50 characters."""
    item = stage(tenant, {"action": "add", "content": "b" * 31})
    seed(tenant, "memory", ["a" * 20])
    set_volume(tenant, memory_limit=50)
    return item


def test_an_approval_over_the_cap_says_how_many_characters_are_too_many(bob, client, acme):
    item = staged_over_the_cap(acme)
    client.force_login(bob)
    html = client.post(approve_url(item.public_id), headers=HX).content.decode()
    assert (f"Not approved: With this write, MEMORY.md would hold 54 of its 50 characters, 4 too many. "
            f"{WHAT_TO_DO}</p>") in html
    assert FOR_MODELS not in html and "current_entries" not in html
    assert entries_of(acme) == ["a" * 20]


def test_the_last_error_on_the_card_is_worded_the_same_way(carol, client, acme):
    item = staged_over_the_cap(acme)
    # A refusal recorded by the API (or by anyone earlier): the card shows it to every reader.
    with pytest.raises(MemoryRuleError):
        pending_approve(tenant=acme, pending_id=item.public_id, reviewer=AGENT)
    client.force_login(carol)
    html = client.get(page_url(rest="pending/")).content.decode()
    assert 'data-testid="last-error">Last error: With this write, MEMORY.md would hold 54 of its 50' in html
    assert FOR_MODELS not in html


def test_a_refused_edit_over_the_cap_gives_no_numbers_of_the_staged_text(bob, client, acme):
    item = staged_over_the_cap(acme)
    client.force_login(bob)
    html = client.post(approve_url(item.public_id), {"content-1": "c" * 35}, headers=HX).content.decode()
    assert f"Not approved: MEMORY.md has no room for this write within its cap of 50 characters. {WHAT_TO_DO}" in html
    assert FOR_MODELS not in html


def test_an_entry_longer_than_the_whole_cap_says_only_shortening_or_rejecting_helps(bob, client, acme):
    item = stage(acme, {"action": "add", "content": "b" * 60})
    set_volume(acme, memory_limit=50)
    client.force_login(bob)
    html = client.post(approve_url(item.public_id), headers=HX).content.decode()
    assert ("Not approved: An entry of this write alone is longer than the 50 characters MEMORY.md may hold in "
            "total. Shorten it (Edit, then approve) or reject it.") in html
    assert "Freeing space cannot help" not in html


def test_approve_all_and_a_selection_word_the_refusal_for_a_person(bob, client, acme):
    item = staged_over_the_cap(acme)
    client.force_login(bob)
    every = client.post(page_url(rest="pending/approve-all"), headers=HX).content.decode()
    assert f"Stopped at #{item.public_id}: With this write, MEMORY.md would hold 54 of its 50 characters" in every
    chosen = client.post(page_url(rest="pending/bulk"), {"decision": "approve", "ids": [item.public_id]},
                         headers=HX).content.decode()
    assert f"#{item.public_id}: With this write, MEMORY.md would hold 54 of its 50 characters" in chosen
    assert FOR_MODELS not in every and FOR_MODELS not in chosen


def test_other_refusals_keep_the_services_message(bob, client, acme):
    seed(acme, "memory", ["User prefers dark mode"])
    item = stage(acme, {"action": "replace", "old_text": "dark", "content": "User prefers light mode"})
    seed(acme, "memory", ["Something else"])
    client.force_login(bob)
    html = client.post(approve_url(item.public_id), headers=HX).content.decode()
    assert "Not approved: Cannot approve: the entry this change aimed at" in html
    assert 'data-testid="last-error">Last error: TARGET_CHANGED:' in html


def test_the_api_keeps_the_text_written_for_models(acme, make_key, client_for):
    item = staged_over_the_cap(acme)
    reviewer = client_for(make_key(acme, "reviewer")[1])
    answer = reviewer.post(f"/api/v1/pending/{item.public_id}/approve", {}, format="json")
    assert answer.status_code == 422, answer.content
    assert "In this turn, merge or shorten entries with 'replace'" in answer.json()["error"]["message"]
