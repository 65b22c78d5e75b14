"""manage.py atoms_lexicon: check or rebuild the lexical index (docs/atoms.md "Lexical index").

`--check` recomputes postings and statistics from the active heads and compares them with
the stored ones (exit status 1 on any difference); `--rebuild` rewrites them, one tenant per
transaction. Rebuild after a Python upgrade that changes the Unicode version (the check says
so), or if a check ever fails. Both only read and write the lexical tables.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from tqdm import tqdm

from atoms.models import Revision, RevisionState
from atoms.services.lexicon import lexicon_check, lexicon_rebuild
from tenants.models import Tenant


class Command(BaseCommand):
    help = "Check (--check) or rebuild (--rebuild) the BM25 lexical index of every tenant or one."

    def add_arguments(self, parser: CommandParser) -> None:
        action = parser.add_mutually_exclusive_group(required=True)
        action.add_argument("--check", action="store_true", help="Compare with the heads; exit 1 on a difference.")
        action.add_argument("--rebuild", action="store_true", help="Rewrite postings and statistics from the heads.")
        parser.add_argument("--tenant", help="Only this tenant (slug).")
        parser.add_argument("--no-progress", action="store_true", help="No progress bar (logs, CI).")

    def handle(self, *args: Any, **options: Any) -> None:
        tenants = Tenant.objects.order_by("slug")
        if options["tenant"]:
            tenants = tenants.filter(slug=options["tenant"])
            if not tenants.exists():
                raise CommandError(f"No tenant {options['tenant']!r}.")
        failed = 0
        for tenant in tenants:
            total = Revision.objects.filter(tenant=tenant, is_head=True, state=RevisionState.ACTIVE).count()
            with tqdm(total=total, desc=tenant.slug, unit="head",
                      disable=options["no_progress"] or not total) as bar:
                if options["rebuild"]:
                    with transaction.atomic():
                        done = lexicon_rebuild([tenant.pk], progress=bar.update)
                    self.stdout.write(f"{tenant.slug}: {done} heads indexed")
                    continue
                result = lexicon_check(tenant.pk, progress=bar.update)
            if result.mismatches:
                failed += 1
                for line in result.mismatches:
                    self.stdout.write(f"{tenant.slug}: {line}")
            else:
                self.stdout.write(f"{tenant.slug}: ok ({result.heads} heads, {result.postings} postings)")
        if failed:
            raise CommandError(f"{failed} tenant(s) differ: run manage.py atoms_lexicon --rebuild")
