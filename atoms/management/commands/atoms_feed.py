"""manage.py atoms_feed: check or rebuild the index counters (docs/atoms.md "Index counters").

`--check` recomputes every policy's feed counters and every checkpoint's consumed events
from the revisions and compares them with the stored ones (exit status 1 on a difference);
`--rebuild` rewrites them, one tenant per transaction, holding the tenant's store row so
that no write, approval or purge runs meanwhile. Both touch only the counter rows.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from atoms.services.feed import feed_check, feed_rebuild
from tenants.models import Tenant


class Command(BaseCommand):
    help = "Check (--check) or rebuild (--rebuild) the Atom index counters of every tenant or one."

    def add_arguments(self, parser: CommandParser) -> None:
        action = parser.add_mutually_exclusive_group(required=True)
        action.add_argument("--check", action="store_true", help="Compare with the revisions; exit 1 on a difference.")
        action.add_argument("--rebuild", action="store_true", help="Rewrite the counters from the revisions.")
        parser.add_argument("--tenant", help="Only this tenant (slug).")

    def handle(self, *args: Any, **options: Any) -> None:
        tenants = Tenant.objects.order_by("slug")
        if options["tenant"]:
            tenants = tenants.filter(slug=options["tenant"])
            if not tenants.exists():
                raise CommandError(f"No tenant {options['tenant']!r}.")
        failed = 0
        for tenant in tenants:
            if options["rebuild"]:
                self.stdout.write(f"{tenant.slug}: {feed_rebuild(tenant)} counter rows rewritten")
                continue
            problems = feed_check(tenant)
            for line in problems:
                self.stdout.write(f"{tenant.slug}: {line}")
            if problems:
                failed += 1
            else:
                self.stdout.write(f"{tenant.slug}: ok")
        if failed:
            raise CommandError(f"{failed} tenant(s) differ: run manage.py atoms_feed --rebuild")
