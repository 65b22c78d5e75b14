"""Admin settings: limits and approval through the audited tenant settings service, and
write-only tenant secrets."""

from __future__ import annotations

import pytest

from memoryhub.models import AuditEvent
from tests.tenants.ui.memory_helpers import HX, entries_of, page_url, seed, set_volume, volume_of

SETTINGS = page_url(rest="settings/")
SECRETS = page_url(rest="settings/secrets")
CLEAR = page_url(rest="settings/secrets/clear")
SECRET = "hunter2-corp-vault-token"
VALID = {"memory_limit": "3000", "user_limit": "500", "approval": "review_only"}


def test_an_admin_sees_the_current_settings(alice, client, acme):
    set_volume(acme, memory_limit=2200, user_limit=1375, approval="all")
    client.force_login(alice)
    response = client.get(SETTINGS)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'name="memory_limit" type="number" min="1" max="65536" required value="2200"' in html
    assert 'name="user_limit" type="number" min="1" max="65536" required value="1375"' in html
    assert '<option value="all" selected>' in html
    assert '<strong>0</strong> secrets set.' in html


@pytest.mark.parametrize("who", ["bob", "carol"])
def test_only_admins_reach_the_settings(request, client, acme, who):
    client.force_login(request.getfixturevalue(who))
    for headers in [{}, HX]:
        assert client.get(SETTINGS, headers=headers).status_code == 403
        assert client.post(SETTINGS, VALID, headers=headers).status_code == 403
        assert client.post(SECRETS, {"secret": SECRET}, headers=headers).status_code == 403
        assert client.post(CLEAR, headers=headers).status_code == 403
    volume = volume_of(acme)
    assert (volume.memory_limit, volume.approval, volume.secrets) == (2200, "all", [])


def test_other_tenants_admins_get_404(dave, client, acme):
    client.force_login(dave)
    assert client.get(SETTINGS).status_code == 404
    assert client.post(SETTINGS, VALID).status_code == 404
    assert client.post(SECRETS, {"secret": SECRET}).status_code == 404
    assert volume_of(acme).memory_limit == 2200


def test_an_admin_saves_limits_and_approval_through_the_audited_service(alice, client, acme):
    client.force_login(alice)
    response = client.post(SETTINGS, VALID, headers=HX)
    assert response.status_code == 200
    assert response.content.decode().lstrip().startswith('<div id="settings-panel">')
    assert b"Settings saved." in response.content
    volume = volume_of(acme)
    assert (volume.memory_limit, volume.user_limit, volume.approval) == (3000, 500, "review_only")
    assert AuditEvent.objects.filter(action="tenant.settings", actor_label="user:alice").count() == 1
    again = client.post(SETTINGS, VALID, headers=HX)
    assert b"Nothing changed." in again.content
    assert AuditEvent.objects.filter(action="tenant.settings").count() == 1


def test_saving_settings_keeps_the_stores_intact(alice, client, acme):
    seed(acme, "memory", ["kept"])
    client.force_login(alice)
    client.post(SETTINGS, {**VALID, "memory_limit": "3"})  # below the current size: allowed
    assert entries_of(acme) == ["kept"] and volume_of(acme).memory_version == 1
    assert b"100% \xe2\x80\x94 4/3 chars" in client.get(page_url()).content


@pytest.mark.parametrize(("field", "value", "message"), [
    ("memory_limit", "0", "Ensure this value is greater than or equal to 1."),
    ("user_limit", "65537", "Ensure this value is less than or equal to 65536."),
    ("memory_limit", "lots", "A valid integer is required."),
    ("approval", "sometimes", "&quot;sometimes&quot; is not a valid choice."),
])
def test_invalid_settings_are_refused_inline_and_nothing_changes(alice, client, acme, field, value, message):
    client.force_login(alice)
    response = client.post(SETTINGS, {**VALID, field: value}, headers=HX)
    assert response.status_code == 200
    html = response.content.decode()
    assert f'<p class="error" role="alert" id="{field}-error" data-testid="settings-error">{field}: {message}</p>' in html
    assert 'aria-invalid="true"' in html
    volume = volume_of(acme)
    assert (volume.memory_limit, volume.user_limit, volume.approval) == (2200, 1375, "all")
    assert not AuditEvent.objects.filter(action="tenant.settings").exists()


def test_the_limits_accept_the_whole_range(alice, client, acme):
    client.force_login(alice)
    client.post(SETTINGS, {"memory_limit": "1", "user_limit": "65536", "approval": "off"})
    volume = volume_of(acme)
    assert (volume.memory_limit, volume.user_limit, volume.approval) == (1, 65536, "off")


def test_secrets_are_write_only_and_audited_by_digest(alice, client, acme):
    client.force_login(alice)
    response = client.post(SECRETS, {"secret": f"  {SECRET}\n"}, headers=HX)
    html = response.content.decode()
    assert "Secret saved; 1 set." in html and "<strong>1</strong> secret set." in html
    assert SECRET not in html and SECRET not in client.get(SETTINGS).content.decode()
    assert volume_of(acme).secrets == [SECRET]
    event = AuditEvent.objects.get(action="memory.secrets.add")
    assert event.actor_label == "user:alice" and SECRET not in str(event.__dict__)
    client.post(SECRETS, {"secret": SECRET})  # already set: no second copy, no second row
    assert volume_of(acme).secrets == [SECRET] and AuditEvent.objects.filter(action="memory.secrets.add").count() == 1


def test_a_secret_too_short_is_refused_without_echoing_it(alice, client, acme):
    client.force_login(alice)
    response = client.post(SECRETS, {"secret": "short1"}, headers=HX)
    html = response.content.decode()
    assert "A secret needs at least 8 characters." in html and "short1" not in html
    assert volume_of(acme).secrets == []


def test_secrets_are_capped_in_length_and_number(alice, client, acme):
    client.force_login(alice)
    too_long = client.post(SECRETS, {"secret": "s" * 1001}, headers=HX)
    assert b"A secret may hold at most 1,000 characters." in too_long.content and b"s" * 1001 not in too_long.content
    set_volume(acme, secrets=[f"existing-secret-{n:03}" for n in range(100)])
    full = client.post(SECRETS, {"secret": SECRET}, headers=HX)
    assert b"At most 100 secrets can be set" in full.content
    assert len(volume_of(acme).secrets) == 100 and SECRET not in volume_of(acme).secrets


def test_secrets_redact_later_writes_from_the_page(alice, client, acme):
    client.force_login(alice)
    client.post(SECRETS, {"secret": SECRET})
    client.post(page_url(rest="memory/add"), {"version": "0", "content": f"vault token is {SECRET}"})
    assert entries_of(acme) == ["vault token is ***REDACTED***"]


def test_an_admin_clears_all_secrets(alice, client, acme):
    set_volume(acme, secrets=["first-secret-1", "second-secret-2"])
    client.force_login(alice)
    html = client.get(SETTINGS).content.decode()
    assert "<strong>2</strong> secrets set." in html and "first-secret-1" not in html
    assert 'hx-confirm="Clear all 2 secrets?' in html
    response = client.post(CLEAR, headers=HX)
    assert b"Cleared 2 secrets." in response.content and b"Clear all secrets" not in response.content
    assert volume_of(acme).secrets == []
    assert AuditEvent.objects.filter(action="memory.secrets.clear", actor_label="user:alice").count() == 1
    assert b"No secrets were set." in client.post(CLEAR, headers=HX).content


def test_the_settings_link_is_shown_to_admins_only(alice, bob, client, acme):
    client.force_login(bob)
    assert b"/t/acme/memory/settings/" not in client.get(page_url()).content
    client.force_login(alice)
    assert b'<a href="/t/acme/memory/settings/">Settings</a>' in client.get(page_url()).content
