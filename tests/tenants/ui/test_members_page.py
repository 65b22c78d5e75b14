"""The Members page: admins add existing users, change roles and remove members; the last
admin stays; every change is audited with the username and roles only."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from memoryhub.models import AuditEvent
from tenants.models import Membership, Role
from tests.conftest import PASSWORD

HX = {"HX-Request": "true"}
PAGE = "/t/acme/members/"


def role_url(membership: Membership) -> str:
    return f"/t/{membership.tenant.slug}/members/{membership.pk}/role"


def remove_url(membership: Membership) -> str:
    return f"/t/{membership.tenant.slug}/members/{membership.pk}/remove"


def member(user: User, slug: str = "acme") -> Membership:
    return Membership.objects.get(user=user, tenant__slug=slug)


@pytest.fixture
def frank(db: None) -> User:
    """Has an account but belongs to no tenant."""
    return User.objects.create_user("frank", password=PASSWORD)


def test_an_admin_sees_every_member_with_role_and_join_date(alice, bob, carol, dave, client):
    client.force_login(alice)
    response = client.get(PAGE)
    assert response.status_code == 200
    html = response.content.decode()
    assert "3 members" in html
    for name, role in [("alice", "admin"), ("bob", "reviewer"), ("carol", "viewer")]:
        assert f'data-testid="member-{name}"' in html
        row = html.split(f'data-testid="member-{name}"')[1].split("</tr>")[0]
        assert f'<option value="{role}" selected>' in row
        assert f'datetime="{member(User.objects.get(username=name)).created_at:%Y-%m-%d}' in row
    assert "dave" not in html


@pytest.mark.parametrize("who", ["bob", "carol"])
def test_reviewers_and_viewers_get_403_everywhere(request, client, alice, who):
    user = request.getfixturevalue(who)
    client.force_login(user)
    target = member(alice)
    for headers in [{}, HX]:
        assert client.get(PAGE, headers=headers).status_code == 403
        assert client.post(PAGE, {"username": who, "role": "admin"}, headers=headers).status_code == 403
        assert client.post(role_url(member(user)), {"role": "admin"}, headers=headers).status_code == 403
        assert client.post(remove_url(target), headers=headers).status_code == 403
    assert member(user).role != Role.ADMIN and Membership.objects.filter(pk=target.pk).exists()
    assert not AuditEvent.objects.filter(object_type="membership").exists()


def test_another_tenants_admin_gets_404_for_the_page_and_its_members(client, alice, bob, dave):
    client.force_login(dave)
    assert client.get(PAGE).status_code == 404
    assert client.post(PAGE, {"username": "dave", "role": "admin"}).status_code == 404
    assert client.post(role_url(member(bob)), {"role": "admin"}).status_code == 404
    assert client.post(remove_url(member(bob))).status_code == 404
    assert member(bob).role == Role.REVIEWER


def test_an_acme_membership_is_not_found_through_globex(client, alice, bob, dave):
    """dave is globex's admin: acme's membership ids do not exist under /t/globex/."""
    client.force_login(dave)
    bobs = member(bob)
    assert client.post(f"/t/globex/members/{bobs.pk}/role", {"role": "admin"}).status_code == 404
    assert client.post(f"/t/globex/members/{bobs.pk}/remove").status_code == 404
    assert member(bob).role == Role.REVIEWER


def test_an_admin_adds_an_existing_user_with_an_audit_row(client, alice, frank):
    client.force_login(alice)
    response = client.post(PAGE, {"username": " frank ", "role": "reviewer"}, headers=HX)
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="members-panel">')
    assert "Added frank as reviewer." in html and 'data-testid="member-frank"' in html
    assert member(frank).role == Role.REVIEWER
    event = AuditEvent.objects.get(action="membership.set")
    assert (event.actor_label, event.object_type, event.object_id, event.before_digest) == (
        "user:alice", "membership", "frank", "")
    assert event.after_digest


def test_the_added_member_can_open_the_tenant(client, alice, frank):
    client.force_login(alice)
    client.post(PAGE, {"username": "frank", "role": "viewer"})
    client.force_login(frank)
    assert client.get("/t/acme/").status_code == 200


@pytest.mark.parametrize(("username", "message"), [
    ("nobody", "No user has this username; people are created by staff in the Django admin."),
    ("", "Enter a username."),
    ("bob", "bob is already a member (reviewer)."),
])
def test_adding_an_unknown_user_or_a_member_is_refused_next_to_the_field(client, alice, bob, username, message):
    client.force_login(alice)
    response = client.post(PAGE, {"username": username, "role": "admin"}, headers=HX)
    assert response.status_code == 200
    html = response.content.decode()
    assert f'<p class="error" role="alert" id="username-error" data-testid="add-error">{message}</p>' in html
    assert 'aria-invalid="true" aria-describedby="username-error"' in html
    assert member(bob).role == Role.REVIEWER
    assert not AuditEvent.objects.filter(object_type="membership").exists()


def test_an_unknown_role_is_refused(client, alice, frank):
    client.force_login(alice)
    response = client.post(PAGE, {"username": "frank", "role": "owner"})
    assert "Choose one of: admin, reviewer, viewer." in response.content.decode()
    assert not Membership.objects.filter(user=frank).exists()


def test_an_admin_changes_a_role_with_an_audit_row(client, alice, bob):
    client.force_login(alice)
    response = client.post(role_url(member(bob)), {"role": "viewer"}, headers=HX)
    assert "bob is now viewer." in response.content.decode()
    assert member(bob).role == Role.VIEWER
    event = AuditEvent.objects.get(action="membership.set")
    assert (event.object_id, event.actor_label) == ("bob", "user:alice") and event.before_digest
    again = client.post(role_url(member(bob)), {"role": "viewer"}, headers=HX)
    assert "bob is already viewer." in again.content.decode()
    assert AuditEvent.objects.filter(action="membership.set").count() == 1


def test_the_last_admin_cannot_demote_themselves(client, alice, bob):
    client.force_login(alice)
    response = client.post(role_url(member(alice)), {"role": "reviewer"}, headers=HX)
    assert response.status_code == 200
    html = response.content.decode()
    assert ('<p class="error" role="alert" data-testid="member-error">'
            "A tenant needs at least one admin: make another member an admin first.</p>") in html
    assert member(alice).role == Role.ADMIN
    assert not AuditEvent.objects.filter(object_type="membership").exists()


def test_the_last_admin_cannot_be_removed(client, alice, bob):
    client.force_login(alice)
    response = client.post(remove_url(member(alice)))
    assert "A tenant needs at least one admin" in response.content.decode()
    assert Membership.objects.filter(user=alice, tenant__slug="acme").exists()


def test_with_a_second_admin_an_admin_may_step_down_and_leaves_the_page(client, alice, bob):
    Membership.objects.filter(pk=member(bob).pk).update(role=Role.ADMIN)
    client.force_login(alice)
    response = client.post(role_url(member(alice)), {"role": "reviewer"}, headers=HX)
    assert response["HX-Redirect"] == "/t/acme/"
    assert member(alice).role == Role.REVIEWER
    assert client.get(PAGE).status_code == 403


def test_an_admin_removes_a_member_with_an_audit_row(client, alice, carol):
    client.force_login(alice)
    response = client.post(remove_url(member(carol)), headers=HX)
    assert "Removed carol." in response.content.decode()
    assert not Membership.objects.filter(user=carol).exists()
    event = AuditEvent.objects.get(action="membership.delete")
    assert (event.object_id, event.actor_label, event.after_digest) == ("carol", "user:alice", "")
    client.force_login(carol)
    assert client.get("/t/acme/").status_code == 404


def test_an_admin_who_removes_themselves_goes_home(client, alice, bob):
    Membership.objects.filter(pk=member(bob).pk).update(role=Role.ADMIN)
    client.force_login(alice)
    response = client.post(remove_url(member(alice)))
    assert response.status_code == 302 and response["Location"] == "/"


def test_forms_work_without_javascript(client, alice, frank):
    client.force_login(alice)
    response = client.post(PAGE, {"username": "frank", "role": "viewer"})
    html = response.content.decode()
    assert "<!doctype html>" in html and "Added frank as viewer." in html
    assert f'action="{role_url(member(frank))}"' in html and f'action="{remove_url(member(frank))}"' in html


def test_audit_rows_hold_no_content_beyond_ids_and_roles(client, alice, frank):
    client.force_login(alice)
    client.post(PAGE, {"username": "frank", "role": "viewer"})
    client.post(role_url(member(frank)), {"role": "admin"})
    client.post(remove_url(member(frank)))
    for event in AuditEvent.objects.filter(object_type="membership"):
        assert event.object_id == "frank"
        assert event.tenant.slug == "acme" and event.actor_user_id == alice.pk


def test_the_nav_links_members_and_settings_for_admins_only(client, alice, bob):
    client.force_login(alice)
    html = client.get("/t/acme/").content.decode()
    assert '<a href="/t/acme/members/">Members</a>' in html and '<a href="/t/acme/settings/">Settings</a>' in html
    client.force_login(bob)
    html = client.get("/t/acme/").content.decode()
    assert "/t/acme/members/" not in html and "/t/acme/settings/" not in html
