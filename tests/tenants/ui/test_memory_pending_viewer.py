"""The pending queue as a viewer sees it: redacted text only (docs/memory-files.md
"Redaction"). Items are stored redacted; the page redacts again with the tenant's current
secrets, so a secret configured after an item was staged does not show either."""

from __future__ import annotations

from memoryhub.redaction import REDACTED
from tenants.models import PendingWrite
from tests.tenants.ui.memory_helpers import page_url, seed, set_volume, stage

PENDING = page_url(rest="pending/")
SECRET = "opensesame-42"


def test_a_viewer_sees_a_staged_credential_redacted(carol, client, acme):
    stage(acme, {"action": "add", "content": "CI uses ghp_abcdefghijklmnopqrstuvwxyz0123456789"})
    client.force_login(carol)
    html = client.get(PENDING).content.decode()
    assert f"CI uses {REDACTED}" in html and "ghp_abcdefghijklmnopqrstuvwxyz" not in html


def test_a_viewer_never_sees_a_secret_configured_after_the_item_was_staged(carol, client, acme):
    seed(acme, "memory", [f"old entry {SECRET}"])
    item = stage(acme, {"action": "replace", "old_text": "old entry", "content": f"vault is {SECRET}"})
    set_volume(acme, secrets=[SECRET])
    PendingWrite.objects.filter(pk=item.pk).update(summary=f"replace: vault is {SECRET}")
    client.force_login(carol)
    html = client.get(PENDING).content.decode()
    assert SECRET not in html
    assert f"vault is {REDACTED}" in html and f"old entry {REDACTED}" in html


def test_a_reviewer_still_sees_the_stored_text_to_edit_it(bob, client, acme):
    item = stage(acme, {"action": "add", "content": "Project uses Bun and Nx"})
    client.force_login(bob)
    html = client.get(PENDING).content.decode()
    assert "Project uses Bun and Nx" in html and 'name="content-1"' in html
    assert item.summary in html


def test_a_viewer_never_sees_a_secret_quoted_by_an_earlier_refusal(carol, client, acme):
    seed(acme, "memory", ["old entry"])
    item = stage(acme, {"action": "replace", "old_text": "old entry", "content": "new entry"})
    PendingWrite.objects.filter(pk=item.pk).update(
        last_error={"code": "NO_MATCH", "message": f"No memory entry contains 'vault {SECRET}'."})
    set_volume(acme, secrets=[SECRET])
    client.force_login(carol)
    html = client.get(PENDING).content.decode()
    assert SECRET not in html
    assert f"vault {REDACTED}" in html
