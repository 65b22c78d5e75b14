"""Adding a tenant secret also redacts it from what is already stored: entries, history,
pending items, snapshots, findings and the projected files (docs/memory-files.md
"Redaction")."""

from __future__ import annotations

import hashlib
import json

from memoryhub.actors import Actor
from memoryhub.redaction import REDACTED
from tenants.memory import rules, sessions
from tenants.memory.files import files_sync
from tenants.memory.secrets import secrets_add
from tenants.memory.service import memory_write
from tenants.models import MemorySession, MemoryVersion, PendingWrite, ThreatFinding
from tests.tenants.memory.helpers import set_volume
from tests.tenants.memory.volume_helpers import approval_off, folder_of, store, volume_of

SECRET = "opensesame-42"
ALICE = Actor.system("alice")


def stored_text() -> str:
    rows = [list(model.objects.values()) for model in (MemoryVersion, PendingWrite, MemorySession, ThreatFinding)]
    return json.dumps(rows, default=str)


def test_a_new_secret_disappears_from_entries_history_pending_items_and_snapshots(acme, root):
    approval_off(acme)
    store(acme, [f"vault password is {SECRET}", "plain fact"])
    session, _ = sessions.session_create(tenant=acme, chat_id="c1", actor=ALICE)
    set_volume(acme, approval="all")
    request = rules.parse_request({"action": "add", "content": f"backup {SECRET}"}, "user")
    assert memory_write(tenant=acme, request=request, origin="foreground", actor=ALICE).status == 202
    assert SECRET in stored_text()

    assert secrets_add(tenant=acme, secret=SECRET, actor=ALICE) == 1

    assert volume_of(acme).memory_entries == [f"vault password is {REDACTED}", "plain fact"]
    assert MemoryVersion.objects.get().entries == [f"vault password is {REDACTED}", "plain fact"]
    assert PendingWrite.objects.get().payload == {"action": "add", "content": f"backup {REDACTED}"}
    snapshot = MemorySession.objects.get(pk=session.pk)
    assert SECRET not in snapshot.snapshot and f"vault password is {REDACTED}" in snapshot.snapshot
    assert snapshot.snapshot_digest == "sha256:" + hashlib.sha256(snapshot.snapshot.encode()).hexdigest()
    assert SECRET not in stored_text()


def test_the_projected_file_is_rewritten_without_the_new_secret(acme, root, django_capture_on_commit_callbacks):
    volume = approval_off(acme)
    store(acme, [f"vault password is {SECRET}"])
    files_sync(volume.pk)
    path = folder_of(root, acme) / "MEMORY.md"
    assert SECRET in path.read_text(encoding="utf-8")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        secrets_add(tenant=acme, secret=SECRET, actor=ALICE)
    assert callbacks, "adding a secret queues the file sync"
    assert files_sync(volume.pk)["memory"] == "written"
    assert path.read_text(encoding="utf-8") == f"vault password is {REDACTED}"

