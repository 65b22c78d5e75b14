"""Rescanning stored entries after the threat patterns changed (docs/memory-files.md "How it works").

Entries are never edited: a hit becomes a ThreatFinding for the reviewer, and the snapshot
of every new session shows the entry as a placeholder until someone removes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from memoryhub import threats
from tenants.memory import rules
from tenants.models import MemoryVolume, ThreatFinding


@dataclass(frozen=True)
class RescanResult:
    volume_id: int
    tenant: str
    scanned: int  # entries scanned, both stores
    flagged: int  # entries that matched a pattern
    recorded: int  # new findings (a flagged entry already recorded for this version is not recorded twice)
    patterns_version: int


def due_volume_ids() -> list[int]:
    """Volumes last scanned with an older pattern set."""
    return list(MemoryVolume.objects.filter(patterns_version__lt=threats.PATTERNS_VERSION)
                .order_by("pk").values_list("pk", flat=True))


def rescan_volume(volume_id: int) -> RescanResult | None:
    """Scan every approved entry of both stores with the current patterns, under the volume
    lock so a concurrent remove cannot leave a finding for an entry that is gone. Idempotent."""
    version = threats.PATTERNS_VERSION
    with transaction.atomic():
        volume = MemoryVolume.objects.select_for_update().select_related("tenant").filter(pk=volume_id).first()
        if volume is None:
            return None
        scanned = flagged = recorded = 0
        for target in rules.TARGETS:
            for entry in volume.entries(target):
                scanned += 1
                findings = threats.scan(threats.redact(entry, volume.secrets))
                if not findings:
                    continue
                flagged += 1
                known = ThreatFinding.objects.filter(volume=volume, target=target, entry=entry, patterns_version=version,
                                                     resolved_at__isnull=True).exists()
                if not known:
                    ThreatFinding.objects.create(volume=volume, target=target, entry=entry, patterns_version=version,
                                                 patterns=list(dict.fromkeys(f.pattern for f in findings)))
                    recorded += 1
        if volume.patterns_version != version:
            volume.patterns_version = version
            volume.save(update_fields=["patterns_version"])
    return RescanResult(volume.pk, volume.tenant.slug, scanned, flagged, recorded, version)
