"""KV audit rows keep namespace and key names only as digests (docs/operations.md "Audit
log"), and migration memoryhub 0004 rewrites rows written before with the namespace in clear."""

from __future__ import annotations

import importlib

import pytest
from django.db import connection
from django.db.migrations.loader import MigrationLoader

from memoryhub.models import AuditEvent
from tenants.kv.rules import canonical
from tenants.kv.store import agent_ensure, entry_audit_id, kv_clear, kv_delete, kv_set, limits_for
from tests.conftest import TEST_ACTOR

MIGRATION = importlib.import_module("memoryhub.migrations.0004_audit_kv_names_digested")
NAMESPACE = "patient-jsmith"
KEY = "diagnosis-2026"


def test_set_delete_and_clear_rows_name_neither_the_namespace_nor_the_key(acme):
    agent, _ = agent_ensure(tenant=acme, slug="support", actor=TEST_ACTOR)
    kv_set(agent=agent, limits=limits_for(acme), namespace=NAMESPACE, key=KEY, value=canonical(1), actor=TEST_ACTOR)
    kv_set(agent=agent, limits=limits_for(acme), namespace=NAMESPACE, key="other", value=canonical(2), actor=TEST_ACTOR)
    kv_delete(agent=agent, namespace=NAMESPACE, key=KEY, actor=TEST_ACTOR)
    kv_clear(agent=agent, namespace=NAMESPACE, actor=TEST_ACTOR)
    rows = list(AuditEvent.objects.filter(action__in=["kv.set", "kv.delete", "kv.clear"]).order_by("pk"))
    assert [r.action for r in rows] == ["kv.set", "kv.set", "kv.delete", "kv.clear"]
    for row in rows:
        assert NAMESPACE not in row.object_id and KEY not in row.object_id
        assert row.object_id.startswith("support/ns:")
    # Equal names give equal ids: a reader can still follow one entry through the log.
    assert rows[0].object_id == rows[2].object_id == entry_audit_id(agent, NAMESPACE, KEY)
    assert rows[3].object_id == rows[0].object_id.split("#")[0]


@pytest.fixture
def old_apps(db: None):  # type: ignore[no-untyped-def]
    return MigrationLoader(connection).project_state(("memoryhub", "0003_audit_public_id")).apps


def test_the_migration_digests_namespaces_of_rows_written_before(acme, old_apps):
    agent, _ = agent_ensure(tenant=acme, slug="support", actor=TEST_ACTOR)
    event = old_apps.get_model("memoryhub", "AuditEvent")
    key_digest = entry_audit_id(agent, NAMESPACE, KEY).split("#")[1]
    old_entry = event.objects.create(tenant_id=acme.pk, actor_kind="system", actor_label="system", action="kv.set",
                                     object_type="kv_entry", object_id=f"support/{NAMESPACE}#{key_digest}")
    old_clear = event.objects.create(tenant_id=acme.pk, actor_kind="system", actor_label="system", action="kv.clear",
                                     object_type="kv_namespace", object_id=f"support/{NAMESPACE}")
    other = event.objects.create(tenant_id=acme.pk, actor_kind="system", actor_label="system", action="memory.approve",
                                 object_type="pending_write", object_id="pw_abc/def")
    MIGRATION.digest_namespaces(old_apps, None)
    MIGRATION.digest_namespaces(old_apps, None)  # a second run changes nothing
    old_entry.refresh_from_db()
    old_clear.refresh_from_db()
    other.refresh_from_db()
    assert old_entry.object_id == entry_audit_id(agent, NAMESPACE, KEY)
    assert old_clear.object_id == entry_audit_id(agent, NAMESPACE, KEY).split("#")[0]
    assert other.object_id == "pw_abc/def"
