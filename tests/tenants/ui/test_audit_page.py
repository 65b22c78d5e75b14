"""The audit log page: every role reads it, filters narrow it, a signed cursor pages it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from memoryhub.actors import Actor
from memoryhub.audit import audit_record
from memoryhub.models import AuditEvent
from tenants.views_audit import PAGE_SIZE

URL = "/t/acme/audit/"
HX = {"HX-Request": "true"}


def event(tenant, action: str, *, actor: str = "tests", object_type: str = "o", object_id: str = "1",
          days_ago: int = 0) -> AuditEvent:  # type: ignore[no-untyped-def]
    row = audit_record(tenant=tenant, actor=Actor.system(actor), action=action, object_type=object_type,
                       object_id=object_id)
    if days_ago:
        AuditEvent.objects.filter(pk=row.pk).update(created_at=timezone.now() - timedelta(days=days_ago))
    return row


def actions_in(html: str) -> list[str]:
    rows = html.split('data-testid="audit-row"')[1:]
    return [row.split("<code>", 1)[1].split("</code>", 1)[0] for row in rows]


@pytest.mark.parametrize("who", ["alice", "bob", "carol"])
def test_every_role_reads_the_log(request, client, acme, who):
    event(acme, "memory.write")
    client.force_login(request.getfixturevalue(who))
    response = client.get(URL)
    assert response.status_code == 200
    assert actions_in(response.content.decode()) == ["memory.write"]


def test_another_tenant_is_404_and_its_rows_never_show(client, acme, globex, dave, carol):
    event(globex, "globex.secret")
    event(acme, "acme.thing")
    client.force_login(dave)
    assert client.get(URL).status_code == 404
    client.force_login(carol)
    html = client.get(URL).content.decode()
    assert actions_in(html) == ["acme.thing"] and "globex.secret" not in html


def test_anonymous_visitors_are_sent_to_login(client, acme):
    response = client.get(URL)
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_the_log_is_read_only(client, acme, alice):
    client.force_login(alice)
    assert client.post(URL).status_code == 405


def test_filters_narrow_by_actor_action_prefix_and_object_type(client, acme, carol):
    event(acme, "atoms.write", actor="key:k_agent", object_type="atom")
    event(acme, "atoms.purge", actor="user:alice", object_type="erasure")
    event(acme, "memory.write", actor="user:alice", object_type="memory")
    client.force_login(carol)
    assert actions_in(client.get(URL, {"action": "atoms."}).content.decode()) == ["atoms.purge", "atoms.write"]
    assert actions_in(client.get(URL, {"actor": "ALICE"}).content.decode()) == ["memory.write", "atoms.purge"]
    assert actions_in(client.get(URL, {"object_type": "atom"}).content.decode()) == ["atoms.write"]
    both = client.get(URL, {"actor": "alice", "action": "atoms"}).content.decode()
    assert actions_in(both) == ["atoms.purge"]
    assert '<option value="erasure">erasure</option>' in both


def test_a_date_range_includes_both_end_days(client, acme, carol):
    event(acme, "old", days_ago=10)
    event(acme, "middle", days_ago=5)
    event(acme, "today")
    today = timezone.now().date()
    client.force_login(carol)
    since, until = (today - timedelta(days=5)).isoformat(), (today - timedelta(days=5)).isoformat()
    assert actions_in(client.get(URL, {"since": since, "until": until}).content.decode()) == ["middle"]
    assert actions_in(client.get(URL, {"since": since}).content.decode()) == ["today", "middle"]
    assert actions_in(client.get(URL, {"until": (today - timedelta(days=6)).isoformat()}).content.decode()) == ["old"]


def test_bad_dates_are_reported_with_200_and_ignored(client, acme, carol):
    event(acme, "thing")
    client.force_login(carol)
    response = client.get(URL, {"since": "yesterday", "until": "2020-01-01"}, headers=HX)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-testid="filter-errors"' in html and "Use a date like 2026-01-31." in html
    assert actions_in(html) == []  # the valid end date still applies
    reversed_range = client.get(URL, {"since": "2030-01-02", "until": "2030-01-01"}).content.decode()
    assert "The end date is before the start date." in reversed_range


def test_pages_follow_a_cursor_without_gaps_or_repeats(client, acme, carol):
    for i in range(PAGE_SIZE + 5):
        event(acme, f"thing.{i}", object_id=str(i))
    client.force_login(carol)
    first = client.get(URL, {"action": "thing."}).content.decode()
    assert len(actions_in(first)) == PAGE_SIZE
    older = first.split('data-testid="older"')[0].rsplit('href="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    assert "action=thing." in older and "cursor=" in older
    second = client.get(older).content.decode()
    assert len(actions_in(second)) == 5 and 'data-testid="older"' not in second
    assert set(actions_in(first)) | set(actions_in(second)) == {f"thing.{i}" for i in range(PAGE_SIZE + 5)}
    assert "Newest entries" in second


def test_a_forged_cursor_is_refused_and_the_first_page_shown(client, acme, carol):
    event(acme, "thing")
    client.force_login(carol)
    response = client.get(URL, {"cursor": "not-a-cursor"})
    assert response.status_code == 200
    html = response.content.decode()
    assert 'data-testid="audit-notice"' in html and actions_in(html) == ["thing"]


def test_an_htmx_request_gets_only_the_results(client, acme, carol):
    event(acme, "thing")
    client.force_login(carol)
    response = client.get(URL, {"action": "th"}, headers=HX)
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<section id="audit-results"') and "<html" not in html
    assert actions_in(html) == ["thing"]


def test_an_empty_log_says_so(client, acme, carol):
    client.force_login(carol)
    assert b'data-testid="audit-empty"' in client.get(URL).content


def test_an_htmx_filter_pushes_a_clean_address(client, acme, carol):
    client.force_login(carol)
    response = client.get(URL, {"actor": "", "action": "memory.", "object_type": "", "since": "", "until": ""},
                          headers=HX)
    assert response["HX-Push-Url"] == "/t/acme/audit/?action=memory."
    assert client.get(URL, headers=HX)["HX-Push-Url"] == "/t/acme/audit/"


def test_the_page_cursor_names_no_global_row_number(client, acme, globex, carol):
    # The cursor is signed, not encrypted: anyone can decode it, so it must not carry the
    # global pk, whose jumps would count other tenants' changes (memoryhub/public_ids.py).
    from urllib.parse import parse_qs, urlparse

    from django.core import signing

    from tenants.views_audit import CURSOR_SALT

    for i in range(PAGE_SIZE + 1):
        event(acme, f"thing.{i}")
        event(globex, "elsewhere")
    client.force_login(carol)
    first = client.get(URL).content.decode()
    older = first.split('data-testid="older"')[0].rsplit('href="', 1)[1].split('"', 1)[0].replace("&amp;", "&")
    _created, row = signing.loads(parse_qs(urlparse(older).query)["cursor"][0], salt=CURSOR_SALT)
    last_shown = AuditEvent.objects.filter(tenant=acme).order_by("-created_at", "-public_id")[PAGE_SIZE - 1]
    assert row == last_shown.public_id and row.startswith("ev_")
    assert row != last_shown.pk


# --- Rows as sentences, actors by name -----------------------------------------------------------

def sentences_in(html: str) -> list[str]:
    import re

    cells = re.findall(r'data-testid="audit-sentence">(.*?)</td>', html, re.S)
    return [re.sub(r"<[^>]+>", "", cell).strip() for cell in cells]


def test_a_keys_write_reads_as_a_sentence_naming_the_key(client, acme, carol, make_key):
    from tenants.kv.rules import canonical
    from tenants.kv.store import agent_ensure, kv_set, limits_for

    key, _ = make_key(acme, name="support-bot", agents=["support"])
    agent, _ = agent_ensure(tenant=acme, slug="support", actor=Actor.system("tests"))
    kv_set(agent=agent, limits=limits_for(acme), namespace="default", key="private-key-name",
           value=canonical({"secret": "private-value"}), actor=Actor.for_key(key))
    client.force_login(carol)
    html = client.get(URL, {"action": "kv.set"}).content.decode()
    assert sentences_in(html) == ["key support-bot (support) set a KV value of agent support"]
    assert f'title="key:{key.public_id}"' in html
    assert "private-key-name" not in html and "private-value" not in html


def test_a_person_approving_a_pending_write_names_the_file(client, acme, bob, carol):
    from tenants.memory.approval import pending_approve
    from tests.tenants.ui.memory_helpers import stage

    pending = stage(acme, {"action": "add", "content": "Prefers short answers"})
    pending_approve(tenant=acme, pending_id=pending.public_id, reviewer=Actor.for_user(bob))
    client.force_login(carol)
    html = client.get(URL, {"action": "memory."}).content.decode()
    sentences = sentences_in(html)
    assert "bob approved a pending write to MEMORY.md" in sentences
    assert "system asked to write to MEMORY.md (held for review)" in sentences
    assert "bob changed MEMORY.md (version 1, from a chat)" in sentences
    assert "Prefers short answers" not in html


def test_revoking_a_key_names_the_key_and_the_person(client, acme, alice, carol, make_key):
    from tenants.services.keys import apikey_revoke

    key, _ = make_key(acme, name="old-bot", agents=["triage"])
    apikey_revoke(key=key, actor=Actor.for_user(alice))
    client.force_login(carol)
    html = client.get(URL, {"action": "apikey."}).content.decode()
    # A revoked key keeps its name; its title says it is revoked.
    assert sentences_in(html) == ["alice revoked key old-bot (triage)", "system created key old-bot (triage)"]
    assert f'title="key:{key.public_id} (revoked)"' in html


def test_system_actors_read_system_with_their_label_in_the_title(client, acme, carol):
    event(acme, "tenant.settings", actor="manage.py demo", object_type="tenant", object_id="acme")
    client.force_login(carol)
    html = client.get(URL).content.decode()
    assert sentences_in(html) == ["system changed the tenant settings"]
    assert 'title="manage.py demo"' in html


def test_an_unknown_action_falls_back_to_readable_words(client, acme, carol):
    event(acme, "widget.frob_all", object_type="gizmo_part", object_id="g-1")
    client.force_login(carol)
    assert sentences_in(client.get(URL).content.decode()) == ["system did “widget frob all” on gizmo part g-1"]


def test_a_missing_or_foreign_key_shows_its_id_only(client, acme, globex, carol, make_key):
    foreign, _ = make_key(globex, name="globex-secret-bot")
    for label in (f"key:{foreign.public_id}", "key:k_zzzzzzzzzz"):
        AuditEvent.objects.create(tenant=acme, actor_kind="key", actor_label=label, action="kv.run.create",
                                  object_type="kv_run", object_id="r1")
    client.force_login(carol)
    html = client.get(URL).content.decode()
    assert sorted(sentences_in(html)) == sorted([
        f"key {foreign.public_id} started KV run r1", "key k_zzzzzzzzzz started KV run r1"])
    assert "globex-secret-bot" not in html


def test_the_actor_filter_finds_rows_by_key_name(client, acme, carol, make_key):
    key, _ = make_key(acme, name="support-bot")
    audit_record(tenant=acme, actor=Actor.for_key(key), action="kv.run.create", object_type="kv_run", object_id="r")
    event(acme, "other.thing")
    client.force_login(carol)
    assert actions_in(client.get(URL, {"actor": "SUPPORT-bot"}).content.decode()) == ["kv.run.create"]


def test_names_are_looked_up_per_page_not_per_row(client, acme, bob, carol, make_key):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tenants.memory.approval import pending_reject
    from tests.tenants.ui.memory_helpers import stage

    def page_queries() -> tuple[int, str]:
        with CaptureQueriesContext(connection) as queries:
            html = client.get(URL).content.decode()
        return len(queries), html

    def add_rows(n: int) -> None:
        for i in range(n):
            key, _ = make_key(acme, name=f"bot-{i}")
            audit_record(tenant=acme, actor=Actor.for_key(key), action="kv.run.create", object_type="kv_run",
                         object_id=f"r{i}")
            pending = stage(acme, {"action": "add", "content": f"entry {i}"})
            pending_reject(tenant=acme, pending_id=pending.public_id, reviewer=Actor.for_user(bob))

    client.force_login(carol)
    add_rows(1)
    few, _ = page_queries()
    add_rows(12)
    many, html = page_queries()
    assert "key bot-11 (agent) started KV run r11" in sentences_in(html)
    assert "bob rejected a pending write to MEMORY.md" in sentences_in(html)
    assert many == few
