"""The tenant Settings page: every field of GET/PATCH /api/v1/tenant, saved through the API's
own validation and audited update; errors carry the API's messages and save nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from atoms.models import AtomStore
from memoryhub.models import AuditEvent
from tenants.models import KvConfig, MemoryVolume, Tenant
from tenants.tenant_settings import sections, settings_read

HX = {"HX-Request": "true"}
PAGE = "/t/acme/settings/"


@pytest.fixture
def api(acme, make_key, client_for):
    return client_for(make_key(acme, "admin")[1])


def every_field() -> list[str]:
    return [name for section in sections() for name in section.field_names()]


def test_the_page_shows_every_field_of_the_tenant_endpoint_grouped_by_section(client, alice, acme, api):
    KvConfig.objects.filter(pk=KvConfig.get_or_create_for(acme).pk).update(value_bytes=4096)
    client.force_login(alice)
    html = client.get(PAGE).content.decode()
    for name in api.get("/api/v1/tenant").json():
        assert f'data-testid="setting-{name}"' in html, name
    for group in ["core", "kv", "memory", "atoms"]:
        assert f'data-testid="group-{group}"' in html
    assert '<input name="kv_value_bytes" id="s-kv_value_bytes" value="4096"' in html
    assert '<input type="hidden" name="was:kv_value_bytes" value="4096">' in html
    assert "<strong>acme</strong> <small class=\"muted\">(read-only)</small>" in html
    assert 'name="slug"' not in html


def test_every_field_the_api_returns_is_on_the_page():
    """The registry, not a list in the page, decides what is shown."""
    from tenants.settings_form import groups

    assert [f.name for g in groups() for f in g.fields] == every_field()
    assert "atoms_config" in every_field() and "kv_response_bytes" in every_field()


@pytest.mark.parametrize("who", ["bob", "carol"])
def test_reviewers_and_viewers_get_403(request, client, alice, acme, who):
    client.force_login(request.getfixturevalue(who))
    for headers in [{}, HX]:
        assert client.get(PAGE, headers=headers).status_code == 403
        assert client.post(PAGE, {"api_rate_per_minute": "5"}, headers=headers).status_code == 403
    acme.refresh_from_db()
    assert acme.api_rate_per_minute is None


def test_another_tenants_admin_gets_404(client, acme, dave):
    client.force_login(dave)
    assert client.get(PAGE).status_code == 404
    assert client.post(PAGE, {"api_rate_per_minute": "5"}).status_code == 404
    acme.refresh_from_db()
    assert acme.api_rate_per_minute is None


def test_an_admin_saves_fields_of_every_section_in_one_audited_change(client, alice, acme, api):
    client.force_login(alice)
    config = {"retrieval": {"lexicalCandidates": 50}}
    response = client.post(PAGE, {
        "api_rate_per_minute": "600", "max_api_keys": "7", "kv_value_bytes": "2048", "approval": "off",
        "atoms_config": json.dumps(config), "atoms_require_approval": "true",
        "was:atoms_require_approval": "false", "name": "Acme Two",
    }, headers=HX)
    assert response.status_code == 200
    html = response.content.decode()
    assert html.lstrip().startswith('<div id="settings-panel">') and "Settings saved." in html
    body = api.get("/api/v1/tenant").json()
    assert (body["api_rate_per_minute"], body["max_api_keys"], body["kv_value_bytes"], body["approval"]) == (
        600, 7, 2048, "off")
    assert (body["atoms_config"], body["atoms_require_approval"], body["name"]) == (config, True, "Acme Two")
    event = AuditEvent.objects.get(action="tenant.settings")
    assert (event.actor_label, event.object_type, event.object_id) == ("user:alice", "tenant", "acme")


def test_a_rate_limit_left_empty_goes_back_to_the_server_default(client, alice, acme):
    Tenant.objects.filter(pk=acme.pk).update(api_rate_per_minute=60)
    client.force_login(alice)
    client.post(PAGE, {"api_rate_per_minute": "", "was:api_rate_per_minute": "60"})
    acme.refresh_from_db()
    assert acme.api_rate_per_minute is None


def test_unticking_the_approval_box_sends_false(client, alice, acme):
    AtomStore.objects.filter(pk=AtomStore.get_or_create_for(acme).pk).update(require_approval=True)
    client.force_login(alice)
    client.post(PAGE, {"was:atoms_require_approval": "true"})  # an unticked box sends nothing
    assert AtomStore.get_or_create_for(acme).require_approval is False


def test_fields_left_as_the_page_showed_them_do_not_overwrite_a_concurrent_change(client, alice, acme):
    client.force_login(alice)
    # The page was loaded with a 1 MiB value limit; the API changed it since.
    KvConfig.objects.filter(pk=KvConfig.get_or_create_for(acme).pk).update(value_bytes=999)
    client.post(PAGE, {"kv_value_bytes": "1048576", "was:kv_value_bytes": "1048576",
                       "kv_key_bytes": "512", "was:kv_key_bytes": "1024"})
    config = KvConfig.get_or_create_for(acme)
    assert (config.value_bytes, config.key_bytes) == (999, 512)


def test_submitting_the_page_unchanged_saves_nothing(client, alice, acme):
    client.force_login(alice)
    before = settings_read(acme)
    form = {**{f"was:{k}": v for k, v in texts(before).items()}, **texts(before)}
    form.pop("atoms_require_approval")  # unticked box
    response = client.post(PAGE, form, headers=HX)
    assert "Nothing changed." in response.content.decode()
    assert not AuditEvent.objects.filter(action="tenant.settings").exists()


def texts(values: dict[str, Any]) -> dict[str, str]:
    from tenants.settings_form import texts as as_texts

    return {k: v for k, v in as_texts(values).items() if k != "slug"}


def api_messages(api: Any, body: dict[str, Any]) -> dict[str, str]:
    response = api.patch("/api/v1/tenant", body, format="json")
    assert response.status_code == 400
    return {e["path"]: e["message"] for e in response.json()["error"]["details"]["errors"]}


@pytest.mark.parametrize(("form", "body"), [
    ({"kv_value_bytes": "0"}, {"kv_value_bytes": 0}),
    ({"api_rate_per_minute": "1000001"}, {"api_rate_per_minute": 1_000_001}),
    ({"max_read_policies": "lots"}, {"max_read_policies": "lots"}),
    ({"memory_limit": "12.5"}, {"memory_limit": "12.5"}),
    ({"approval": "sometimes"}, {"approval": "sometimes"}),
    ({"name": ""}, {"name": ""}),
    ({"atoms_config": '{"retrieval": {"lexicalCandidates": 10001}}'},
     {"atoms_config": {"retrieval": {"lexicalCandidates": 10_001}}}),
    ({"atoms_config": "[1, 2]"}, {"atoms_config": [1, 2]}),
])
def test_a_bad_value_shows_the_apis_message_next_to_the_field(client, alice, acme, api, form, body):
    client.force_login(alice)
    (name,) = form
    expected = api_messages(api, body)[name]
    response = client.post(PAGE, form, headers=HX)
    assert response.status_code == 200
    html = response.content.decode()
    from django.utils.html import escape

    assert (f'<p class="error" role="alert" id="s-{name}-error" data-testid="error-{name}">'
            f"{escape(expected)}</p>") in html
    assert f'aria-describedby="s-{name}-error"' in html and "Nothing was saved" in html
    assert not AuditEvent.objects.filter(action="tenant.settings").exists()


def test_one_bad_field_saves_nothing_of_the_others_and_keeps_what_was_typed(client, alice, acme):
    client.force_login(alice)
    before = settings_read(acme)
    response = client.post(PAGE, {"api_rate_per_minute": "300", "kv_key_bytes": "70000", "approval": "off",
                                  "atoms_config": "{not json", "was:api_rate_per_minute": ""})
    html = response.content.decode()
    assert settings_read(acme) == before
    assert 'data-testid="error-kv_key_bytes">Ensure this value is less than or equal to 65536.</p>' in html
    assert 'data-testid="error-atoms_config">Enter a JSON object: Expecting property name enclosed in double quotes.</p>' in html
    assert '<input name="api_rate_per_minute" id="s-api_rate_per_minute" value="300"' in html
    assert '<input type="hidden" name="was:api_rate_per_minute" value="">' in html
    assert '{not json</textarea>' in html
    assert not AuditEvent.objects.filter(action="tenant.settings").exists()


def test_a_changed_embedding_config_bumps_the_index_generation_as_through_the_api(client, alice, acme):
    client.force_login(alice)
    generation = AtomStore.get_or_create_for(acme).index_generation
    client.post(PAGE, {"atoms_config": json.dumps({"embedding": None}), "was:atoms_config": "{}"})
    assert AtomStore.get_or_create_for(acme).index_generation == generation + 1


def test_the_memory_limits_saved_here_are_the_memory_settings(client, alice, acme):
    client.force_login(alice)
    client.post(PAGE, {"memory_limit": "3000", "user_limit": "500"})
    volume = MemoryVolume.get_or_create_for(acme)
    assert (volume.memory_limit, volume.user_limit) == (3000, 500)


def test_the_page_works_without_javascript(client, alice, acme):
    client.force_login(alice)
    response = client.post(PAGE, {"kv_key_bytes": "2000"})
    html = response.content.decode()
    assert "<!doctype html>" in html and "Settings saved." in html
    assert '<form method="post" action="/t/acme/settings/"' in html
