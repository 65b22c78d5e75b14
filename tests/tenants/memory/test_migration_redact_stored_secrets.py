"""Migration 0005_redact_stored_secrets: what earlier releases stored unredacted is redacted
(docs/memory-files.md "Redaction"). Rows are made through the historical models of the
state before it (fields of 0003 only) and its function runs against them."""

from __future__ import annotations

import hashlib
import importlib
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.loader import MigrationLoader

from memoryhub.redaction import REDACTED
from tenants.models import MemorySession, MemoryVersion, MemoryVolume, PendingWrite, ThreatFinding

MIGRATION = importlib.import_module("tenants.migrations.0005_redact_stored_secrets")
TOKEN = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
KEY = "mh_q7w8an0i7b_FcknQIoh3DtYp5eWuWEB2IQHsMK1Y28jMDwtS7Rw"
TENANT_SECRET = "opensesame-42"
RAW = f"Deploy token is {TOKEN} for CI."
CLEAN = f"Deploy token is {REDACTED} for CI."


@pytest.fixture
def old_apps(db: None) -> Any:
    """The app registry as it was before 0005."""
    return MigrationLoader(connection).project_state(("tenants", "0004_tenant_limits")).apps


@pytest.fixture
def old_volume(old_apps: Any) -> Any:
    tenant = old_apps.get_model("tenants", "Tenant").objects.create(slug="legacy", name="Legacy")
    volume = old_apps.get_model("tenants", "MemoryVolume").objects.create(
        tenant=tenant, secrets=[TENANT_SECRET], memory_entries=[RAW, "plain fact"],
        user_entries=[f"vault {TENANT_SECRET}"], memory_version=1, user_version=1)
    version = old_apps.get_model("tenants", "MemoryVersion")
    version.objects.create(volume=volume, target="memory", number=1, entries=[RAW, "plain fact"], origin="foreground",
                           actor_label="key:k_1", reason=f"import with {KEY}")
    version.objects.create(volume=volume, target="user", number=1, entries=[f"vault {TENANT_SECRET}"], origin="human",
                           actor_label="alice")
    old_apps.get_model("tenants", "PendingWrite").objects.create(
        volume=volume, target="memory", origin="foreground", created_by="key:k_1", summary=f"batch: {TOKEN}"[:80],
        payload={"operations": [{"action": "add", "content": f"key {KEY}"},
                                {"action": "replace", "old_text": TOKEN, "content": "rotated"}]},
        original_payload={"action": "add", "content": f"pw {TENANT_SECRET}"}, pinned=[None, RAW],
        last_error={"code": "NO_MATCH", "message": f"No memory entry contains '{TOKEN}'."}, reason=TENANT_SECRET)
    snapshot = f"MEMORY\n{RAW}"
    old_apps.get_model("tenants", "MemorySession").objects.create(
        volume=volume, chat_id="c1", snapshot=snapshot, memory_version=1, user_version=1, created_by="key:k_1",
        snapshot_digest="sha256:" + hashlib.sha256(snapshot.encode()).hexdigest())
    # Through today's model: the table has the public id column of 0006, which the historical
    # model cannot fill (the migration itself only reads and writes fields of 0003).
    ThreatFinding.objects.create(volume_id=volume.pk, target="memory", entry=RAW, patterns=["x"], patterns_version=1)
    return volume


def test_it_redacts_entries_history_pending_items_snapshots_and_findings(old_apps, old_volume):
    MIGRATION.redact_stored_secrets(old_apps, None)
    volume = MemoryVolume.objects.get(pk=old_volume.pk)
    assert volume.memory_entries == [CLEAN, "plain fact"]
    assert volume.user_entries == [f"vault {REDACTED}"]
    assert volume.secrets == [TENANT_SECRET]  # the list of secrets itself is kept: it is what redacts
    assert [v.entries for v in MemoryVersion.objects.order_by("target")] == [[CLEAN, "plain fact"], [f"vault {REDACTED}"]]
    assert MemoryVersion.objects.get(target="memory").reason == f"import with {REDACTED}"
    item = PendingWrite.objects.get()
    assert item.payload == {"operations": [{"action": "add", "content": f"key {REDACTED}"},
                                           {"action": "replace", "old_text": REDACTED, "content": "rotated"}]}
    assert item.original_payload == {"action": "add", "content": f"pw {REDACTED}"}
    assert item.pinned == [None, CLEAN]
    assert item.summary == "batch of 2: add, replace"  # rebuilt from the redacted payload
    assert item.last_error == {"code": "NO_MATCH", "message": f"No memory entry contains '{REDACTED}'."}
    assert item.reason == REDACTED
    session = MemorySession.objects.get()
    assert session.snapshot == f"MEMORY\n{CLEAN}"
    assert session.snapshot_digest == "sha256:" + hashlib.sha256(session.snapshot.encode()).hexdigest()
    assert ThreatFinding.objects.get().entry == CLEAN


def test_running_it_again_changes_nothing(old_apps, old_volume):
    MIGRATION.redact_stored_secrets(old_apps, None)
    before = [list(model.objects.values()) for model in (MemoryVolume, MemoryVersion, PendingWrite, MemorySession)]
    MIGRATION.redact_stored_secrets(old_apps, None)
    assert [list(model.objects.values()) for model in (MemoryVolume, MemoryVersion, PendingWrite, MemorySession)] == before


def test_entries_that_redaction_makes_equal_are_kept_once(old_apps, old_volume):
    other = "Deploy token is ghp_zyxwvutsrqponmlkjihgfedcba9876543210 for CI."
    old_apps.get_model("tenants", "MemoryVolume").objects.filter(pk=old_volume.pk).update(
        memory_entries=[RAW, other, "plain fact"])
    MIGRATION.redact_stored_secrets(old_apps, None)
    assert MemoryVolume.objects.get(pk=old_volume.pk).memory_entries == [CLEAN, "plain fact"]


def test_clean_rows_are_not_rewritten(old_apps, acme):
    volume = MemoryVolume.get_or_create_for(acme)
    MemoryVolume.objects.filter(pk=volume.pk).update(memory_entries=["plain fact"])
    session = MemorySession.objects.create(volume=volume, chat_id="c2", snapshot="plain fact", snapshot_digest="d",
                                           memory_version=0, user_version=0, created_by="t")
    MIGRATION.redact_stored_secrets(old_apps, None)
    assert MemorySession.objects.get(pk=session.pk).snapshot_digest == "d"


def test_the_migration_runs_the_redaction_forward_only():
    [operation] = MIGRATION.Migration.operations
    assert operation.code is MIGRATION.redact_stored_secrets
    assert ("tenants", "0004_tenant_limits") in MIGRATION.Migration.dependencies


def test_a_summary_that_cut_a_secret_in_two_is_rebuilt_from_the_redacted_payload(old_apps, old_volume):
    content = "Our staging cluster needs a token, here it is in full: " + TOKEN
    summary = f"add: {content}"[:77] + "..."  # what an older release stored: half of the token
    assert TOKEN not in summary and TOKEN[:10] in summary
    old_apps.get_model("tenants", "PendingWrite").objects.create(
        volume=old_volume, target="memory", origin="foreground", created_by="key:k_1", summary=summary,
        payload={"action": "add", "content": content}, original_payload=None, pinned=[None])
    MIGRATION.redact_stored_secrets(old_apps, None)
    item = PendingWrite.objects.get(summary__startswith="add:")
    assert TOKEN[:10] not in item.summary and item.summary.startswith("add: Our staging cluster")


def test_a_long_reason_stays_within_its_column_after_redaction(old_apps, old_volume):
    reason = (TENANT_SECRET + " ") * 35  # 490 characters; redacted, 525: the marker is longer
    assert len(reason) <= 500 < len(reason.replace(TENANT_SECRET, REDACTED))
    old_apps.get_model("tenants", "MemoryVersion").objects.create(
        volume=old_volume, target="memory", number=2, entries=[], origin="human", actor_label="alice", reason=reason)
    MIGRATION.redact_stored_secrets(old_apps, None)
    stored = MemoryVersion.objects.get(target="memory", number=2).reason
    assert TENANT_SECRET not in stored and len(stored) <= 500
