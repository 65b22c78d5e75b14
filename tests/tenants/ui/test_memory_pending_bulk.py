"""Approving or rejecting a selection of the pending queue (docs/memory-files.md "Review UI"):
each item through the same service as its own button, one transaction each, oldest first."""

from __future__ import annotations

from memoryhub.models import AuditEvent
from tenants.models import MemoryVersion, PendingWrite
from tests.tenants.ui.memory_helpers import HX, entries_of, page_url, set_volume, stage

BULK = page_url(rest="pending/bulk")


def statuses(*items: PendingWrite) -> list[str]:
    return [PendingWrite.objects.get(pk=item.pk).status for item in items]


def test_a_reviewer_approves_a_selection_oldest_first_and_leaves_the_rest(bob, client, acme):
    first = stage(acme, {"action": "add", "content": "first fact"})
    second = stage(acme, {"action": "add", "content": "second fact"})
    left = stage(acme, {"action": "add", "content": "not selected"})
    client.force_login(bob)
    # Sent newest first: the queue's order decides, not the form's.
    response = client.post(BULK, {"decision": "approve", "ids": [second.public_id, first.public_id]}, headers=HX)
    assert response.status_code == 200
    assert response["HX-Trigger"] == "pendingChanged"
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="pending-panel"')
    assert f"Approved 2 items: #{first.public_id}, #{second.public_id}." in html
    assert entries_of(acme) == ["first fact", "second fact"]
    assert statuses(first, second, left) == ["approved", "approved", "pending"]
    assert MemoryVersion.objects.filter(volume__tenant=acme, target="memory").count() == 2  # one per item
    assert AuditEvent.objects.filter(action="memory.approve", actor_label="user:bob").count() == 2
    assert f'data-testid="pending-{left.public_id}"' in html


def test_a_reviewer_rejects_a_selection_with_one_reason(bob, client, acme):
    one = stage(acme, {"action": "add", "content": "one-off detail"})
    two = stage(acme, {"action": "add", "content": "another one-off"}, target="user")
    client.force_login(bob)
    response = client.post(BULK, {"decision": "reject", "ids": [one.public_id, two.public_id],
                                  "reason": "  one-off chatter  "}, headers=HX)
    assert response["HX-Trigger"] == "pendingChanged"
    assert f"Rejected 2 items: #{one.public_id}, #{two.public_id}.".encode() in response.content
    for item in (one, two):
        item.refresh_from_db()
        assert (item.status, item.reason, item.decided_by) == ("rejected", "one-off chatter", "user:bob")
    assert entries_of(acme) == [] and entries_of(acme, "user") == []


def test_a_rejection_reason_is_redacted_like_a_single_rejection(bob, client, acme):
    item = stage(acme, {"action": "add", "content": "x"})
    client.force_login(bob)
    client.post(BULK, {"decision": "reject", "ids": [item.public_id],
                       "reason": "leaks ghp_abcdefghijklmnopqrstuvwxyz0123456789"}, headers=HX)
    item.refresh_from_db()
    assert "ghp_abcdefghijklmnopqrstuvwxyz" not in item.reason and item.reason.startswith("leaks ")


def test_a_failing_item_stays_pending_with_its_error_and_the_others_are_approved(bob, client, acme):
    set_volume(acme, memory_limit=50)
    fits = stage(acme, {"action": "add", "content": "a" * 20})
    too_big = stage(acme, {"action": "add", "content": "b" * 40})
    later = stage(acme, {"action": "add", "content": "c" * 5})
    client.force_login(bob)
    response = client.post(BULK, {"decision": "approve", "ids": [fits.public_id, too_big.public_id,
                                                                 later.public_id]}, headers=HX)
    assert response["HX-Trigger"] == "pendingChanged"
    html = response.content.decode()
    assert f"Approved 2 items: #{fits.public_id}, #{later.public_id}." in html
    assert (f"Not approved (1 item, still shown if pending): #{too_big.public_id}: With this write, MEMORY.md would "
            "hold 71 of its 50 characters, 21 too many.") in html
    assert 'role="alert"' in html
    assert entries_of(acme) == ["a" * 20, "c" * 5]
    assert statuses(fits, too_big, later) == ["approved", "pending", "approved"]
    too_big.refresh_from_db()
    assert too_big.last_error["code"] == "OVER_LIMIT"
    assert 'data-testid="last-error">Last error: With this write, MEMORY.md would hold 71' in html


def test_an_item_decided_meanwhile_is_reported_and_the_rest_still_decided(bob, client, acme):
    done = stage(acme, {"action": "add", "content": "decided before"})
    fresh = stage(acme, {"action": "add", "content": "still pending"})
    PendingWrite.objects.filter(pk=done.pk).update(status="rejected")
    client.force_login(bob)
    response = client.post(BULK, {"decision": "approve", "ids": [done.public_id, fresh.public_id]}, headers=HX)
    html = response.content.decode()
    assert f"Approved 1 item: #{fresh.public_id}." in html
    assert f"#{done.public_id}: This item was already rejected." in html
    assert statuses(done, fresh) == ["rejected", "approved"]


def test_an_empty_selection_decides_nothing(bob, client, acme):
    item = stage(acme, {"action": "add", "content": "x"})
    client.force_login(bob)
    response = client.post(BULK, {"decision": "approve"}, headers=HX)
    assert "HX-Trigger" not in response
    assert b"Select at least one item first; nothing was decided." in response.content
    assert statuses(item) == ["pending"]


def test_a_selection_without_a_decision_decides_nothing(bob, client, acme):
    item = stage(acme, {"action": "add", "content": "x"})
    client.force_login(bob)
    for decision in ({}, {"decision": "delete"}):
        response = client.post(BULK, {"ids": [item.public_id], **decision}, headers=HX)
        assert "Choose “Approve selected” or “Reject selected”." in response.content.decode()
    assert statuses(item) == ["pending"]


def test_a_selection_larger_than_a_page_is_refused(bob, client, acme):
    item = stage(acme, {"action": "add", "content": "x"})
    client.force_login(bob)
    ids = [item.public_id] + [f"pw_{n:024d}" for n in range(50)]
    response = client.post(BULK, {"decision": "approve", "ids": ids}, headers=HX)
    assert b"Select at most 50 items at a time; nothing was decided." in response.content
    assert statuses(item) == ["pending"]


def test_an_item_selected_twice_is_decided_once(bob, client, acme):
    item = stage(acme, {"action": "add", "content": "one fact"})
    client.force_login(bob)
    response = client.post(BULK, {"decision": "approve", "ids": [item.public_id, item.public_id]}, headers=HX)
    assert f"Approved 1 item: #{item.public_id}.".encode() in response.content
    assert entries_of(acme) == ["one fact"] and statuses(item) == ["approved"]


def test_without_htmx_the_whole_page_answers_and_the_filter_is_kept(bob, client, acme):
    item = stage(acme, {"action": "add", "content": "user fact"}, target="user")
    client.force_login(bob)
    response = client.post(f"{BULK}?target=user", {"decision": "approve", "ids": [item.public_id]})
    assert response.status_code == 200 and b"<html" in response.content
    assert f"Approved 1 item: #{item.public_id}.".encode() in response.content
    assert response.context_data["target"] == "user"
    assert entries_of(acme, "user") == ["user fact"]


def test_the_queue_offers_the_selection_form_to_reviewers_only(bob, carol, client, acme):
    item = stage(acme, {"action": "add", "content": "x"})
    client.force_login(bob)
    html = client.get(page_url(rest="pending/")).content.decode()
    assert f'<form id="bulk-form" class="bulk" method="post" action="{BULK}"' in html
    assert (f'<input type="checkbox" class="select" name="ids" value="{item.public_id}" form="bulk-form"'
            in html)
    # Enter in the reason field submits the first button: it must be Reject, never Approve.
    assert html.index('value="reject"') < html.index('value="approve"')
    client.force_login(carol)
    html = client.get(page_url(rest="pending/")).content.decode()
    assert "bulk-form" not in html and 'name="ids"' not in html


def test_viewers_get_403_and_nothing_is_decided(carol, client, acme):
    item = stage(acme, {"action": "add", "content": "x"})
    client.force_login(carol)
    for headers in ({}, HX):
        assert client.post(BULK, {"decision": "approve", "ids": [item.public_id]}, headers=headers).status_code == 403
    assert statuses(item) == ["pending"]


def test_a_selection_naming_another_tenants_item_is_404_and_decides_nothing(bob, erin, client, acme, globex):
    ours = stage(acme, {"action": "add", "content": "acme fact"})
    theirs = stage(globex, {"action": "add", "content": "globex fact"})
    client.force_login(bob)
    response = client.post(BULK, {"decision": "approve", "ids": [ours.public_id, theirs.public_id]}, headers=HX)
    assert response.status_code == 404
    assert statuses(ours, theirs) == ["pending", "pending"]
    client.force_login(erin)  # a reviewer of acme, a viewer of globex
    globex_bulk = page_url("globex", "pending/bulk")
    assert client.post(globex_bulk, {"decision": "reject", "ids": [theirs.public_id]}).status_code == 403
    assert statuses(ours, theirs) == ["pending", "pending"]
    assert entries_of(acme) == [] and entries_of(globex) == []


def test_a_selection_cannot_name_an_item_by_its_row_number(bob, client, acme):
    item = stage(acme, {"action": "add", "content": "x"})
    client.force_login(bob)
    assert client.post(BULK, {"decision": "approve", "ids": [str(item.pk)]}, headers=HX).status_code == 404
    assert statuses(item) == ["pending"]
