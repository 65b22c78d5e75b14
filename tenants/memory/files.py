"""The stores projected onto the tenant volume as USER.md and MEMORY.md, and drift
(docs/memory-files.md "How it works").

The database is the source of truth. `files_sync` writes the newest state under the volume
row lock, so tasks that run late or out of order converge. A file whose bytes are not the
ones last written (a hand edit) is never overwritten silently: it is backed up, the store is
marked drifted and its file is left alone until a reviewer imports or overwrites it.
"""

from __future__ import annotations

import logging
import os
import stat
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memoryhub.actors import Actor
from memoryhub.audit import audit_record
from memoryhub.digests import sha256_hex
from tenants.memory import rules
from tenants.memory.importing import FILE_NAMES, EntryProblem, clean_entries, decode_file, limit_for, parse_file
from tenants.memory.rules import MemoryRuleError
from tenants.models import MemoryVolume, Origin, Tenant

logger = logging.getLogger(__name__)
SYNC_ACTOR = Actor.system("files_sync")
# Owner read-write, group read: agents that read the volume run in the service's group;
# nobody else may read a tenant's memory (docs/memory-files.md "Redaction").
FILE_MODE = 0o640
FOLDER_MODE = 0o750


class VolumeFolderError(Exception):
    """The tenant's folder is not where it must be (a symlink out of the root); nothing is
    read or written there, since that could leak or clobber another tenant's files."""


# --- Disk primitives ------------------------------------------------------------------------

@dataclass(frozen=True)
class DiskRead:
    exists: bool
    data: bytes | None = None
    error: str | None = None  # unreadable: not a regular file, a symlink, permissions, ...

    @property
    def digest(self) -> str | None:
        return sha256_hex(self.data) if self.data is not None else None


def read_disk(path: Path) -> DiskRead:
    """The file's bytes. Symlinks and non-regular files count as unreadable, never followed:
    the folder belongs to the tenant, and following a link would copy whatever it points at
    into a backup the tenant can read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return DiskRead(exists=False)
    except OSError as exc:
        return DiskRead(exists=True, error=exc.strerror or str(exc))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return DiskRead(exists=True, error="not a regular file")
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return DiskRead(exists=True, data=b"".join(chunks))
    except OSError as exc:
        return DiskRead(exists=True, error=exc.strerror or str(exc))
    finally:
        os.close(fd)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes) -> None:
    """Readers see the old bytes or the new ones, never a mix; durable once this returns."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, FILE_MODE)  # mkstemp creates 0600; agents in the group read the volume
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _restrict_mode(path: Path) -> None:
    """Narrow a file written by an older release (0644) to FILE_MODE; never follows a link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return  # gone or replaced meanwhile: the next sync deals with it
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode) and stat.S_IMODE(os.fstat(fd).st_mode) & ~FILE_MODE:
            os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)


def volume_root() -> Path | None:
    root = getattr(settings, "MEMORYHUB_VOLUME_ROOT", None)
    return Path(root) if root else None


def tenant_folder(tenant: Tenant, *, create: bool = True) -> Path:
    """`<root>/<slug>/memories`, checked to really be there (no symlinked component)."""
    root = volume_root()
    if root is None:
        raise VolumeFolderError("MEMORYHUB_VOLUME_ROOT is not set")
    folder = root / tenant.slug / "memories"
    if create:
        folder.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    expected = os.path.join(os.path.realpath(root), tenant.slug, "memories")
    if os.path.lexists(folder) and os.path.realpath(folder) != expected:
        raise VolumeFolderError(f"{folder} resolves to {os.path.realpath(folder)}, outside the tenant's volume")
    return folder


def backup_name(file_name: str, now: datetime, folder: Path) -> str:
    name = f"{file_name}.bak.{now.astimezone(UTC).strftime('%Y%m%dT%H%M%SZ')}"
    candidate, n = name, 1
    while os.path.lexists(folder / candidate):  # two drifts in one second keep both copies
        n += 1
        candidate = f"{name}-{n}"
    return candidate


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


# --- Sync -----------------------------------------------------------------------------------

def desired_bytes(volume: MemoryVolume, target: str) -> bytes:
    return rules.file_form(volume.entries(target)).encode("utf-8")


def _set(volume: MemoryVolume, target: str, *, digest: str | None = None, drift: Any = ...) -> None:
    fields = []
    if digest is not None:
        setattr(volume, f"{target}_file_digest", digest)
        fields.append(f"{target}_file_digest")
    if drift is not ...:
        setattr(volume, f"{target}_drift", drift)
        fields.append(f"{target}_drift")
    volume.save(update_fields=fields)


def _foreign_change(volume: MemoryVolume, target: str, read: DiskRead, want: str) -> str | None:
    """Why the disk file must not be overwritten (a drift reason), or None."""
    if read.error is not None:
        return "unreadable"
    assert read.data is not None
    if read.digest == want:
        return None
    try:
        decode_file(read.data)
    except EntryProblem:
        return "not_utf8"
    stored = getattr(volume, f"{target}_file_digest")
    if stored:
        return "modified" if read.digest != stored else None
    # Nothing written yet: an empty file is ours to fill; content we did not write is kept
    # (a volume that already held the original tool's files), to be imported or overwritten.
    return "modified" if read.data else None


def _mark_drift(volume: MemoryVolume, target: str, folder: Path, read: DiskRead, reason: str) -> dict[str, Any]:
    now = timezone.now()
    backup = None
    if read.data is not None:
        backup = backup_name(FILE_NAMES[target], now, folder)
        write_atomic(folder / backup, read.data)
    drift = {"since": _iso(now), "reason": reason, "backup": backup, "disk_digest": read.digest,
             "detail": read.error or ""}
    _set(volume, target, drift=drift)
    audit_record(tenant=volume.tenant, actor=SYNC_ACTOR, action="memory.drift.detected", object_type="memory_file",
                 object_id=FILE_NAMES[target], after=drift)
    logger.warning("memory file %s/%s drifted (%s); backup %s", volume.tenant.slug, FILE_NAMES[target], reason, backup)
    return drift


def _sync_one(volume: MemoryVolume, target: str, folder: Path) -> str:
    if getattr(volume, f"{target}_drift"):
        return "drifted"
    path = folder / FILE_NAMES[target]
    data = desired_bytes(volume, target)
    want = sha256_hex(data)
    read = read_disk(path)
    if read.exists:
        reason = _foreign_change(volume, target, read, want)
        if reason is not None:
            _mark_drift(volume, target, folder, read, reason)
            return "drift_detected"
        if read.digest == want:
            if getattr(volume, f"{target}_file_digest") != want:
                _set(volume, target, digest=want)
            _restrict_mode(path)
            return "unchanged"
    write_atomic(path, data)
    _set(volume, target, digest=want)
    return "written"


def files_sync(volume_id: int) -> dict[str, str]:
    """Write the newest state of both stores to the tenant's folder. Idempotent; returns
    what happened per target (written, unchanged, drift_detected, drifted). Raises OSError
    for disk failures (the task retries) and VolumeFolderError for an unsafe folder."""
    if volume_root() is None:
        return {}
    with transaction.atomic():
        volume = MemoryVolume.objects.select_for_update().select_related("tenant").filter(pk=volume_id).first()
        if volume is None:  # the tenant was deleted after the write was queued
            return {}
        folder = tenant_folder(volume.tenant)
        return {target: _sync_one(volume, target, folder) for target in rules.TARGETS}


# --- Drift: what the reviewer sees and the two ways out --------------------------------------

@dataclass(frozen=True)
class DiskState:
    """Both sides of a database-vs-disk diff for one store."""

    target: str
    file_name: str
    path: str
    exists: bool
    text: str | None  # the disk text (BOM and CRLF normalized); None when missing or unreadable
    error: str | None  # why the text is None although the file exists
    digest: str | None
    entries: list[str] | None  # the disk text parsed as an import would
    database_text: str
    database_entries: list[str]
    drift: dict[str, Any] | None


def disk_state(volume: MemoryVolume, target: str) -> DiskState:
    database_entries = volume.entries(target)
    drift = getattr(volume, f"{target}_drift")
    base = {"target": target, "file_name": FILE_NAMES[target], "database_text": rules.file_form(database_entries),
            "database_entries": database_entries, "drift": drift}
    try:
        folder = tenant_folder(volume.tenant, create=False)
    except VolumeFolderError as exc:
        return DiskState(path="", exists=False, text=None, error=str(exc), digest=None, entries=None, **base)
    path = folder / FILE_NAMES[target]
    read = read_disk(path)
    text = entries = None
    error = read.error
    if read.data is not None:
        try:
            text = decode_file(read.data)
            entries = parse_file(read.data).entries
        except EntryProblem as problem:
            error = problem.message
    return DiskState(path=str(path), exists=read.exists, text=text, error=error, digest=read.digest,
                     entries=entries, **base)


@dataclass(frozen=True)
class DriftResolution:
    target: str
    version: int | None  # the new `import` version; None when nothing changed in the database
    backup: str | None


def _drifted_volume(tenant: Tenant, target: str) -> tuple[MemoryVolume, dict[str, Any], Path]:
    """Lock the volume (inside the caller's transaction) and check there is drift to resolve."""
    from tenants.memory.service import _locked

    if target not in rules.TARGETS:
        raise MemoryRuleError("INVALID_TARGET", f"Target '{target}' is not valid; the targets are 'memory' and 'user'.")
    volume = _locked(tenant)
    drift = getattr(volume, f"{target}_drift")
    if not drift:
        raise MemoryRuleError("NOT_DRIFTED", f"{FILE_NAMES[target]} on disk matches the database; nothing to resolve.")
    try:
        folder = tenant_folder(volume.tenant)
    except VolumeFolderError as exc:
        raise MemoryRuleError("DISK_UNAVAILABLE", f"The tenant's folder cannot be used: {exc}.") from exc
    return volume, drift, folder


def _write_resolved(volume: MemoryVolume, target: str, folder: Path, drift: dict[str, Any], read: DiskRead) -> str | None:
    """Write the database state over the disk file, first backing up content that changed
    again since the drift was found (the first backup would not hold it)."""
    data = desired_bytes(volume, target)
    backup = drift.get("backup")
    try:
        if read.data is not None and read.digest not in (drift.get("disk_digest"), sha256_hex(data)):
            backup = backup_name(FILE_NAMES[target], timezone.now(), folder)
            write_atomic(folder / backup, read.data)
        write_atomic(folder / FILE_NAMES[target], data)
    except OSError as exc:
        raise MemoryRuleError("DISK_ERROR", f"Writing {FILE_NAMES[target]} failed: {exc.strerror or exc}.") from exc
    _set(volume, target, digest=sha256_hex(data), drift=None)
    return backup


def drift_import_disk(*, tenant: Tenant, target: str, actor: Actor, disk_digest: str | None = None) -> DriftResolution:
    """Store the disk file as one `import` version (parsed as `memory_import` does; redaction,
    scan and limits apply), then rewrite it in the canonical form and clear the drift.
    `disk_digest` (from the diff the reviewer saw) refuses a file that changed since.
    Raises MemoryRuleError and changes nothing on failure."""
    from tenants.memory.service import commit_entries

    with transaction.atomic():
        volume, drift, folder = _drifted_volume(tenant, target)
        name = FILE_NAMES[target]
        read = read_disk(folder / name)
        if not read.exists:
            raise MemoryRuleError("DISK_MISSING", f"{name} is no longer on disk; overwrite the disk to write the "
                                  "database state.")
        if read.data is None:
            raise MemoryRuleError("DISK_UNREADABLE", f"{name} cannot be read ({read.error}); fix the file or "
                                  "overwrite the disk.")
        if disk_digest is not None and read.digest != disk_digest:
            raise MemoryRuleError("DISK_CHANGED", f"{name} changed on disk since it was shown; review it again.")
        current = volume.entries(target)
        try:
            entries = clean_entries(parse_file(read.data).entries, volume.secrets)
            limit_for(entries, current, volume.limit(target), target, raise_limit=False)
        except EntryProblem as problem:
            where = f", entry {problem.entry}" if problem.entry else ""
            problem.message = f"{name}{where}: {problem.message}"
            raise
        version = None
        if entries != current:
            version = commit_entries(volume=volume, target=target, entries=entries, origin=Origin.IMPORT, actor=actor,
                                     reason=f"import disk version of {name}")
        backup = _write_resolved(volume, target, folder, drift, read)
        audit_record(tenant=tenant, actor=actor, action="memory.drift.import", object_type="memory_file",
                     object_id=name, before=drift, after=entries)
    return DriftResolution(target, version, backup)


def drift_overwrite_disk(*, tenant: Tenant, target: str, actor: Actor) -> DriftResolution:
    """Write the database state over the disk file and clear the drift; backups stay."""
    with transaction.atomic():
        volume, drift, folder = _drifted_volume(tenant, target)
        name = FILE_NAMES[target]
        backup = _write_resolved(volume, target, folder, drift, read_disk(folder / name))
        audit_record(tenant=tenant, actor=actor, action="memory.drift.overwrite", object_type="memory_file",
                     object_id=name, before=drift, after=volume.entries(target))
    return DriftResolution(target, None, backup)
