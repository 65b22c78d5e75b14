"""The pending queue's Decided tab (docs/memory-files.md "Review UI"): decided items newest
first, paged, with who decided, when, approve or reject, and the reason."""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from memoryhub.redaction import REDACTED
from tenants.models import PendingWrite
from tests.tenants.ui.memory_helpers import HX, page_url, set_volume, stage

PENDING = page_url(rest="pending/")
DECIDED = f"{PENDING}?show=decided"


def row_of(html: str, item: PendingWrite) -> str:
    start = html.index(f'data-testid="decided-{item.public_id}"')
    return html[start:html.index("</tr>", start)]


def decide(item: PendingWrite, status: str, *, by: str = "user:bob", reason: str = "", minutes_ago: int = 0) -> None:
    PendingWrite.objects.filter(pk=item.pk).update(
        status=status, decided_by=by, reason=reason, decided_at=timezone.now() - timedelta(minutes=minutes_ago))


def test_decided_items_show_newest_first_with_who_when_the_decision_and_the_reason(bob, client, acme):
    approved = stage(acme, {"action": "add", "content": "kept fact"})
    rejected = stage(acme, {"action": "add", "content": "one-off chatter"}, target="user")
    waiting = stage(acme, {"action": "add", "content": "still waiting"})
    client.force_login(bob)
    client.post(page_url(rest=f"pending/{approved.public_id}/approve"), headers=HX)
    client.post(page_url(rest=f"pending/{rejected.public_id}/reject"), {"reason": "not a lasting fact"}, headers=HX)
    response = client.get(DECIDED)
    assert response.status_code == 200
    assert [item.pk for item in response.context_data["decided"]] == [rejected.pk, approved.pk]
    html = response.content.decode()
    row = row_of(html, rejected)
    assert "one-off chatter" in row and "<td>USER.md</td>" in row
    assert '<td class="decision rejected" data-testid="decision">Rejected</td>' in row
    assert '<td data-testid="decided-by"><span class="actor actor-user" title="user:bob">bob</span></td>' in row
    assert '<td class="entry-text" data-testid="reason">not a lasting fact</td>' in row
    rejected.refresh_from_db()
    assert f'">{timezone.localtime(rejected.decided_at):%Y-%m-%d %H:%M}</time>' in row
    row = row_of(html, approved)
    assert '<td class="decision approved" data-testid="decision">Approved</td>' in row and "—" in row
    assert "still waiting" not in html and f"decided-{waiting.public_id}" not in html
    assert 'aria-current="page" data-testid="tab-decided"' in html
    assert "data-queue=" not in html  # no keys on a list without actions


def test_the_pending_tab_links_to_the_decided_list_and_back(bob, client, acme):
    stage(acme, {"action": "add", "content": "x"})
    client.force_login(bob)
    html = client.get(PENDING).content.decode()
    assert f'<a href="{DECIDED}" data-testid="tab-decided">Decided</a>' in html
    html = client.get(DECIDED).content.decode()
    assert f'<a href="{PENDING}" data-testid="tab-pending">Pending (1)</a>' in html


def test_the_decided_list_is_paged_and_filtered_by_store(carol, client, acme):
    items = [stage(acme, {"action": "add", "content": f"fact {n}"}) for n in range(27)]
    user_item = stage(acme, {"action": "add", "content": "user fact"}, target="user")
    for minutes, item in enumerate(items):
        decide(item, "rejected", minutes_ago=minutes)  # items[0] is the newest decision
    decide(user_item, "approved", minutes_ago=100)
    client.force_login(carol)
    first = client.get(DECIDED)
    assert [item.pk for item in first.context_data["decided"]] == [item.pk for item in items[:25]]
    assert f'<a href="{PENDING}?page=2&amp;show=decided">Older</a>' in first.content.decode()
    second = client.get(f"{DECIDED}&page=2")
    assert [item.pk for item in second.context_data["decided"]] == [items[25].pk, items[26].pk, user_item.pk]
    assert f'<a href="{PENDING}?page=1&amp;show=decided">Newer</a>' in second.content.decode()
    only_user = client.get(f"{DECIDED}&target=user")
    assert [item.pk for item in only_user.context_data["decided"]] == [user_item.pk]
    assert 'aria-current="page">USER.md</a>' in only_user.content.decode()


def test_a_viewer_sees_reasons_and_summaries_redacted_with_the_current_secrets(carol, client, acme):
    secret = "opensesame-42"
    item = stage(acme, {"action": "add", "content": "vault note"})
    decide(item, "rejected", reason=f"it quoted {secret}")
    PendingWrite.objects.filter(pk=item.pk).update(summary=f"add: vault is {secret}")
    set_volume(acme, secrets=[secret])
    client.force_login(carol)
    html = client.get(DECIDED).content.decode()
    assert secret not in html
    assert f"it quoted {REDACTED}" in html and f"add: vault is {REDACTED}" in html


def test_another_tenants_decided_items_are_not_listed(bob, client, acme, globex):
    theirs = stage(globex, {"action": "add", "content": "globex fact"})
    decide(theirs, "rejected", by="user:dave", reason="globex reason")
    client.force_login(bob)
    html = client.get(DECIDED).content.decode()
    assert "globex" not in html.lower() and 'data-testid="decided-empty">Nothing decided yet.' in html
    assert client.get(page_url("globex", "pending/?show=decided")).status_code == 404
