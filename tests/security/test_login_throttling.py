"""The web login's throttle (memoryhub/login_throttle.py): failed passwords per username and
client address, then per username from anywhere; the admin's login form is covered too."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth.models import User
from django.test import Client

from memoryhub import login_throttle
from tests.conftest import PASSWORD

# Each test counts failures within one window of a stopped clock (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("throttle_clock")


@pytest.fixture
def person(acme) -> User:
    # A name of its own per test: counters live in the cache, which tests share.
    from tenants.models import Membership, Role

    user = User.objects.create_user(username=f"pat-{uuid.uuid4().hex[:8]}", password=PASSWORD)
    Membership.objects.create(tenant=acme, user=user, role=Role.VIEWER)
    return user


def login(user: User, password: str, address: str = "10.0.0.1", **headers: str):
    return Client(REMOTE_ADDR=address, headers=headers).post(
        "/login/", {"username": user.username, "password": password})


def test_five_failures_lock_the_username_for_that_client(person, settings):
    settings.MEMORYHUB_LOGIN_FAILURES_PER_CLIENT = 5
    for _ in range(5):
        response = login(person, "wrong")
        assert response.status_code == 200 and b"didn't match" in response.content
    locked = login(person, PASSWORD)  # even the right password, while locked
    assert locked.status_code == 429
    assert b"Too many failed logins" in locked.content
    # The clock stands one second into the window: the rest of it, rounded up past the second.
    assert int(locked["Retry-After"]) == settings.MEMORYHUB_LOGIN_WINDOW_SECONDS
    assert "_auth_user_id" not in locked.wsgi_request.session


def test_another_client_is_not_locked_out_by_a_guesser(person, settings):
    settings.MEMORYHUB_LOGIN_FAILURES_PER_CLIENT = 2
    for _ in range(2):
        login(person, "wrong", address="10.0.0.66")
    assert login(person, PASSWORD, address="10.0.0.66").status_code == 429
    assert login(person, PASSWORD, address="10.0.0.7").status_code == 302


def test_failures_from_many_clients_lock_the_username(person, settings):
    settings.MEMORYHUB_LOGIN_FAILURES_PER_CLIENT = 100
    settings.MEMORYHUB_LOGIN_FAILURES_PER_USERNAME = 3
    for n in range(3):
        login(person, "wrong", address=f"10.1.0.{n}")
    assert login(person, PASSWORD, address="10.2.0.1").status_code == 429


def test_a_success_clears_the_clients_failures(person, settings):
    settings.MEMORYHUB_LOGIN_FAILURES_PER_CLIENT = 3
    for _ in range(2):
        login(person, "wrong")
    assert login(person, PASSWORD).status_code == 302
    for _ in range(2):
        assert login(person, "wrong").status_code == 200
    assert login(person, PASSWORD).status_code == 302


def test_usernames_count_without_case(person, settings):
    settings.MEMORYHUB_LOGIN_FAILURES_PER_CLIENT = 2
    client = Client(REMOTE_ADDR="10.0.0.9")
    for name in (person.username.upper(), person.username):
        client.post("/login/", {"username": name, "password": "wrong"})
    assert login(person, PASSWORD, address="10.0.0.9").status_code == 429


def test_behind_a_proxy_the_configured_header_names_the_client(person, settings):
    settings.MEMORYHUB_LOGIN_FAILURES_PER_CLIENT = 2
    settings.MEMORYHUB_CLIENT_IP_HEADER = "X-Forwarded-For"
    proxy = "172.16.0.1"
    for _ in range(2):
        login(person, "wrong", address=proxy, **{"X-Forwarded-For": "spoofed, 10.3.0.1"})
    assert login(person, PASSWORD, address=proxy, **{"X-Forwarded-For": "10.3.0.1"}).status_code == 429
    # Another client behind the same proxy is not locked out.
    assert login(person, PASSWORD, address=proxy, **{"X-Forwarded-For": "10.3.0.2"}).status_code == 302


def test_the_admin_login_form_is_throttled_too(person, settings):
    person.is_staff = True
    person.save()
    settings.MEMORYHUB_LOGIN_FAILURES_PER_CLIENT = 2
    client = Client(REMOTE_ADDR="10.0.0.5")
    for _ in range(2):
        client.post("/admin/login/", {"username": person.username, "password": "wrong"})
    response = client.post("/admin/login/", {"username": person.username, "password": PASSWORD})
    assert response.status_code == 200 and "_auth_user_id" not in client.session


def test_a_cache_outage_lets_people_log_in(person, monkeypatch):
    def down(*args, **kwargs):
        raise ConnectionError("cache down")

    monkeypatch.setattr(login_throttle.cache, "get_many", down)
    monkeypatch.setattr(login_throttle.cache, "incr", down)
    assert login(person, "wrong").status_code == 200
    assert login(person, PASSWORD).status_code == 302


def test_the_test_clients_login_and_commands_are_not_throttled(person, client, settings):
    # authenticate() without a request (management commands, Client.login) has no client to count.
    settings.MEMORYHUB_LOGIN_FAILURES_PER_CLIENT = 1
    assert client.login(username=person.username, password="wrong") is False
    assert client.login(username=person.username, password=PASSWORD) is True
