from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memoryhub import threats
from tenants.memory.rescan import due_volume_ids, rescan_volume
from tenants.models import MemoryVolume, Tenant


class Command(BaseCommand):
    help = ("Rescan memory entries with the current threat patterns (version "
            f"{threats.PATTERNS_VERSION}) in this process: the volumes scanned with an older pattern set, "
            "or all of them with --all. Records findings; never edits entries.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tenant", help="only this tenant")
        parser.add_argument("--all", action="store_true", help="rescan even volumes already scanned with this version")

    def handle(self, *args: Any, **o: Any) -> None:
        if o["all"]:
            ids = list(MemoryVolume.objects.order_by("pk").values_list("pk", flat=True))
        else:
            ids = due_volume_ids()
        if o["tenant"]:
            tenant = Tenant.objects.filter(slug=o["tenant"]).first()
            if tenant is None:
                raise CommandError(f"no tenant {o['tenant']!r}")
            ids = [pk for pk in ids if pk == MemoryVolume.get_or_create_for(tenant).pk]
        totals = [0, 0, 0]
        for volume_id in ids:
            result = rescan_volume(volume_id)
            if result is None:
                continue
            self.stdout.write(f"{result.tenant}: {result.scanned} entries scanned, {result.flagged} flagged, "
                              f"{result.recorded} new findings")
            totals = [totals[0] + 1, totals[1] + result.flagged, totals[2] + result.recorded]
        self.stdout.write(f"rescanned {totals[0]} volume(s) with patterns version {threats.PATTERNS_VERSION}: "
                          f"{totals[1]} flagged entries, {totals[2]} new findings")
