from __future__ import annotations

from memoryhub.models import AuditEvent
from tests.conftest import error_of


def test_any_key_reads_the_settings(acme, make_key, client_for):
    _, raw = make_key(acme, "agent", read_only=True)
    response = client_for(raw).get("/api/v1/tenant")
    assert response.status_code == 200
    body = response.json()
    assert {k: body[k] for k in ["slug", "name", "api_rate_per_minute"]} == {"slug": "acme", "name": "Acme Corp", "api_rate_per_minute": None}
    assert body["kv_keys_per_namespace"] == 100_000 and body["kv_key_bytes"] == 1024


def test_an_admin_key_changes_settings_and_it_is_audited(acme, make_key, client_for):
    key, raw = make_key(acme, "admin")
    response = client_for(raw).patch("/api/v1/tenant", {"api_rate_per_minute": 600, "name": "Acme"}, format="json")
    assert response.status_code == 200
    assert response.json()["api_rate_per_minute"] == 600
    acme.refresh_from_db()
    assert (acme.api_rate_per_minute, acme.name) == (600, "Acme")
    event = AuditEvent.objects.get(action="tenant.settings")
    assert event.actor_label == f"key:{key.public_id}"
    assert event.before_digest and event.after_digest and event.before_digest != event.after_digest


def test_non_admin_keys_may_not_change_settings(acme, make_key, client_for):
    for kind in ["agent", "ingest", "host", "reviewer"]:
        _, raw = make_key(acme, kind)
        response = client_for(raw).patch("/api/v1/tenant", {"name": "x"}, format="json")
        assert response.status_code == 403, kind
        assert error_of(response)["code"] == "PERMISSION_DENIED"
    acme.refresh_from_db()
    assert acme.name == "Acme Corp"


def test_a_read_only_admin_key_may_not_change_settings(acme, make_key, client_for):
    _, raw = make_key(acme, "admin", read_only=True)
    response = client_for(raw).patch("/api/v1/tenant", {"name": "x"}, format="json")
    assert response.status_code == 403
    assert error_of(response)["code"] == "PERMISSION_DENIED"


def test_a_bad_patch_names_every_bad_field_and_saves_nothing(acme, make_key, client_for):
    _, raw = make_key(acme, "admin")
    response = client_for(raw).patch(
        "/api/v1/tenant", {"name": "Renamed", "api_rate_per_minute": 0, "slug": "other", "bogus": 1}, format="json"
    )
    assert response.status_code == 400
    error = error_of(response)
    assert error["code"] == "INVALID_REQUEST"
    paths = {e["path"] for e in error["details"]["errors"]}
    assert paths == {"api_rate_per_minute", "slug", "bogus"}
    acme.refresh_from_db()
    assert acme.name == "Acme Corp"
    assert not AuditEvent.objects.filter(action="tenant.settings").exists()


def test_a_non_object_body_is_rejected(acme, make_key, client_for):
    _, raw = make_key(acme, "admin")
    response = client_for(raw).patch("/api/v1/tenant", [1, 2], format="json")
    assert response.status_code == 400
    assert error_of(response)["code"] == "INVALID_REQUEST"


def test_settings_of_one_tenant_never_touch_another(acme, globex, make_key, client_for):
    _, raw = make_key(acme, "admin")
    client_for(raw).patch("/api/v1/tenant", {"api_rate_per_minute": 5}, format="json")
    globex.refresh_from_db()
    assert globex.api_rate_per_minute is None


def test_saving_settings_never_undoes_a_concurrent_store_write(acme, make_key, client_for):
    from memoryhub.actors import Actor
    from tenants import tenant_settings
    from tenants.memory.rules import parse_request
    from tenants.memory.service import memory_write
    from tenants.models import MemoryVolume

    MemoryVolume.get_or_create_for(acme)
    bound = tenant_settings.settings_validate(acme, {"memory_limit": 3000})
    # A write lands between validation and save.
    MemoryVolume.objects.filter(tenant=acme).update(approval="off")
    memory_write(tenant=acme, request=parse_request({"action": "add", "content": "fact"}, "memory"),
                 origin="human", actor=Actor.system("tests"))
    tenant_settings.settings_update(tenant=acme, bound=bound, actor=Actor.system("tests"))
    volume = MemoryVolume.objects.get(tenant=acme)
    assert (volume.memory_entries, volume.memory_version, volume.memory_limit) == (["fact"], 1, 3000)


# Strictness (docs/api.md "Conventions"): a PATCH takes JSON types as they are.

def _patch_is_refused(client, body: dict[str, object], path: str, code: str = "INVALID_REQUEST") -> None:
    response = client.patch("/api/v1/tenant", body, format="json")
    assert response.status_code == 400, response.content
    error = error_of(response)
    assert error["code"] == code
    assert [e["path"] for e in error["details"]["errors"]] == [path]


def test_a_number_is_not_taken_as_the_name(acme, make_key, client_for):
    _, raw = make_key(acme, "admin")
    _patch_is_refused(client_for(raw), {"name": 0}, "name")
    acme.refresh_from_db()
    assert acme.name == "Acme Corp"


def test_a_string_is_not_taken_as_a_limit(acme, make_key, client_for):
    from tenants.models import MemoryVolume

    _, raw = make_key(acme, "admin")
    client = client_for(raw)
    _patch_is_refused(client, {"user_limit": "12"}, "user_limit")
    _patch_is_refused(client, {"kv_key_bytes": "64"}, "kv_key_bytes")
    _patch_is_refused(client, {"api_rate_per_minute": "600"}, "api_rate_per_minute")
    assert MemoryVolume.get_or_create_for(acme).user_limit != 12
    assert not AuditEvent.objects.filter(action="tenant.settings").exists()


def test_a_float_or_a_boolean_is_not_taken_as_a_limit(acme, make_key, client_for):
    _, raw = make_key(acme, "admin")
    client = client_for(raw)
    _patch_is_refused(client, {"memory_limit": 3000.0}, "memory_limit")
    _patch_is_refused(client, {"memory_limit": True}, "memory_limit")


def test_only_a_boolean_is_taken_as_a_flag(acme, make_key, client_for):
    _, raw = make_key(acme, "admin")
    client = client_for(raw)
    for value in ("true", 1, "yes"):
        # The Atom settings keep their library's code (docs/api.md "Tenant settings").
        _patch_is_refused(client, {"atoms_require_approval": value}, "atoms_require_approval", "INVALID_INPUT")


def test_a_number_is_not_taken_as_the_approval_policy(acme, make_key, client_for):
    _, raw = make_key(acme, "admin")
    _patch_is_refused(client_for(raw), {"approval": 1}, "approval")


def test_null_is_refused_where_a_setting_is_not_nullable(acme, make_key, client_for):
    _, raw = make_key(acme, "admin")
    client = client_for(raw)
    _patch_is_refused(client, {"name": None}, "name")
    _patch_is_refused(client, {"user_limit": None}, "user_limit")
    assert client.patch("/api/v1/tenant", {"api_rate_per_minute": None}, format="json").status_code == 200


def test_every_settings_section_uses_strict_fields():
    from tenants import tenant_settings

    def loose_section():
        from rest_framework import serializers

        from tenants.models import Tenant

        class Loose(serializers.ModelSerializer):
            class Meta:
                model = Tenant
                fields = ["name"]

        tenant_settings.register_section(tenant_settings.SettingsSection("loose", Loose, lambda tenant: tenant))

    import pytest

    with pytest.raises(ValueError, match="strict fields"):
        loose_section()
    assert "loose" not in {s.name for s in tenant_settings.sections()}
