"""Web pages refuse U+0000 in posted fields, as the API does (docs/api.md "Input boundary"):
400 with a page that says why, and nothing is stored (PostgreSQL cannot hold U+0000 in text)."""

from __future__ import annotations

from memoryhub.models import AuditEvent
from tests.tenants.ui.memory_helpers import HX, entries_of, page_url, seed

ADD = page_url(rest="memory/add")


def test_it_refuses_a_null_character_in_a_posted_field_and_stores_nothing(bob, client, acme):
    seed(acme, "memory", ["kept"])
    client.force_login(bob)
    response = client.post(ADD, {"version": "1", "content": "before\x00after"}, headers=HX)
    assert response.status_code == 400
    assert "U+0000" in response.content.decode()
    assert response["HX-Retarget"] == "body"  # htmx shows it (static/js/refusals.js)
    assert entries_of(acme) == ["kept"]
    assert not AuditEvent.objects.filter(action="memory.human.write").exists()


def test_it_refuses_a_null_character_in_a_field_name(bob, client, acme):
    client.force_login(bob)
    response = client.post(ADD, {"version": "0", "content": "fine", "x\x00": "1"})
    assert response.status_code == 400 and "HX-Retarget" not in response  # a plain post: the whole page
    assert b"<html" in response.content and entries_of(acme) == []


def test_ordinary_control_characters_still_pass(bob, client, acme):
    client.force_login(bob)
    response = client.post(ADD, {"version": "0", "content": "tab\there"}, headers=HX)
    assert response.status_code == 200
    assert entries_of(acme) == ["tab\there"]
