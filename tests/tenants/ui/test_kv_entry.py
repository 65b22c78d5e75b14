"""One entry: the JSON viewer, editing with If-Match, deleting with If-Match."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from memoryhub.models import AuditEvent
from tenants.kv.store import kv_get
from tenants.models import KvConfig, KvJournalRecord, KvRun

HX = {"HX-Request": "true"}
NS = "/t/acme/agents/support/ns/default/"


def entry_url(key: str, action: str = "") -> str:
    return f"{NS}entry{'/' + action if action else ''}?key={quote(key, safe='')}"


def stored(agent, key: str = "k"):
    return kv_get(agent=agent, namespace="default", key=key)


def test_it_shows_pretty_json_version_times_and_writers(carol, client, support, put):
    put(support, "house-style", {"tone": "active", "rules": ["short", "日本語 🙂"], "n": 3.0})
    client.force_login(carol)
    response = client.get(entry_url("house-style"))
    assert response.status_code == 200
    expected = json.dumps({"n": 3.0, "rules": ["short", "日本語 🙂"], "tone": "active"}, indent=2, ensure_ascii=False)
    assert response.context_data["pretty"] == expected
    content = response.content.decode()
    assert '<pre class="json" data-testid="entry-value">{\n  &quot;n&quot;: 3.0,' in content
    assert '<dd data-testid="entry-version">1</dd>' in content
    # A system writer reads "system"; the stored label stays in the title.
    assert '<span data-testid="created-by"><span class="actor actor-system" title="tests">system</span></span>' in content
    assert "none (written outside a run)" in content


def test_it_links_the_last_run_that_wrote_the_key(carol, client, support, put):
    run = KvRun.objects.create(agent=support)
    put(support, "k", 1, run_id=run.run_id)
    put(support, "gone", 1, run_id="deleted-run")
    client.force_login(carol)
    assert f'href="/t/acme/agents/support/runs/{run.run_id}/"'.encode() in client.get(entry_url("k")).content
    content = client.get(entry_url("gone")).content
    assert b"deleted-run" in content and b"/runs/deleted-run/" not in content


@pytest.mark.parametrize("key", ["", " ", "a/b", "..", "50%", "x&key=y", "#frag", "a+b", "日本", "line\nbreak"])
def test_any_key_is_addressed_by_the_key_parameter(carol, client, support, put, key):
    put(support, key, {"key": key})
    client.force_login(carol)
    response = client.get(entry_url(key))
    assert response.status_code == 200
    assert response.context_data["entry"].key == key


def test_an_absent_key_or_missing_parameter_is_404(carol, client, support, put):
    put(support, "k", 1)
    client.force_login(carol)
    assert client.get(entry_url("nope")).status_code == 404
    assert client.get(f"{NS}entry").status_code == 404
    assert client.get("/t/acme/agents/support/ns/other/entry?key=k").status_code == 404


def test_stored_text_is_escaped_in_the_viewer_and_the_editor(bob, client, support, put):
    hostile = "</pre></textarea><script>alert(1)</script>"
    put(support, hostile, hostile)
    client.force_login(bob)
    for url in [entry_url(hostile), entry_url(hostile, "edit")]:
        content = client.get(url).content.decode()
        assert "<script>alert(1)" not in content and "</textarea><script>" not in content
        assert "&lt;/pre&gt;&lt;/textarea&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in content


def test_viewers_see_no_edit_controls_and_get_403_on_every_write(carol, client, support, put):
    put(support, "k", {"a": 1})
    client.force_login(carol)
    content = client.get(entry_url("k")).content
    assert b"Edit value" not in content and b"Delete key" not in content
    for headers in [{}, HX]:
        assert client.get(entry_url("k", "edit"), headers=headers).status_code == 403
        assert client.post(entry_url("k", "edit"), {"value": "2", "version": "1"}, headers=headers).status_code == 403
        assert client.post(entry_url("k", "delete"), {"version": "1"}, headers=headers).status_code == 403
    entry = stored(support)
    assert entry.value == '{"a":1}' and entry.version == 1


def test_a_reviewer_opens_the_editor_with_the_value_and_its_version(bob, client, support, put):
    put(support, "k", {"b": [1, 2], "a": None})
    client.force_login(bob)
    response = client.get(entry_url("k", "edit"), headers=HX)
    assert response.status_code == 200
    content = response.content.decode()
    assert content.lstrip().startswith('<div id="entry-panel">')
    assert '<input type="hidden" name="version" value="1">' in content
    assert "&quot;a&quot;: null,\n  &quot;b&quot;: [\n    1,\n    2\n  ]" in content
    assert "<textarea" in content and "<html" not in content
    assert b"<html" in client.get(entry_url("k", "edit")).content


@pytest.mark.parametrize("who", ["alice", "bob"])
def test_a_reviewer_or_admin_saves_a_new_value(request, client, support, put, who):
    run = KvRun.objects.create(agent=support)
    put(support, "k", {"old": True}, run_id=run.run_id)
    client.force_login(request.getfixturevalue(who))
    response = client.post(entry_url("k", "edit"), {"value": '{\n "b": 2, "a": [1.10, "é"]\n}', "version": "1"}, headers=HX)
    assert response.status_code == 200
    assert b"Saved version 2." in response.content
    assert b'<dd data-testid="entry-version">2</dd>' in response.content
    entry = stored(support)
    assert entry.value == '{"a":[1.1,"é"],"b":2}' and entry.version == 2
    assert entry.updated_by == who and entry.created_by == "tests"
    assert entry.last_run_id is None  # UI writes belong to no run


def test_ui_writes_are_audited_as_the_person_and_never_journaled(bob, client, support, put):
    put(support, "k", 1)
    client.force_login(bob)
    client.post(entry_url("k", "edit"), {"value": "2", "version": "1"})
    assert not KvJournalRecord.objects.exists()
    assert AuditEvent.objects.filter(action="kv.set", actor_label="user:bob").count() == 1


def test_a_plain_save_renders_the_whole_page(bob, client, support, put):
    put(support, "k", 1)
    client.force_login(bob)
    response = client.post(entry_url("k", "edit"), {"value": "[true]", "version": "1"})
    assert response.status_code == 200 and b"<html" in response.content
    assert b"Saved version 2." in response.content
    assert stored(support).value == "[true]"


@pytest.mark.parametrize(("typed", "message"), [
    ("{not json", "The value is not valid JSON"),
    ("", "The value is not valid JSON"),
    ("NaN", "The value is not valid JSON"),
    ("[1e400]", "The value is not valid JSON"),
    ('"\\ud800"', "The value is not valid JSON"),
    ("null", "set needs a non-null value"),
    ("  null  ", "set needs a non-null value"),
])
def test_an_invalid_value_is_refused_inline_and_nothing_changes(bob, client, support, put, typed, message):
    put(support, "k", {"keep": 1})
    client.force_login(bob)
    response = client.post(entry_url("k", "edit"), {"value": typed, "version": "1"}, headers=HX)
    assert response.status_code == 200
    assert message in response.content.decode()
    assert b'data-testid="value-error"' in response.content and b'aria-invalid="true"' in response.content
    entry = stored(support)
    assert entry.value == '{"keep":1}' and entry.version == 1


def test_the_tenants_value_limit_applies(bob, client, support, put, acme):
    put(support, "k", "short")
    KvConfig.objects.filter(tenant=acme).update(value_bytes=10)
    client.force_login(bob)
    ok = client.post(entry_url("k", "edit"), {"value": '"12345678"', "version": "1"}, headers=HX)
    assert b"Saved version 2." in ok.content
    too_big = client.post(entry_url("k", "edit"), {"value": '"123456789"', "version": "2"}, headers=HX)
    assert too_big.status_code == 200
    assert b"The value_bytes limit is 10; this call needs 11." in too_big.content
    assert stored(support).value == '"12345678"'


def test_a_stale_edit_shows_the_current_value_and_never_overwrites(bob, client, support, put):
    put(support, "k", {"v": "original"})
    client.force_login(bob)
    editor = client.get(entry_url("k", "edit"))
    assert editor.context_data["form_version"] == 1
    put(support, "k", {"v": "someone else"})
    response = client.post(entry_url("k", "edit"), {"value": '{"v": "mine"}', "version": "1"}, headers=HX)
    assert response.status_code == 200
    content = response.content.decode()
    assert "Someone else changed this key; it is now at version 2. Your edit was not saved." in content
    assert "&quot;v&quot;: &quot;someone else&quot;" in content  # the current value
    assert "{&quot;v&quot;: &quot;mine&quot;}" in content  # the draft is kept for a deliberate retry
    assert '<input type="hidden" name="version" value="2">' in content
    entry = stored(support)
    assert entry.value == '{"v":"someone else"}' and entry.version == 2 and entry.updated_by == "tests"


def test_an_edit_of_a_key_deleted_meanwhile_does_not_recreate_it(bob, client, support, put):
    put(support, "k", 1)
    client.force_login(bob)
    client.post(entry_url("k", "delete"), {"version": "1"})
    response = client.post(entry_url("k", "edit"), {"value": "2", "version": "1"}, headers=HX)
    assert response.status_code == 200
    assert b"Someone else deleted this key. Your edit was not saved." in response.content
    assert stored(support) is None


def test_an_edit_without_a_version_is_refused(bob, client, support, put):
    put(support, "k", 1)
    client.force_login(bob)
    response = client.post(entry_url("k", "edit"), {"value": "2"}, headers=HX)
    assert response.status_code == 200 and b"reload the page" in response.content
    assert stored(support).version == 1


@pytest.mark.parametrize("version", ["", "one", "1.0"])
def test_an_edit_or_delete_with_a_garbled_version_is_refused(bob, client, support, put, version):
    put(support, "k", 1)
    client.force_login(bob)
    edited = client.post(entry_url("k", "edit"), {"value": "2", "version": version}, headers=HX)
    assert edited.status_code == 200 and b"The form lost the version it was loaded at" in edited.content
    deleted = client.post(entry_url("k", "delete"), {"version": version}, headers=HX)
    assert deleted.status_code == 200 and b"The form lost the key&#x27;s version" in deleted.content
    assert stored(support).version == 1


def test_a_reviewer_deletes_a_key_at_its_version(bob, client, support, put):
    put(support, "k", 1)
    put(support, "other", 1)
    client.force_login(bob)
    response = client.post(entry_url("k", "delete"), {"version": "1"}, headers=HX)
    assert response.status_code == 200
    assert b"Key deleted." in response.content and f'href="{NS}"'.encode() in response.content
    assert stored(support) is None and stored(support, "other") is not None


def test_a_plain_delete_redirects_to_the_namespace(bob, client, support, put):
    put(support, "a/b", 1)
    client.force_login(bob)
    response = client.post(entry_url("a/b", "delete"), {"version": "1"})
    assert response.status_code == 302 and response["Location"] == NS
    assert stored(support, "a/b") is None


def test_a_stale_delete_keeps_the_key(bob, client, support, put):
    put(support, "k", 1)
    put(support, "k", 2)
    client.force_login(bob)
    response = client.post(entry_url("k", "delete"), {"version": "1"}, headers=HX)
    assert response.status_code == 200
    assert b"Someone else changed this key; it is now at version 2. The key was not deleted." in response.content
    assert stored(support).version == 2
    missing = client.post(entry_url("k", "delete"), {}, headers=HX)
    assert b"reload the page" in missing.content and stored(support) is not None


def test_writes_need_post(bob, client, support, put):
    put(support, "k", 1)
    client.force_login(bob)
    assert client.get(entry_url("k", "delete")).status_code == 405
    assert client.put(entry_url("k", "edit")).status_code == 405


def test_another_tenants_entries_are_404(alice, dave, client, support, make_agent, globex, put):
    foreign = make_agent(globex, "globex-only")
    put(foreign, "k", "globex secret")
    put(support, "k", "acme")
    client.force_login(alice)
    other = "/t/acme/agents/globex-only/ns/default/entry"
    assert client.get(f"{other}?key=k").status_code == 404
    assert client.get(f"{other}/edit?key=k").status_code == 404
    assert client.post(f"{other}/edit?key=k", {"value": "1", "version": "1"}).status_code == 404
    assert client.post(f"{other}/delete?key=k", {"version": "1"}).status_code == 404
    client.force_login(dave)
    assert client.get(entry_url("k")).status_code == 404
    assert client.post(entry_url("k", "edit"), {"value": "1", "version": "1"}).status_code == 404
    assert client.post(entry_url("k", "delete"), {"version": "1"}).status_code == 404
    assert kv_get(agent=foreign, namespace="default", key="k").value == '"globex secret"'
    assert stored(support).value == '"acme"'


def test_writers_read_as_the_keys_name_and_the_persons_username(bob, carol, client, support, make_key):
    from memoryhub.actors import Actor
    from tenants.kv.rules import canonical
    from tenants.kv.store import kv_set, limits_for

    key, _ = make_key(support.tenant, name="support-bot", agents=["support"])
    kv_set(agent=support, limits=limits_for(support.tenant), namespace="default", key="k", value=canonical(1),
           actor=Actor.for_key(key))
    client.force_login(bob)
    client.post(entry_url("k", "edit"), {"value": "2", "version": "1"})
    client.force_login(carol)
    content = client.get(entry_url("k")).content.decode()
    assert (f'<span data-testid="created-by"><span class="actor actor-key" title="{key.public_id}">'
            "key support-bot (support)</span></span>") in content
    assert '<span data-testid="updated-by"><span class="actor actor-user" title="bob">bob</span></span>' in content
