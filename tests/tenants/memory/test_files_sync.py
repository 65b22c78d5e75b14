"""Projecting the stores onto the tenant volume (docs/memory-files.md "How it works", files on disk)."""

from __future__ import annotations

import hashlib
import logging

import pytest

from tenants import tasks
from tenants.memory.files import files_sync
from tenants.models import MemoryVolume, Tenant
from tests.tenants.memory.volume_helpers import add, approval_off, backups, folder_of, store, volume_of, write


@pytest.fixture
def volume(acme: Tenant) -> MemoryVolume:
    return approval_off(acme)


def test_the_file_holds_the_joined_entries_without_a_trailing_newline(acme, volume, root):
    add(acme, "Project uses Bun and Nx")
    add(acme, "Section § 5 applies\nline two")
    assert files_sync(volume.pk) == {"memory": "written", "user": "written"}
    data = (folder_of(root, acme) / "MEMORY.md").read_bytes()
    assert data == "Project uses Bun and Nx\n§\nSection § 5 applies\nline two".encode()
    assert not data.endswith(b"\n")
    assert volume_of(acme).memory_file_digest == hashlib.sha256(data).hexdigest()


def test_an_empty_store_is_an_empty_file_and_utf8_has_no_bom(acme, volume, root):
    add(acme, "🚀 ships on Fridays", target="user")
    files_sync(volume.pk)
    folder = folder_of(root, acme)
    assert (folder / "MEMORY.md").read_bytes() == b""
    assert (folder / "USER.md").read_bytes() == "🚀 ships on Fridays".encode()
    assert volume_of(acme).user_file_digest == hashlib.sha256("🚀 ships on Fridays".encode()).hexdigest()


def test_a_commit_queues_the_sync_that_writes_the_file(acme, volume, root, eager, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        add(acme, "Project uses Bun and Nx")
    assert len(callbacks) == 1
    assert (folder_of(root, acme) / "MEMORY.md").read_text(encoding="utf-8") == "Project uses Bun and Nx"


def test_without_a_volume_root_nothing_is_queued_or_written(acme, volume, settings, django_capture_on_commit_callbacks):
    settings.MEMORYHUB_VOLUME_ROOT = None
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        add(acme, "Project uses Bun and Nx")
    assert callbacks == []
    assert files_sync(volume.pk) == {}


def test_syncs_run_out_of_order_converge_on_the_newest_state(acme, volume, root, eager,
                                                             django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        add(acme, "first")
        add(acme, "second")
        write(acme, {"action": "remove", "old_text": "first"})
    assert len(callbacks) == 3
    for callback in reversed(callbacks):  # the oldest change's task runs last
        callback()
    assert (folder_of(root, acme) / "MEMORY.md").read_text(encoding="utf-8") == "second"
    assert files_sync(volume.pk) == {"memory": "unchanged", "user": "unchanged"}


def test_a_missing_file_is_rewritten_without_drift(acme, volume, root):
    add(acme, "Project uses Bun and Nx")
    files_sync(volume.pk)
    path = folder_of(root, acme) / "MEMORY.md"
    path.unlink()
    assert files_sync(volume.pk)["memory"] == "written"
    assert path.read_text(encoding="utf-8") == "Project uses Bun and Nx"
    assert volume_of(acme).memory_drift is None


def test_a_write_leaves_no_temporary_files_behind(acme, volume, root):
    for text in ("one", "two", "three"):
        add(acme, text)
        files_sync(volume.pk)
    assert sorted(p.name for p in folder_of(root, acme).iterdir()) == ["MEMORY.md", "USER.md"]


def test_projected_files_are_not_world_readable(acme, volume, root):
    add(acme, "Project uses Bun and Nx")
    files_sync(volume.pk)
    folder = folder_of(root, acme)
    assert (folder / "MEMORY.md").stat().st_mode & 0o777 == 0o640
    assert (folder / "USER.md").stat().st_mode & 0o777 == 0o640


def test_a_world_readable_file_from_an_older_release_is_narrowed_on_the_next_sync(acme, volume, root):
    add(acme, "Project uses Bun and Nx")
    files_sync(volume.pk)
    path = folder_of(root, acme) / "MEMORY.md"
    path.chmod(0o644)
    assert files_sync(volume.pk)["memory"] == "unchanged"
    assert path.stat().st_mode & 0o777 == 0o640


def test_a_memoryhub_key_in_a_persons_write_never_reaches_the_file(acme, volume, root):
    from memoryhub.actors import Actor
    from tenants.memory import rules
    from tenants.memory.service import memory_write
    from tenants.models.keys import ApiKey

    raw = ApiKey.new_raw_key()[1]
    request = rules.parse_request({"action": "add", "content": f"Agent key {raw} is for the nightly job"}, "user")
    memory_write(tenant=acme, request=request, origin="human", actor=Actor.system("alice"))  # a refusal raises
    assert volume_of(acme).user_entries == ["Agent key ***REDACTED*** is for the nightly job"]
    files_sync(volume.pk)
    data = (folder_of(root, acme) / "USER.md").read_text(encoding="utf-8")
    assert data == "Agent key ***REDACTED*** is for the nightly job"


def test_tenants_get_separate_folders(acme, globex, volume, root):
    approval_off(globex)
    add(acme, "acme fact")
    add(globex, "globex fact")
    files_sync(volume.pk)
    files_sync(MemoryVolume.get_or_create_for(globex).pk)
    assert (folder_of(root, acme) / "MEMORY.md").read_text(encoding="utf-8") == "acme fact"
    assert (folder_of(root, globex) / "MEMORY.md").read_text(encoding="utf-8") == "globex fact"


def test_a_file_already_there_that_we_did_not_write_is_kept_as_drift(acme, volume, root):
    folder = folder_of(root, acme)
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_text("written by the original tool", encoding="utf-8")
    store(acme, ["from the database"])
    assert files_sync(volume.pk)["memory"] == "drift_detected"
    assert (folder / "MEMORY.md").read_text(encoding="utf-8") == "written by the original tool"
    assert volume_of(acme).memory_drift["reason"] == "modified"


def test_an_empty_file_already_there_is_filled(acme, volume, root):
    folder = folder_of(root, acme)
    folder.mkdir(parents=True)
    (folder / "MEMORY.md").write_bytes(b"")
    store(acme, ["from the database"])
    assert files_sync(volume.pk)["memory"] == "written"


def test_a_symlinked_file_is_never_followed(acme, volume, root, tmp_path):
    secret = tmp_path / "server-secret.txt"
    secret.write_text("do not leak me", encoding="utf-8")
    store(acme, ["fact"])
    files_sync(volume.pk)
    path = folder_of(root, acme) / "MEMORY.md"
    path.unlink()
    path.symlink_to(secret)
    assert files_sync(volume.pk)["memory"] == "drift_detected"
    drift = volume_of(acme).memory_drift
    assert drift["reason"] == "unreadable" and drift["backup"] is None
    assert backups(folder_of(root, acme)) == []
    assert secret.read_text(encoding="utf-8") == "do not leak me"


def test_a_tenant_folder_that_links_elsewhere_is_refused(acme, globex, volume, root):
    other = folder_of(root, globex)
    other.mkdir(parents=True)
    (other / "MEMORY.md").write_text("globex private", encoding="utf-8")
    (root / acme.slug).mkdir(parents=True)
    folder_of(root, acme).symlink_to(other)
    store(acme, ["acme fact"])
    with pytest.raises(Exception, match="outside the tenant's volume"):
        files_sync(volume.pk)
    assert (other / "MEMORY.md").read_text(encoding="utf-8") == "globex private"
    assert list(other.iterdir()) == [other / "MEMORY.md"]


def test_a_deleted_volume_is_nothing_to_do(acme, volume, root):
    volume_id = volume.pk
    volume.delete()
    assert files_sync(volume_id) == {}


def test_the_task_retries_disk_errors_a_bounded_number_of_times():
    task = tasks.memory_files_sync
    assert task.name == "tenants.memory_files_sync"
    assert OSError in task.autoretry_for
    assert 0 < task.max_retries <= 10
    assert task.retry_backoff


def test_a_failing_sync_does_not_undo_or_fail_the_committed_write(acme, volume, root, eager, monkeypatch, caplog,
                                                                 django_capture_on_commit_callbacks):
    calls = []

    def broken(volume_id: int) -> dict[str, str]:
        calls.append(volume_id)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tasks, "files_sync", broken)
    with caplog.at_level(logging.ERROR), django_capture_on_commit_callbacks(execute=True):
        add(acme, "Project uses Bun and Nx")
    assert volume_of(acme).memory_entries == ["Project uses Bun and Nx"]
    assert calls  # eager mode gives up at the first retry; a worker would back off and retry
    assert "No space left on device" in caplog.text
