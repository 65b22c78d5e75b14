"""Limits, compare-and-set, and per-tenant limit settings (docs/kv.md "Limits")."""

from __future__ import annotations

from memoryhub.models import AuditEvent
from tenants.models import KvEntry
from tests.conftest import error_of


def test_key_bytes_is_measured_in_utf8(kv):
    """key_bytes is measured in UTF-8: 1,024 bytes fit, 1,025 are 413 LIMIT_EXCEEDED."""
    assert kv.call({"action": "set", "key": "k" * 1024, "value": 1}).status_code == 200
    response = kv.call({"action": "set", "key": "é" * 512 + "a", "value": 1})
    assert response.status_code == 413
    error = error_of(response)
    assert error["code"] == "LIMIT_EXCEEDED"
    assert error["details"] == {"limit": "key_bytes", "max": 1024, "actual": 1025}


def test_value_bytes_is_measured_on_canonical_json(kv):
    """value_bytes is measured on the canonical JSON of the value."""
    assert kv.call({"action": "set", "key": "ok", "value": "x" * 1_048_574}).status_code == 200
    response = kv.call({"action": "set", "key": "big", "value": "x" * 1_048_575})
    assert response.status_code == 413
    assert error_of(response)["details"]["limit"] == "value_bytes"
    assert kv.get("big") is None


def test_keys_per_namespace_counts_new_keys_only(kv, admin_kv):
    """keys_per_namespace counts new keys only: overwrites pass, and a delete frees a place."""
    admin_kv.client.patch("/api/v1/tenant", {"kv_keys_per_namespace": 3}, format="json")
    for key in "abc":
        kv.set(key, 1)
    response = kv.call({"action": "set", "key": "d", "value": 1})
    assert response.status_code == 413
    assert error_of(response)["details"] == {"limit": "keys_per_namespace", "max": 3, "actual": 4}
    assert kv.set("a", 2) is None  # overwrites are exempt
    kv.ok({"action": "delete", "key": "b"})
    assert kv.set("d", 1) is None


def test_namespaces_per_agent_counts_namespaces_holding_keys(kv, admin_kv):
    admin_kv.client.patch("/api/v1/tenant", {"kv_namespaces_per_agent": 2}, format="json")
    kv.set("k", 1, namespace="one")
    kv.set("k", 1, namespace="two")
    error = error_of(kv.call({"action": "set", "key": "k", "value": 1, "namespace": "three"}))
    assert error["details"] == {"limit": "namespaces_per_agent", "max": 2, "actual": 3}
    kv.ok({"action": "clear", "namespace": "one"})
    assert kv.set("k", 1, namespace="three") is None


def test_response_bytes_caps_list(kv, admin_kv):
    admin_kv.client.patch("/api/v1/tenant", {"kv_response_bytes": 40}, format="json")
    kv.set("a", "x" * 10)
    assert kv.list() == [{"key": "a", "value": "x" * 10}]
    kv.set("b", "y" * 10)
    error = error_of(kv.call({"action": "list"}))
    assert error["code"] == "LIMIT_EXCEEDED" and error["details"]["limit"] == "response_bytes"


def test_limits_are_validated_when_set(admin_kv):
    response = admin_kv.client.patch("/api/v1/tenant", {"kv_key_bytes": 0}, format="json")
    assert response.status_code == 400
    assert error_of(response)["details"]["errors"][0]["path"] == "kv_key_bytes"


def test_the_body_cap_refuses_before_parsing(kv, settings):
    settings.MEMORYHUB_KV_MAX_BODY_BYTES = 50
    response = kv.call({"action": "set", "key": "k", "value": "x" * 100})
    assert response.status_code == 413
    assert error_of(response)["details"]["limit"] == "body_bytes"


def test_expected_version_compares_and_sets(kv):
    assert kv.call({"action": "set", "key": "k", "value": 1, "expected_version": 0}).status_code == 200
    conflict = kv.call({"action": "set", "key": "k", "value": 2, "expected_version": 0})
    assert conflict.status_code == 409
    assert error_of(conflict) | {} and error_of(conflict)["details"] == {"expected": 0, "current": 1}
    assert kv.call({"action": "set", "key": "k", "value": 2, "expected_version": 1}).status_code == 200
    stale = kv.call({"action": "delete", "key": "k", "expected_version": 1})
    assert error_of(stale)["code"] == "VERSION_CONFLICT"
    assert kv.get("k") == 2
    assert kv.ok({"action": "delete", "key": "k", "expected_version": 2}) is True
    missing = kv.call({"action": "set", "key": "gone", "value": 1, "expected_version": 3})
    assert error_of(missing)["details"] == {"expected": 3, "current": 0}


def test_a_recreated_key_restarts_at_version_1(kv):
    kv.set("k", 1)
    kv.set("k", 2)
    kv.ok({"action": "delete", "key": "k"})
    kv.set("k", 3)
    assert KvEntry.objects.get(key="k").version == 1


def _stored(key: str) -> tuple[object, ...]:
    row = KvEntry.objects.get(key=key)
    return row.value, row.version, row.value_bytes, row.updated_at, row.updated_by, row.last_run_id


def test_a_stale_expected_version_on_an_existing_key_is_a_conflict_and_writes_nothing(kv):
    kv.set("k", "first")
    kv.set("k", "second")  # now at version 2
    before, audit_rows = _stored("k"), AuditEvent.objects.count()
    for stale in (1, 3):  # a version the key had, and one it never had
        response = kv.call({"action": "set", "key": "k", "value": "third", "expected_version": stale})
        assert response.status_code == 409
        error = error_of(response)
        assert error["code"] == "VERSION_CONFLICT"
        assert error["details"] == {"expected": stale, "current": 2}
    assert _stored("k") == before
    assert AuditEvent.objects.count() == audit_rows
    assert kv.get("k") == "second"


def test_a_stale_expected_version_in_a_recorded_run_is_journaled_as_the_conflict(kv):
    kv.set("k", "first")
    kv.set("k", "second")
    run_id = kv.client.post(kv.url("runs"), {}, format="json").json()["run_id"]
    before = _stored("k")
    body = {"action": "set", "key": "k", "value": "third", "expected_version": 1, "run_id": run_id, "seq": 1}
    response = kv.call(body)
    assert (response.status_code, error_of(response)["code"]) == (409, "VERSION_CONFLICT")
    replayed = kv.call(body)  # the recorded answer, not a second attempt at the write
    assert (replayed.status_code, error_of(replayed)["details"]) == (409, {"expected": 1, "current": 2})
    assert replayed["X-Memoryhub-Replayed"] == "true"
    assert _stored("k") == before


def test_a_put_with_a_stale_if_match_writes_nothing(kv):
    kv.set("k", "first")
    kv.set("k", "second")
    before, audit_rows = _stored("k"), AuditEvent.objects.count()
    response = kv.client.put(kv.url("namespaces/default/keys/k"), {"value": "third"}, format="json",
                             headers={"If-Match": '"1"'})
    assert response.status_code == 412
    error = error_of(response)
    assert (error["code"], error["details"]) == ("PRECONDITION_FAILED", {"current_version": 2})
    assert _stored("k") == before
    assert AuditEvent.objects.count() == audit_rows
